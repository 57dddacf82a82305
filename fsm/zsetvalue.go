package fsm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/redcell/redcell/internal/varint"
)

// zsetBig is the bit of a sorted set's A that says Redis would hold it as a
// skiplist, not a listpack; the rest of A is the count. Redis 7.0 stores a
// -0 score in a listpack as the integer 0 and in a skiplist as -0, so
// ZSCORE reads "0" or "-0" by the encoding: storedScore keeps that. A set
// becomes big as Redis converts it (zsetAdd, zaddGenericCommand): created
// with a first member longer than 64 bytes, or adding a member longer than
// 64 bytes or a 129th one; it never goes back while it exists.
const zsetBig int64 = 1 << 62

// Redis 7.0's zset-max-listpack-entries and zset-max-listpack-value.
const (
	listpackEntries = 128
	listpackValue   = 64
)

// zcount is a sorted set's count (its A without zsetBig).
func zcount(a int64) int64 { return a &^ zsetBig }

// storedScore is the score a write stores: -0 becomes 0 in a set Redis
// would hold as a listpack. The write's reply keeps the score as computed,
// as Redis's does.
func storedScore(score float64, big bool) float64 {
	if score == 0 && !big {
		return 0
	}
	return score
}

// A sorted set's value: its elements in order of (score, member bytes), as
// Redis orders them (scores compared as floats, so -0 and 0 tie and the
// member decides), each the score's float64 bits in 8 bytes big-endian,
// then uvarint(len(member)) and the member. The count is the key's A, so
// ZCARD reads no value. Never empty: an empty sorted set is deleted. The
// state machine only stores values built by the functions here; a snapshot
// record is checked by zsetCheckValue before it is restored, so a value
// can never fail to decode at apply time.

// zElem is one element of a value: its score, its member (aliasing the
// value) and where it starts and ends in the value.
type zElem struct {
	score      float64
	member     []byte
	start, end int
}

// zAt decodes the element starting at off of a well-formed value.
func zAt(v []byte, off int) zElem {
	score := math.Float64frombits(binary.BigEndian.Uint64(v[off:]))
	l, w := binary.Uvarint(v[off+8:])
	m := off + 8 + w
	return zElem{score: score, member: v[m : m+int(l) : m+int(l)], start: off, end: m + int(l)}
}

// zEach calls fn with each element in order until it returns false.
func zEach(v []byte, fn func(e zElem) bool) {
	for off := 0; off < len(v); {
		e := zAt(v, off)
		if !fn(e) {
			return
		}
		off = e.end
	}
}

// zElems decodes every element of v (members aliasing v) into dst.
func zElems(dst []zElem, v []byte) []zElem {
	zEach(v, func(e zElem) bool {
		dst = append(dst, e)
		return true
	})
	return dst
}

// zLess orders elements as Redis does: by score, then by member bytes.
func zLess(s1 float64, m1 []byte, s2 float64, m2 []byte) bool {
	return s1 < s2 || s1 == s2 && bytes.Compare(m1, m2) < 0
}

// zElemLen is the encoded size of an element with this member.
func zElemLen(member []byte) int {
	return 8 + varint.UvarintLen(uint64(len(member))) + len(member)
}

// zAppend appends one element to dst.
func zAppend(dst []byte, score float64, member []byte) []byte {
	dst = binary.BigEndian.AppendUint64(dst, math.Float64bits(score))
	dst = binary.AppendUvarint(dst, uint64(len(member)))
	return append(dst, member...)
}

// zFind returns member's element in v; ok false when absent. A scan, as
// Redis's listpack does for small sorted sets.
func zFind(v []byte, member []byte) (e zElem, ok bool) {
	zEach(v, func(x zElem) bool {
		if bytes.Equal(x.member, member) {
			e, ok = x, true
			return false
		}
		return true
	})
	return e, ok
}

// zInsert inserts an element (whose member v does not hold) at its place
// in buf, a value it owns.
func zInsert(buf []byte, score float64, member []byte) []byte {
	at := len(buf)
	zEach(buf, func(e zElem) bool {
		if zLess(score, member, e.score, e.member) {
			at = e.start
			return false
		}
		return true
	})
	n := zElemLen(member)
	buf = append(buf, make([]byte, n)...)
	copy(buf[at+n:], buf[at:len(buf)-n])
	zAppend(buf[at:at], score, member)
	return buf
}

// zCut removes the bytes [start, end) of buf, a value it owns.
func zCut(buf []byte, start, end int) []byte {
	return append(buf[:start], buf[end:]...)
}

// formatScore appends a score as Redis 7.0's addReplyDouble writes it:
// %.17g, and "inf" / "-inf".
func formatScore(dst []byte, f float64) []byte {
	switch {
	case math.IsInf(f, 1):
		return append(dst, "inf"...)
	case math.IsInf(f, -1):
		return append(dst, "-inf"...)
	}
	return strconv.AppendFloat(dst, f, 'g', 17, 64)
}

// zsetCheckValue checks a value from a snapshot: well-formed elements,
// count of them (A, with zsetBig), no NaN score, in strictly increasing
// order, every member once.
func zsetCheckValue(v []byte, a int64) error {
	if a < 0 {
		return fmt.Errorf("sorted set with count field %d", a)
	}
	count := zcount(a)
	if len(v) == 0 {
		return errors.New("empty sorted set")
	}
	var n int64
	var prev zElem
	seen := make(map[string]struct{})
	for off := 0; off < len(v); n++ {
		if len(v)-off < 9 {
			return fmt.Errorf("sorted set element %d truncated", n)
		}
		l, w := binary.Uvarint(v[off+8:])
		if w <= 0 || l > uint64(len(v)-off-8-w) {
			return fmt.Errorf("sorted set element %d has a corrupt length", n)
		}
		e := zAt(v, off)
		if math.IsNaN(e.score) {
			return fmt.Errorf("sorted set element %d has a NaN score", n)
		}
		if n > 0 && !zLess(prev.score, prev.member, e.score, e.member) {
			return fmt.Errorf("sorted set element %d out of order", n)
		}
		if _, dup := seen[string(e.member)]; dup {
			return fmt.Errorf("sorted set member of element %d is there twice", n)
		}
		seen[string(e.member)] = struct{}{}
		prev, off = e, e.end
	}
	if n != count {
		return fmt.Errorf("sorted set of %d elements says it has %d", n, count)
	}
	return nil
}
