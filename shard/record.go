package shard

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/redcell/redcell/internal/varint"
)

// An arena is a []byte holding variable-size records back to back, with no
// alignment (amd64 and arm64 load unaligned words at full speed). A record
// stores only the fixed fields its state needs, so its first byte says
// which:
//
//	+0   layout byte: Kind (bits 0-3) | form (bits 4-5) | wideMark (bit 6) | hasValue (bit 7)
//	+1   Mark: 5 bytes little-endian, or 8 with wideMark (marks from 2^40 on)
//	     the fixed fields, by form (little-endian int64s):
//	       formFull:    Expire | A | B                     24 bytes
//	       formExpire:  Expire            (A = B = 0)        8 bytes
//	       formTATNext: A    (B = 0, Expire = the first ns of the ms after A's)
//	       formTATSame: A    (B = 0, Expire = the first ns of A's own ms)
//	     uvarint(len(key)<<1 | dead)
//	     key bytes (the header is 1 byte for keys shorter than 64 bytes)
//	     only with hasValue, a value region:
//	     uvarint(cap), then cap bytes: uvarint(len(value)), value, slack
//
// The two TAT forms are how a CL key's expiry relates to its TAT (fsm's
// gcraExpire: the TAT's millisecond, or the one before, rounded up to the
// next millisecond boundary), so a CL key keeps its TAT and one bit instead
// of three int64s; strings, sliding logs and greedy token buckets keep A
// and B at 0 and store Expire alone. The store chooses the smallest form
// that holds a state exactly, whatever its kind: the forms are an encoding,
// and readState gives back the State that was written, bit for bit. A
// record "user:0000012345" of a CL key costs 1+5+8+1+15 = 30 bytes.
//
// A record is rewritten in place only when the new state fits its layout
// (fitsInPlace): the same field bytes (a full record takes any state; an
// 8-byte one a state of either small form), a mark its width holds, a value
// its region holds. A state that does not fit moves the record (Store.put),
// as a value that outgrew its region does. A record does not shrink in
// place: a key that once needed the full form keeps it while it is written.
//
// The state, the mark and the key sit side by side, so an update touches one
// cache line of the arena (two when the record straddles a line) after the
// index probe. The dead bit is bit 0 of the key header's first byte (uvarint
// stores the low 7 bits of the value first), so marking a record dead is a
// single byte write that leaves its length readable: sequential scans
// (Sweep, Snapshot, Len, index rebuilds) step over dead records.
const (
	kindMask  = 1<<4 - 1
	formShift = 4
	formMask  = 3 << formShift
	wideMark  = 1 << 6
	// hasValue is set in the layout byte when a value follows the key.
	hasValue = 1 << 7

	formFull    = 0 << formShift
	formExpire  = 1 << formShift
	formTATNext = 2 << formShift
	formTATSame = 3 << formShift

	recMark         = 1 // the mark's offset in a record
	narrowMarkBytes = 5
	maxNarrowMark   = 1<<(8*narrowMarkBytes) - 1
	wideMarkBytes   = 8
	fullFieldBytes  = 24
	smallFieldBytes = 8
	// maxPrefix is the largest prefix (layout byte, mark, fixed fields).
	maxPrefix = 1 + wideMarkBytes + fullFieldBytes

	deadBit = 1

	nsPerMs = 1_000_000
)

// MaxKind is the largest Kind a record holds (4 bits of its layout byte).
const MaxKind Kind = kindMask

// prefixLen is the bytes before a record's key header, by layout byte >> 4
// (form and mark width; hasValue changes nothing).
var prefixLen = func() (t [16]uint8) {
	for i := range t {
		fields, mark := smallFieldBytes, narrowMarkBytes
		if byte(i<<formShift)&formMask == formFull {
			fields = fullFieldBytes
		}
		if byte(i<<formShift)&wideMark != 0 {
			mark = wideMarkBytes
		}
		t[i] = uint8(1 + mark + fields)
	}
	return t
}()

// prefix is the length of the record's layout byte, mark and fixed fields.
func prefix(layout byte) int { return int(prefixLen[layout>>formShift]) }

// fieldsAt is the offset of the fixed fields of the record at off.
func fieldsAt(layout byte, off int) int {
	if layout&wideMark != 0 {
		return off + recMark + wideMarkBytes
	}
	return off + recMark + narrowMarkBytes
}

// tatExpire is the Expire a TAT form derives from A: the first ns of the
// millisecond after A's (formTATNext) or of A's own (formTATSame); false
// when that instant is outside int64.
func tatExpire(a int64, form byte) (int64, bool) {
	ms := a / nsPerMs
	if a%nsPerMs < 0 {
		ms-- // floor
	}
	if form == formTATNext {
		ms++
	}
	if ms > math.MaxInt64/nsPerMs || ms < math.MinInt64/nsPerMs {
		return 0, false
	}
	return ms * nsPerMs, true
}

// smallForm is the 8-byte form that holds st's fixed fields exactly, or
// formFull when none does.
func smallForm(st State) byte {
	if st.B != 0 {
		return formFull
	}
	if st.A == 0 {
		return formExpire
	}
	for _, f := range [2]byte{formTATNext, formTATSame} {
		if e, ok := tatExpire(st.A, f); ok && e == st.Expire {
			return f
		}
	}
	return formFull
}

// layoutOf is the layout byte of a new record holding st (st.Mark
// included) and, when region, a value region: the smallest form and mark
// width that hold them.
func layoutOf(st State, region bool) byte {
	checkKind(st.Kind)
	l := byte(st.Kind) | smallForm(st)
	if st.Mark > maxNarrowMark {
		l |= wideMark
	}
	if region {
		l |= hasValue
	}
	return l
}

// checkKind panics on a kind a layout byte cannot hold: a programming
// error (fsm's families use small numbers, and restore refuses kinds no
// family has).
func checkKind(k Kind) {
	if k > MaxKind {
		panic(fmt.Sprintf("shard: kind %d past the %d a record holds", k, MaxKind))
	}
}

// recordSize is the arena footprint of a new record holding st under a key
// of keyLen bytes (a value region only when st has a value).
func recordSize(keyLen int, st State) int {
	n := prefix(layoutOf(st, false)) + varint.UvarintLen(uint64(keyLen)<<1) + keyLen
	if len(st.Val) > 0 {
		c := valueCap(len(st.Val))
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

// appendRecord appends a live record for key and st (its value and Mark
// included) to a, in the smallest layout that holds st. The caller makes
// sure cap(a) suffices when it must not allocate.
func appendRecord(a []byte, key []byte, st State) []byte {
	l := layoutOf(st, len(st.Val) > 0)
	off := len(a)
	a = append(a, make([]byte, prefix(l))...)
	a[off] = l
	putFields(a, off, l, st)
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

// putFields writes st's mark and fixed fields into the record at off,
// whose layout byte is l (already chosen to hold them).
func putFields(a []byte, off int, l byte, st State) {
	if l&wideMark != 0 {
		binary.LittleEndian.PutUint64(a[off+recMark:], st.Mark)
	} else {
		putNarrowMark(a[off+recMark:], st.Mark)
	}
	p := fieldsAt(l, off)
	switch l & formMask {
	case formFull:
		binary.LittleEndian.PutUint64(a[p:], uint64(st.Expire))
		binary.LittleEndian.PutUint64(a[p+8:], uint64(st.A))
		binary.LittleEndian.PutUint64(a[p+16:], uint64(st.B))
	case formExpire:
		binary.LittleEndian.PutUint64(a[p:], uint64(st.Expire))
	default:
		binary.LittleEndian.PutUint64(a[p:], uint64(st.A))
	}
}

func putNarrowMark(b []byte, m uint64) {
	binary.LittleEndian.PutUint32(b, uint32(m))
	b[4] = byte(m >> 32)
}

// readState decodes the fixed part of the record at off, without its value
// (Val nil).
func readState(a []byte, off int) State {
	l := a[off]
	st := State{Kind: Kind(l & kindMask)}
	var p int
	if l&wideMark != 0 {
		st.Mark = binary.LittleEndian.Uint64(a[off+recMark:])
		p = off + recMark + wideMarkBytes
	} else {
		// The fields follow the 5 bytes of mark: 8 bytes load safely.
		st.Mark = binary.LittleEndian.Uint64(a[off+recMark:]) & maxNarrowMark
		p = off + recMark + narrowMarkBytes
	}
	switch f := l & formMask; f {
	case formFull:
		st.Expire = int64(binary.LittleEndian.Uint64(a[p:]))
		st.A = int64(binary.LittleEndian.Uint64(a[p+8:]))
		st.B = int64(binary.LittleEndian.Uint64(a[p+16:]))
	case formExpire:
		st.Expire = int64(binary.LittleEndian.Uint64(a[p:]))
	default:
		st.A = int64(binary.LittleEndian.Uint64(a[p:]))
		st.Expire, _ = tatExpire(st.A, f) // in range: checked when written
	}
	return st
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
	if a[off]&hasValue == 0 {
		return nil
	}
	_, end, _ := recordKeyOnly(a, off)
	c, w := binary.Uvarint(a[end:])
	start := end + w
	return a[start : start+int(c) : start+int(c)]
}

// fitsInPlace reports whether st (its Mark included) can be written over
// the record at off: its fixed fields in the record's field bytes, its mark
// in the record's mark width, and its value within the value region (or no
// value where the record has no region).
func fitsInPlace(a []byte, off int, st State) bool {
	l := a[off]
	if l&wideMark == 0 && st.Mark > maxNarrowMark {
		return false
	}
	if l&formMask != formFull && smallForm(st) == formFull {
		return false
	}
	region := valueRegion(a, off)
	if region == nil {
		return len(st.Val) == 0
	}
	return varint.UvarintLen(uint64(len(st.Val)))+len(st.Val) <= len(region)
}

// writeState overwrites the record at off in place with st, which must fit
// it (fitsInPlace): its layout keeps its size (a full record stays full, an
// 8-byte one takes whichever small form holds st) and its mark width. The
// value may alias the record's own value (an unchanged one is copied onto
// itself).
func writeState(a []byte, off int, st State) {
	checkKind(st.Kind)
	l := a[off]
	if l&formMask != formFull {
		l = l&^formMask | smallForm(st)
	}
	l = l&^kindMask | byte(st.Kind)
	a[off] = l
	putFields(a, off, l, st)
	if region := valueRegion(a, off); region != nil {
		// The value first (copy is a memmove, so a value aliasing the
		// region is moved intact), then its length header before it.
		w := varint.UvarintLen(uint64(len(st.Val)))
		copy(region[w:], st.Val)
		binary.PutUvarint(region, uint64(len(st.Val)))
	}
}

// recordKey returns the key of the record at off (aliasing a, capacity
// clipped so an append by the holder cannot overwrite the next record), the
// offset just past the record (its value included), and whether the record
// is dead.
func recordKey(a []byte, off int) (key []byte, end int, dead bool) {
	key, end, dead = recordKeyOnly(a, off)
	if a[off]&hasValue != 0 {
		c, w := binary.Uvarint(a[end:]) // the value region's size
		end += w + int(c)
	}
	return key, end, dead
}

// recordKeyOnly is recordKey with end just past the key (where a value
// starts, if the record has one).
func recordKeyOnly(a []byte, off int) (key []byte, end int, dead bool) {
	p := off + prefix(a[off])
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
func markDead(a []byte, off int) { a[off+prefix(a[off])] |= deadBit }

// bury makes the record at off a tombstone (see Store.Delete): gone from
// now on, its change marker mark. Its key and kind stay until the record is
// dropped (nothing reads them, nor A, B or the value of a gone record); an
// 8-byte layout becomes formExpire to hold now, so A becomes 0. False,
// changing nothing, when mark is wider than the record's mark: the caller
// then replaces the record.
func bury(a []byte, off int, now int64, mark uint64) bool {
	l := a[off]
	if l&wideMark == 0 && mark > maxNarrowMark {
		return false
	}
	if l&formMask != formFull {
		l = l&^formMask | formExpire
		a[off] = l
	}
	if l&wideMark != 0 {
		binary.LittleEndian.PutUint64(a[off+recMark:], mark)
	} else {
		putNarrowMark(a[off+recMark:], mark)
	}
	binary.LittleEndian.PutUint64(a[fieldsAt(l, off):], uint64(now))
	return true
}

// readMark decodes only the change marker of the record at off.
func readMark(a []byte, off int) uint64 {
	m := binary.LittleEndian.Uint64(a[off+recMark:])
	if a[off]&wideMark == 0 {
		m &= maxNarrowMark
	}
	return m
}

// readExpire decodes only the Expire field of the record at off.
func readExpire(a []byte, off int) int64 {
	l := a[off]
	p := fieldsAt(l, off)
	switch f := l & formMask; f {
	case formFull, formExpire:
		return int64(binary.LittleEndian.Uint64(a[p:]))
	default:
		e, _ := tatExpire(int64(binary.LittleEndian.Uint64(a[p:])), f)
		return e
	}
}
