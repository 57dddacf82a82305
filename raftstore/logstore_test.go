package raftstore

import (
	"errors"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/hashicorp/raft"
)

func TestLogStore_EmptyLogHasZeroBounds(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, Options{})
	checkBounds(t, s, 0, 0)
	s = reopen(t, s, dir, Options{})
	checkBounds(t, s, 0, 0)
}

func TestLogStore_GetLogOfMissingIndexIsErrLogNotFound(t *testing.T) {
	s := openStore(t, t.TempDir(), Options{})
	if err := s.StoreLogs(testEntries(5, 7)); err != nil {
		t.Fatal(err)
	}
	for _, idx := range []uint64{0, 1, 4, 8, ^uint64(0)} {
		got := raft.Log{Index: 999, Data: []byte("untouched")}
		// raft compares with ==, so the error must not be wrapped.
		if err := s.GetLog(idx, &got); err != raft.ErrLogNotFound {
			t.Fatalf("GetLog(%d) error = %v, want raft.ErrLogNotFound", idx, err)
		}
		if got.Index != 999 || string(got.Data) != "untouched" {
			t.Fatalf("GetLog(%d) modified its output on error: %+v", idx, got)
		}
	}
}

func TestLogStore_StoreLogThenGetLog(t *testing.T) {
	s := openStore(t, t.TempDir(), Options{})
	want := testEntry(1)
	if err := s.StoreLog(want); err != nil {
		t.Fatal(err)
	}
	checkBounds(t, s, 1, 1)
	checkEntry(t, s, 1)
}

// Every field of raft.Log must come back, including the edge values that a
// sloppy encoding loses: zero time, times outside the int64-nanosecond range,
// nil and empty payloads, the largest index.
func TestLogStore_EveryFieldRoundTrips(t *testing.T) {
	cases := []struct {
		name string
		log  raft.Log
	}{
		{"zero entry but index", raft.Log{Index: 1}},
		{"command", raft.Log{Index: 2, Term: 3, Type: raft.LogCommand, Data: []byte("set x"), AppendedAt: time.Unix(1_700_000_000, 123)}},
		{"configuration with extensions", raft.Log{Index: 3, Term: 1 << 40, Type: raft.LogConfiguration, Data: []byte{0, 1, 2}, Extensions: []byte("mw")}},
		{"noop without data", raft.Log{Index: 4, Term: 9, Type: raft.LogNoop}},
		{"barrier", raft.Log{Index: 5, Term: 9, Type: raft.LogBarrier}},
		{"time before 1678", raft.Log{Index: 6, AppendedAt: time.Date(1066, 10, 14, 9, 0, 0, 999_999_999, time.UTC)}},
		{"time after 2262", raft.Log{Index: 7, AppendedAt: time.Date(3000, 1, 1, 0, 0, 0, 1, time.UTC)}},
		{"unknown future type", raft.Log{Index: 8, Type: raft.LogType(200)}},
		{"large data", raft.Log{Index: 9, Data: make([]byte, 64<<10)}},
		{"largest index", raft.Log{Index: ^uint64(0), Term: ^uint64(0), Data: []byte("end")}},
	}
	dir := t.TempDir()
	s := openStore(t, dir, Options{})
	for _, c := range cases {
		if err := s.StoreLog(&c.log); err != nil {
			t.Fatalf("%s: StoreLog: %v", c.name, err)
		}
	}
	for round := 0; round < 2; round++ {
		for _, c := range cases {
			var got raft.Log
			if err := s.GetLog(c.log.Index, &got); err != nil {
				t.Fatalf("%s: GetLog: %v", c.name, err)
			}
			if !sameLog(&got, &c.log) {
				t.Fatalf("%s: got %+v, want %+v", c.name, got, c.log)
			}
			if c.log.AppendedAt.IsZero() && got.AppendedAt != (time.Time{}) {
				t.Fatalf("%s: zero AppendedAt came back as %v", c.name, got.AppendedAt)
			}
		}
		s = reopen(t, s, dir, Options{})
	}
	checkBounds(t, s, 1, ^uint64(0))
}

func TestLogStore_StoreLogsIsOneSyncedBatch(t *testing.T) {
	s := openStore(t, t.TempDir(), Options{})
	if err := s.StoreLogs(testEntries(1, 10)); err != nil {
		t.Fatal(err)
	}
	checkBounds(t, s, 1, 10)
	for i := uint64(1); i <= 10; i++ {
		checkEntry(t, s, i)
	}
	st := s.Stats()
	if st.Appends != 1 || st.EntriesAppended != 10 || s.WALStats().Syncs != 1 || st.BytesAppended == 0 {
		t.Fatalf("Stats after one StoreLogs of 10 = %+v, want 1 append, 10 entries, 1 sync, some bytes", st)
	}
	if err := s.StoreLogs(nil); err != nil {
		t.Fatalf("StoreLogs(nil): %v", err)
	}
	if got := s.Stats(); got != st {
		t.Fatalf("empty StoreLogs changed stats: %+v -> %+v", st, got)
	}
}

func TestLogStore_StoreLogsRejectsNilEntry(t *testing.T) {
	s := openStore(t, t.TempDir(), Options{})
	if err := s.StoreLogs([]*raft.Log{testEntry(1), nil}); err == nil {
		t.Fatal("StoreLogs with a nil entry succeeded")
	}
	// Nothing of the failed batch may be stored.
	checkBounds(t, s, 0, 0)
	if err := s.GetLog(1, new(raft.Log)); err != raft.ErrLogNotFound {
		t.Fatalf("entry of a rejected batch is visible: %v", err)
	}
}

func TestLogStore_NoSyncCountsNoSyncs(t *testing.T) {
	s := openStore(t, t.TempDir(), Options{NoSync: true})
	if err := s.StoreLogs(testEntries(1, 3)); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.Appends != 1 || st.EntriesAppended != 3 || s.WALStats().Syncs != 0 {
		t.Fatalf("Stats = %+v, want 1 append, 3 entries, 0 syncs", st)
	}
}

func TestLogStore_DeleteRange(t *testing.T) {
	cases := []struct {
		name              string
		min, max          uint64
		wantFirst, wantLa uint64
	}{
		{"prefix", 1, 4, 5, 10},
		{"suffix", 7, 10, 1, 6},
		{"middle", 4, 6, 1, 10},
		{"exactly all", 1, 10, 0, 0},
		{"superset of all", 0, ^uint64(0), 0, 0},
		{"prefix past the start", 0, 2, 3, 10},
		{"suffix past the end", 9, ^uint64(0), 1, 8},
		{"after the end", 11, 20, 1, 10},
		{"empty range", 5, 4, 1, 10},
		{"single first", 1, 1, 2, 10},
		{"single last", 10, 10, 1, 9},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			s := openStore(t, dir, Options{})
			if err := s.StoreLogs(testEntries(1, 10)); err != nil {
				t.Fatal(err)
			}
			if err := s.DeleteRange(c.min, c.max); err != nil {
				t.Fatalf("DeleteRange(%d, %d): %v", c.min, c.max, err)
			}
			check := func(s *Store) {
				t.Helper()
				checkBounds(t, s, c.wantFirst, c.wantLa)
				for i := uint64(1); i <= 10; i++ {
					deleted := c.min <= c.max && i >= c.min && i <= c.max
					var got raft.Log
					err := s.GetLog(i, &got)
					switch {
					case deleted && err != raft.ErrLogNotFound:
						t.Fatalf("GetLog(%d) after delete: err = %v, want ErrLogNotFound", i, err)
					case !deleted && err != nil:
						t.Fatalf("GetLog(%d) of a kept entry: %v", i, err)
					case !deleted && !sameLog(&got, testEntry(i)):
						t.Fatalf("GetLog(%d) = %+v after delete", i, got)
					}
				}
			}
			check(s)
			check(reopen(t, s, dir, Options{}))
		})
	}
}

// Raft on a follower drops a conflicting suffix and appends the leader's
// entries in its place; after a snapshot install it deletes everything and
// starts again past the snapshot. The cached bounds must follow both.
func TestLogStore_TruncateThenAppendAndRestartAfterDeleteAll(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, Options{})
	if err := s.StoreLogs(testEntries(1, 10)); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteRange(6, 10); err != nil {
		t.Fatal(err)
	}
	replacement := testEntries(6, 8)
	for _, l := range replacement {
		l.Term = 77
	}
	if err := s.StoreLogs(replacement); err != nil {
		t.Fatal(err)
	}
	checkBounds(t, s, 1, 8)
	var got raft.Log
	if err := s.GetLog(7, &got); err != nil || got.Term != 77 {
		t.Fatalf("GetLog(7) = %+v, %v; want the replacement with term 77", got, err)
	}
	if err := s.GetLog(9, &got); err != raft.ErrLogNotFound {
		t.Fatalf("GetLog(9) of a truncated entry: %v", err)
	}

	if err := s.DeleteRange(1, 8); err != nil {
		t.Fatal(err)
	}
	checkBounds(t, s, 0, 0)
	if err := s.StoreLogs(testEntries(501, 503)); err != nil {
		t.Fatal(err)
	}
	checkBounds(t, s, 501, 503)
	s = reopen(t, s, dir, Options{})
	checkBounds(t, s, 501, 503)
	checkEntry(t, s, 502)
}

// An entry's Data must not alias Pebble's memory: it must survive further
// reads, writes, flushes and compactions, and writing into it must not change
// the store.
func TestLogStore_GetLogResultOwnsItsMemory(t *testing.T) {
	s := openStore(t, t.TempDir(), Options{NoSync: true})
	if err := s.StoreLogs(testEntries(1, 100)); err != nil {
		t.Fatal(err)
	}
	var first raft.Log
	if err := s.GetLog(1, &first); err != nil {
		t.Fatal(err)
	}
	saved := append([]byte(nil), first.Data...)
	for i := uint64(2); i <= 100; i++ {
		var other raft.Log
		if err := s.GetLog(i, &other); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.StoreLogs(testEntries(101, 2000)); err != nil {
		t.Fatal(err)
	}
	if err := s.db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := s.db.Compact(t.Context(), []byte{0}, []byte{0xff}, true); err != nil {
		t.Fatal(err)
	}
	if string(first.Data) != string(saved) {
		t.Fatal("Data of an earlier GetLog changed after later store activity")
	}
	// Appending to Data must not spill into Extensions (they share one buffer).
	ext := append([]byte(nil), first.Extensions...)
	_ = append(first.Data, 0xEE, 0xEE, 0xEE, 0xEE)
	if string(first.Extensions) != string(ext) {
		t.Fatal("appending to Data overwrote Extensions")
	}
	first.Data[0] ^= 0xff
	checkEntry(t, s, 1)
}

func TestLogStore_ValueWithWrongIndexIsAnError(t *testing.T) {
	s := openStore(t, t.TempDir(), Options{})
	// Store entry 5's encoding under key 6, as a bug or a misplaced write would.
	l := testEntry(5)
	val := make([]byte, encodedLogLen(l))
	encodeLog(val, l)
	key := s.logKey(6)
	if err := s.db.Set(key[:], val, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	var got raft.Log
	if err := s.GetLog(6, &got); err == nil || errors.Is(err, raft.ErrLogNotFound) {
		t.Fatalf("GetLog of a misplaced entry: err = %v, want a corruption error", err)
	}
}

func TestLogStore_MethodsAfterCloseReturnErrClosed(t *testing.T) {
	s := openStore(t, t.TempDir(), Options{})
	if err := s.StoreLogs(testEntries(1, 2)); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	calls := map[string]func() error{
		"FirstIndex":  func() error { _, err := s.FirstIndex(); return err },
		"LastIndex":   func() error { _, err := s.LastIndex(); return err },
		"GetLog":      func() error { return s.GetLog(1, new(raft.Log)) },
		"StoreLog":    func() error { return s.StoreLog(testEntry(3)) },
		"DeleteRange": func() error { return s.DeleteRange(1, 1) },
		"Set":         func() error { return s.Set([]byte("k"), []byte("v")) },
		"Get":         func() error { _, err := s.Get([]byte("k")); return err },
		"SetUint64":   func() error { return s.SetUint64([]byte("k"), 1) },
		"GetUint64":   func() error { _, err := s.GetUint64([]byte("k")); return err },
		"List":        func() error { _, err := s.SnapshotStore(1).List(); return err },
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close: err = %v, want ErrClosed", name, err)
		}
	}
}
