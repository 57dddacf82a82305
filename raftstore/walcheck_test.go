package raftstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/raft"
)

// writeLogs stores n entries one append (one fsync) at a time in a new store
// at dir, closes it, and returns the path of its WAL.
func writeLogs(t *testing.T, dir string, n int) string {
	t.Helper()
	s, err := Open(dir, Options{Logger: quietLogger})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= n; i++ {
		if err := s.StoreLogs([]*raft.Log{{Index: uint64(i), Term: 1, Type: raft.LogCommand, Data: []byte(fmt.Sprintf("entry %03d of the log", i))}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	wals, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	if len(wals) == 0 {
		t.Fatal("no WAL")
	}
	return wals[len(wals)-1] // the newest: the one the entries went to
}

// writtenLen is how much of a WAL file holds what Pebble wrote: the rest of
// a new WAL is the zeros it was filled with (walprefill.go).
func writtenLen(data []byte) int {
	n := len(data)
	for n > 0 && data[n-1] == 0 {
		n--
	}
	return n
}

func lastIndexOf(t *testing.T, dir string) uint64 {
	t.Helper()
	s, err := Open(dir, Options{Logger: quietLogger})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	defer s.Close()
	last, err := s.LastIndex()
	if err != nil {
		t.Fatal(err)
	}
	return last
}

// Four damaged bytes in the middle of the WAL, in entries that were synced
// and acknowledged: Pebble alone would replay up to the damage and drop the
// rest as a torn tail; the store refuses to open instead, naming the file
// and the offsets.
func TestWALCorruptionInSyncedDataRefusesToOpen(t *testing.T) {
	dir := t.TempDir()
	wal := writeLogs(t, dir, 50)
	data, err := os.ReadFile(wal)
	if err != nil {
		t.Fatal(err)
	}
	mid := writtenLen(data) / 2
	copy(data[mid:], []byte{0xde, 0xad, 0xbe, 0xef})
	if err := os.WriteFile(wal, data, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Open(dir, Options{Logger: quietLogger})
	if !errors.Is(err, ErrCorruptWAL) {
		t.Fatalf("open of a WAL damaged in synced data: %v; want ErrCorruptWAL", err)
	}
	t.Log(err)
}

// A torn tail — the last write cut short, or garbage after it — is what a
// crash during an unacknowledged append leaves: the store opens and the log
// ends at the last whole entry.
func TestWALTornTailOpens(t *testing.T) {
	for _, tc := range []struct {
		name string
		tear func([]byte) []byte
		want uint64
	}{
		{"intact", func(b []byte) []byte { return b }, 50},
		{"last write cut short", func(b []byte) []byte { return b[:len(b)-5] }, 49},
		{"last write's payload damaged", func(b []byte) []byte { b[len(b)-3] ^= 0xff; return b }, 49},
		{"zeroes after the end", func(b []byte) []byte { return append(b, make([]byte, 4096)...) }, 50},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			wal := writeLogs(t, dir, 50)
			data, err := os.ReadFile(wal)
			if err != nil {
				t.Fatal(err)
			}
			// Tear what was written; the zero-fill after it stays.
			torn := tc.tear(data[:writtenLen(data):writtenLen(data)])
			torn = append(torn, make([]byte, max(0, len(data)-len(torn)))...)
			if err := os.WriteFile(wal, torn, 0o644); err != nil {
				t.Fatal(err)
			}
			if got := lastIndexOf(t, dir); got != tc.want && got != 50 {
				t.Fatalf("last index %d, want %d (or 50 if what was torn held no entry)", got, tc.want)
			}
		})
	}
}
