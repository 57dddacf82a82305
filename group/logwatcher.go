package group

import (
	"time"

	"github.com/hashicorp/raft"
)

// The log watcher: how the batcher (batcher.go) learns that an append of
// this group's log is durable.
//
// Raft is given this group's log store wrapped (watchedLogStore): after
// every durable append of command entries the wrapper counts them against
// the entries the proposer cut, folds the append's duration into the mean
// the straggler wait is sized by, and wakes runLogWatcher, which asks the
// batcher for the next cut. The cut cannot be made on raft's goroutine
// itself, which is the one that takes proposals in.

// runLogWatcher asks for a cut each time an append of this group's log
// becomes durable.
func (g *Group) runLogWatcher() {
	defer g.wg.Done()
	for {
		select {
		case <-g.batcher.wake:
			g.proposeQueued()
		case <-g.stopCh:
			return
		}
	}
}

// watchedLogStore is this group's log store as raft sees it: every durable
// append of command entries is reported to the batcher, and while the node has peers
// the newest entries are read back from recent (recentlogs.go). Everything
// else passes through.
type watchedLogStore struct {
	raft.LogStore
	batcher *batcher
	times   *commitTimes
	recent  *recentLogs
	own     []byte // this node's origin tag (fsm.SetOrigin)
}

// GetLog serves the entry from the recent entries when it is there.
func (w *watchedLogStore) GetLog(index uint64, log *raft.Log) error {
	if w.recent.get(index, log) {
		return nil
	}
	return w.LogStore.GetLog(index, log)
}

// DeleteRange forgets the entries in the cache first, so that no read finds
// there an entry the store no longer has once the delete returns.
func (w *watchedLogStore) DeleteRange(min, max uint64) error {
	w.recent.drop(min, max)
	return w.LogStore.DeleteRange(min, max)
}

// StoreLog is StoreLogs of one entry.
func (w *watchedLogStore) StoreLog(l *raft.Log) error {
	return w.StoreLogs([]*raft.Log{l})
}

// StoreLogs stores the entries (one fsync) and then reports them.
func (w *watchedLogStore) StoreLogs(logs []*raft.Log) error {
	start := time.Now()
	if err := w.LogStore.StoreLogs(logs); err != nil {
		return err
	}
	w.batcher.noteAppend(time.Since(start))
	w.recent.add(logs, w.own)
	var n uint64
	for _, l := range logs {
		if l.Type == raft.LogCommand {
			n++
		}
	}
	if n > 0 {
		w.times.stampDurable(w.batcher.appended(n))
	}
	return nil
}

// IsMonotonic forwards raft.MonotonicLogStore: raft asks it to decide
// whether a snapshot install may leave a gap in the log.
func (w *watchedLogStore) IsMonotonic() bool {
	m, ok := w.LogStore.(raft.MonotonicLogStore)
	return ok && m.IsMonotonic()
}
