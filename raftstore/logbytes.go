package raftstore

import (
	"fmt"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
)

// Log bytes since the newest snapshot (Stats.LogBytesSinceSnapshot) are what
// a restart replays on top of that snapshot, so package group takes a
// snapshot when they grow past a threshold. The count is kept as
//
//	LogBytesSinceSnapshot = BytesAppended - snapMark
//
// where snapMark is BytesAppended at the moment the newest completed
// snapshot was created (raft creates the sink right after the state machine
// captured its state, so the entries appended before that moment are, to
// within the few appended meanwhile, the ones the snapshot covers). When
// the group is opened there is no such moment: snapMark starts at minus the
// bytes of the entries after the newest snapshot's index, read from the log
// once, so a restart does not forget the log it has to replay.
//
// What the count does not follow: a suffix that raft truncates after a
// conflict stays counted (rare, and only brings the next snapshot forward),
// and the log after a snapshot installed from a leader is counted from the
// snapshot's creation here, which is when the transfer began.

// loadLogBytes initialises the snapshot statistics from the database: the
// newest snapshot's size, and the bytes of the log after its index.
func (s *Store) loadLogBytes() error {
	metas, err := s.listSnapshots(s.db, 1)
	if err != nil {
		return err
	}
	var after uint64 // first log index not covered by the newest snapshot
	if len(metas) > 0 {
		after = metas[0].Index + 1
		s.stats.lastSnapBytes = uint64(metas[0].Size)
		if id, err := parseSnapshotID(metas[0].ID); err == nil {
			s.stats.lastSnapMS = id.MS
		}
	}
	lower := s.logKey(after)
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lower[:], UpperBound: s.logUpper})
	if err != nil {
		return fmt.Errorf("raftstore: measure the log: %w", err)
	}
	var bytes int64
	for ok := it.First(); ok; ok = it.Next() {
		lv := it.LazyValue()
		bytes += int64(len(it.Key()) + lv.Len())
	}
	err = it.Error()
	if cerr := it.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("raftstore: measure the log: %w", err)
	}
	s.stats.snapMark = -bytes
	return nil
}

// noteSnapshot records a completed snapshot of size bytes whose sink was
// created when BytesAppended was mark, at createdMS (Unix ms). A snapshot created before the newest
// one already recorded (two sinks at once: one taken here while one is
// received) does not move the mark back.
func (s *Store) noteSnapshot(mark uint64, size int64, createdMS uint64) {
	s.stats.snapMu.Lock()
	defer s.stats.snapMu.Unlock()
	if int64(mark) >= s.stats.snapMark {
		s.stats.snapMark = int64(mark)
		s.stats.lastSnapBytes = uint64(size)
		s.stats.lastSnapMS = createdMS
	}
	s.stats.snapshots++
}

// NotifyAppends makes every append that commits from now on send on ch
// without blocking (a full channel means a wake-up is already pending, which
// is as good as another). Give a channel with a buffer of one; nil stops the
// notifications. One receiver at a time: a later call replaces the earlier.
func (s *Store) NotifyAppends(ch chan<- struct{}) {
	if ch == nil {
		s.appendNotify.Store(nil)
		return
	}
	s.appendNotify.Store(&ch)
}

// notifyAppend wakes the receiver set by NotifyAppends, if any.
func (s *Store) notifyAppend() {
	if p := s.appendNotify.Load(); p != nil {
		select {
		case *p <- struct{}{}:
		default:
		}
	}
}

// appendNotifier is the field type behind NotifyAppends.
type appendNotifier = atomic.Pointer[chan<- struct{}]
