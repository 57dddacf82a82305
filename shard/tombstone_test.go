package shard

import "testing"

// Change markers and tombstones: every write that is not Keep stamps its
// record; deletions, a Put of a gone state and BuryAll leave a tombstone
// that no reader sees but Watch and Snapshot, until Linger after it went.
func Test_Store_MarkersAndTombstones(t *testing.T) {
	s := New(4)
	k := []byte("k")
	watch := func(key string, now int64, live bool, mark uint64) {
		t.Helper()
		if l, m := s.Watch([]byte(key), now); l != live || m != mark {
			t.Fatalf("Watch(%s, %d) = %v %d, want %v %d", key, now, l, m, live, mark)
		}
	}
	s.SetStamp(7)
	s.Update(k, 100, putState(State{Kind: kindA, Expire: 1000}))
	watch("k", 100, true, 7)
	if st, _ := s.Get(k, 100); st.Mark != 7 {
		t.Fatalf("Get's Mark %d", st.Mark)
	}
	s.SetStamp(8)
	s.Update(k, 100, func(cur State, live bool) (State, Action) { return cur, Keep })
	s.Delete([]byte("absent"), 100)
	s.Update([]byte("absent"), 100, func(State, bool) (State, Action) { return State{}, Delete })
	watch("k", 100, true, 7) // Keep, and deleting what is not there, change nothing
	watch("absent", 100, false, 0)
	s.Update(k, 100, putState(State{Kind: kindB, Expire: 2000, Mark: 99})) // a given Mark is ignored
	watch("k", 100, true, 8)

	s.SetStamp(9)
	if !s.Delete(k, 150) {
		t.Fatal("Delete of a live key reported false")
	}
	watch("k", 150, false, 9)
	if _, live := s.Get(k, 150); live || s.Len(150) != 0 || s.Delete(k, 150) {
		t.Fatal("a tombstone is visible")
	}
	watch("k", 150, false, 9) // deleting it again changed nothing
	if st := s.Stats(); st.Entries != 1 {
		t.Fatalf("%d entries, want the tombstone", st.Entries)
	}
	// A Put of a state already gone: a tombstone, even for an absent key.
	s.SetStamp(10)
	s.Update([]byte("past"), 150, putState(State{Kind: kindA, Expire: 1}))
	watch("past", 150, false, 10)
	s.Put([]byte("renamed"), State{Kind: kindA, Expire: 1000, Mark: 3})
	watch("renamed", 150, true, 10)
	s.Load([]byte("loaded"), State{Kind: kindA, Expire: 1000, Mark: 3})
	watch("loaded", 150, true, 3)

	// BuryAll: every live key goes, stamped; gone ones keep their marker.
	s.SetStamp(11)
	s.BuryAll(200)
	watch("renamed", 200, false, 11)
	watch("loaded", 200, false, 11)
	watch("k", 200, false, 9)
	if s.Len(200) != 0 {
		t.Fatal("keys live after BuryAll")
	}

	// Snapshots keep gone records younger than Linger; the sweeper drops
	// them only Linger after they went.
	if sn := s.Snapshot(150 + Linger - 1); sn.Len() != 4 {
		t.Fatalf("snapshot just before k's Linger holds %d records, want 4", sn.Len())
	}
	if n := s.Sweep(150+Linger-1, 100); n != 0 {
		t.Fatalf("Sweep dropped %d records before Linger", n)
	}
	if n := s.Sweep(150+Linger, 100); n != 2 {
		t.Fatalf("Sweep at k's Linger dropped %d records, want k and past", n)
	}
	watch("k", 150+Linger, false, 0)
	if sn := s.Snapshot(200 + Linger); sn.Len() != 0 {
		t.Fatalf("snapshot after every Linger holds %d records", sn.Len())
	}
	s.checkInvariants(t)
}

// droppable is exact at the int64 extremes.
func Test_Droppable(t *testing.T) {
	for _, tt := range []struct {
		expire, now int64
		want        bool
	}{
		{0, Linger - 1, false}, {0, Linger, true}, {-1 << 63, 0, true}, {-1 << 63, -1<<63 + Linger - 1, false},
		{1<<63 - 1, 1<<63 - 1, false}, {5, 4, false}, {1<<63 - 1 - Linger, 1<<63 - 1, true},
	} {
		if got := droppable(tt.expire, tt.now); got != tt.want {
			t.Errorf("droppable(%d, %d) = %v", tt.expire, tt.now, got)
		}
	}
}
