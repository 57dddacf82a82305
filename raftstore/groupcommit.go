package raftstore

import (
	"runtime"
	"sync"

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
}

// SetGroupCommit turns group commit across groups on or off (off after
// OpenDB). Package node turns it on for a node that runs several groups.
func (d *DB) SetGroupCommit(on bool) { d.groupCommit.Store(on) }

// syncWAL makes Pebble sync everything written to the WAL so far.
func syncWAL(db *pebble.DB) func() error {
	return func() error { return db.LogData(nil, pebble.Sync) }
}

// sync waits until an fsync of the WAL that began after the caller's write
// has completed; syncFn makes one.
func (s *groupSync) sync(syncFn func() error) error {
	s.mu.Lock()
	if s.cond == nil {
		s.cond = sync.NewCond(&s.mu)
	}
	s.asked++
	mine := s.asked
	for s.done < mine {
		if s.syncing {
			s.cond.Wait()
			continue
		}
		s.syncing = true
		s.mu.Unlock()
		runtime.Gosched() // the groups whose appends are ready write theirs first
		s.mu.Lock()
		upto := s.asked
		s.mu.Unlock()
		err := syncFn()
		s.mu.Lock()
		s.syncing = false
		if err != nil {
			s.cond.Broadcast()
			s.mu.Unlock()
			return err
		}
		s.done = max(s.done, upto)
		s.cond.Broadcast()
	}
	s.mu.Unlock()
	return nil
}
