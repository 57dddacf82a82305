package raftstore

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/hashicorp/raft"
)

// snapshotChunkSize is how much snapshot data one chunk (one Pebble value,
// one checksum, one batch) holds. 1 MiB keeps a sink's memory to about two
// chunks, stays below Pebble's large-batch threshold (half a memtable), and
// makes the per-chunk overhead (a 29-byte key, 5-byte header, one commit)
// negligible.
const snapshotChunkSize = 1 << 20

// snapshotStore is the raft.SnapshotStore over a Store's database. Several
// may exist for one Store; they share its bookkeeping.
type snapshotStore struct {
	s      *Store
	retain int
}

// SnapshotStore returns a raft.SnapshotStore keeping the newest retain
// snapshots in the same Pebble DB. retain below 1 is taken as 1 (hashicorp's
// file store refuses it; this signature has no error to return).
//
// Raft calls Create and the sink from its snapshot goroutine (local
// snapshots) or its main goroutine (a snapshot installed from the leader),
// possibly both at once; List and Open from either, and the reader from a
// replication goroutine while sending a snapshot to a follower. All of that
// may run concurrently. A single sink or reader must be used by one goroutine
// at a time.
func (s *Store) SnapshotStore(retain int) raft.SnapshotStore {
	if retain < 1 {
		s.logger.Warn("snapshot retain below 1, keeping 1", "retain", retain)
		retain = 1
	}
	return &snapshotStore{s: s, retain: retain}
}

// snapshotRegistry is the Store's in-memory bookkeeping for snapshots.
type snapshotRegistry struct {
	mu sync.Mutex
	// lastMS is the creation time of the last ID handed out; IDs take
	// max(now, lastMS+1) so two snapshots made in the same millisecond (or
	// across a clock step back) never share a name.
	lastMS uint64
	// writing holds the IDs of sinks not yet closed or cancelled: their
	// chunks have no metadata yet and must not be mistaken for orphans.
	writing map[snapshotID]struct{}
	// readers holds the open readers so that Store.Close can release their
	// Pebble snapshots.
	readers map[*snapshotReader]struct{}

	// reapMu serialises reaping so that two sinks closing at once do not
	// race over the same deletions.
	reapMu sync.Mutex
}

func (r *snapshotRegistry) init() {
	r.writing = make(map[snapshotID]struct{})
	r.readers = make(map[*snapshotReader]struct{})
}

func (r *snapshotRegistry) isWriting(id snapshotID) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.writing[id]
	return ok
}

func (r *snapshotRegistry) doneWriting(id snapshotID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.writing, id)
}

// closeReaders closes the Pebble snapshots of all open readers. Called by
// Store.Close with the lifecycle lock held exclusively, so no Read is running.
func (r *snapshotRegistry) closeReaders() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for rd := range r.readers {
		_ = rd.snap.Close()
		delete(r.readers, rd)
	}
}

// removeReader closes rd's Pebble snapshot unless Store.Close already did.
func (r *snapshotRegistry) removeReader(rd *snapshotReader) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.readers[rd]; !ok {
		return nil
	}
	delete(r.readers, rd)
	return rd.snap.Close()
}

// Create starts a snapshot and returns its sink. Only raft's snapshot version
// 1 is supported (as in hashicorp's file store). Nothing is visible to List
// or Open until the sink's Close has committed the metadata.
func (ss *snapshotStore) Create(version raft.SnapshotVersion, index, term uint64,
	configuration raft.Configuration, configurationIndex uint64, _ raft.Transport) (raft.SnapshotSink, error) {
	if version != 1 {
		return nil, fmt.Errorf("raftstore: unsupported snapshot version %d", version)
	}
	s := ss.s
	if err := s.acquire(); err != nil {
		return nil, err
	}
	defer s.release()

	id, err := s.newSnapshotID(term, index)
	if err != nil {
		return nil, err
	}
	sink := newSnapshotSink(ss, id, storedSnapshotMeta{SnapshotMeta: raft.SnapshotMeta{
		Version:            version,
		ID:                 id.String(),
		Index:              index,
		Term:               term,
		Configuration:      configuration.Clone(),
		ConfigurationIndex: configurationIndex,
		// Peers is raft's pre-version-1 field, read only for version 0
		// snapshots, which Create refuses; it stays empty.
	}})
	s.logger.Info("creating snapshot", "id", sink.ID())
	return sink, nil
}

// newSnapshotID names a new snapshot and registers it as being written.
func (s *Store) newSnapshotID(term, index uint64) (snapshotID, error) {
	r := &s.snaps
	r.mu.Lock()
	defer r.mu.Unlock()
	ms := uint64(time.Now().UnixMilli())
	for {
		if ms <= r.lastMS {
			ms = r.lastMS + 1
		}
		r.lastMS = ms
		id := snapshotID{Term: term, Index: index, MS: ms}
		if _, busy := r.writing[id]; busy {
			continue
		}
		// A snapshot of a previous run can carry the same name if the clock
		// went back; never overwrite one.
		exists, err := s.hasSnapshotMeta(s.db, id)
		if err != nil {
			return snapshotID{}, err
		}
		if exists {
			continue
		}
		r.writing[id] = struct{}{}
		return id, nil
	}
}

// pebbleReader is what the snapshot code reads through: the live DB, or a
// Pebble snapshot pinned by a reader.
type pebbleReader interface {
	Get(key []byte) ([]byte, io.Closer, error)
	NewIter(o *pebble.IterOptions) (*pebble.Iterator, error)
}

func (s *Store) hasSnapshotMeta(r pebbleReader, id snapshotID) (bool, error) {
	_, closer, err := r.Get(s.snapMetaKey(id))
	if errors.Is(err, pebble.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("raftstore: look up snapshot %s: %w", id, err)
	}
	return true, closer.Close()
}

// List returns the newest retained snapshots, newest (highest term, then
// index, then creation time) first, at most retain of them. A metadata record
// that fails its checksum or has an unknown version is an error, not skipped:
// silently falling back to an older snapshot after the log behind the newer
// one was compacted would replay an incomplete history.
func (ss *snapshotStore) List() ([]*raft.SnapshotMeta, error) {
	s := ss.s
	if err := s.acquire(); err != nil {
		return nil, err
	}
	defer s.release()
	metas, err := s.listSnapshots(s.db, ss.retain)
	if err != nil {
		return nil, err
	}
	out := make([]*raft.SnapshotMeta, len(metas))
	for i, m := range metas {
		out[i] = &m.SnapshotMeta
	}
	return out, nil
}

// listSnapshots decodes up to limit snapshot metadata records, newest first.
func (s *Store) listSnapshots(r pebbleReader, limit int) ([]*storedSnapshotMeta, error) {
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: s.snapMetaLower, UpperBound: s.snapMetaUpper})
	if err != nil {
		return nil, fmt.Errorf("raftstore: list snapshots: %w", err)
	}
	var metas []*storedSnapshotMeta
	for ok := it.Last(); ok && len(metas) < limit; ok = it.Prev() {
		var id snapshotID
		var m *storedSnapshotMeta
		id, err = s.parseSnapMetaKey(it.Key())
		if err == nil {
			var val []byte
			val, err = it.ValueAndErr()
			if err == nil {
				m, err = decodeSnapshotMeta(id, val)
			}
		}
		if err != nil {
			err = fmt.Errorf("raftstore: list snapshots: %w", err)
			break
		}
		metas = append(metas, m)
	}
	if err == nil {
		err = it.Error()
	}
	if cerr := it.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	return metas, nil
}

// Open returns the metadata of snapshot id and a reader of its data. The
// reader sees the snapshot as it was at Open even if it is reaped meanwhile
// (it reads from a Pebble snapshot), verifies each chunk's checksum as it
// reads it, and fails with an error rather than return corrupt or short data.
// The caller must Close it: until then Pebble keeps the data alive.
func (ss *snapshotStore) Open(idStr string) (*raft.SnapshotMeta, io.ReadCloser, error) {
	id, err := parseSnapshotID(idStr)
	if err != nil {
		return nil, nil, err
	}
	s := ss.s
	if err := s.acquire(); err != nil {
		return nil, nil, err
	}
	defer s.release()

	snap := s.db.NewSnapshot()
	val, closer, err := snap.Get(s.snapMetaKey(id))
	if err != nil {
		_ = snap.Close()
		if errors.Is(err, pebble.ErrNotFound) {
			return nil, nil, fmt.Errorf("raftstore: snapshot %s not found", idStr)
		}
		return nil, nil, fmt.Errorf("raftstore: open snapshot %s: %w", idStr, err)
	}
	meta, err := decodeSnapshotMeta(id, val)
	_ = closer.Close()
	if err != nil {
		_ = snap.Close()
		return nil, nil, fmt.Errorf("raftstore: open snapshot %s: %w", idStr, err)
	}

	rd := &snapshotReader{s: s, snap: snap, id: id, meta: *meta}
	s.snaps.mu.Lock()
	s.snaps.readers[rd] = struct{}{}
	s.snaps.mu.Unlock()
	out := meta.SnapshotMeta
	return &out, rd, nil
}

// reap deletes the snapshots beyond the newest retain, and the chunks of
// snapshots that have no metadata and no running sink. Called after a sink's
// Close, with the lifecycle lock held shared. The deletes are not synced: if
// a crash loses them, the next reap (or the orphan sweep when the group is
// next opened) redoes them, and List never shows more than retain
// snapshots anyway.
func (ss *snapshotStore) reap() error {
	s := ss.s
	s.snaps.reapMu.Lock()
	defer s.snaps.reapMu.Unlock()

	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: s.snapMetaLower, UpperBound: s.snapMetaUpper})
	if err != nil {
		return fmt.Errorf("raftstore: reap snapshots: %w", err)
	}
	var old []snapshotID
	kept := 0
	for ok := it.Last(); ok; ok = it.Prev() {
		if kept < ss.retain {
			kept++
			continue
		}
		id, perr := s.parseSnapMetaKey(it.Key())
		if perr != nil {
			err = perr
			break
		}
		old = append(old, id)
	}
	if err == nil {
		err = it.Error()
	}
	if cerr := it.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("raftstore: reap snapshots: %w", err)
	}

	b := s.db.NewBatch()
	defer b.Close()
	for _, id := range old {
		// Metadata and chunks go in one batch, so a snapshot is never listed
		// with its chunks gone.
		lower, upper := s.snapChunkSpan(id)
		if err := b.Delete(s.snapMetaKey(id), nil); err != nil {
			return fmt.Errorf("raftstore: reap snapshot %s: %w", id, err)
		}
		if err := b.DeleteRange(lower, upper, nil); err != nil {
			return fmt.Errorf("raftstore: reap snapshot %s: %w", id, err)
		}
		s.logger.Info("reaping snapshot", "id", id.String())
	}
	if err := s.addOrphanChunkDeletes(b); err != nil {
		return err
	}
	if b.Empty() {
		return nil
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		return fmt.Errorf("raftstore: reap snapshots: %w", err)
	}
	return nil
}

// deleteOrphanChunks removes the chunks of snapshots that never got their
// metadata (the process died while writing them). Called by DB.Group.
func (s *Store) deleteOrphanChunks() error {
	b := s.db.NewBatch()
	defer b.Close()
	if err := s.addOrphanChunkDeletes(b); err != nil {
		return err
	}
	if b.Empty() {
		return nil
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		return fmt.Errorf("raftstore: delete orphaned snapshot chunks: %w", err)
	}
	return nil
}

// addOrphanChunkDeletes adds to b a range delete for the chunks of every
// snapshot that has neither metadata nor a running sink. It visits one key
// per snapshot (it seeks past each snapshot's chunk span).
func (s *Store) addOrphanChunkDeletes(b *pebble.Batch) error {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: s.snapChunkLower, UpperBound: s.snapChunkUpper})
	if err != nil {
		return fmt.Errorf("raftstore: scan snapshot chunks: %w", err)
	}
	for ok := it.First(); ok; {
		var id snapshotID
		id, _, err = s.parseSnapChunkKey(it.Key())
		if err != nil {
			break
		}
		lower, upper := s.snapChunkSpan(id)
		// Writing is checked before the metadata: a sink commits its
		// metadata before it deregisters, so a snapshot seen as not writing
		// either has its metadata by now or was abandoned.
		if !s.snaps.isWriting(id) {
			var exists bool
			exists, err = s.hasSnapshotMeta(s.db, id)
			if err != nil {
				break
			}
			if !exists {
				s.logger.Warn("deleting chunks of unfinished snapshot", "id", id.String())
				if err = b.DeleteRange(lower, upper, nil); err != nil {
					break
				}
			}
		}
		ok = it.SeekGE(upper)
	}
	if err == nil {
		err = it.Error()
	}
	if cerr := it.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("raftstore: scan snapshot chunks: %w", err)
	}
	return nil
}
