package shard

// Stats describes the Store's size for INFO and metrics. Byte counts are of
// the big arrays only (arenas and indexes), which is where the memory is.
// Everything but Stripes depends on layout and timing of sweeps: metrics
// only, never part of a reply that replicas must agree on.
type Stats struct {
	// Entries is the number of entries in the tables: live ones plus
	// gone ones (expired keys and tombstones) the sweeper has not dropped
	// yet (it may only Linger after they went).
	Entries int
	// ArenaBytes is the arena bytes in use: records of entries plus dead
	// records awaiting compaction (ArenaGarbage of them).
	ArenaBytes   int
	ArenaGarbage int
	// IndexBytes is the memory of the hash indexes.
	IndexBytes int
	// EntryBytes is the part of ArenaBytes holding the fixed parts of
	// Entries (layout byte, change marker and the fixed fields their form
	// keeps: 14 to 33 bytes each, record.go); keys, key headers and values
	// are the rest. In this layout states live inside the arena: do not
	// add it to ArenaBytes.
	EntryBytes int
	Stripes    int
	// ValueMoves counts the records moved since the Store was made because
	// their value outgrew its region (see DESIGN.md, "Values") or their
	// state no longer fit the record's layout (a B or a change marker
	// wider than it keeps, "Layout").
	ValueMoves uint64

	// ArenaCap is the memory allocated for arenas (ArenaBytes plus the
	// unused tail kept for growth).
	ArenaCap int
	// TotalBytes is ArenaCap + IndexBytes: what the Store holds on the heap,
	// besides a fixed ~128 bytes per stripe.
	TotalBytes int
}

// Stats sums the stripes, each under its read lock. Any goroutine.
func (s *Store) Stats() Stats {
	out := Stats{Stripes: len(s.stripes), ValueMoves: s.moves.Load()}
	for i := range s.stripes {
		st := &s.stripes[i]
		st.mu.RLock()
		out.Entries += st.idx.count
		out.ArenaBytes += len(st.arena)
		out.ArenaGarbage += st.garbage
		out.ArenaCap += cap(st.arena)
		out.IndexBytes += cap(st.idx.slots)
		out.EntryBytes += st.fixed
		st.mu.RUnlock()
	}
	out.TotalBytes = out.ArenaCap + out.IndexBytes
	return out
}
