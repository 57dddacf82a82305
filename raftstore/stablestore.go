package raftstore

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// ErrKeyNotFound is what Get and GetUint64 return for a key never set. Its
// text must stay exactly "not found": hashicorp/raft recognises a missing
// current term or vote by comparing err.Error() with that string (it is also
// what raft-boltdb and raft's InmemStore.Get return), and treats any other
// error as a failure to start or to vote. Returned unwrapped.
var ErrKeyNotFound = errors.New("not found")

// Set stores val under key with fsync. raft calls Set, SetUint64, Get and
// GetUint64 from its main goroutine for the current term and the last vote;
// a vote must be durable before it is sent, hence the fsync. val is copied.
func (s *Store) Set(key, val []byte) error {
	if err := s.acquire(); err != nil {
		return err
	}
	defer s.release()
	b := s.db.NewBatch()
	defer b.Close()
	if err := b.Set(s.stableKey(key), val, nil); err != nil {
		return fmt.Errorf("raftstore: set %q: %w", key, err)
	}
	if err := s.commit(b); err != nil {
		return fmt.Errorf("raftstore: set %q: %w", key, err)
	}
	return nil
}

// Delete removes key, with fsync; deleting a key never set is not an
// error. raft never deletes a stable key; package node uses it to move a
// record it kept here before there were node-level records.
func (s *Store) Delete(key []byte) error {
	if err := s.acquire(); err != nil {
		return err
	}
	defer s.release()
	b := s.db.NewBatch()
	defer b.Close()
	if err := b.Delete(s.stableKey(key), nil); err != nil {
		return fmt.Errorf("raftstore: delete %q: %w", key, err)
	}
	if err := s.commit(b); err != nil {
		return fmt.Errorf("raftstore: delete %q: %w", key, err)
	}
	return nil
}

// Get returns a copy of the value stored under key, or (nil, ErrKeyNotFound).
// A key set to an empty value returns a non-nil empty slice.
func (s *Store) Get(key []byte) ([]byte, error) {
	if err := s.acquire(); err != nil {
		return nil, err
	}
	defer s.release()
	val, closer, err := s.db.Get(s.stableKey(key))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, ErrKeyNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("raftstore: get %q: %w", key, err)
	}
	out := make([]byte, len(val))
	copy(out, val)
	if err := closer.Close(); err != nil {
		return nil, fmt.Errorf("raftstore: get %q: %w", key, err)
	}
	return out, nil
}

// SetUint64 stores val under key as 8 big-endian bytes, with fsync. It shares
// the key space with Set, as in raft-boltdb.
func (s *Store) SetUint64(key []byte, val uint64) error {
	var buf [8]byte
	binary.BigEndian.PutUint64(buf[:], val)
	return s.Set(key, buf[:])
}

// GetUint64 returns the value SetUint64 stored under key, or
// (0, ErrKeyNotFound). A value that is not 8 bytes long (set with Set) is an
// error.
func (s *Store) GetUint64(key []byte) (uint64, error) {
	val, err := s.Get(key)
	if err != nil {
		return 0, err
	}
	if len(val) != 8 {
		return 0, fmt.Errorf("raftstore: value of %q is %d bytes, not a uint64", key, len(val))
	}
	return binary.BigEndian.Uint64(val), nil
}
