package raftstore

import (
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// The node span (keys.go) holds what belongs to the database as a whole
// rather than to one group: the marker that says which key layout the
// database is in, and the node-level records (NodeRecord).
//
// Key formats:
//
//	1  the first layout: one group, keys without a group prefix (a kind
//	   byte 0x01..0x04 first). No marker: a database without one that
//	   holds keys in 0x01..0x04 is in format 1.
//	2  the layout of keys.go: every group's keys start with its prefix;
//	   the marker 0x00 0x01 holds 2.
//
// Open migrates a format 1 database to format 2 once: its keys become
// group 0's, values unchanged (a key's part after the group prefix is the
// format 1 key, and a snapshot chunk's checksum covers only that part).
const formatGroups byte = 2

// migrateBatchBytes is how much one batch of a migration copies before it
// is committed, so that a migration holds a few MiB in memory however large
// the log and the snapshots are.
const migrateBatchBytes = 4 << 20

// migrate brings the database to formatGroups. Called by OpenDB before any
// group is opened.
//
// Crash safety: the copies are committed in batches without fsync into
// group 0's span, which nothing reads before the marker exists; the last
// batch writes the marker and range-deletes the format 1 keys, with fsync.
// A synced commit makes every earlier one durable too (one WAL, written in
// order), so after a crash the database holds either the format 1 keys and
// no marker (the copy is thrown away and redone) or the marker and the
// complete copy.
func (d *database) migrate() error {
	val, closer, err := d.db.Get(formatKey)
	if err == nil {
		format := byte(0)
		if len(val) == 1 {
			format = val[0]
		}
		_ = closer.Close()
		if format != formatGroups {
			return fmt.Errorf("raftstore: the database is in key format %d, and this version reads format %d only", format, formatGroups)
		}
		return nil
	}
	if !errors.Is(err, pebble.ErrNotFound) {
		return fmt.Errorf("raftstore: read the key format: %w", err)
	}

	g0 := newKeyspace(0)
	b := d.db.NewBatch()
	defer func() { _ = b.Close() }()
	// What an interrupted migration copied is redone from the start. (The
	// range deletes are written only where there are keys: a range
	// tombstone in the memtable costs every Get an allocation until it is
	// flushed.)
	copied, err := d.hasKeys(g0.groupLower, g0.groupUpper)
	if err != nil {
		return fmt.Errorf("raftstore: migrate to key format %d: %w", formatGroups, err)
	}
	if copied {
		if err := b.DeleteRange(g0.groupLower, g0.groupUpper, nil); err != nil {
			return fmt.Errorf("raftstore: migrate to key format %d: %w", formatGroups, err)
		}
	}
	it, err := d.db.NewIter(&pebble.IterOptions{LowerBound: legacySpanLower, UpperBound: legacySpanUpper})
	if err != nil {
		return fmt.Errorf("raftstore: migrate to key format %d: %w", formatGroups, err)
	}
	var keys, bytes int
	key := make([]byte, 0, 64)
	for ok := it.First(); ok; ok = it.Next() {
		var v []byte
		if v, err = it.ValueAndErr(); err != nil {
			break
		}
		key = append(append(key[:0], g0.prefix[:]...), it.Key()...)
		if err = b.Set(key, v, nil); err != nil {
			break
		}
		keys++
		bytes += len(key) + len(v)
		if b.Len() >= migrateBatchBytes {
			if err = b.Commit(pebble.NoSync); err != nil {
				break
			}
			b.Reset()
		}
	}
	if err == nil {
		err = it.Error()
	}
	if cerr := it.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("raftstore: migrate to key format %d: %w", formatGroups, err)
	}
	if keys > 0 {
		d.logger.Info("migrated the Raft store to the key layout with group IDs: its state is group 0's", "keys", keys, "bytes", bytes)
		if err := b.DeleteRange(legacySpanLower, legacySpanUpper, nil); err != nil {
			return fmt.Errorf("raftstore: migrate to key format %d: %w", formatGroups, err)
		}
	}
	if err := b.Set(formatKey, []byte{formatGroups}, nil); err != nil {
		return fmt.Errorf("raftstore: migrate to key format %d: %w", formatGroups, err)
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return fmt.Errorf("raftstore: migrate to key format %d: %w", formatGroups, err)
	}
	return nil
}

// hasKeys reports whether the span [lower, upper) holds any key.
func (d *database) hasKeys(lower, upper []byte) (bool, error) {
	it, err := d.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return false, err
	}
	found := it.First()
	err = it.Error()
	if cerr := it.Close(); err == nil {
		err = cerr
	}
	return found, err
}

// NodeRecord returns a copy of the node-level record name, or
// (nil, ErrKeyNotFound). Node-level records belong to the node, not to any
// group: package node keeps the node's ID in one.
func (d *DB) NodeRecord(name string) ([]byte, error) {
	if err := d.acquire(); err != nil {
		return nil, err
	}
	defer d.release()
	val, closer, err := d.db.Get(nodeRecordKey(name))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, ErrKeyNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("raftstore: get node record %q: %w", name, err)
	}
	out := append([]byte{}, val...)
	if err := closer.Close(); err != nil {
		return nil, fmt.Errorf("raftstore: get node record %q: %w", name, err)
	}
	return out, nil
}

// SetNodeRecord stores val as the node-level record name, with fsync.
func (d *DB) SetNodeRecord(name string, val []byte) error {
	if err := d.acquire(); err != nil {
		return err
	}
	defer d.release()
	b := d.db.NewBatch()
	defer b.Close()
	if err := b.Set(nodeRecordKey(name), val, nil); err != nil {
		return fmt.Errorf("raftstore: set node record %q: %w", name, err)
	}
	if err := d.commit(b); err != nil {
		return fmt.Errorf("raftstore: set node record %q: %w", name, err)
	}
	return nil
}
