package fsm

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/redcell/redcell/request"
	"github.com/redcell/redcell/shard"
)

// The set family in the state machine (Redis 7.0's t_set.c at the entry's
// now). A key is a shard.State of KindSet whose A is the number of members
// (at least 1: an empty set does not exist), whose B is strExpiry's (0 but
// for an expiry past 2262), whose Expire is its lifetime, and whose value
// holds the members sorted bytewise, so that SISMEMBER is a binary search
// (DESIGN.md "Sets"):
//
//	byte w | (A-1) offsets, w bytes each, little-endian | members, concatenated
//
// Offset i is where member i+1 starts in the members' bytes (member 0
// starts at 0, the last ends at the end); w is the smallest of 1, 2, 4, 8
// that holds the members' total length, so one set has one encoding.
var setFamily = family{
	desc: request.Sets,
	ops: []op{
		{code: request.SAdd, valid: membersValid, run: (*FSM).sAdd},
		{code: request.SRem, valid: membersValid, run: (*FSM).sRem},
		{code: request.SIsMember, valid: oneValue, run: (*FSM).sIsMember},
		{code: request.SMIsMember, valid: membersValid, run: (*FSM).sMIsMember},
		{code: request.SCard, run: (*FSM).sCard},
		{code: request.SMembers, run: (*FSM).sMembers},
	},
	hasValue: true,
	check:    setCheckRecord,
	pttl:     gcraPTTL,
	expiry:   strExpiry,
}

// setKind is the keyspace kind of a set key.
var setKind = keyKind(request.KeySet)

// setBufs holds the buffers reads copy a set's value into (GetValue), so
// that SISMEMBER, SMISMEMBER and SCARD allocate nothing in steady state.
// Reads run on any goroutine, concurrently: each takes its own buffer.
var setBufs = sync.Pool{New: func() any { return new([]byte) }}

// maxKeptSetBuf bounds a read buffer returned to setBufs.
const maxKeptSetBuf = 64 << 10

// setView is a stored set, decoded without copying: its members' offsets
// and bytes alias the value.
type setView struct {
	n    int    // members
	w    int    // offset width
	offs []byte // n-1 offsets
	data []byte // the members, concatenated
}

// viewSet decodes st's set; ok false when its value is not one apply can
// have written (setCheckRecord refuses such a record at restore, so only a
// bug makes it false at apply).
func viewSet(st shard.State) (setView, bool) {
	v := st.Val
	if st.A < 1 || len(v) < 1 || !validWidth(int(v[0])) {
		return setView{}, false
	}
	w := int(v[0])
	if uint64(st.A-1) > uint64(len(v)-1)/uint64(w) {
		return setView{}, false
	}
	n := int(st.A)
	offs := v[1 : 1+(n-1)*w]
	return setView{n: n, w: w, offs: offs, data: v[1+(n-1)*w:]}, true
}

func validWidth(w int) bool { return w == 1 || w == 2 || w == 4 || w == 8 }

// offsetWidth is the width of the offsets of members totalling size bytes.
func offsetWidth(size int) int {
	switch {
	case size <= math.MaxUint8:
		return 1
	case size <= math.MaxUint16:
		return 2
	case uint64(size) <= math.MaxUint32:
		return 4
	}
	return 8
}

func (s setView) offset(i int) int {
	b := s.offs[i*s.w:]
	switch s.w {
	case 1:
		return int(b[0])
	case 2:
		return int(binary.LittleEndian.Uint16(b))
	case 4:
		return int(binary.LittleEndian.Uint32(b))
	}
	return int(binary.LittleEndian.Uint64(b))
}

// member is member i (0 <= i < n); it aliases the value.
func (s setView) member(i int) []byte {
	start, end := 0, len(s.data)
	if i > 0 {
		start = s.offset(i - 1)
	}
	if i < s.n-1 {
		end = s.offset(i)
	}
	return s.data[start:end]
}

// has reports whether m is a member: a binary search.
func (s setView) has(m []byte) bool {
	lo, hi := 0, s.n
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		switch c := bytes.Compare(s.member(mid), m); {
		case c == 0:
			return true
		case c < 0:
			lo = mid + 1
		default:
			hi = mid
		}
	}
	return false
}

// setCheckRecord refuses a set record apply could never have written:
// offsets that are not the canonical width, do not increase, or pass the
// value, and members that are not strictly increasing.
func setCheckRecord(_ *recordReader, st shard.State, _ byte) error {
	if st.B != 0 && (st.Expire != noExpiry || st.B <= math.MaxInt64/1_000_000-1) {
		return fmt.Errorf("set with expiry field %d (expire %d)", st.B, st.Expire)
	}
	s, ok := viewSet(st)
	if !ok {
		return fmt.Errorf("set of %d members with a %d-byte value", st.A, len(st.Val))
	}
	if s.w != offsetWidth(len(s.data)) {
		return fmt.Errorf("set of %d members totalling %d bytes with offsets %d wide", s.n, len(s.data), s.w)
	}
	prev := 0
	for i := 0; i < s.n-1; i++ {
		o := s.offset(i)
		if o < prev || o > len(s.data) {
			return fmt.Errorf("set member %d at offset %d", i+1, o)
		}
		prev = o
	}
	for i := 1; i < s.n; i++ {
		if bytes.Compare(s.member(i-1), s.member(i)) >= 0 {
			return fmt.Errorf("set members %d and %d out of order", i-1, i)
		}
	}
	return nil
}

// membersValid: at least one member (the parser's arity).
func membersValid(r *request.Request) string {
	if len(r.Keys) == 0 {
		return "no members"
	}
	return ""
}

// sortedMembers sorts the request's members and drops repeats, in place
// (a write's request is not read again once applied).
func sortedMembers(r *request.Request) [][]byte {
	ms := r.Keys
	slices.SortFunc(ms, bytes.Compare)
	return slices.CompactFunc(ms, bytes.Equal)
}

// setWalk calls emit with each member of the union (add) or difference
// (remove) of the set s and the sorted, distinct members ms, in order, and
// returns how many of ms changed the set.
func setWalk(s setView, ms [][]byte, add bool, emit func(m []byte)) int {
	changed, i, j := 0, 0, 0
	for i < s.n || j < len(ms) {
		var c int
		switch {
		case i == s.n:
			c = 1
		case j == len(ms):
			c = -1
		default:
			c = bytes.Compare(s.member(i), ms[j])
		}
		switch {
		case c < 0: // only in the set
			emit(s.member(i))
			i++
		case c > 0: // only in ms
			if add {
				changed++
				emit(ms[j])
			}
			j++
		default: // in both
			if !add {
				changed++
			} else {
				emit(ms[j])
			}
			i++
			j++
		}
	}
	return changed
}

// appendSet appends the encoding of n members totalling size bytes, which
// walk emits in order, to dst.
func appendSet(dst []byte, n, size int, walk func(emit func(m []byte))) []byte {
	w := offsetWidth(size)
	dst = slices.Grow(dst, 1+(n-1)*w+size)
	dst = append(dst, byte(w))
	offs := len(dst)
	dst = dst[:offs+(n-1)*w]
	data := len(dst)
	i := 0
	walk(func(m []byte) {
		if i > 0 {
			o := dst[offs+(i-1)*w:]
			switch x := len(dst) - data; w {
			case 1:
				o[0] = byte(x)
			case 2:
				binary.LittleEndian.PutUint16(o, uint16(x))
			case 4:
				binary.LittleEndian.PutUint32(o, uint32(x))
			default:
				binary.LittleEndian.PutUint64(o, uint64(x))
			}
		}
		dst = append(dst, m...)
		i++
	})
	return dst
}

// setChange is SADD (add) and SREM: the set with ms added or removed,
// rewritten whole into f.strBuf. A change of nothing keeps the record as
// it was (WATCH sees no write), and a set that loses its last member is
// deleted.
func (f *FSM) setChange(r *request.Request, now int64, res *request.Result, add bool) {
	ms := sortedMembers(r)
	f.store.Update(r.Key, now, func(cur shard.State, live bool) (shard.State, shard.Action) {
		var s setView
		if live {
			if cur.Kind != setKind {
				res.SetErr(request.ErrWrongType)
				return cur, shard.Keep
			}
			var ok bool
			if s, ok = viewSet(cur); !ok {
				res.SetErr(request.ErrCorruptSet)
				return cur, shard.Keep
			}
		} else if !add {
			res.SetInt(0)
			return cur, shard.Keep
		}
		n, size := 0, 0
		changed := setWalk(s, ms, add, func(m []byte) { n, size = n+1, size+len(m) })
		res.SetInt(int64(changed))
		switch {
		case changed == 0:
			return cur, shard.Keep
		case n == 0:
			return cur, shard.Delete
		case size+1+(n-1)*offsetWidth(size) > maxSnapshotValue:
			res.SetErr(request.ErrSetTooLarge)
			return cur, shard.Keep
		}
		f.strBuf = appendSet(f.strBuf[:0], n, size, func(emit func([]byte)) { setWalk(s, ms, add, emit) })
		next := shard.State{Kind: setKind, Expire: noExpiry, A: int64(n), Val: f.strBuf}
		if live {
			next.Expire, next.B = cur.Expire, cur.B
		}
		return next, shard.Put
	})
	if cap(f.strBuf) > maxKeptLogBuf {
		f.strBuf = nil
	}
}

func (f *FSM) sAdd(r *request.Request, now int64, res *request.Result) {
	f.setChange(r, now, res, true)
}

func (f *FSM) sRem(r *request.Request, now int64, res *request.Result) {
	f.setChange(r, now, res, false)
}

// readSet calls fn with the live set at key (a view of a pooled copy, valid
// during fn), or with ok false when the key is missing. It answers
// WRONGTYPE (false) for a key of another type.
func (f *FSM) readSet(key []byte, now int64, res *request.Result, fn func(s setView, ok bool)) {
	buf := setBufs.Get().(*[]byte)
	st, live := f.store.GetValue(key, now, *buf)
	switch {
	case !live:
		fn(setView{}, false)
	case st.Kind != setKind:
		res.SetErr(request.ErrWrongType)
	default:
		if s, ok := viewSet(st); ok {
			fn(s, true)
		} else {
			res.SetErr(request.ErrCorruptSet)
		}
	}
	if cap(st.Val) <= maxKeptSetBuf && cap(st.Val) > cap(*buf) {
		*buf = st.Val[:0]
	}
	setBufs.Put(buf)
}

func (f *FSM) sIsMember(r *request.Request, now int64, res *request.Result) {
	f.readSet(r.Key, now, res, func(s setView, ok bool) {
		if ok && s.has(r.Keys[0]) {
			res.SetInt(1)
		} else {
			res.SetInt(0)
		}
	})
}

func (f *FSM) sMIsMember(r *request.Request, now int64, res *request.Result) {
	f.readSet(r.Key, now, res, func(s setView, ok bool) {
		data := make([]byte, 0, len(r.Keys))
		for _, m := range r.Keys {
			in := int64(0)
			if ok && s.has(m) {
				in = 1
			}
			data = request.AppendIntItem(data, in)
		}
		res.Kind, res.Data = request.KindInts, data
	})
}

// sCard reads only the fixed fields: A is the cardinality.
func (f *FSM) sCard(r *request.Request, now int64, res *request.Result) {
	st, live := f.store.Get(r.Key, now)
	switch {
	case !live:
		res.SetInt(0)
	case st.Kind != setKind:
		res.SetErr(request.ErrWrongType)
	default:
		res.SetInt(st.A)
	}
}

// sMembers answers the members in their stored (bytewise) order, which
// Redis leaves unspecified.
func (f *FSM) sMembers(r *request.Request, now int64, res *request.Result) {
	f.readSet(r.Key, now, res, func(s setView, ok bool) {
		var data []byte
		if ok {
			size := len(s.data)
			for i := 0; i < s.n; i++ {
				size += setLenBytes(len(s.member(i)))
			}
			data = make([]byte, 0, size)
			for i := 0; i < s.n; i++ {
				data = request.AppendItem(data, s.member(i))
			}
		}
		res.Kind, res.Data = request.KindSet, data
	})
}

// setLenBytes is how many bytes binary.AppendUvarint writes for n (a
// member's length in SMEMBERS's reply).
func setLenBytes(n int) int {
	l := 1
	for ; n >= 0x80; n >>= 7 {
		l++
	}
	return l
}
