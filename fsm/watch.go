package fsm

import "github.com/redcell/redcell/request"

// WriteWatcher learns which keys applied entries wrote: the server's
// client-side-caching tracker, which sends invalidations for them. It sees
// every write this node applies, whichever node's client sent it, so a
// client tracking keys on a follower hears of writes made through the
// leader or any other node.
//
// Goroutines: Watching and Written are called from raft's FSM goroutine
// (ApplyBatch, Restore) while the state machine holds its apply lock, so
// they must be quick and must not block: no network, no waiting on a
// connection. Watching is asked once per entry and should be one atomic
// load; when it answers false, apply collects nothing.
type WriteWatcher interface {
	Watching() bool
	// Written reports one applied entry's writes (or a restored snapshot,
	// flushed and no keys): flushed when the entry emptied the keyspace
	// (FLUSHALL) or replaced it, and the keys written after the last such
	// point, in entry order, possibly repeated. Every write request counts,
	// whether or not it changed the key's state (a refused decision
	// included): an extra invalidation is harmless, a missing one is not.
	// The keys alias the entry and a reused slice: copy what is kept.
	Written(keys [][]byte, flushed bool)
}

// WatchWrites makes w the watcher of every entry applied from now on (nil:
// none). Safe from any goroutine.
func (f *FSM) WatchWrites(w WriteWatcher) {
	if w == nil {
		f.watcher.Store(nil)
		return
	}
	f.watcher.Store(&w)
}

// watching returns the watcher when it wants this entry's keys.
func (f *FSM) watching() WriteWatcher {
	if p := f.watcher.Load(); p != nil && (*p).Watching() {
		return *p
	}
	return nil
}

// written collects the keys one applied write request names into the
// entry's list. Caller: the FSM goroutine, while a watcher is watching.
func (f *FSM) written(r *request.Request) {
	switch {
	case r.Code == request.FlushAll:
		f.watchFlushed = true
		clear(f.watchKeys)
		f.watchKeys = f.watchKeys[:0]
	default:
		r.ForEachKey(func(k []byte) { f.watchKeys = append(f.watchKeys, k) })
	}
}

// reportWritten hands the entry's keys to w and forgets them.
func (f *FSM) reportWritten(w WriteWatcher) {
	if len(f.watchKeys) > 0 || f.watchFlushed {
		w.Written(f.watchKeys, f.watchFlushed)
	}
	clear(f.watchKeys) // hold no reference into the entry
	f.watchKeys, f.watchFlushed = f.watchKeys[:0], false
}
