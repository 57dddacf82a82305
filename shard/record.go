package shard

import (
	"encoding/binary"
	"fmt"

	"github.com/redcell/redcell/internal/varint"
)

// An arena is a []byte holding variable-size records back to back, with no
// alignment (amd64 and arm64 load unaligned words at full speed). A record
// stores only the fixed fields its state needs, so its first byte says
// which:
//
//	+0   layout byte: Kind (bits 0-3) | form (bits 4-5) | wideMark (bit 6) | hasValue (bit 7)
//	+1   uvarint(len(key)<<1 | dead): 1 byte for keys shorter than 64 bytes
//	     the fixed fields, by form (little-endian int64s):
//	       formFull:    Expire | A | B                     24 bytes
//	       formExpire:  Expire            (A = B = 0)        8 bytes
//	       formTATNext: A    (B = 0, Expire = the first ns of the ms after A's)
//	       formTATSame: A    (B = 0, Expire = the first ns of A's own ms)
//	     Mark: 5 bytes little-endian, or 8 with wideMark (marks from 2^40 on)
//	     key bytes
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
// record "user:0000012345" of a CL key costs 1+1+8+5+15 = 30 bytes.
//
// A record is rewritten in place only when the new state fits its layout
// (writeInPlace): the same field bytes (a full record takes any state; an
// 8-byte one a state of either small form), a mark its width holds, a value
// its region holds. A state that does not fit moves the record (Store.put),
// as a value that outgrew its region does. A record does not shrink in
// place: a key that once needed the full form keeps it while it is written.
//
// The layout byte and the key header come first, at fixed offsets: a
// sequential scan (Sweep, Snapshot, Len, compaction, index rebuilds) finds
// the next record from two loads it can issue together, not from a chain
// of them. The dead bit is bit 0 of the key header's first byte (uvarint
// stores the low 7 bits of the value first), so marking a record dead is a
// single byte write that leaves its length readable: sequential scans step
// over dead records. The state, the mark and the key sit side by side, so
// an update touches one cache line of the arena (two when the record
// straddles a line) after the index probe.
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

	recHeader       = 1 // the key header's offset in a record
	narrowMarkBytes = 5
	maxNarrowMark   = 1<<(8*narrowMarkBytes) - 1
	wideMarkBytes   = 8
	fullFieldBytes  = 24
	smallFieldBytes = 8

	deadBit = 1

	nsPerMs = 1_000_000
)

// MaxKind is the largest Kind a record holds (4 bits of its layout byte).
const MaxKind Kind = kindMask

// fixedLen is the length of a record's fixed part, its layout byte, fixed
// fields and mark (1 + 8 or 24 + 5 or 8), without the key header.
func fixedLen(layout byte) int { return 1 + fieldsLen(layout) + markLen(layout) }

// fieldsLen and markLen are the lengths of the fixed fields and the mark,
// computed without a branch or a table (they sit on the path of every
// lookup and scan): form 0, formFull, is the one whose bits plus 3 stay
// below 4.
func fieldsLen(layout byte) int {
	return smallFieldBytes + (int((layout>>formShift&3+3)>>2)^1)*(fullFieldBytes-smallFieldBytes)
}

func markLen(layout byte) int {
	return narrowMarkBytes + int(layout>>6&1)*(wideMarkBytes-narrowMarkBytes)
}

// fieldsAt is the offset of the fixed fields of the record at off: after
// its key header, one byte unless the key is 64 bytes or longer.
func fieldsAt(a []byte, off int) int {
	if a[off+recHeader] < 0x80 {
		return off + recHeader + 1
	}
	_, n := binary.Uvarint(a[off+recHeader:])
	return off + recHeader + n
}

// tatExpire is the Expire a TAT form derives from A: the first ns of A's
// millisecond (formTATSame) or of the next one (formTATNext). Only for a
// record smallForm gave that form, where the result is in range (so the
// int64 arithmetic below does not wrap): A − (A mod 1 ms), floored.
func tatExpire(a int64, form byte) int64 {
	r := int64(uint64(a) % nsPerMs) // unsigned: cheaper, and right for a ≥ 0
	if a < 0 {
		if r = a % nsPerMs; r < 0 {
			r += nsPerMs
		}
	}
	if form == formTATNext {
		return a + (nsPerMs - r)
	}
	return a - r
}

// smallForm is the 8-byte form that holds st's fixed fields exactly, or
// formFull when none does. A TAT form needs Expire on a millisecond
// boundary and within (A − 1 ms, A + 1 ms]: then it is A's millisecond's
// start (Expire ≤ A) or the next one's (Expire > A), and tatExpire gives it
// back. A and Expire of opposite signs (whose difference could wrap) take
// the full form; no CL key has them.
func smallForm(st State) byte {
	if st.B != 0 {
		return formFull
	}
	if st.A == 0 {
		return formExpire
	}
	if st.A^st.Expire >= 0 && (st.Expire >= 0 && uint64(st.Expire)%nsPerMs == 0 || st.Expire < 0 && st.Expire%nsPerMs == 0) {
		switch d := st.Expire - st.A; {
		case d > 0 && d <= nsPerMs:
			return formTATNext
		case d <= 0 && d > -nsPerMs:
			return formTATSame
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
	n := fixedLen(layoutOf(st, false)) + varint.UvarintLen(uint64(keyLen)<<1) + keyLen
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
	a = append(a, l)
	a = binary.AppendUvarint(a, uint64(len(key))<<1)
	a = append(a, make([]byte, fieldsLen(l)+markLen(l))...)
	putFields(a, off, l, st)
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

// putFields writes st's fixed fields and mark into the record at off,
// whose layout byte is l (already chosen to hold them).
func putFields(a []byte, off int, l byte, st State) { putFieldsAt(a, fieldsAt(a, off), l, st) }

// putFieldsAt is putFields given where the fields start (fieldsAt).
func putFieldsAt(a []byte, p int, l byte, st State) {
	f := a[p:]
	switch l & formMask {
	case formFull:
		binary.LittleEndian.PutUint64(f, uint64(st.Expire))
		binary.LittleEndian.PutUint64(f[8:], uint64(st.A))
		binary.LittleEndian.PutUint64(f[16:], uint64(st.B))
	case formExpire:
		binary.LittleEndian.PutUint64(f, uint64(st.Expire))
	default:
		binary.LittleEndian.PutUint64(f, uint64(st.A))
	}
	putMark(a, p+fieldsLen(l), l, st.Mark)
}

// putMark writes mark at m, in the width layout l gives it (which holds it).
func putMark(a []byte, m int, l byte, mark uint64) {
	if l&wideMark != 0 {
		binary.LittleEndian.PutUint64(a[m:], mark)
		return
	}
	binary.LittleEndian.PutUint32(a[m:], uint32(mark))
	a[m+4] = byte(mark >> 32)
}

// readState decodes the fixed part of the record at off and its mark,
// without its value (Val nil).
func readState(a []byte, off int) State {
	var st State
	readFieldsInto(a, off, &st)
	st.Mark = readMark(a, off)
	return st
}

// readFieldsInto sets st's Kind, Expire, A and B from the record at off
// (Mark and Val untouched): what Update hands its callback, which never
// reads the mark. Through a pointer, because a State returned by a call
// that is not inlined is assembled on the stack and copied back in wider
// loads than it was stored with, which stalls store forwarding (~15 ns a
// call in BenchmarkUpdateHot).
func readFieldsInto(a []byte, off int, st *State) {
	l := a[off]
	f := a[fieldsAt(a, off):]
	st.Kind = Kind(l & kindMask)
	switch form := l & formMask; form {
	case formFull:
		st.Expire = int64(binary.LittleEndian.Uint64(f))
		st.A = int64(binary.LittleEndian.Uint64(f[8:]))
		st.B = int64(binary.LittleEndian.Uint64(f[16:]))
	case formExpire:
		st.Expire = int64(binary.LittleEndian.Uint64(f))
		st.A, st.B = 0, 0
	default:
		v := int64(binary.LittleEndian.Uint64(f))
		st.Expire = tatExpire(v, form)
		st.A, st.B = v, 0
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
	if a[off]&hasValue == 0 {
		return nil
	}
	_, end, _ := recordKeyOnly(a, off)
	c, w := binary.Uvarint(a[end:])
	start := end + w
	return a[start : start+int(c) : start+int(c)]
}

// writeInPlace overwrites the record at off with st (its Mark included)
// when st fits the record, and reports whether it did; it changes nothing
// when st does not fit. st fits when its fixed fields fit the record's
// field bytes (a full record takes any state, an 8-byte one a state of
// either small form, which it switches to), its mark the record's mark
// width, and its value the value region (or no value where the record has
// no region). The value may alias the record's own value (an unchanged one
// is copied onto itself).
func writeInPlace(a []byte, off int, st State) bool {
	l := a[off]
	if l&wideMark == 0 && st.Mark > maxNarrowMark {
		return false
	}
	var region []byte
	if l&hasValue != 0 {
		region = valueRegion(a, off)
		if varint.UvarintLen(uint64(len(st.Val)))+len(st.Val) > len(region) {
			return false
		}
	} else if len(st.Val) != 0 {
		return false
	}
	if l&formMask != formFull {
		f := smallForm(st)
		if f == formFull {
			return false
		}
		l = l&^formMask | f
	}
	checkKind(st.Kind)
	if l = l&^kindMask | byte(st.Kind); l != a[off] {
		a[off] = l
	}
	putFieldsAt(a, fieldsAt(a, off), l, st)
	if region != nil {
		// The value first (copy is a memmove, so a value aliasing the
		// region is moved intact), then its length header before it.
		w := varint.UvarintLen(uint64(len(st.Val)))
		copy(region[w:], st.Val)
		binary.PutUvarint(region, uint64(len(st.Val)))
	}
	return true
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
	l := a[off]
	p := off + recHeader
	h := uint64(a[p])
	if h < 0x80 {
		p++ // fast path: one header byte, keys shorter than 64 bytes
	} else {
		var n int
		h, n = binary.Uvarint(a[p:])
		p += n
	}
	p += fieldsLen(l) + markLen(l)
	end = p + int(h>>1)
	return a[p:end:end], end, h&deadBit != 0
}

// keyEqual reports whether the record at off holds key. Every lookup
// compares a key or two, so a key shorter than 64 bytes (a one-byte header)
// takes a path without the value region's bounds.
func keyEqual(a []byte, off int, key []byte) bool {
	if h := a[off+recHeader]; h < 0x80 {
		l := a[off]
		p := off + recHeader + 1 + fieldsLen(l) + markLen(l)
		n := int(h >> 1)
		return n == len(key) && string(a[p:p+n]) == string(key) // memequal, no allocation
	}
	k, _, _ := recordKeyOnly(a, off)
	return string(k) == string(key)
}

// markDead flags the record at off as garbage; its length stays readable.
func markDead(a []byte, off int) { a[off+recHeader] |= deadBit }

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
	p := fieldsAt(a, off)
	binary.LittleEndian.PutUint64(a[p:], uint64(now))
	putMark(a, p+fieldsLen(l), l, mark)
	return true
}

// readMark decodes only the change marker of the record at off.
func readMark(a []byte, off int) uint64 {
	l := a[off]
	m := fieldsAt(a, off) + fieldsLen(l)
	if l&wideMark != 0 {
		return binary.LittleEndian.Uint64(a[m:])
	}
	return uint64(binary.LittleEndian.Uint32(a[m:])) | uint64(a[m+4])<<32
}

// scanRecord is what the sequential scans that drop gone records (Sweep,
// Snapshot) ask of the record at off, in one call: the offset just past it,
// whether it is dead, and whether it may be dropped at now
// (droppable(readExpire(a, off), now), judged only when it is not dead).
// A TAT form's Expire is within a millisecond of its A (above A − 1 ms), so
// a record whose A is a millisecond or more after now is not gone, let
// alone droppable, and needs no division: the common case of a scan over
// live CL keys.
func scanRecord(a []byte, off int, now int64) (end int, dead, drop bool) {
	l := a[off]
	p := off + recHeader
	h := uint64(a[p])
	if h < 0x80 {
		p++
	} else {
		var n int
		h, n = binary.Uvarint(a[p:])
		p += n
	}
	fields := p
	end = p + fieldsLen(l) + markLen(l) + int(h>>1)
	if l&hasValue != 0 {
		c, w := binary.Uvarint(a[end:])
		end += w + int(c)
	}
	if h&deadBit != 0 {
		return end, true, false
	}
	v := int64(binary.LittleEndian.Uint64(a[fields:]))
	if f := l & formMask; f >= formTATNext {
		if now < v && uint64(v)-uint64(now) >= nsPerMs {
			return end, false, false
		}
		v = tatExpire(v, f)
	}
	return end, false, droppable(v, now)
}

// readExpire decodes only the Expire field of the record at off.
func readExpire(a []byte, off int) int64 {
	v := int64(binary.LittleEndian.Uint64(a[fieldsAt(a, off):]))
	if f := a[off] & formMask; f >= formTATNext {
		v = tatExpire(v, f)
	}
	return v
}
