package raftstore

import (
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// fakeDirect records the direct syncs a walSync makes instead of making
// them, and moves a fake clock by took per sync.
type fakeDirect struct {
	calls []bool // full, per call
	fds   []uintptr
	took  time.Duration
	err   error
	clock *time.Time
}

func newFakeWALSync(t *testing.T) (*walSync, *fakeDirect) {
	t.Helper()
	now := time.Unix(1_700_000_000, 0)
	fd := &fakeDirect{clock: &now}
	ws := newWALSync()
	ws.now = func() time.Time { return *fd.clock }
	ws.syncDirect = func(f uintptr, full bool) error {
		fd.calls = append(fd.calls, full)
		fd.fds = append(fd.fds, f)
		*fd.clock = fd.clock.Add(fd.took)
		return fd.err
	}
	return ws, fd
}

func createIn(t *testing.T, fs vfs.FS, name string) vfs.File {
	t.Helper()
	f, err := fs.Create(filepath.Join(t.TempDir(), name), vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatalf("Create(%s): %v", name, err)
	}
	t.Cleanup(func() { _ = f.Close() })
	return f
}

func TestWALSync_OnlyWALFilesAreWrapped(t *testing.T) {
	ws, _ := newFakeWALSync(t)
	fs := walSyncFS{FS: vfs.Default, ws: ws}
	for name, want := range map[string]bool{
		"000012.log":      true,
		"000012-001.log":  true, // WAL failover's numbering
		"MANIFEST-000001": false,
		"000013.sst":      false,
		"OPTIONS-000003":  false,
	} {
		_, got := createIn(t, fs, name).(*walFile)
		if got != want {
			t.Errorf("Create(%s): wrapped = %v, want %v", name, got, want)
		}
	}
	// Pebble recycles WAL files by renaming them.
	dir := t.TempDir()
	old, err := fs.Create(filepath.Join(dir, "000001.log"), vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatal(err)
	}
	_ = old.Close()
	f, err := fs.ReuseForWrite(filepath.Join(dir, "000001.log"), filepath.Join(dir, "000002.log"), vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatalf("ReuseForWrite: %v", err)
	}
	defer f.Close()
	if _, ok := f.(*walFile); !ok {
		t.Errorf("ReuseForWrite of a WAL: %T, want *walFile", f)
	}
}

func TestWALSync_DirectOnlyWhileEnabled(t *testing.T) {
	ws, fake := newFakeWALSync(t)
	f := createIn(t, walSyncFS{FS: vfs.Default, ws: ws}, "000001.log")

	if err := f.SyncData(); err != nil {
		t.Fatalf("SyncData: %v", err)
	}
	if len(fake.calls) != 0 || ws.ordinary.Load() != 1 {
		t.Fatalf("switch off: direct calls %d, ordinary %d; want 0 and 1", len(fake.calls), ws.ordinary.Load())
	}

	ws.enabled.Store(true)
	if err := f.SyncData(); err != nil {
		t.Fatalf("SyncData: %v", err)
	}
	if err := f.Sync(); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	if len(fake.calls) != 2 || fake.calls[0] || !fake.calls[1] {
		t.Fatalf("direct calls (full?) %v, want [false true]: SyncData is fdatasync, Sync is fsync", fake.calls)
	}
	if fake.fds[0] != f.Fd() {
		t.Fatalf("synced fd %d, want the file's %d", fake.fds[0], f.Fd())
	}
	if ws.direct.Load() != 2 || ws.ordinary.Load() != 1 {
		t.Fatalf("counters direct %d ordinary %d, want 2 and 1", ws.direct.Load(), ws.ordinary.Load())
	}
}

func TestWALSync_ErrorReachesTheCaller(t *testing.T) {
	ws, fake := newFakeWALSync(t)
	ws.enabled.Store(true)
	fake.err = syscall.EIO
	f := createIn(t, walSyncFS{FS: vfs.Default, ws: ws}, "000001.log")
	if err := f.SyncData(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("SyncData = %v, want EIO: Pebble must see a failed sync to stop", err)
	}
}

func TestWALSync_SlowSyncSuspendsDirectSyncs(t *testing.T) {
	ws, fake := newFakeWALSync(t)
	ws.enabled.Store(true)
	var reported time.Duration
	ws.onSlow = func(took time.Duration) { reported = took }
	f := createIn(t, walSyncFS{FS: vfs.Default, ws: ws}, "000001.log")

	fake.took = slowDirectSync + time.Millisecond
	if err := f.SyncData(); err != nil {
		t.Fatal(err)
	}
	if ws.slow.Load() != 1 || reported != fake.took {
		t.Fatalf("slow syncs %d, reported %v; want 1 and %v", ws.slow.Load(), reported, fake.took)
	}
	fake.took = 0
	// Suspended: the next syncs are ordinary, until the backoff has passed.
	*fake.clock = fake.clock.Add(directSyncBackoff - time.Millisecond)
	if err := f.SyncData(); err != nil {
		t.Fatal(err)
	}
	if len(fake.calls) != 1 || ws.ordinary.Load() != 1 {
		t.Fatalf("during the backoff: direct calls %d, ordinary %d; want 1 and 1", len(fake.calls), ws.ordinary.Load())
	}
	*fake.clock = fake.clock.Add(time.Millisecond)
	if err := f.SyncData(); err != nil {
		t.Fatal(err)
	}
	if len(fake.calls) != 2 {
		t.Fatalf("after the backoff: direct calls %d, want 2", len(fake.calls))
	}
}

// Every sync's time is summed, direct or ordinary, and only its own: INFO's
// log_wal_sync_usec_total is the disk's share of the appends.
func TestWALSync_TimeIsSummed(t *testing.T) {
	ws, fake := newFakeWALSync(t)
	f := createIn(t, walSyncFS{FS: vfs.Default, ws: ws}, "000001.log")

	ws.enabled.Store(true)
	fake.took = 300 * time.Microsecond
	for range 2 {
		if err := f.SyncData(); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := time.Duration(ws.syncNanos.Load()), 600*time.Microsecond; got != want {
		t.Fatalf("after two direct syncs of 300µs: %v summed, want %v", got, want)
	}
	// An ordinary sync is timed by the same clock; the fake one stands
	// still through the real fdatasync, so it adds nothing here, and a clock
	// stepped backwards during a sync must not wrap the sum.
	ws.enabled.Store(false)
	ws.now = func() time.Time { *fake.clock = fake.clock.Add(-time.Second); return *fake.clock }
	if err := f.SyncData(); err != nil {
		t.Fatal(err)
	}
	if got := time.Duration(ws.syncNanos.Load()); got != 600*time.Microsecond {
		t.Fatalf("after a sync whose clock went backwards: %v summed, want it unchanged", got)
	}
	if ws.ordinary.Load() != 1 || ws.direct.Load() != 2 {
		t.Fatalf("counters direct %d ordinary %d, want 2 and 1", ws.direct.Load(), ws.ordinary.Load())
	}
}

// Options.AfterWALSync runs once after every WAL sync, told which kind it
// was, and its time counts as the sync's: a benchmark that sleeps in it
// shows in INFO as a slower disk.
func TestWALSync_AfterSyncHookIsPartOfTheSync(t *testing.T) {
	ws, fake := newFakeWALSync(t)
	var kinds []bool
	ws.afterSync = func(direct bool) {
		kinds = append(kinds, direct)
		*fake.clock = fake.clock.Add(time.Millisecond)
	}
	f := createIn(t, walSyncFS{FS: vfs.Default, ws: ws}, "000001.log")
	if err := f.SyncData(); err != nil {
		t.Fatal(err)
	}
	ws.enabled.Store(true)
	if err := f.SyncData(); err != nil {
		t.Fatal(err)
	}
	if len(kinds) != 2 || kinds[0] || !kinds[1] {
		t.Fatalf("hook calls (direct?) %v, want [false true]", kinds)
	}
	if got := time.Duration(ws.syncNanos.Load()); got != 2*time.Millisecond {
		t.Fatalf("two syncs with the hook's 1ms each: %v summed, want 2ms", got)
	}
	// Only WAL files are wrapped, so only their syncs run it.
	if err := createIn(t, walSyncFS{FS: vfs.Default, ws: ws}, "MANIFEST-000001").Sync(); err != nil {
		t.Fatal(err)
	}
	if len(kinds) != 2 {
		t.Fatalf("a MANIFEST sync ran the hook: %v", kinds)
	}
}

// The real direct sync: it syncs an open file and reports the kernel's error
// for a bad descriptor.
func TestRawSync(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "x"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("data")); err != nil {
		t.Fatal(err)
	}
	for _, full := range []bool{false, true} {
		if err := rawSync(f.Fd(), full); err != nil {
			t.Fatalf("rawSync(full=%v): %v", full, err)
		}
	}
	fd := f.Fd()
	_ = f.Close()
	if err := rawSync(fd, false); !errors.Is(err, syscall.EBADF) {
		t.Fatalf("rawSync of a closed fd = %v, want EBADF", err)
	}
}

// Through a real store: appends sync the WAL directly once the switch is on,
// and what they stored is there after a reopen.
func TestStore_DirectWALSync(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, Options{})
	if st := s.WALStats(); st.DirectWALSyncOn || st.DirectWALSyncs != 0 {
		t.Fatalf("after Open: %+v; want direct syncs off and none made", st)
	}
	if err := s.StoreLogs(testEntries(1, 10)); err != nil {
		t.Fatal(err)
	}
	s.SetDirectWALSync(true)
	if err := s.StoreLogs(testEntries(11, 20)); err != nil {
		t.Fatal(err)
	}
	st := s.WALStats()
	if !st.DirectWALSyncOn || st.DirectWALSyncs == 0 || st.OrdinaryWALSyncs == 0 {
		t.Fatalf("stats %+v: want an ordinary sync before the switch and a direct one after", st)
	}
	if st.WALSyncTime <= 0 {
		t.Fatalf("stats %+v: real syncs took no time", st)
	}
	s = reopen(t, s, dir, Options{})
	checkBounds(t, s, 1, 20)
	for i := uint64(1); i <= 20; i++ {
		checkEntry(t, s, i)
	}
}

// Through a real store: Options.AfterWALSync reaches every append's sync.
func TestStore_AfterWALSync(t *testing.T) {
	var calls atomic.Int64
	s := openStore(t, t.TempDir(), Options{AfterWALSync: func(bool) { calls.Add(1) }})
	before := calls.Load()
	for i := uint64(1); i <= 3; i++ {
		if err := s.StoreLogs(testEntries(i, i)); err != nil {
			t.Fatal(err)
		}
	}
	if got := calls.Load() - before; got < 3 {
		t.Fatalf("3 appends ran the hook %d times, want at least 3 (one sync each)", got)
	}
}

// The WAL is shared: direct syncs are on only while every group opened in
// the database votes for them, and off as soon as one group stops voting
// or a group that has not voted is opened.
func TestDB_DirectWALSyncNeedsEveryGroupsVote(t *testing.T) {
	d, err := OpenDB(t.TempDir(), Options{Logger: quietLogger})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	g0, err := d.Group(0)
	if err != nil {
		t.Fatal(err)
	}
	g0.SetDirectWALSync(true)
	if !g0.WALStats().DirectWALSyncOn {
		t.Fatal("one group alone, voting: direct syncs off")
	}
	g1, err := d.Group(1)
	if err != nil {
		t.Fatal(err)
	}
	if g0.WALStats().DirectWALSyncOn {
		t.Fatal("group 1 opened without a vote: direct syncs still on")
	}
	g1.SetDirectWALSync(false)
	if g0.WALStats().DirectWALSyncOn {
		t.Fatal("group 1 votes against: direct syncs still on")
	}
	g1.SetDirectWALSync(true)
	if !g0.WALStats().DirectWALSyncOn || !g1.WALStats().DirectWALSyncOn {
		t.Fatal("both groups vote for: direct syncs off")
	}
	g0.SetDirectWALSync(false)
	if g1.WALStats().DirectWALSyncOn {
		t.Fatal("group 0 withdrew its vote: direct syncs still on")
	}
}
