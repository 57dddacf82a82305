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
		_ = s.sync(syncFn)
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
			_ = s.sync(syncFn)
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
