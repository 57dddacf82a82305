package shard

import (
	"encoding/binary"
	"math"
)

// index is one stripe's hash index: Robin-Hood linear probing over packed
// 6-byte slots, mapping a key's hash to the arena offset of its record.
//
// A slot is 48 bits:
//
//	bits  0-6   probe distance + 1 (0 = empty slot)
//	bits  7-11  hash fragment (5 bits of the key's hash)
//	bits 12-47  arena offset of the record (36 bits: 64 GiB per stripe)
//
// Robin Hood keeps every cluster sorted by home position, so "stored distance
// == my distance" means "same home": together with the fragment it filters
// all but ~1/32 of the same-home neighbours before the arena is touched, and a
// lookup for an absent key stops as soon as it meets a slot closer to its
// home than the probe. Deletion shifts the rest of the cluster back one slot
// (no tombstones), so churn never degrades probing.
//
// Home positions are mapped with a multiply-shift ("fastrange") instead of a
// power-of-two mask, so the table can grow by 1.25x instead of 2x and the load
// stays between 0.7 and 0.875: the index costs ~7.5 bytes per key, not 12-16.
// There is no wrap-around: the table has homes+maxDist+2 slots, probes never
// run past the end, and an insertion that would push any entry further than
// maxDist from its home makes the stripe rebuild a larger index instead.
type index struct {
	slots   []byte // (homes+tail) slots of slotBytes, +2 bytes so every slot loads as a uint64
	homes   uint64 // number of home positions; 0 = no table allocated yet
	maxDist uint64 // largest probe distance stored; tail = maxDist+2 slots
	count   int    // occupied slots
}

const (
	slotBytes = 6
	slotMask  = 1<<48 - 1
	distBits  = 7
	distMask  = 1<<distBits - 1
	fragBits  = 5
	fragMask  = 1<<fragBits - 1
	metaBits  = distBits + fragBits
	metaMask  = 1<<metaBits - 1
	offShift  = metaBits

	// maxArena bounds an arena so that every offset fits a slot (and an
	// int, on 32-bit platforms).
	maxArena = min(1<<(48-offShift), math.MaxInt)
	// distLimit keeps distance+1 of the lookup probe (at most maxDist+2)
	// inside the 7-bit field, so a probe can never carry into the fragment.
	distLimit = distMask - 2

	minHomes = 8
	// The index grows when an insert would push the load over 7/8, and is
	// rebuilt at load 0.7; it shrinks when the load drops under 1/4.
	maxLoadNum, maxLoadDen = 7, 8
)

// homesFor is the index size that holds n entries at load 0.7.
func homesFor(n int) uint64 {
	h := uint64(n)*10/7 + 1
	if h < minHomes {
		h = minHomes
	}
	return h
}

// hashFragment is the part of the hash stored in a slot. The index uses the
// low 32 bits for the home position and the top bits choose the stripe, so
// bits 32-36 are independent of both.
func hashFragment(h uint64) uint64 { return (h >> 32) & fragMask }

// reset makes an empty table with the given number of home positions. It
// reuses the current array when the size is unchanged (a rebuild after
// compaction under steady churn), so churn does not feed the GC.
func (x *index) reset(homes uint64) {
	x.homes = homes
	x.maxDist = min(homes, distLimit)
	n := (homes+x.maxDist+2)*slotBytes + 2
	if uint64(len(x.slots)) == n {
		clear(x.slots)
	} else {
		x.slots = make([]byte, n)
	}
	x.count = 0
}

// release drops the table; the next insert allocates a fresh one.
func (x *index) release() { *x = index{} }

// full reports whether one more entry would exceed the maximum load.
func (x *index) full() bool {
	return uint64(x.count+1)*maxLoadDen > x.homes*maxLoadNum
}

// sparse reports whether the table is worth shrinking.
func (x *index) sparse() bool {
	return x.homes > 4*minHomes && uint64(x.count)*4 < x.homes
}

// nslots is the number of slots including the tail.
func (x *index) nslots() uint64 { return x.homes + x.maxDist + 2 }

func (x *index) home(h uint64) uint64 { return (uint64(uint32(h)) * x.homes) >> 32 }

func (x *index) load(p uint64) uint64 {
	return binary.LittleEndian.Uint64(x.slots[p*slotBytes:]) & slotMask
}

func (x *index) store(p, v uint64) {
	b := x.slots[p*slotBytes:]
	binary.LittleEndian.PutUint32(b, uint32(v))
	binary.LittleEndian.PutUint16(b[4:], uint16(v>>32))
}

// lookup finds key (hash h) whose records live in arena. If found, p is its
// slot. If not, p and want describe where it would be inserted: want is the
// slot's meta bits (distance+1 and fragment) for position p.
func (x *index) lookup(h uint64, key []byte, arena []byte) (p, want uint64, found bool) {
	want = 1 | hashFragment(h)<<distBits
	if x.count == 0 {
		return 0, want, false
	}
	p = x.home(h)
	for {
		s := x.load(p)
		if s&distMask < want&distMask {
			return p, want, false // empty, or an entry closer to its home: key absent
		}
		if s&metaMask == want && keyEqual(arena, int(s>>offShift), key) {
			return p, want, true
		}
		// Stored distances never exceed maxDist, so want's distance
		// (at most maxDist+2 <= distMask) ends the loop before the tail.
		p++
		want++
	}
}

// freePosition is lookup for a key known to be absent: no key comparisons.
func (x *index) freePosition(h uint64) (p, want uint64) {
	want = 1 | hashFragment(h)<<distBits
	p = x.home(h)
	for x.load(p)&distMask >= want&distMask {
		p++
		want++
	}
	return p, want
}

// insertAt puts a slot for arena offset off at position p (as returned by
// lookup or freePosition), shifting the rest of the cluster one slot right.
// It returns false, changing nothing, if some entry would end up further than
// maxDist from its home; the caller then rebuilds a larger index.
func (x *index) insertAt(p, want uint64, off int) bool {
	if want&distMask > x.maxDist+1 {
		return false
	}
	e := p
	for {
		s := x.load(e)
		if s == 0 {
			break
		}
		if s&distMask > x.maxDist {
			return false // shifting it would exceed maxDist
		}
		e++
	}
	for q := e; q > p; q-- {
		x.store(q, x.load(q-1)+1) // +1: one slot further from home
	}
	x.store(p, want|uint64(off)<<offShift)
	x.count++
	return true
}

// removeAt deletes the slot at p, shifting the following entries of its
// cluster back one slot (backward-shift deletion, no tombstones).
func (x *index) removeAt(p uint64) {
	for {
		s := x.load(p + 1)
		if s&distMask <= 1 {
			// Empty or at its home: the cluster ends here. The last slot
			// is always empty (entries sit at most at homes-1+maxDist), so
			// p+1 stays in range.
			x.store(p, 0)
			break
		}
		x.store(p, s-1)
		p++
	}
	x.count--
}

// findOffset returns the slot of the entry (hash h) whose record is at off.
// Cheaper than lookup when the caller already holds the record: offsets are
// unique, so no key comparison is needed.
func (x *index) findOffset(h uint64, off int) (p uint64, ok bool) {
	if x.count == 0 {
		return 0, false
	}
	want := uint64(1)
	for p = x.home(h); ; p++ {
		s := x.load(p)
		if s&distMask < want {
			return 0, false
		}
		if s>>offShift == uint64(off) {
			return p, true
		}
		want++
	}
}
