package shard

import (
	"fmt"
	"hash/maphash"
	"testing"
)

// checkInvariants verifies the structural invariants of every stripe (see
// stripeState). Call it on the writer goroutine, or with no writer running.
func (s *Store) checkInvariants(t testing.TB) {
	t.Helper()
	for i := range s.stripes {
		st := &s.stripes[i]
		if err := st.check(s, i); err != "" {
			t.Fatalf("stripe %d: %s", i, err)
		}
	}
}

func (st *stripe) check(s *Store, i int) string {
	// The arena: record boundaries, dead bytes, which records are live.
	liveRecords := map[int]bool{}
	boundaries := map[int]bool{0: true}
	garbage, fixed := 0, 0
	a := st.arena
	for off := 0; off < len(a); {
		key, end, dead := recordKey(a, off)
		if end > len(a) {
			return "record runs past the arena end"
		}
		if dead {
			garbage += end - off
		} else {
			liveRecords[off] = true
			fixed += fixedLen(a[off])
			if _, sp := s.locate(key); sp != st {
				return "key " + string(key) + " stored in the wrong stripe"
			}
			if why := checkLayout(a, off); why != "" {
				return "key " + string(key) + ": " + why
			}
		}
		off = end
		boundaries[off] = true
	}
	if garbage != st.garbage {
		return "garbage accounting off"
	}
	if fixed != st.fixed {
		return "prefix accounting off"
	}
	if st.sweepPos != 0 && !boundaries[st.sweepPos] {
		return "sweepPos not on a record boundary"
	}
	if cap(a) > maxArena {
		return "arena larger than a slot can address"
	}

	// The index: every slot names a distinct live record at the right
	// distance from its home, clusters sorted by home (Robin Hood).
	x := &st.idx
	if x.homes == 0 {
		if x.count != 0 || len(liveRecords) != 0 {
			return "records without an index"
		}
		return ""
	}
	if uint64(len(x.slots)) != x.nslots()*slotBytes+2 {
		return "index size inconsistent with homes"
	}
	if x.sparse() {
		// reclaim shrinks a sparse index after every removal; a sparse
		// index left behind means a rebuild had to grow past its target.
		return "index left sparse"
	}
	if x.maxDist > distLimit {
		return "maxDist too large for the distance field"
	}
	count := 0
	prevDist := uint64(0) // distance+1 of the previous slot, 0 if empty
	for p := uint64(0); p < x.nslots(); p++ {
		sl := x.load(p)
		if sl == 0 {
			prevDist = 0
			continue
		}
		count++
		off := int(sl >> offShift)
		if !liveRecords[off] {
			return "slot points at a dead, missing or already indexed record"
		}
		delete(liveRecords, off)
		key, _, _ := recordKey(a, off)
		h := maphash.Bytes(s.seed, key)
		home := x.home(h)
		if p < home || p-home+1 != sl&distMask {
			return "slot distance does not match the key's home"
		}
		if p-home > x.maxDist {
			return "slot further than maxDist from home"
		}
		if (sl>>distBits)&fragMask != hashFragment(h) {
			return "slot fragment does not match the key's hash"
		}
		if sl&distMask > prevDist+1 {
			return "cluster not in Robin Hood order"
		}
		prevDist = sl & distMask
	}
	if x.load(x.nslots()-1) != 0 {
		return "last slot occupied"
	}
	if count != x.count {
		return "index count off"
	}
	if len(liveRecords) != 0 {
		return "live records missing from the index"
	}
	return ""
}

// checkLayout verifies the layout byte of the record at off against what it
// holds (record.go): an 8-byte form is the one smallForm picks for the
// state it decodes to (formExpire for A = B = 0, a TAT form only for an
// Expire on the millisecond A gives), and the state re-encodes to the same bytes in a new
// record (a full record or a wide mark only where the state needs them, or
// where a record kept its layout in place).
func checkLayout(a []byte, off int) string {
	l := a[off]
	st := readState(a, off)
	if f := l & formMask; f != formFull {
		if smallForm(st) != f {
			// A TAT form whose A gives an Expire smallForm would not
			// derive (one that wrapped) fails here too.
			return fmt.Sprintf("form %#x holds a state smallForm encodes as %#x", f, smallForm(st))
		}
	}
	st.Val = recordValue(a, off)
	key, _, _ := recordKey(a, off)
	fresh := appendRecord(nil, key, st)
	if got := readFullState(fresh, 0); !got.Equal(st) || got.Mark != st.Mark {
		return fmt.Sprintf("state %+v re-encodes as %+v", st, got)
	}
	// (A region may hold an empty value, which a new record has no region for.)
	if fresh[0]&kindMask != l&kindMask || fixedLen(fresh[0]) > fixedLen(l) {
		return fmt.Sprintf("layout %#x where a new record takes %#x", l, fresh[0])
	}
	return ""
}
