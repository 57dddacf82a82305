package raftstore

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/redcell/redcell/slots"
)

// The protocol: callers that ask while a sync is under way are all covered
// by the one next sync; a caller returns only after a sync that began after
// it asked. Eight callers, the first sync held until the other seven ask:
// two syncs in all.
func TestGroupSyncSharesSyncs(t *testing.T) {
	var s groupSync
	var syncs atomic.Int32
	release := make(chan struct{})
	syncFn := func() error {
		if syncs.Add(1) == 1 {
			<-release
		}
		return nil
	}
	const callers = 8
	var wg sync.WaitGroup
	done := make([]atomic.Bool, callers)
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = s.sync(syncFn, nil)
		done[0].Store(true)
	}()
	waitAsked := func(n uint64) {
		deadline := time.Now().Add(10 * time.Second)
		for {
			s.mu.Lock()
			asked, syncing := s.asked, s.syncing
			s.mu.Unlock()
			if asked >= n && syncing {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("asked %d (want %d), syncing %v", asked, n, syncing)
			}
			time.Sleep(time.Millisecond) // polling a counter the callers raise
		}
	}
	waitAsked(1)
	for i := 1; i < callers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = s.sync(syncFn, nil)
			done[i].Store(true)
		}()
	}
	waitAsked(callers)
	for i := 1; i < callers; i++ {
		if done[i].Load() {
			t.Fatalf("caller %d returned before a sync that began after it asked", i)
		}
	}
	close(release)
	wg.Wait()
	if n := syncs.Load(); n != 2 {
		t.Fatalf("%d callers took %d syncs, want 2 (the held one, then one for the seven that asked during it)", callers, n)
	}
}

// An announced append is waited for: the syncer, with the announcement
// outstanding, does not sync until the announced writer has asked, and one
// sync covers both.
func TestGroupSyncWaitsForAnnouncedAppend(t *testing.T) {
	s := groupSync{meanSync: int64(time.Hour), maxWait: time.Hour}
	var syncs atomic.Int32
	syncFn := func() error { syncs.Add(1); return nil }
	var announced atomic.Bool
	announced.Store(true)
	s.coming.Add(1)
	first := make(chan error, 1)
	go func() { first <- s.sync(syncFn, nil) }()
	waitSyncer(t, &s)
	if err := s.sync(syncFn, &announced); err != nil {
		t.Fatal(err)
	}
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if n := syncs.Load(); n != 1 {
		t.Fatalf("the syncer and the announced append took %d syncs, want 1", n)
	}
	if announced.Load() || s.coming.Load() != 0 {
		t.Fatalf("announcement not withdrawn: flag %v, coming %d", announced.Load(), s.coming.Load())
	}
}

// An announcement nothing follows (leadership lost after the cut) holds a
// sync back for a bounded time only.
func TestGroupSyncAnnouncementWaitIsBounded(t *testing.T) {
	s := groupSync{meanSync: int64(time.Hour), maxWait: 20 * time.Millisecond}
	s.coming.Add(1)
	start := time.Now()
	if err := s.sync(func() error { return nil }, nil); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < 20*time.Millisecond || took > 10*time.Second {
		t.Fatalf("sync with an announcement that never came took %v, want the 20ms bound", took)
	}
}

// waitSyncer returns once a caller of s is the syncer, gathering.
func waitSyncer(t *testing.T, s *groupSync) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s.mu.Lock()
		syncing := s.syncing
		s.mu.Unlock()
		if syncing {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("no caller became the syncer")
		}
		time.Sleep(time.Millisecond) // polling a flag the caller raises
	}
}

// Through a real database: with group commit on, concurrent appends of
// eight groups all succeed and are there after a reopen.
func TestDB_GroupCommitIsDurable(t *testing.T) {
	const groups = 8
	dir := t.TempDir()
	d, err := OpenDB(dir, Options{Logger: quietLogger})
	if err != nil {
		t.Fatal(err)
	}
	d.SetGroupCommit(true)
	stores := make([]*Store, groups)
	for g := range stores {
		if stores[g], err = d.Group(slots.GroupID(g)); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, groups)
	for g := range stores {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := uint64(1); i <= 20 && errs[g] == nil; i++ {
				errs[g] = stores[g].StoreLogs([]*raft.Log{testEntry(i)})
			}
		}()
	}
	wg.Wait()
	for g, err := range errs {
		if err != nil {
			t.Fatalf("group %d's appends: %v", g, err)
		}
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if d, err = OpenDB(dir, Options{Logger: quietLogger}); err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for g := range groups {
		s, err := d.Group(slots.GroupID(g))
		if err != nil {
			t.Fatal(err)
		}
		for i := uint64(1); i <= 20; i++ {
			var got raft.Log
			if err := s.GetLog(i, &got); err != nil || !sameLog(&got, testEntry(i)) {
				t.Fatalf("group %d, entry %d after a reopen: %v", g, i, err)
			}
		}
	}
}
