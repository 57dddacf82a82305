package shard

import "encoding/binary"

// An arena is a []byte holding variable-size records back to back, with no
// alignment (amd64 and arm64 load unaligned words at full speed):
//
//	+0   Expire  int64, little-endian
//	+8   A       int64, little-endian
//	+16  B       int64, little-endian
//	+24  Kind    uint8
//	+25  uvarint(len(key)<<1 | dead)
//	+25+h key bytes (h = 1 for keys shorter than 64 bytes)
//
// The state and the key sit side by side, so an update touches one or two
// cache lines of the arena after the index probe; a key like "user:0000012345"
// costs 25+1+15 = 41 bytes. The dead bit is bit 0 of the first header byte
// (uvarint stores the low 7 bits of the value first), so marking a record dead
// is a single byte write that leaves its length readable: sequential scans
// (Sweep, Snapshot, Len, index rebuilds) step over dead records.
const (
	recExpire = 0
	recA      = 8
	recB      = 16
	recKind   = 24
	recFixed  = 25 // bytes before the key header
	deadBit   = 1
)

// recordSize is the arena footprint of a record holding a key of keyLen bytes.
func recordSize(keyLen int) int {
	return recFixed + uvarintLen(uint64(keyLen)<<1) + keyLen
}

// uvarintLen is the length of v encoded by binary.AppendUvarint.
func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

// appendRecord appends a live record for key and st to a. The caller makes
// sure cap(a) suffices when it must not allocate.
func appendRecord(a []byte, key []byte, st State) []byte {
	a = binary.LittleEndian.AppendUint64(a, uint64(st.Expire))
	a = binary.LittleEndian.AppendUint64(a, uint64(st.A))
	a = binary.LittleEndian.AppendUint64(a, uint64(st.B))
	a = append(a, byte(st.Kind))
	a = binary.AppendUvarint(a, uint64(len(key))<<1)
	return append(a, key...)
}

// readState decodes the fixed part of the record at off.
func readState(a []byte, off int) State {
	r := a[off : off+recFixed : off+recFixed]
	return State{
		Expire: int64(binary.LittleEndian.Uint64(r[recExpire:])),
		A:      int64(binary.LittleEndian.Uint64(r[recA:])),
		B:      int64(binary.LittleEndian.Uint64(r[recB:])),
		Kind:   Kind(r[recKind]),
	}
}

// readExpire decodes only the Expire field of the record at off.
func readExpire(a []byte, off int) int64 {
	return int64(binary.LittleEndian.Uint64(a[off+recExpire:]))
}

// writeState overwrites the fixed part of the record at off in place.
func writeState(a []byte, off int, st State) {
	r := a[off : off+recFixed : off+recFixed]
	binary.LittleEndian.PutUint64(r[recExpire:], uint64(st.Expire))
	binary.LittleEndian.PutUint64(r[recA:], uint64(st.A))
	binary.LittleEndian.PutUint64(r[recB:], uint64(st.B))
	r[recKind] = byte(st.Kind)
}

// recordKey returns the key of the record at off (aliasing a, capacity
// clipped so an append by the holder cannot overwrite the next record), the
// offset just past the record, and whether the record is dead.
func recordKey(a []byte, off int) (key []byte, end int, dead bool) {
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
