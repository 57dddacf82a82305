package raftstore

import (
	"errors"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// errSinkClosed is returned by Write after Close or Cancel.
var errSinkClosed = errors.New("raftstore: snapshot sink already closed")

// snapshotSink streams one snapshot into the database as checksummed chunks.
// It holds at most one chunk in memory (plus the Pebble batch it is copied
// into): each full chunk is committed on its own, without fsync, as soon as
// it fills. Close writes the last chunk and then the metadata in a synced
// batch; since a synced Pebble commit makes every earlier write durable too,
// that one fsync covers the whole snapshot, and because the metadata comes
// last a snapshot interrupted at any point is never listed.
//
// Write, Close and Cancel are called by one goroutine (raft's snapshot
// goroutine via FSMSnapshot.Persist, or its main goroutine when installing a
// snapshot from the leader); the sink is not safe for concurrent use.
type snapshotSink struct {
	ss   *snapshotStore
	id   snapshotID
	meta storedSnapshotMeta

	buf   []byte        // pending data of the next chunk, cap snapshotChunkSize
	batch *pebble.Batch // reused for every chunk, so chunks do not each allocate
	seq   uint32        // sequence number of the next chunk
	size  int64         // bytes accepted by Write so far
	// mark is the store's BytesAppended when the sink was created: the log
	// appended after it is what a restart from this snapshot replays.
	mark uint64
	// began is when the sink was created: Close reports the time to a
	// durable snapshot (Options.ObserveSnapshot).
	began time.Time

	closed bool
}

func newSnapshotSink(ss *snapshotStore, id snapshotID, meta storedSnapshotMeta) *snapshotSink {
	return &snapshotSink{
		ss:    ss,
		id:    id,
		meta:  meta,
		mark:  ss.s.stats.bytesAppended.Load(),
		began: time.Now(),
		buf:   make([]byte, 0, snapshotChunkSize),
		batch: ss.s.db.NewBatch(pebble.WithMaxRetainedSizeBytes(snapshotChunkSize + snapChunkKeyLen + 64)),
	}
}

// ID returns the snapshot's ID ("term-index-ms"), valid for Open once Close
// has returned nil.
func (k *snapshotSink) ID() string { return k.meta.ID }

// Write appends p to the snapshot. It blocks while full chunks are
// committed. p is not retained.
func (k *snapshotSink) Write(p []byte) (int, error) {
	if k.closed {
		return 0, errSinkClosed
	}
	written := 0
	for len(p) > 0 {
		n := copy(k.buf[len(k.buf):cap(k.buf)], p)
		k.buf = k.buf[:len(k.buf)+n]
		p = p[n:]
		written += n
		k.size += int64(n)
		if len(k.buf) == cap(k.buf) {
			if err := k.flushChunk(); err != nil {
				return written, err
			}
		}
	}
	return written, nil
}

// flushChunk commits the buffered data as the next chunk, without fsync.
func (k *snapshotSink) flushChunk() error {
	if len(k.buf) == 0 {
		return nil
	}
	if k.seq == ^uint32(0) {
		return fmt.Errorf("raftstore: snapshot %s exceeds %d chunks", k.meta.ID, k.seq)
	}
	s := k.ss.s
	if err := s.acquire(); err != nil {
		return err
	}
	defer s.release()

	key := s.snapChunkKey(k.id, k.seq)
	op := k.batch.SetDeferred(len(key), snapChunkHeaderLen+len(k.buf))
	copy(op.Key, key)
	encodeChunk(op.Value, keyInGroup(key), k.buf)
	if err := op.Finish(); err != nil {
		return fmt.Errorf("raftstore: snapshot %s chunk %d: %w", k.meta.ID, k.seq, err)
	}
	if err := k.batch.Commit(pebble.NoSync); err != nil {
		return fmt.Errorf("raftstore: snapshot %s chunk %d: %w", k.meta.ID, k.seq, err)
	}
	k.batch.Reset()
	k.seq++
	k.buf = k.buf[:0]
	return nil
}

// Close finishes the snapshot: it commits the last chunk, then the metadata
// with fsync, and then reaps snapshots beyond the retain count. If it fails
// before the metadata is committed the chunks are deleted and the snapshot
// never existed. A second Close, or Close after Cancel, returns nil.
func (k *snapshotSink) Close() error {
	if k.closed {
		return nil
	}
	k.closed = true
	defer k.release()

	if err := k.finish(); err != nil {
		k.ss.s.logger.Error("failed to finish snapshot", "id", k.meta.ID, "error", err)
		if derr := k.deleteChunks(); derr != nil {
			k.ss.s.logger.Error("failed to delete chunks of failed snapshot", "id", k.meta.ID, "error", derr)
		}
		return err
	}
	k.ss.s.snaps.doneWriting(k.id)
	k.ss.s.noteSnapshot(k.mark, k.size, k.id.MS)
	if obs := k.ss.s.onSnapshot; obs != nil {
		obs(k.size, time.Since(k.began))
	}
	k.ss.s.logger.Info("snapshot complete", "id", k.meta.ID, "bytes", k.size, "chunks", k.seq)

	s := k.ss.s
	if err := s.acquire(); err != nil {
		// The snapshot is durable; only the reap is skipped, and the next
		// one catches up.
		return nil
	}
	defer s.release()
	if err := k.ss.reap(); err != nil {
		// The snapshot itself is safe; a failed reap is retried by the next.
		s.logger.Error("failed to reap old snapshots", "error", err)
	}
	return nil
}

// finish commits the last chunk and the metadata.
func (k *snapshotSink) finish() error {
	if err := k.flushChunk(); err != nil {
		return err
	}
	k.meta.Size = k.size
	k.meta.Chunks = k.seq
	s := k.ss.s
	if err := s.acquire(); err != nil {
		return err
	}
	defer s.release()
	k.batch.Reset()
	if err := k.batch.Set(s.snapMetaKey(k.id), encodeSnapshotMeta(&k.meta), nil); err != nil {
		return fmt.Errorf("raftstore: snapshot %s metadata: %w", k.meta.ID, err)
	}
	if err := s.commit(k.batch); err != nil {
		return fmt.Errorf("raftstore: snapshot %s metadata: %w", k.meta.ID, err)
	}
	return nil
}

// Cancel abandons the snapshot and deletes what was written of it. Raft calls
// it when the FSM fails to persist or the leader's stream breaks. Cancel after
// Close returns nil.
func (k *snapshotSink) Cancel() error {
	if k.closed {
		return nil
	}
	k.closed = true
	defer k.release()
	k.ss.s.logger.Info("cancelling snapshot", "id", k.meta.ID)
	return k.deleteChunks()
}

// deleteChunks range-deletes every chunk written so far. Not synced: if a
// crash loses the delete, the chunks have no metadata and are removed when
// the group is next opened (DB.Group).
func (k *snapshotSink) deleteChunks() error {
	s := k.ss.s
	if err := s.acquire(); err != nil {
		return err
	}
	defer s.release()
	lower, upper := s.snapChunkSpan(k.id)
	if err := s.db.DeleteRange(lower, upper, pebble.NoSync); err != nil {
		return fmt.Errorf("raftstore: delete chunks of snapshot %s: %w", k.meta.ID, err)
	}
	return nil
}

// release drops the sink's buffers and its registration as a running sink.
func (k *snapshotSink) release() {
	k.ss.s.snaps.doneWriting(k.id)
	k.buf = nil
	if k.batch != nil {
		_ = k.batch.Close()
		k.batch = nil
	}
}
