package fsm

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/redcell/redcell/internal/varint"
	"github.com/redcell/redcell/request"
	"github.com/redcell/redcell/shard"
)

// The list family in the state machine (Redis 7.0's t_list.c at the entry's
// now). A key is a shard.State of kind KeyListKind: A is the element count (at
// least 1: an empty list does not exist), B is 0 but for an expiry past
// 2262 (the strings' rule, strExpiry), and Val holds the elements head
// first, each as
//
//	uvarint(n) | n bytes | the same uvarint's bytes in reverse order
//
// so that an element can be stepped over from either end without reading
// the others' contents: forwards by its length prefix, backwards by its
// length suffix (a uvarint read from its last byte towards its first is
// the same 7-bit groups, least significant first, ending at the byte
// without the high bit). The front part of each element is exactly
// request.AppendItem's encoding, so LRANGE's reply is the element fronts
// copied as they are. A command that changes nothing returns shard.Keep
// (WATCH counts every other write as a change); LTRIM and LSET of a live
// list always put it back, as Redis 7.0 signals them modified even when
// the bytes stay the same. DESIGN.md, "Lists", says what each command
// costs.
var listFamily = family{
	desc: request.Lists,
	ops: []op{
		{code: request.ListPush, valid: listPushValid, run: (*FSM).listPush},
		{code: request.ListPop, valid: listPopValid, run: (*FSM).listPop},
		{code: request.ListTrim, valid: listTwoArgs, run: (*FSM).listTrim},
		{code: request.ListRem, valid: listRemValid, run: (*FSM).listRem},
		{code: request.ListSet, valid: listIndexValid, run: (*FSM).listSet},
		{code: request.ListLen, run: (*FSM).listLen},
		{code: request.ListIndex, valid: listIndexValid, run: (*FSM).listIndex},
		{code: request.ListRange, valid: listTwoArgs, run: (*FSM).listRange},
	},
	hasValue: true,
	check:    listCheckRecord,
	pttl:     gcraPTTL,
	expiry:   strExpiry,
}

var listKind = keyKind(request.KeyListKind)

// maxListValue is the largest list value a push or LSET makes: what a
// snapshot record holds.
const maxListValue = maxSnapshotValue

// listElemLen is the encoded size of an element of n bytes.
func listElemLen(n int) int { return 2*varint.UvarintLen(uint64(n)) + n }

// appendListElem appends e's encoding to v.
func appendListElem(v, e []byte) []byte {
	start := len(v)
	v = binary.AppendUvarint(v, uint64(len(e)))
	w := len(v) - start
	v = append(v, e...)
	for i := start + w - 1; i >= start; i-- {
		v = append(v, v[i])
	}
	return v
}

// listElemAt reads the element that starts at off: its bytes (aliasing v) and
// the offset just past it. v is a list value apply wrote or restore
// checked.
func listElemAt(v []byte, off int) (e []byte, next int) {
	n, w := binary.Uvarint(v[off:])
	start := off + w
	end := start + int(n)
	return v[start:end], end + w
}

// listElemBefore reads the element that ends at end: its bytes and the offset
// where it starts.
func listElemBefore(v []byte, end int) (e []byte, start int) {
	var n uint64
	w := 0
	for shift := uint(0); ; shift += 7 {
		b := v[end-1-w]
		w++
		n |= uint64(b&0x7f) << shift
		if b < 0x80 {
			break
		}
	}
	stop := end - w
	return v[stop-int(n) : stop], stop - int(n) - w
}

// listElemOffset is the offset where element i starts (len(v) for i == count),
// walked from the nearer end: O(min(i, count-i)) steps over lengths.
func listElemOffset(v []byte, count, i int64) int {
	if i <= count/2 {
		off := 0
		for ; i > 0; i-- {
			_, off = listElemAt(v, off)
		}
		return off
	}
	off := len(v)
	for j := count - i; j > 0; j-- {
		_, off = listElemBefore(v, off)
	}
	return off
}

// listRange is Redis's range rule for LRANGE and LTRIM: start and stop
// (negative counting from the tail) clamped to a list of n elements; ok
// false when the range is empty.
func listRange(start, stop, n int64) (from, to int64, ok bool) {
	if start < 0 {
		start += n
	}
	if stop < 0 {
		stop += n
	}
	if start < 0 {
		start = 0
	}
	if start > stop || start >= n {
		return 0, 0, false
	}
	if stop >= n {
		stop = n - 1
	}
	return start, stop, true
}

// listIndex turns LINDEX's or LSET's index into a position; ok false when
// the list of n elements has none there.
func listIndex(i, n int64) (int64, bool) {
	if i < 0 {
		i += n
	}
	return i, i >= 0 && i < n
}

func listTwoArgs(r *request.Request) string {
	if r.NArgs != 2 {
		return fmt.Sprintf("%d arguments, not 2", r.NArgs)
	}
	return ""
}

func listPushValid(r *request.Request) string {
	switch {
	case len(r.Keys) == 0:
		return "a push without elements"
	case r.NArgs != 1 || r.Args[0]&^(request.ListRight|request.ListExisting) != 0:
		return "a push without its flags"
	}
	return ""
}

func listPopValid(r *request.Request) string {
	switch {
	case r.NArgs != 2 || r.Args[0]&^request.ListRight != 0:
		return "a pop without its flags and count"
	case r.Args[1] < request.ListNoCount:
		return "a negative count"
	}
	return ""
}

func listRemValid(r *request.Request) string {
	if why := oneValue(r); why != "" {
		return why
	}
	if r.NArgs != 1 {
		return "LREM without its count"
	}
	return ""
}

// listIndexValid is LINDEX's and LSET's: the index and the error to answer
// instead (none, or the index's not-an-integer), and LSET's element.
func listIndexValid(r *request.Request) string {
	if r.Code == request.ListSet {
		if why := oneValue(r); why != "" {
			return why
		}
	}
	switch {
	case listTwoArgs(r) != "":
		return listTwoArgs(r)
	case r.Args[1] != 0 && request.ErrCode(r.Args[1]) != request.ErrNotInteger:
		return fmt.Sprintf("index error code %d", r.Args[1])
	}
	return ""
}

// listOf reports whether a live key is a list; false with res answered
// WRONGTYPE.
func listOf(cur shard.State, res *request.Result) bool {
	if cur.Kind != listKind {
		res.SetErr(request.ErrWrongType)
		return false
	}
	return true
}

// listPush is LPUSH, RPUSH, LPUSHX and RPUSHX: the new value is the new
// elements and the old value side by side in listBuf.
func (f *FSM) listPush(r *request.Request, now int64, res *request.Result) {
	fl := r.Args[0]
	f.store.Update(r.Key, now, func(cur shard.State, live bool) (shard.State, shard.Action) {
		if !live {
			if fl&request.ListExisting != 0 {
				res.SetInt(0)
				return cur, shard.Keep
			}
			cur = shard.State{Kind: listKind, Expire: noExpiry}
		} else if !listOf(cur, res) {
			return cur, shard.Keep
		}
		size := len(cur.Val)
		for _, e := range r.Keys {
			size += listElemLen(len(e))
		}
		if size > maxListValue {
			res.SetErr(request.ErrListTooLong)
			return cur, shard.Keep
		}
		buf := f.listBuf[:0]
		if fl&request.ListRight != 0 {
			buf = append(buf, cur.Val...)
			for _, e := range r.Keys {
				buf = appendListElem(buf, e)
			}
		} else {
			for i := len(r.Keys) - 1; i >= 0; i-- { // LPUSH a b c: c b a
				buf = appendListElem(buf, r.Keys[i])
			}
			buf = append(buf, cur.Val...)
		}
		f.listBuf = buf
		cur.A += int64(len(r.Keys))
		cur.Val = buf
		res.SetInt(cur.A)
		return cur, shard.Put
	})
	f.dropListBuf()
}

// dropListBuf lets a huge list's buffer go after the write that needed it.
func (f *FSM) dropListBuf() {
	if cap(f.listBuf) > maxKeptLogBuf {
		f.listBuf = nil
	}
}

// listPop is LPOP and RPOP: the count's elements are read from their end,
// and the rest of the value stays where it is (a slice of cur.Val, which
// the store moves within the record).
func (f *FSM) listPop(r *request.Request, now int64, res *request.Result) {
	right, count := r.Args[0]&request.ListRight != 0, r.Args[1]
	f.store.Update(r.Key, now, func(cur shard.State, live bool) (shard.State, shard.Action) {
		if !live {
			if count == request.ListNoCount {
				setNil(res)
			} else {
				res.Kind = request.KindNilArray
			}
			return cur, shard.Keep
		}
		if !listOf(cur, res) {
			return cur, shard.Keep
		}
		if count == 0 {
			res.Kind, res.Data = request.KindArray, []byte{}
			return cur, shard.Keep
		}
		n := min(max(count, 1), cur.A)
		v := cur.Val
		if count == request.ListNoCount {
			var e []byte
			if right {
				e, v = listPopRight(v)
			} else {
				e, v = listPopLeft(v)
			}
			setBulk(res, e)
		} else {
			var data []byte
			if right {
				// The range's bytes bound the reply's: one allocation.
				data = make([]byte, 0, len(v)-listElemOffset(v, cur.A, cur.A-n))
				for range n {
					var e []byte
					e, v = listPopRight(v)
					data = request.AppendItem(data, e)
				}
			} else {
				end := listElemOffset(v, cur.A, n)
				data = appendListFronts(make([]byte, 0, end), v[:end])
				v = v[end:]
			}
			res.Kind, res.Data = request.KindArray, data
		}
		if n == cur.A {
			return cur, shard.Delete
		}
		cur.A -= n
		cur.Val = v
		return cur, shard.Put
	})
}

func listPopLeft(v []byte) (e, rest []byte) {
	e, next := listElemAt(v, 0)
	return e, v[next:]
}

func listPopRight(v []byte) (e, rest []byte) {
	e, start := listElemBefore(v, len(v))
	return e, v[:start]
}

// appendListFronts appends the elements of the list bytes v as items of a
// KindArray (each element's front: its length prefix and bytes).
func appendListFronts(data, v []byte) []byte {
	for off := 0; off < len(v); {
		n, w := binary.Uvarint(v[off:])
		end := off + w + int(n)
		data = append(data, v[off:end]...)
		off = end + w
	}
	return data
}

// listTrim is LTRIM. Redis 7.0 signals the key modified even when nothing
// is removed, so a live list is always put back (WATCH sees the write).
func (f *FSM) listTrim(r *request.Request, now int64, res *request.Result) {
	f.store.Update(r.Key, now, func(cur shard.State, live bool) (shard.State, shard.Action) {
		if !live {
			res.Kind = request.KindOK
			return cur, shard.Keep
		}
		if !listOf(cur, res) {
			return cur, shard.Keep
		}
		res.Kind = request.KindOK
		from, to, ok := listRange(r.Args[0], r.Args[1], cur.A)
		if !ok {
			return cur, shard.Delete
		}
		start := listElemOffset(cur.Val, cur.A, from)
		end := listElemOffset(cur.Val, cur.A, to+1)
		cur.Val = cur.Val[start:end]
		cur.A = to - from + 1
		return cur, shard.Put
	})
}

// listRem is LREM: count > 0 removes the first count matches from the head,
// count < 0 from the tail, 0 all of them. The kept elements are copied into
// listBuf in order.
func (f *FSM) listRem(r *request.Request, now int64, res *request.Result) {
	count, elem := r.Args[0], r.Keys[0]
	f.store.Update(r.Key, now, func(cur shard.State, live bool) (shard.State, shard.Action) {
		if !live {
			res.SetInt(0)
			return cur, shard.Keep
		}
		if !listOf(cur, res) {
			return cur, shard.Keep
		}
		limit := uint64(count)
		if count < 0 {
			limit = uint64(-count) // MinInt64: 1<<63, more than any list holds
		}
		if count == 0 {
			limit = math.MaxUint64
		}
		v := cur.Val
		var removed uint64
		buf := f.listBuf[:0]
		if count >= 0 {
			for off := 0; off < len(v); {
				e, next := listElemAt(v, off)
				if removed < limit && string(e) == string(elem) {
					removed++
				} else {
					buf = append(buf, v[off:next]...)
				}
				off = next
			}
		} else {
			// From the tail: note the removed elements' spans, then copy
			// what lies between them in head-to-tail order.
			var cuts [][2]int // removed elements, tail first
			for end := len(v); end > 0 && removed < limit; {
				e, start := listElemBefore(v, end)
				if string(e) == string(elem) {
					cuts = append(cuts, [2]int{start, end})
					removed++
				}
				end = start
			}
			from := 0
			for i := len(cuts) - 1; i >= 0; i-- {
				buf = append(buf, v[from:cuts[i][0]]...)
				from = cuts[i][1]
			}
			buf = append(buf, v[from:]...)
		}
		f.listBuf = buf
		res.SetInt(int64(removed))
		switch {
		case removed == 0:
			return cur, shard.Keep
		case int64(removed) == cur.A:
			return cur, shard.Delete
		}
		cur.A -= int64(removed)
		cur.Val = buf
		return cur, shard.Put
	})
	f.dropListBuf()
}

// listSet is LSET: the lookup and type check, then the index's own errors,
// as Redis 7.0. The element is replaced even by the same bytes (Redis
// signals the key modified).
func (f *FSM) listSet(r *request.Request, now int64, res *request.Result) {
	f.store.Update(r.Key, now, func(cur shard.State, live bool) (shard.State, shard.Action) {
		if !live {
			res.SetErr(request.ErrNoSuchKey)
			return cur, shard.Keep
		}
		if !listOf(cur, res) {
			return cur, shard.Keep
		}
		if r.Args[1] != 0 {
			res.SetErr(request.ErrCode(r.Args[1]))
			return cur, shard.Keep
		}
		i, ok := listIndex(r.Args[0], cur.A)
		if !ok {
			res.SetErr(request.ErrIndexOutOfRange)
			return cur, shard.Keep
		}
		v := cur.Val
		start := listElemOffset(v, cur.A, i)
		old, end := listElemAt(v, start)
		if len(v)-listElemLen(len(old))+listElemLen(len(r.Keys[0])) > maxListValue {
			res.SetErr(request.ErrListTooLong)
			return cur, shard.Keep
		}
		buf := append(f.listBuf[:0], v[:start]...)
		buf = appendListElem(buf, r.Keys[0])
		buf = append(buf, v[end:]...)
		f.listBuf = buf
		res.Kind = request.KindOK
		cur.Val = buf
		return cur, shard.Put
	})
	f.dropListBuf()
}

// listLen is LLEN: the count in the record's fixed part, no value read.
func (f *FSM) listLen(r *request.Request, now int64, res *request.Result) {
	st, live := f.store.Get(r.Key, now)
	switch {
	case !live:
		res.SetInt(0)
	case listOf(st, res):
		res.SetInt(st.A)
	}
}

// readList copies a live list's value into a pooled buffer (reads run on
// any goroutine, so they cannot share the FSM's buffers) and calls fn with
// it; res is answered with miss for a missing key and WRONGTYPE for
// another type.
func (f *FSM) readList(key []byte, now int64, res *request.Result, miss func(), fn func(st shard.State)) {
	buf := peekBufs.Get().(*[]byte)
	defer func() {
		if cap(*buf) <= maxKeptLogBuf {
			peekBufs.Put(buf)
		}
	}()
	st, live := f.store.GetValue(key, now, *buf)
	if st.Val != nil {
		*buf = st.Val[:0] // keep the grown buffer
	}
	switch {
	case !live:
		miss()
	case listOf(st, res):
		fn(st)
	}
}

// listIndex is LINDEX: the lookup and type check, then the index's own
// error, as Redis 7.0.
func (f *FSM) listIndex(r *request.Request, now int64, res *request.Result) {
	f.readList(r.Key, now, res, func() { setNil(res) }, func(st shard.State) {
		if r.Args[1] != 0 {
			res.SetErr(request.ErrCode(r.Args[1]))
			return
		}
		i, ok := listIndex(r.Args[0], st.A)
		if !ok {
			setNil(res)
			return
		}
		e, _ := listElemAt(st.Val, listElemOffset(st.Val, st.A, i))
		setBulk(res, e)
	})
}

// listRange is LRANGE: the range's element fronts copied into the reply.
func (f *FSM) listRange(r *request.Request, now int64, res *request.Result) {
	empty := func() { res.Kind, res.Data = request.KindArray, []byte{} }
	f.readList(r.Key, now, res, empty, func(st shard.State) {
		from, to, ok := listRange(r.Args[0], r.Args[1], st.A)
		if !ok {
			empty()
			return
		}
		start := listElemOffset(st.Val, st.A, from)
		end := listElemOffset(st.Val, st.A, to+1)
		res.Kind, res.Data = request.KindArray, appendListFronts(make([]byte, 0, end-start), st.Val[start:end])
	})
}

// listCheckRecord refuses a list record apply never writes: a count that
// is not the number of well-formed elements in the value (each element's
// length suffix the reverse of its prefix, nothing left over), or B set
// where the strings' expiry rule does not put it.
func listCheckRecord(_ *recordReader, st shard.State, _ byte) error {
	if st.B != 0 && (st.Expire != noExpiry || st.B <= math.MaxInt64/1_000_000-1) {
		return fmt.Errorf("list with B %d (expire %d)", st.B, st.Expire)
	}
	v := st.Val
	var n int64
	for off := 0; off < len(v); n++ {
		l, w := binary.Uvarint(v[off:])
		if w <= 0 || w != varint.UvarintLen(l) || l > uint64(len(v)-off-w) || uint64(len(v)-off-w)-l < uint64(w) {
			return fmt.Errorf("list element %d malformed at byte %d", n, off)
		}
		end := off + w + int(l)
		for i := 0; i < w; i++ {
			if v[end+i] != v[off+w-1-i] {
				return fmt.Errorf("list element %d: length suffix does not match its prefix", n)
			}
		}
		off = end + w
	}
	if n == 0 || n != st.A {
		return fmt.Errorf("list of %d elements with count %d", n, st.A)
	}
	return nil
}
