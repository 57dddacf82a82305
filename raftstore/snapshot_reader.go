package raftstore

import (
	"errors"
	"fmt"
	"io"

	"github.com/cockroachdb/pebble/v2"
)

// snapshotReader streams a snapshot's chunks from a Pebble snapshot taken at
// Open, verifying each chunk's checksum before handing out any of its bytes.
// At the end it checks that it read exactly the chunk count and byte size in
// the metadata, so a missing or truncated chunk is an error, never a short
// snapshot. Used by one goroutine at a time (raft's FSM restore, or a
// replication goroutine sending the snapshot to a follower).
type snapshotReader struct {
	s    *Store
	snap *pebble.Snapshot
	id   snapshotID
	meta storedSnapshotMeta

	buf   []byte // holds the current chunk's verified data, reused across chunks
	chunk []byte // the part of buf not yet returned
	seq   uint32 // next chunk to read
	read  int64  // bytes of chunks verified so far
	err   error  // sticky: once a read fails, every later read fails the same way

	closed bool
}

// Read fills p from the snapshot, loading and verifying at most one chunk.
func (r *snapshotReader) Read(p []byte) (int, error) {
	if r.closed {
		return 0, errors.New("raftstore: read of closed snapshot reader")
	}
	if r.err != nil {
		return 0, r.err
	}
	if len(r.chunk) == 0 {
		if err := r.nextChunk(); err != nil {
			r.err = err
			return 0, err
		}
	}
	n := copy(p, r.chunk)
	r.chunk = r.chunk[n:]
	return n, nil
}

// nextChunk loads chunk r.seq into r.chunk, or returns io.EOF after the last
// one once the totals check out.
func (r *snapshotReader) nextChunk() error {
	if r.seq == r.meta.Chunks {
		if r.read != r.meta.Size {
			return fmt.Errorf("raftstore: snapshot %s has %d bytes in %d chunks, metadata says %d",
				r.meta.ID, r.read, r.seq, r.meta.Size)
		}
		return io.EOF
	}
	if err := r.s.acquire(); err != nil {
		return err
	}
	defer r.s.release()

	key := r.s.snapChunkKey(r.id, r.seq)
	val, closer, err := r.snap.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return fmt.Errorf("raftstore: snapshot %s: chunk %d of %d is missing", r.meta.ID, r.seq, r.meta.Chunks)
	}
	if err != nil {
		return fmt.Errorf("raftstore: snapshot %s chunk %d: %w", r.meta.ID, r.seq, err)
	}
	data, err := decodeChunk(keyInGroup(key), val)
	if err == nil && r.read+int64(len(data)) > r.meta.Size {
		err = fmt.Errorf("raftstore: chunks exceed the size in the metadata (%d bytes)", r.meta.Size)
	}
	if err == nil {
		// val is Pebble's memory, valid only until closer.Close.
		r.buf = append(r.buf[:0], data...)
		r.chunk = r.buf
	}
	_ = closer.Close()
	if err != nil {
		return fmt.Errorf("raftstore: snapshot %s chunk %d: %w", r.meta.ID, r.seq, err)
	}
	r.seq++
	r.read += int64(len(data))
	return nil
}

// Close releases the Pebble snapshot (letting reaped data go). Idempotent.
func (r *snapshotReader) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	r.buf, r.chunk = nil, nil
	if err := r.s.snaps.removeReader(r); err != nil {
		return fmt.Errorf("raftstore: close snapshot %s: %w", r.meta.ID, err)
	}
	return nil
}
