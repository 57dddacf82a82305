package raftstore

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// newestWAL returns the path and size of the highest-numbered *.log in dir:
// the WAL Pebble is writing.
func newestWAL(t *testing.T, dir string) (string, int64) {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil || len(names) == 0 {
		t.Fatalf("no WAL in %s (%v)", dir, err)
	}
	sort.Strings(names)
	fi, err := os.Stat(names[len(names)-1])
	if err != nil {
		t.Fatal(err)
	}
	return names[len(names)-1], fi.Size()
}

// A store on a real disk writes its log over zeros that are already there:
// the WAL Pebble writes has the full prefill size before the first append
// and keeps it after appends (they overwrite, so no fdatasync has a new
// size to make durable), and the log reopens whole, its zero tail read as
// the end of the log.
func TestWALPrefill_AppendsOverwriteZeros(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, Options{})
	if st := s.WALStats(); st.WALsZeroFilled == 0 || st.WALZeroFillsFailed != 0 {
		t.Fatalf("after Open: %d WALs zero-filled, %d failed; want at least one and none", st.WALsZeroFilled, st.WALZeroFillsFailed)
	}
	name, size := newestWAL(t, dir)
	if size != walPrefillSize {
		t.Fatalf("%s is %d bytes before any append; want the prefill size %d", name, size, walPrefillSize)
	}
	for i := uint64(1); i <= 200; i += 10 { // 20 synced appends
		if err := s.StoreLogs(testEntries(i, i+9)); err != nil {
			t.Fatal(err)
		}
	}
	if n, after := newestWAL(t, dir); n != name || after != size {
		t.Fatalf("after 20 appends the WAL is %s, %d bytes; want %s still %d (appends overwrite)", n, after, name, size)
	}
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	if tail := data[len(data)-64<<10:]; !bytes.Equal(tail, make([]byte, len(tail))) {
		t.Fatalf("the last 64 KiB of %s are not zero", name)
	}
	s = reopen(t, s, dir, Options{})
	checkBounds(t, s, 1, 200)
	for i := uint64(1); i <= 200; i++ {
		checkEntry(t, s, i)
	}
}

// writeAtFailsFS is vfs.Default whose files refuse positional writes, as a
// full or failing disk would refuse the zeros.
type writeAtFailsFS struct{ vfs.FS }

var errNoSpace = errors.New("no space left on device (injected)")

func (fs writeAtFailsFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, category)
	if err != nil {
		return nil, err
	}
	return writeAtFailsFile{f}, nil
}

type writeAtFailsFile struct{ vfs.File }

func (writeAtFailsFile) WriteAt([]byte, int64) (int, error) { return 0, errNoSpace }

// A zero-fill that fails leaves Pebble an empty, usable WAL, as it would
// have had without the zero-fill, and the failure is counted and reported;
// files other than WALs are never zero-filled.
func TestWALPrefill_FailureLeavesAnEmptyWAL(t *testing.T) {
	ws := newWALSync()
	var reported []error
	ws.onPrefillError = func(err error) { reported = append(reported, err) }
	fs := walSyncFS{FS: writeAtFailsFS{vfs.Default}, ws: ws}
	dir := t.TempDir()

	f, err := fs.Create(filepath.Join(dir, "000007.log"), vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatalf("Create: %v; want the WAL despite the failed zero-fill", err)
	}
	defer f.Close()
	if ws.prefillFailed.Load() != 1 || ws.prefilled.Load() != 0 || len(reported) != 1 || !errors.Is(reported[0], errNoSpace) {
		t.Fatalf("failed %d, filled %d, reported %v; want one failure reported with its cause", ws.prefillFailed.Load(), ws.prefilled.Load(), reported)
	}
	if _, err := f.Write([]byte("record")); err != nil {
		t.Fatalf("writing the WAL: %v", err)
	}
	if err := f.SyncData(); err != nil {
		t.Fatalf("syncing the WAL: %v", err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "000007.log")); err != nil || fi.Size() != int64(len("record")) {
		t.Fatalf("WAL after one write: %v, %v; want exactly the 6 bytes written", fi, err)
	}

	other, err := walSyncFS{FS: vfs.Default, ws: ws}.Create(filepath.Join(dir, "MANIFEST-000001"), vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if fi, _ := other.Stat(); fi.Size() != 0 || ws.prefilled.Load() != 0 {
		t.Fatalf("a MANIFEST got %d bytes, %d zero-fills; want none", fi.Size(), ws.prefilled.Load())
	}
}
