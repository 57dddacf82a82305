package fsm

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"sync"

	"github.com/redcell/redcell/request"
	"github.com/redcell/redcell/shard"
)

// The hash family in the state machine (Redis 7.0's t_hash.c at the
// entry's now). A key is a shard.State of KindHash whose value (Val) is its
// fields in insertion order, each pair encoded as uvarint(len(field)),
// field, uvarint(len(value)), value — the order Redis's listpack keeps, so
// a small hash answers HGETALL in Redis's order; A is the number of fields
// (HLEN without reading the value; never 0: an empty hash is deleted); B
// and Expire are the expiry as for strings (strExpiry). Every other kind
// answers WRONGTYPE (HMGET included, as Redis does).
//
// A write decodes the pairs into hashScratch, changes them and encodes the
// whole value again: O(size of the hash), as a listpack insert is. A
// lookup of m fields in a hash of n is a linear scan when m·n is small and
// a map built for the call otherwise, so no command costs more than
// O(n + m) comparisons.
var hashFamily = family{
	desc: request.Hashes,
	ops: []op{
		{code: request.HSet, valid: hsetValid, run: (*FSM).hset},
		{code: request.HSetNX, valid: fieldAndValue, run: (*FSM).hsetNX},
		{code: request.HDel, valid: someFields, run: (*FSM).hdel},
		{code: request.HIncrBy, valid: hincrValid, run: (*FSM).hincrBy},
		{code: request.HIncrByFloat, valid: fieldAndValue, run: (*FSM).hincrByFloat},
		{code: request.HGet, valid: oneField, run: (*FSM).hget},
		{code: request.HMGet, valid: someFields, run: (*FSM).hmget},
		{code: request.HGetAll, run: (*FSM).hgetAll},
		{code: request.HExists, valid: oneField, run: (*FSM).hexists},
		{code: request.HLen, run: (*FSM).hlen},
		{code: request.HKeys, run: (*FSM).hgetAll},
		{code: request.HVals, run: (*FSM).hgetAll},
	},
	hasValue: true,
	check:    hashCheckRecord,
	pttl:     gcraPTTL,
	expiry:   strExpiry,
}

// hashKind is the keyspace kind of a hash key.
var hashKind = keyKind(request.KeyHash)

// maxHashValue is the longest encoding a write may leave: what a snapshot
// record holds.
const maxHashValue = maxSnapshotValue

// indexAbove: a call that looks up m fields in a hash of n builds a map
// when m·n passes it (a linear scan is cheaper below).
const indexAbove = 256

func hsetValid(r *request.Request) string {
	if len(r.Keys) == 0 || len(r.Keys)%2 != 0 {
		return fmt.Sprintf("%d fields and values, not pairs", len(r.Keys))
	}
	if r.NArgs != 1 || r.Args[0] != 0 && r.Args[0] != request.HSetOK {
		return "HSET without its reply flag"
	}
	return ""
}

func fieldAndValue(r *request.Request) string {
	if len(r.Keys) != 2 {
		return fmt.Sprintf("%d fields and values, not 2", len(r.Keys))
	}
	return ""
}

func someFields(r *request.Request) string {
	if len(r.Keys) == 0 {
		return "no field"
	}
	return ""
}

func oneField(r *request.Request) string {
	if len(r.Keys) != 1 {
		return fmt.Sprintf("%d fields, not 1", len(r.Keys))
	}
	return ""
}

func hincrValid(r *request.Request) string {
	if why := oneField(r); why != "" {
		return why
	}
	if r.NArgs != 1 {
		return "HINCRBY without its increment"
	}
	return ""
}

// nextPair splits the first pair off an encoded hash; ok false when v is
// not a valid encoding (only a corrupt snapshot could hold one, and restore
// refuses it).
func nextPair(v []byte) (field, value, rest []byte, ok bool) {
	field, v, ok = nextBytes(v)
	if !ok {
		return nil, nil, nil, false
	}
	value, v, ok = nextBytes(v)
	return field, value, v, ok
}

func nextBytes(v []byte) (b, rest []byte, ok bool) {
	n, w := binary.Uvarint(v)
	if w <= 0 || n > uint64(len(v)-w) {
		return nil, nil, false
	}
	return v[w : w+int(n)], v[w+int(n):], true
}

func appendPair(dst, field, value []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(field)))
	dst = append(dst, field...)
	dst = binary.AppendUvarint(dst, uint64(len(value)))
	return append(dst, value...)
}

func pairLen(field, value []byte) int {
	return uvarintLen(len(field)) + len(field) + uvarintLen(len(value)) + len(value)
}

func uvarintLen(n int) int {
	l := 1
	for ; n >= 0x80; n >>= 7 {
		l++
	}
	return l
}

// hashCheckRecord refuses a hash apply could never have written: a value
// that is not a sequence of pairs, a field twice, a count in A that is not
// the number of pairs (or 0), or an expiry B cannot hold (as strings).
func hashCheckRecord(_ *recordReader, st shard.State, _ byte) error {
	if st.B != 0 && (st.Expire != noExpiry || st.B <= math.MaxInt64/1_000_000-1) {
		return fmt.Errorf("hash with expiry field %d (expire %d)", st.B, st.Expire)
	}
	var n int64
	seen := map[string]struct{}{}
	for v := st.Val; len(v) > 0; n++ {
		field, _, rest, ok := nextPair(v)
		if !ok {
			return fmt.Errorf("hash value malformed after %d fields", n)
		}
		if _, dup := seen[string(field)]; dup {
			return fmt.Errorf("hash with field %q twice", field)
		}
		seen[string(field)] = struct{}{}
		v = rest
	}
	if n == 0 || st.A != n {
		return fmt.Errorf("hash of %d fields with count %d", n, st.A)
	}
	return nil
}

// hashEntry is one field of a hash being changed; its bytes alias the
// stored value or the request.
type hashEntry struct {
	field, value []byte
	gone         bool // deleted by HDEL
}

// hashScratch is the state machine's working copy of the hash a write
// changes (FSM goroutine only): its fields, a map from field to position
// when the call looks up many, and the buffer the new encoding is written
// to. Reused from call to call; a large one is dropped after its call.
type hashScratch struct {
	entries []hashEntry
	index   map[string]int
	live    int // entries not gone
	size    int // bytes of the encoding of the live entries
	buf     []byte
}

// load decodes val for a call that will look up `lookups` fields.
func (h *hashScratch) load(val []byte, lookups int) {
	h.entries, h.index, h.live, h.size = h.entries[:0], nil, 0, len(val)
	for len(val) > 0 {
		field, value, rest, ok := nextPair(val)
		if !ok {
			break // unreachable: restore and apply only store valid encodings
		}
		h.entries = append(h.entries, hashEntry{field: field, value: value})
		val = rest
	}
	h.live = len(h.entries)
	if len(h.entries)*lookups > indexAbove {
		h.index = make(map[string]int, len(h.entries)+lookups)
		for i, e := range h.entries {
			h.index[string(e.field)] = i
		}
	}
}

// find is the position of a live field, -1 when absent.
func (h *hashScratch) find(field []byte) int {
	if h.index != nil {
		if i, ok := h.index[string(field)]; ok && !h.entries[i].gone {
			return i
		}
		return -1
	}
	for i := range h.entries {
		if e := &h.entries[i]; !e.gone && string(e.field) == string(field) {
			return i
		}
	}
	return -1
}

// set gives field the value: true when the field is new.
func (h *hashScratch) set(field, value []byte) bool {
	if i := h.find(field); i >= 0 {
		e := &h.entries[i]
		h.size += len(value) - len(e.value) + uvarintLen(len(value)) - uvarintLen(len(e.value))
		e.value = value
		return false
	}
	h.entries = append(h.entries, hashEntry{field: field, value: value})
	if h.index != nil {
		h.index[string(field)] = len(h.entries) - 1
	}
	h.live++
	h.size += pairLen(field, value)
	return true
}

// del removes field: true when it was there.
func (h *hashScratch) del(field []byte) bool {
	i := h.find(field)
	if i < 0 {
		return false
	}
	e := &h.entries[i]
	e.gone = true
	h.live--
	h.size -= pairLen(e.field, e.value)
	return true
}

// encode writes the live entries to h.buf: the new value.
func (h *hashScratch) encode() []byte {
	h.buf = h.buf[:0]
	if cap(h.buf) < h.size {
		h.buf = make([]byte, 0, h.size)
	}
	for _, e := range h.entries {
		if !e.gone {
			h.buf = appendPair(h.buf, e.field, e.value)
		}
	}
	return h.buf
}

// release drops what a large call grew, and every alias of the keyspace.
func (h *hashScratch) release() {
	clear(h.entries)
	h.entries, h.index = h.entries[:0], nil
	if cap(h.entries) > 4096 {
		h.entries = nil
	}
	if cap(h.buf) > maxKeptLogBuf {
		h.buf = nil
	}
}

// hashWrite is the common frame of the writes: it loads a live hash (or an
// empty one for a missing key), runs change, and stores what it left —
// deleting the key when no field is left, keeping the record untouched when
// change reports no change. A key of another type answers WRONGTYPE.
func (f *FSM) hashWrite(r *request.Request, now int64, lookups int, res *request.Result, change func(h *hashScratch) (changed bool)) {
	h := &f.hash
	defer h.release()
	f.store.Update(r.Key, now, func(cur shard.State, live bool) (shard.State, shard.Action) {
		if live && cur.Kind != hashKind {
			res.SetErr(request.ErrWrongType)
			return cur, shard.Keep
		}
		h.load(cur.Val, lookups)
		if !change(h) {
			return cur, shard.Keep
		}
		if h.live == 0 {
			return cur, shard.Delete
		}
		if h.size > maxHashValue {
			*res = request.Result{}
			res.SetErr(request.ErrHashTooLarge)
			return cur, shard.Keep
		}
		next := shard.State{Kind: hashKind, Expire: noExpiry, A: int64(h.live), Val: h.encode()}
		if live {
			next.Expire, next.B = cur.Expire, cur.B
		}
		return next, shard.Put
	})
}

// hset is HSET and HMSET: the pairs in order, a field given twice taking
// its last value.
func (f *FSM) hset(r *request.Request, now int64, res *request.Result) {
	f.hashWrite(r, now, len(r.Keys)/2, res, func(h *hashScratch) bool {
		added := int64(0)
		for i := 0; i < len(r.Keys); i += 2 {
			if h.set(r.Keys[i], r.Keys[i+1]) {
				added++
			}
		}
		if r.Args[0] == request.HSetOK {
			res.Kind = request.KindOK
		} else {
			res.SetInt(added)
		}
		return true
	})
}

func (f *FSM) hsetNX(r *request.Request, now int64, res *request.Result) {
	f.hashWrite(r, now, 1, res, func(h *hashScratch) bool {
		if h.find(r.Keys[0]) >= 0 {
			res.SetInt(0)
			return false
		}
		h.set(r.Keys[0], r.Keys[1])
		res.SetInt(1)
		return true
	})
}

func (f *FSM) hdel(r *request.Request, now int64, res *request.Result) {
	f.hashWrite(r, now, len(r.Keys), res, func(h *hashScratch) bool {
		deleted := int64(0)
		for _, field := range r.Keys {
			if h.del(field) {
				deleted++
			}
		}
		res.SetInt(deleted)
		return deleted > 0
	})
}

// hincrBy is HINCRBY: the field's value parses as string2ll, a missing
// field is 0, and the sum must stay within int64.
func (f *FSM) hincrBy(r *request.Request, now int64, res *request.Result) {
	incr := r.Args[0]
	f.hashWrite(r, now, 1, res, func(h *hashScratch) bool {
		var old int64
		if i := h.find(r.Keys[0]); i >= 0 {
			var ok bool
			if old, ok = string2ll(h.entries[i].value); !ok {
				res.SetErr(request.ErrHashNotInteger)
				return false
			}
		}
		if incr < 0 && old < 0 && incr < math.MinInt64-old || incr > 0 && old > 0 && incr > math.MaxInt64-old {
			res.SetErr(request.ErrOverflow)
			return false
		}
		f.strBuf = strconv.AppendInt(f.strBuf[:0], old+incr, 10)
		h.set(r.Keys[0], f.strBuf)
		res.SetInt(old + incr)
		return true
	})
}

// hincrByFloat is HINCRBYFLOAT in Redis 7.0's order: the increment (not a
// long double, then infinite) before the lookup, then the type, then the
// field's value, then the sum (longdouble.go).
func (f *FSM) hincrByFloat(r *request.Request, now int64, res *request.Result) {
	incr, iinf, ok := parseLongDouble(r.Keys[1])
	if !ok {
		res.SetErr(request.ErrNotFloat)
		return
	}
	if iinf != 0 {
		res.SetErr(request.ErrHashIncrNaN)
		return
	}
	f.hashWrite(r, now, 1, res, func(h *hashScratch) bool {
		value, vinf := new(big.Float).SetPrec(longDoublePrec), 0
		if i := h.find(r.Keys[0]); i >= 0 {
			var ok bool
			if value, vinf, ok = parseLongDouble(h.entries[i].value); !ok {
				res.SetErr(request.ErrHashNotFloat)
				return false
			}
		}
		var sum *big.Float
		ok := vinf == 0
		if ok {
			sum, ok = addLongDouble(value, incr)
		}
		if !ok {
			res.SetErr(request.ErrFloatNaNOrInf)
			return false
		}
		f.strBuf = formatLongDouble(f.strBuf[:0], sum)
		h.set(r.Keys[0], f.strBuf)
		setBulk(res, f.strBuf)
		return true
	})
	if cap(f.strBuf) > maxKeptLogBuf {
		f.strBuf = nil
	}
}

// hashBufs lends the reads (any goroutine) a buffer to copy a hash into,
// so a read allocates only its reply.
var hashBufs = sync.Pool{New: func() any { return new([]byte) }}

// hashRead copies key's hash into a pooled buffer and calls fn with it
// (live false for a missing key); fn must copy what it keeps. A key of
// another type answers WRONGTYPE and fn is not called.
func (f *FSM) hashRead(key []byte, now int64, res *request.Result, fn func(st shard.State, live bool)) {
	buf := hashBufs.Get().(*[]byte)
	st, live := f.store.GetValue(key, now, *buf)
	if live && st.Kind != hashKind {
		res.SetErr(request.ErrWrongType)
	} else {
		fn(st, live)
	}
	if cap(st.Val) > cap(*buf) {
		*buf = st.Val[:0] // keep the grown buffer
	}
	if cap(*buf) <= maxKeptLogBuf {
		hashBufs.Put(buf)
	}
}

// lookupField is the value of field in an encoded hash.
func lookupField(v, field []byte) ([]byte, bool) {
	for len(v) > 0 {
		f, value, rest, ok := nextPair(v)
		if !ok {
			break
		}
		if string(f) == string(field) {
			return value, true
		}
		v = rest
	}
	return nil, false
}

func (f *FSM) hget(r *request.Request, now int64, res *request.Result) {
	f.hashRead(r.Key, now, res, func(st shard.State, live bool) {
		v, ok := lookupField(st.Val, r.Keys[0])
		if !ok {
			setNil(res)
			return
		}
		setBulk(res, v)
	})
}

func (f *FSM) hexists(r *request.Request, now int64, res *request.Result) {
	f.hashRead(r.Key, now, res, func(st shard.State, live bool) {
		res.SetInt(0)
		if _, ok := lookupField(st.Val, r.Keys[0]); ok {
			res.SetInt(1)
		}
	})
}

// hmget answers each field's value or nil; a map of the hash is built when
// many fields are asked of a large one.
func (f *FSM) hmget(r *request.Request, now int64, res *request.Result) {
	f.hashRead(r.Key, now, res, func(st shard.State, live bool) {
		var index map[string][]byte
		if st.A*int64(len(r.Keys)) > indexAbove {
			index = make(map[string][]byte, st.A)
			for v := st.Val; len(v) > 0; {
				field, value, rest, ok := nextPair(v)
				if !ok {
					break
				}
				index[string(field)] = value
				v = rest
			}
		}
		// The values found, kept to size the reply once (on the stack for
		// the few fields a rate limiter asks).
		var small [16][]byte
		found := small[:0]
		if len(r.Keys) > len(small) {
			found = make([][]byte, 0, len(r.Keys))
		}
		size := 0
		for _, field := range r.Keys {
			var v []byte
			var ok bool
			if index != nil {
				v, ok = index[string(field)]
			} else {
				v, ok = lookupField(st.Val, field)
			}
			if !ok {
				v = nil
			} else if v == nil {
				v = []byte{}
			}
			found = append(found, v)
			size += uvarintLen(len(v)+1) + len(v) + 1
		}
		data := make([]byte, 0, size)
		for _, v := range found {
			data = request.AppendBulkItem(data, v, v == nil)
		}
		res.Kind, res.Data = request.KindBulks, data
	})
}

// hgetAll is HGETALL (a map of fields and values), HKEYS and HVALS (an
// array), in insertion order; a missing key is an empty one. HGETALL's
// reply items are the stored encoding itself (each pair is two items), so
// its reply is the value GetValue copies.
func (f *FSM) hgetAll(r *request.Request, now int64, res *request.Result) {
	if r.Code == request.HGetAll {
		st, live := f.store.GetValue(r.Key, now, nil)
		if live && st.Kind != hashKind {
			res.SetErr(request.ErrWrongType)
			return
		}
		res.Kind, res.Data = request.KindMap, st.Val
		return
	}
	second := r.Code == request.HVals
	f.hashRead(r.Key, now, res, func(st shard.State, live bool) {
		n := 0
		eachPair(st.Val, func(field, value []byte) {
			if second {
				field = value
			}
			n += uvarintLen(len(field)) + len(field)
		})
		data := make([]byte, 0, n)
		eachPair(st.Val, func(field, value []byte) {
			if second {
				field = value
			}
			data = request.AppendItem(data, field)
		})
		res.Kind, res.Data = request.KindArray, data
	})
}

// eachPair calls fn with each field and value of an encoded hash, in order.
func eachPair(v []byte, fn func(field, value []byte)) {
	for len(v) > 0 {
		field, value, rest, ok := nextPair(v)
		if !ok {
			return
		}
		fn(field, value)
		v = rest
	}
}

func (f *FSM) hlen(r *request.Request, now int64, res *request.Result) {
	st, live := f.store.Get(r.Key, now)
	switch {
	case !live:
		res.SetInt(0)
	case st.Kind != hashKind:
		res.SetErr(request.ErrWrongType)
	default:
		res.SetInt(st.A)
	}
}
