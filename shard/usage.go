package shard

// indexSlotBytes is what a key costs in its stripe's index: one 8-byte
// slot (index.go), at the index's load factor about one more in empty
// slots, which Usage does not count.
const indexSlotBytes = 8

// Usage is the memory a live key takes in the store: its record in the
// arena (the fixed part its layout keeps, key, value region with its
// slack: record.go) and
// its index slot; false when the key is not live at now. It is MEMORY
// USAGE's figure (fsm/memory.go): what deleting the key would give back
// once the sweeper reclaims it, not counting the arena's fragmentation.
// Any goroutine; takes the stripe's read lock and copies nothing.
func (s *Store) Usage(key []byte, now int64) (int, bool) {
	h, st := s.locate(key)
	st.mu.RLock()
	defer st.mu.RUnlock()
	p, _, found := st.find(h, key)
	if !found {
		return 0, false
	}
	off := st.offsetAt(p)
	if readExpire(st.arena, off) <= now {
		return 0, false
	}
	_, end, _ := recordKey(st.arena, off)
	return end - off + indexSlotBytes, true
}
