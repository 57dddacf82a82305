package raftstore

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// Group commit across Raft groups.
//
// Every group's appends go through the database's one WAL. Pebble completes
// every commit queued during an fsync with the next one, but it starts an
// fsync the moment the first commit asks for it: the groups of a node,
// whose appends arrive microseconds apart, then mostly cost an fsync of
// their own. So while group commit is on (SetGroupCommit: a node of several
// groups), a synced commit is written without a sync and then waits for an
// fsync shared with every commit written before that fsync starts: the
// first commit to find no sync under way becomes the syncer, yields once so
// that the groups whose appends are ready write theirs first, and then
// syncs the WAL for all of them (an empty LogData record with Sync, which
// makes Pebble sync everything written before it). A commit written while a
// sync is under way waits behind it in Pebble's pipeline (commits are
// published in order), then asks, and rides the next.
//
// Durability is unchanged: a commit returns only once an fsync that began
// after it was written has completed. Goroutines: any, any number at once.
type groupSync struct {
	mu      sync.Mutex
	cond    *sync.Cond
	syncing bool
	asked   uint64 // commits written and waiting for a sync, counted as they ask
	done    uint64 // every commit counted up to here is synced

	// coming counts the stores whose group's leader has handed raft an
	// entry that its next append will write (Store.AppendComing), not yet
	// written: the appends a sync about to start should wait for.
	coming atomic.Int32
	// meanSync is a moving mean of syncFn's duration in nanoseconds
	// (guarded by mu): it bounds the wait for the coming appends.
	meanSync int64
	// maxWait is maxComingWait unless a test sets it.
	maxWait time.Duration
}

// SetGroupCommit turns group commit across groups on or off (off after
// OpenDB). Package node turns it on for a node that runs several groups.
func (d *DB) SetGroupCommit(on bool) { d.groupCommit.Store(on) }

// maxSyncYields bounds the yields a syncer makes waiting for commits that
// were not announced (a follower's appends, stable-store writes).
const maxSyncYields = 8

// maxComingWait bounds the wait for announced appends, whatever the
// syncs cost: past it a group's append rides the next sync.
const maxComingWait = 500 * time.Microsecond

// syncWAL makes Pebble sync everything written to the WAL so far.
func syncWAL(db *pebble.DB) func() error {
	return func() error { return db.LogData(nil, pebble.Sync) }
}

// sync waits until an fsync of the WAL that began after the caller's write
// has completed; syncFn makes one. coming, if not nil, is the caller's
// store's announcement (Store.AppendComing), withdrawn as the caller asks.
func (s *groupSync) sync(syncFn func() error, coming *atomic.Bool) error {
	s.mu.Lock()
	if s.cond == nil {
		s.cond = sync.NewCond(&s.mu)
	}
	s.asked++
	mine := s.asked
	if coming != nil && coming.CompareAndSwap(true, false) {
		s.coming.Add(-1)
	}
	for s.done < mine {
		if s.syncing {
			s.cond.Wait()
			continue
		}
		s.syncing = true
		upto := s.gather()
		s.mu.Unlock()
		start := time.Now()
		err := syncFn()
		took := time.Since(start)
		s.mu.Lock()
		s.syncing = false
		if err != nil {
			s.cond.Broadcast()
			s.mu.Unlock()
			return err
		}
		s.meanSync += (int64(took) - s.meanSync) / 8
		s.done = max(s.done, upto)
		s.cond.Broadcast()
	}
	s.mu.Unlock()
	return nil
}

// gather lets the groups whose appends are on their way write them before
// the sync starts, and returns the commits it will cover. It yields the
// processor (never sleeps) while an announced append has not been written,
// for at most half the mean sync (a wait longer than the sync it saves
// cannot pay) and maxComingWait, and then until two yields in a row saw no
// new commit (at most maxSyncYields): an append is several goroutine hops
// from the sync that made the group's previous one durable (the group's
// log watcher, its cut, raft's leader loop). Called and returns with mu
// held; releases it while yielding.
func (s *groupSync) gather() uint64 {
	upto := s.asked
	bound := s.maxWait
	if bound == 0 {
		bound = maxComingWait
	}
	limit := min(time.Duration(s.meanSync/2), bound)
	var start time.Time
	for quiet, n := 0, 0; ; {
		waiting := s.coming.Load() > 0
		if waiting {
			if start.IsZero() {
				start = time.Now()
			} else if time.Since(start) >= limit {
				waiting = false
			}
		}
		if !waiting && (quiet >= 2 || n >= maxSyncYields) {
			return upto
		}
		s.mu.Unlock()
		runtime.Gosched()
		s.mu.Lock()
		if !waiting {
			n++
		}
		if s.asked == upto {
			quiet++
		} else {
			quiet, upto = 0, s.asked
		}
	}
}
