package shard

import (
	"fmt"
	"hash/maphash"
	"sync"
	"unsafe"
)

// stripeState is one lock stripe: an arena of records and the index over it.
//
// Invariants (checked by checkInvariants in the tests):
//   - every slot of idx points at a record that is not dead, and every record
//     of arena that is not dead is pointed at by exactly one slot;
//   - garbage is the total size of the dead records;
//   - fixed is the total prefix size of the records that are not dead;
//   - sweepPos is 0 or the offset of a record boundary in arena;
//   - after a removal the index is not sparse (reclaim shrank it).
//
// All fields are guarded by mu: the writer goroutine holds it exclusively to
// mutate, readers hold it shared.
type stripeState struct {
	mu       sync.RWMutex
	idx      index
	arena    []byte // records; len = bytes in use (live + dead)
	garbage  int    // bytes of dead records in arena
	fixed    int    // bytes of the live records' prefixes (layout byte, mark, fixed fields)
	sweepPos int    // where Sweep resumes in arena
	seed     maphash.Seed
}

// stripe pads stripeState to its own cache lines so that readers taking
// different stripes' read locks do not contend on a shared line.
type stripe struct {
	stripeState
	_ [(128 - unsafe.Sizeof(stripeState{})%128) % 128]byte
}

const (
	// smallArena is the size below which an arena doubles when it grows;
	// above it grows by 1/8, which keeps the unused tail of a large arena
	// at ~6% on average (each byte is copied ~8 times over the arena's
	// growth, a few ms per million keys).
	smallArena = 16 << 10
	minArena   = 256
)

// find looks key up. Caller holds mu (either mode).
func (st *stripe) find(h uint64, key []byte) (p, want uint64, found bool) {
	return st.idx.lookup(h, key, st.arena)
}

// offsetAt is the arena offset of the record in slot p.
func (st *stripe) offsetAt(p uint64) int { return int(st.idx.load(p) >> offShift) }

// insert adds key with state s. p and want come from a find that reported
// the key absent, with no change to the stripe since. Caller holds mu
// exclusively.
func (st *stripe) insert(h uint64, key []byte, s State, p, want uint64) {
	need := recordSize(len(key), s)
	rebuilt := false
	if len(st.arena)+need > cap(st.arena) {
		rebuilt = st.makeRoom(need)
	}
	if st.idx.homes == 0 || st.idx.full() {
		st.rebuildIndex(homesFor(st.idx.count + 1))
		rebuilt = true
	}
	if rebuilt {
		p, want = st.idx.freePosition(h) // the slots moved
	}
	off := len(st.arena)
	st.arena = appendRecord(st.arena, key, s) // fits: no allocation
	st.fixed += fixedLen(st.arena[off])
	if !st.idx.insertAt(p, want, off) {
		// A cluster would grow past maxDist: rebuild a larger index. The
		// rebuild scans the arena, which already holds the new record.
		st.rebuildIndex(st.idx.homes + st.idx.homes/4 + 1)
	}
}

// remove deletes the entry in slot p and reclaims memory when the stripe has
// become sparse. Caller holds mu exclusively.
func (st *stripe) remove(p uint64) {
	off := st.offsetAt(p)
	_, end, _ := recordKey(st.arena, off)
	markDead(st.arena, off)
	st.garbage += end - off
	st.fixed -= fixedLen(st.arena[off])
	st.idx.removeAt(p)
	st.reclaim()
}

// reclaim releases memory after removals: everything when the stripe is
// empty, the arena's dead half by compaction, an oversized index by a rebuild.
// Together these keep memory proportional to the live entries under churn.
func (st *stripe) reclaim() {
	if st.idx.count == 0 {
		st.clear()
		return
	}
	homes := st.idx.homes
	if st.idx.sparse() {
		homes = homesFor(st.idx.count)
	}
	if st.garbage*2 > len(st.arena) {
		live := len(st.arena) - st.garbage
		st.compact(make([]byte, 0, live+live/8), homes) // a smaller arena: release memory
	} else if homes != st.idx.homes {
		st.rebuildIndex(homes)
	}
}

// makeRoom makes cap(arena) >= len(arena)+need. When a fifth or more of the
// arena is garbage it compacts instead of growing: in place when that leaves
// 1/8 of the capacity free, else into a new arena with 1/4 headroom. Under
// steady churn the arena thus settles at ~1.25x the live bytes and cycles
// through in-place compactions without allocating. It reports whether it
// compacted, which rebuilds the index. Caller holds mu exclusively.
func (st *stripe) makeRoom(need int) (compacted bool) {
	used := len(st.arena)
	if st.garbage > 0 && st.garbage*5 >= used {
		live := used - st.garbage + need
		if live+live/8 <= cap(st.arena) {
			st.compact(st.arena[:0], st.idx.homes)
		} else {
			st.compact(make([]byte, 0, max(min(live+live/4, maxArena), live)), st.idx.homes)
		}
		return true
	}
	growth := used / 8
	if used < smallArena {
		growth = used
	}
	newCap := max(used+need, used+growth, minArena)
	if newCap > maxArena {
		newCap = used + need
		if newCap > maxArena {
			// Beyond what a slot can address. Reaching this takes ~50 GiB
			// of live records in one stripe (compaction runs first at 1/5
			// garbage): the process is out of memory for all practical
			// purposes, and New's caller should use more stripes.
			panic(fmt.Sprintf("shard: stripe arena would exceed %d bytes", maxArena))
		}
	}
	a := make([]byte, used, newCap)
	copy(a, st.arena)
	st.arena = a
	return false
}

// compact copies the live records to dst, which is empty and either a new
// arena or the current one (records only move towards the start, and copy
// handles the overlap), and rebuilds the index over it with homes home
// positions (the current number keeps the index array). Caller holds mu
// exclusively.
//
// The copy keeps arena order (runs of live records, one copy each), so the
// arena stays in insertion order. An earlier version copied in slot order to
// avoid rehashing; that sorted the arena by hash, Sweep's sequential scan
// then removed keys in hash order, and the survivors, all in one part of the
// hash space, overflowed every index rebuilt for their count.
func (st *stripe) compact(dst []byte, homes uint64) {
	a := dst
	run := 0 // start of the current run of live records
	for off := 0; off < len(st.arena); {
		_, end, dead := recordKey(st.arena, off)
		if dead {
			a = append(a, st.arena[run:off]...)
			run = end
		}
		off = end
	}
	st.arena = append(a, st.arena[run:]...)
	st.garbage = 0
	st.sweepPos = 0 // offsets changed; Sweep restarts this stripe
	st.rebuildIndex(homes)
}

// rebuildIndex replaces the index by one with (at least) homes home
// positions holding every live record of the arena. It scans the arena
// sequentially and rehashes each key: the index keeps only 5 bits of hash.
// Caller holds mu exclusively.
func (st *stripe) rebuildIndex(homes uint64) {
	for !st.tryRebuildIndex(homes) {
		homes += homes/4 + 1 // a cluster exceeded maxDist: rare, go bigger
	}
}

func (st *stripe) tryRebuildIndex(homes uint64) bool {
	st.idx.reset(homes)
	a := st.arena
	for off := 0; off < len(a); {
		key, end, dead := recordKey(a, off)
		if !dead {
			h := maphash.Bytes(st.seed, key)
			p, want := st.idx.freePosition(h)
			if !st.idx.insertAt(p, want, off) {
				return false
			}
		}
		off = end
	}
	return true
}

// clear drops every entry and all memory. Caller holds mu exclusively.
func (st *stripe) clear() {
	st.idx.release()
	st.arena = nil
	st.garbage = 0
	st.fixed = 0
	st.sweepPos = 0
}
