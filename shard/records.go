package shard

// Whole records, whatever their state: what a script's undo log saves and
// restores (fsm, deferred scripts), and what a script run beside the state
// machine copies in with its change marker. Unlike Get and GetValue, these
// see a record that is expired or a tombstone, and its Mark.

// Record returns the record of key, live or not, with its Mark and its
// value appended to buf[:0] (nil when it has none), and whether there is
// one. Any goroutine; takes the stripe's read lock.
func (s *Store) Record(key []byte, buf []byte) (State, bool) {
	return s.readRecord(key, buf, nil)
}

// Remove drops the record of key, leaving no tombstone: the key is as if it
// had never been written (Watch answers mark 0). Only for undoing a write
// of a key that had no record before it; Delete is the deletion a client
// makes. Writer goroutine only.
func (s *Store) Remove(key []byte) {
	h, st := s.locate(key)
	st.mu.Lock()
	defer st.mu.Unlock()
	if p, _, found := st.find(h, key); found {
		st.remove(p)
	}
}
