package shard

import (
	"encoding/binary"

	"github.com/redcell/redcell/internal/varint"
)

// An arena is a []byte holding variable-size records back to back, with no
// alignment (amd64 and arm64 load unaligned words at full speed):
//
//	+0   Expire  int64, little-endian
//	+8   A       int64, little-endian
//	+16  B       int64, little-endian
//	+24  Mark    uint64, little-endian: the change marker (State.Mark)
//	+32  Kind    uint8
//	+33  uvarint(len(key)<<1 | dead)
//	+33+h key bytes (h = 1 for keys shorter than 64 bytes)
//	     only when Kind has hasValue set, a value region:
//	     uvarint(cap), then cap bytes: uvarint(len(value)), value, slack
//
// The state and the key sit side by side, so an update touches one or two
// cache lines of the arena after the index probe; a key like "user:0000012345"
// costs 33+1+15 = 49 bytes. The dead bit is bit 0 of the first header byte
// (uvarint stores the low 7 bits of the value first), so marking a record dead
// is a single byte write that leaves its length readable: sequential scans
// (Sweep, Snapshot, Len, index rebuilds) step over dead records.
//
// The value is the variable-length part of a state (State.Val: the sliding
// log's runs). It follows the key and exists only in records whose Kind byte
// has hasValue set, so a record without one (CL and TB keys) is byte for
// byte what it was before values existed: no length byte, no padding. A
// value region has some slack (valueCap), so a value that grows a little
// (a sliding log gaining a run) or changes length by a byte or two (its
// deltas re-encoded) is rewritten in place; one that outgrows its region
// moves (see Store.put).
const (
	recExpire = 0
	recA      = 8
	recB      = 16
	recMark   = 24
	recKind   = 32
	recFixed  = 33 // bytes before the key header
	deadBit   = 1
	// hasValue is set in the stored Kind byte when a value follows the key.
	// Kinds are below 128 (New families append small numbers).
	hasValue = 0x80
)

// recordSize is the arena footprint of a record holding a key of keyLen
// bytes and a value of valLen bytes (0: no value region at all).
func recordSize(keyLen, valLen int) int {
	n := recFixed + varint.UvarintLen(uint64(keyLen)<<1) + keyLen
	if valLen > 0 {
		c := valueCap(valLen)
		n += varint.UvarintLen(uint64(c)) + c
	}
	return n
}

// valueCap is the size of the value region given to a value of valLen
// bytes when its record is written: its length header and the value, plus
// an eighth (at least 4 bytes) of slack for growth in place.
func valueCap(valLen int) int {
	inner := varint.UvarintLen(uint64(valLen)) + valLen
	return inner + max(4, inner/8)
}

// kindByte is the stored Kind byte of a record with or without a value
// region.
func kindByte(k Kind, region bool) byte {
	if region {
		return byte(k) | hasValue
	}
	return byte(k)
}

// appendRecord appends a live record for key and st (its value included) to
// a. The caller makes sure cap(a) suffices when it must not allocate.
func appendRecord(a []byte, key []byte, st State) []byte {
	a = binary.LittleEndian.AppendUint64(a, uint64(st.Expire))
	a = binary.LittleEndian.AppendUint64(a, uint64(st.A))
	a = binary.LittleEndian.AppendUint64(a, uint64(st.B))
	a = binary.LittleEndian.AppendUint64(a, st.Mark)
	a = append(a, kindByte(st.Kind, len(st.Val) > 0))
	a = binary.AppendUvarint(a, uint64(len(key))<<1)
	a = append(a, key...)
	if len(st.Val) > 0 {
		c := valueCap(len(st.Val))
		a = binary.AppendUvarint(a, uint64(c))
		start := len(a)
		a = binary.AppendUvarint(a, uint64(len(st.Val)))
		a = append(a, st.Val...)
		a = append(a, make([]byte, start+c-len(a))...) // slack, zeroed
	}
	return a
}

// readState decodes the fixed part of the record at off, without its value
// (Val nil).
func readState(a []byte, off int) State {
	r := a[off : off+recFixed : off+recFixed]
	return State{
		Expire: int64(binary.LittleEndian.Uint64(r[recExpire:])),
		A:      int64(binary.LittleEndian.Uint64(r[recA:])),
		B:      int64(binary.LittleEndian.Uint64(r[recB:])),
		Mark:   binary.LittleEndian.Uint64(r[recMark:]),
		Kind:   Kind(r[recKind] &^ hasValue),
	}
}

// readFullState decodes the record at off with its value: Val aliases a
// (capacity clipped), so it is valid only while a is (under the stripe's
// lock, or for the life of an immutable snapshot).
func readFullState(a []byte, off int) State {
	st := readState(a, off)
	st.Val = recordValue(a, off)
	return st
}

// recordValue is the value of the record at off (nil when it has no value
// region), aliasing a with its capacity clipped.
func recordValue(a []byte, off int) []byte {
	region := valueRegion(a, off)
	if region == nil {
		return nil
	}
	n, w := binary.Uvarint(region)
	return region[w : w+int(n) : w+int(n)]
}

// valueRegion is the value region of the record at off (nil when it has
// none): its length header, value and slack.
func valueRegion(a []byte, off int) []byte {
	if a[off+recKind]&hasValue == 0 {
		return nil
	}
	_, end, _ := recordKeyOnly(a, off)
	c, w := binary.Uvarint(a[end:])
	start := end + w
	return a[start : start+int(c) : start+int(c)]
}

// writeState overwrites the record at off in place: the fixed part and the
// value, which must fit the record (valueFits). The value may alias the
// record's own value (an unchanged one is copied onto itself).
func writeState(a []byte, off int, st State) {
	r := a[off : off+recFixed : off+recFixed]
	binary.LittleEndian.PutUint64(r[recExpire:], uint64(st.Expire))
	binary.LittleEndian.PutUint64(r[recA:], uint64(st.A))
	binary.LittleEndian.PutUint64(r[recB:], uint64(st.B))
	binary.LittleEndian.PutUint64(r[recMark:], st.Mark)
	region := valueRegion(a, off)
	r[recKind] = kindByte(st.Kind, region != nil)
	if region != nil {
		// The value first (copy is a memmove, so a value aliasing the
		// region is moved intact), then its length header before it.
		w := varint.UvarintLen(uint64(len(st.Val)))
		copy(region[w:], st.Val)
		binary.PutUvarint(region, uint64(len(st.Val)))
	}
}

// valueFits reports whether st's value can be written in place into the
// record at off: within its value region (with its length header), or no
// value where the record has no region.
func valueFits(a []byte, off int, st State) bool {
	region := valueRegion(a, off)
	if region == nil {
		return len(st.Val) == 0
	}
	return varint.UvarintLen(uint64(len(st.Val)))+len(st.Val) <= len(region)
}

// recordKey returns the key of the record at off (aliasing a, capacity
// clipped so an append by the holder cannot overwrite the next record), the
// offset just past the record (its value included), and whether the record
// is dead.
func recordKey(a []byte, off int) (key []byte, end int, dead bool) {
	key, end, dead = recordKeyOnly(a, off)
	if a[off+recKind]&hasValue != 0 {
		c, w := binary.Uvarint(a[end:]) // the value region's size
		end += w + int(c)
	}
	return key, end, dead
}

// recordKeyOnly is recordKey with end just past the key (where a value
// starts, if the record has one).
func recordKeyOnly(a []byte, off int) (key []byte, end int, dead bool) {
	p := off + recFixed
	h := uint64(a[p])
	if h < 0x80 {
		p++ // fast path: one header byte, keys shorter than 64 bytes
	} else {
		var n int
		h, n = binary.Uvarint(a[p:])
		p += n
	}
	end = p + int(h>>1)
	return a[p:end:end], end, h&deadBit != 0
}

// keyEqual reports whether the record at off holds key.
func keyEqual(a []byte, off int, key []byte) bool {
	k, _, _ := recordKey(a, off)
	return string(k) == string(key) // compiles to memequal, no allocation
}

// markDead flags the record at off as garbage; its length stays readable.
func markDead(a []byte, off int) { a[off+recFixed] |= deadBit }

// bury makes the record at off a tombstone (see Store.Delete): gone from
// now on, its change marker mark. Its key, kind and value stay until the
// record is dropped, which nothing reads.
func bury(a []byte, off int, now int64, mark uint64) {
	binary.LittleEndian.PutUint64(a[off+recExpire:], uint64(now))
	binary.LittleEndian.PutUint64(a[off+recMark:], mark)
}

// readMark decodes only the change marker of the record at off.
func readMark(a []byte, off int) uint64 {
	return binary.LittleEndian.Uint64(a[off+recMark:])
}

// readExpire decodes only the Expire field of the record at off.
func readExpire(a []byte, off int) int64 {
	return int64(binary.LittleEndian.Uint64(a[off+recExpire:]))
}
