package raftstore

import (
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
	"github.com/hashicorp/raft"
)

// batchHeaderLen is the size of a Pebble batch's header (sequence number and
// count).
const batchHeaderLen = 12

// FirstIndex returns the index of the oldest stored entry, 0 if the log is
// empty. It reads a cached value and never touches Pebble.
func (s *Store) FirstIndex() (uint64, error) {
	if err := s.acquire(); err != nil {
		return 0, err
	}
	defer s.release()
	return s.firstIndex.Load(), nil
}

// LastIndex returns the index of the newest stored entry, 0 if the log is
// empty. It reads a cached value and never touches Pebble.
func (s *Store) LastIndex() (uint64, error) {
	if err := s.acquire(); err != nil {
		return 0, err
	}
	defer s.release()
	return s.lastIndex.Load(), nil
}

// GetLog reads the entry at index into log, or returns raft.ErrLogNotFound
// (unwrapped, raft compares with ==). The entry's Data and Extensions are
// copies owned by the caller; they stay valid after the call. On any error
// log is left unchanged.
func (s *Store) GetLog(index uint64, log *raft.Log) error {
	if err := s.acquire(); err != nil {
		return err
	}
	defer s.release()

	key := s.logKey(index)
	val, closer, err := s.db.Get(key[:])
	if errors.Is(err, pebble.ErrNotFound) {
		return raft.ErrLogNotFound
	}
	if err != nil {
		return fmt.Errorf("raftstore: get log %d: %w", index, err)
	}
	var entry raft.Log
	err = decodeLog(val, &entry)
	// val is Pebble's memory and must not be touched after Close; decodeLog
	// has copied what it keeps.
	if cerr := closer.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("raftstore: decode log %d: %w", index, err)
	}
	if entry.Index != index {
		return fmt.Errorf("raftstore: log key %d holds entry with index %d", index, entry.Index)
	}
	*log = entry
	return nil
}

// AppendComing announces that this group's leader has just handed raft an
// entry, which raft's next StoreLogs on this store will write. While the
// database's groups share fsyncs (SetGroupCommit), a sync about to start
// waits briefly for the announced appends (groupcommit.go), so that the
// entries the groups cut after one sync all ride the next. A no-op
// otherwise. Any goroutine; an announcement nothing follows (leadership
// lost) is withdrawn by the store's next append, and costs at most one
// bounded wait meanwhile.
func (s *Store) AppendComing() {
	if s.groupCommit.Load() && s.coming.CompareAndSwap(false, true) {
		s.gsync.coming.Add(1)
	}
}

// StoreLog stores one entry; see StoreLogs.
func (s *Store) StoreLog(log *raft.Log) error {
	return s.StoreLogs([]*raft.Log{log})
}

// StoreLogs stores entries, overwriting any with the same index, as one Pebble
// batch committed with one fsync: when it returns nil all of them are durable,
// and after a crash either all or none are present. Called by raft's main
// goroutine; blocks for the fsync. The entries are encoded straight into the
// batch and not retained.
func (s *Store) StoreLogs(logs []*raft.Log) error {
	if len(logs) == 0 {
		return nil
	}
	if err := s.acquire(); err != nil {
		return err
	}
	defer s.release()

	// Size the batch up front so that a large append grows it once, not by
	// repeated doubling: per entry Pebble adds a kind byte and two varint
	// lengths (at most 5 bytes each here) to the key and value.
	size := batchHeaderLen
	for i, l := range logs {
		if l == nil {
			return fmt.Errorf("raftstore: append: entry %d of %d is nil", i, len(logs))
		}
		size += 1 + 5 + logKeyLen + 5 + encodedLogLen(l)
	}
	b := s.db.NewBatchWithSize(size)
	defer b.Close()
	var lo, hi, bytes uint64
	for i, l := range logs {
		n := encodedLogLen(l)
		op := b.SetDeferred(logKeyLen, n)
		s.putLogKey(op.Key, l.Index)
		encodeLog(op.Value, l)
		if err := op.Finish(); err != nil {
			return fmt.Errorf("raftstore: append: stage entry %d: %w", l.Index, err)
		}
		bytes += uint64(logKeyLen + n)
		if i == 0 || l.Index < lo {
			lo = l.Index
		}
		if l.Index > hi {
			hi = l.Index
		}
	}

	s.logMu.Lock()
	defer s.logMu.Unlock()
	if err := s.commitAnnounced(b, &s.coming); err != nil {
		return fmt.Errorf("raftstore: append entries %d..%d: %w", lo, hi, err)
	}
	if first := s.firstIndex.Load(); first == 0 || lo < first {
		s.firstIndex.Store(lo)
	}
	if hi > s.lastIndex.Load() {
		s.lastIndex.Store(hi)
	}
	s.stats.appends.Add(1)
	s.stats.entriesAppended.Add(uint64(len(logs)))
	s.stats.bytesAppended.Add(bytes)
	s.notifyAppend()
	return nil
}

// DeleteRange deletes the entries min..max inclusive with one Pebble range
// delete. Raft calls it from its snapshot goroutine to compact the log behind
// a snapshot (a prefix), after restoring a snapshot (everything), and from
// its main goroutine to drop a conflicting suffix before appending the
// leader's entries.
//
// The delete is synced like an append. It is rare (once per snapshot, or on a
// conflict), so the fsync costs nothing measurable, and in exchange what the
// store reported before a crash is what it reports after: a truncated suffix
// cannot reappear underneath entries appended later, and the cached bounds
// never disagree with the disk.
func (s *Store) DeleteRange(min, max uint64) error {
	if min > max {
		return nil
	}
	if err := s.acquire(); err != nil {
		return err
	}
	defer s.release()

	start := s.logKey(min)
	b := s.db.NewBatch()
	defer b.Close()
	if err := b.DeleteRange(start[:], s.logSpanEnd(max), nil); err != nil {
		return fmt.Errorf("raftstore: delete logs %d..%d: %w", min, max, err)
	}

	s.logMu.Lock()
	defer s.logMu.Unlock()
	if err := s.commit(b); err != nil {
		return fmt.Errorf("raftstore: delete logs %d..%d: %w", min, max, err)
	}
	// The range may have had gaps, so the new bounds are read back rather
	// than computed: two seeks, once per compaction.
	return s.loadLogBounds()
}

// IsMonotonic reports true: after restoring a snapshot, raft then deletes the
// whole log instead of relying on an index gap to mark the discontinuity.
// Deleting everything is one range delete here, so it is cheap, and the store
// never has to reason about stale entries below a snapshot.
func (s *Store) IsMonotonic() bool { return true }

// loadLogBounds sets the cached first and last index from Pebble. Called by
// Open and, under logMu, by DeleteRange.
func (s *Store) loadLogBounds() error {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: s.logLower, UpperBound: s.logUpper})
	if err != nil {
		return fmt.Errorf("raftstore: scan log bounds: %w", err)
	}
	var first, last uint64
	if it.First() {
		first, err = s.parseLogKey(it.Key())
		if err == nil && it.Last() {
			last, err = s.parseLogKey(it.Key())
		}
	}
	if err == nil {
		err = it.Error()
	}
	if cerr := it.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("raftstore: scan log bounds: %w", err)
	}
	s.firstIndex.Store(first)
	s.lastIndex.Store(last)
	return nil
}
