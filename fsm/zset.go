package fsm

import (
	"bytes"
	"fmt"
	"math"
	"slices"

	"github.com/redcell/redcell/request"
	"github.com/redcell/redcell/shard"
)

// The sorted-set family in the state machine (Redis 7.0's t_zset.c at the
// entry's now). A key is a shard.State of KindZset whose value is the
// elements in order (zsetvalue.go), whose A is their count, and whose
// Expire and B are its expiry as a string's (strExpiry). Every command
// answers WRONGTYPE on a key of another kind; one that changes nothing
// keeps the record untouched (shard.Keep), and one that removes the last
// member deletes the key.
var zsetFamily = family{
	desc: request.Zsets,
	ops: []op{
		{code: request.ZAdd, valid: zaddValid, run: (*FSM).zadd},
		{code: request.ZRem, valid: zremValid, run: (*FSM).zrem},
		{code: request.ZRemRangeByScore, valid: zScoreRangeValid, run: (*FSM).zremRangeByScore},
		{code: request.ZRemRangeByRank, valid: zRankRangeValid, run: (*FSM).zremRangeByRank},
		{code: request.ZCard, run: (*FSM).zcard},
		{code: request.ZCount, valid: zScoreRangeValid, run: (*FSM).zcount},
		{code: request.ZScore, valid: oneValue, run: (*FSM).zscore},
		{code: request.ZRange, valid: zrangeValid, run: (*FSM).zrange},
		{code: request.ZRank, valid: oneValue, run: (*FSM).zrank},
	},
	hasValue: true,
	check:    zsetCheckRecord,
	pttl:     gcraPTTL,
	expiry:   strExpiry,
}

var zsetKind = keyKind(request.KeyZset)

// maxZset is the largest value a sorted set may have: what a snapshot
// record holds.
const maxZset = maxSnapshotValue

// zaddBulk: a ZADD of more pairs than this sorts once instead of splicing
// each into the value (zaddMany).
const zaddBulk = 8

func zsetCheckRecord(_ *recordReader, st shard.State, _ byte) error {
	if st.B != 0 && (st.Expire != noExpiry || st.B <= math.MaxInt64/1_000_000-1) {
		return fmt.Errorf("sorted set with expiry field %d (expire %d)", st.B, st.Expire)
	}
	return zsetCheckValue(st.Val, st.A)
}

const zaddFlags = request.ZAddNX | request.ZAddXX | request.ZAddGT | request.ZAddLT | request.ZAddCH | request.ZAddIncr

func zaddValid(r *request.Request) string {
	if r.NArgs != 1 {
		return "ZADD without its flags"
	}
	fl := r.Args[0]
	n := len(r.Keys)
	switch {
	case fl&^zaddFlags != 0:
		return "unknown ZADD flags"
	case n == 0 || n%2 != 0:
		return fmt.Sprintf("%d scores and members, not pairs", n)
	case fl&request.ZAddNX != 0 && fl&(request.ZAddXX|request.ZAddGT|request.ZAddLT) != 0,
		fl&request.ZAddGT != 0 && fl&request.ZAddLT != 0:
		return "incompatible ZADD options"
	case fl&request.ZAddIncr != 0 && n != 2:
		return "INCR with more than one pair"
	}
	for i := 0; i < n; i += 2 {
		if _, ok := request.ZScoreOf(r.Keys[i]); !ok {
			return "a score that is not 8 bytes of a number"
		}
	}
	return ""
}

func zremValid(r *request.Request) string {
	if len(r.Keys) == 0 {
		return "ZREM without members"
	}
	return ""
}

// zScoreRange is a score range's bounds from Args.
type zScoreRange struct {
	min, max     float64
	minEx, maxEx bool
}

func scoreRangeOf(lo, hi, fl int64) zScoreRange {
	return zScoreRange{min: math.Float64frombits(uint64(lo)), max: math.Float64frombits(uint64(hi)),
		minEx: fl&request.ZMinEx != 0, maxEx: fl&request.ZMaxEx != 0}
}

func (z zScoreRange) gteMin(s float64) bool { return s > z.min || !z.minEx && s == z.min }
func (z zScoreRange) lteMax(s float64) bool { return s < z.max || !z.maxEx && s == z.max }
func (z zScoreRange) has(s float64) bool    { return z.gteMin(s) && z.lteMax(s) }

func validBounds(lo, hi int64) string {
	if math.IsNaN(math.Float64frombits(uint64(lo))) || math.IsNaN(math.Float64frombits(uint64(hi))) {
		return "a NaN score bound"
	}
	return ""
}

func zScoreRangeValid(r *request.Request) string {
	if r.NArgs != 3 {
		return "a score range without its bounds and flags"
	}
	if r.Args[2]&^(request.ZMinEx|request.ZMaxEx) != 0 {
		return "unknown score range flags"
	}
	return validBounds(r.Args[0], r.Args[1])
}

func zRankRangeValid(r *request.Request) string {
	if r.NArgs != 2 {
		return "a rank range without its start and stop"
	}
	return ""
}

const zrangeFlags = request.ZMinEx | request.ZMaxEx | request.ZRangeByScore | request.ZRangeByLex |
	request.ZRangeRev | request.ZRangeWithScores

func zrangeValid(r *request.Request) string {
	if r.NArgs != 5 {
		return "ZRANGE without its flags, range, offset and count"
	}
	fl := r.Args[0]
	byScore, byLex := fl&request.ZRangeByScore != 0, fl&request.ZRangeByLex != 0
	switch {
	case fl&^zrangeFlags != 0:
		return "unknown ZRANGE flags"
	case byScore && byLex:
		return "BYSCORE with BYLEX"
	case byLex && fl&request.ZRangeWithScores != 0:
		return "WITHSCORES with BYLEX"
	case !byScore && fl&(request.ZMinEx|request.ZMaxEx) != 0:
		return "exclusive score bounds without BYSCORE"
	case !byScore && !byLex && (r.Args[3] != 0 || r.Args[4] != -1):
		return "LIMIT on a rank range"
	case byLex != (len(r.Keys) == 2) || !byLex && len(r.Keys) != 0:
		return "lex bounds without BYLEX, or BYLEX without them"
	case byScore:
		return validBounds(r.Args[1], r.Args[2])
	case byLex:
		_, ok1 := request.ParseLexItem(r.Keys[0])
		_, ok2 := request.ParseLexItem(r.Keys[1])
		if !ok1 || !ok2 {
			return "an invalid lex range item"
		}
	}
	return ""
}

// zsetOf reports whether a live key is a sorted set, answering WRONGTYPE
// in res when it is not.
func zsetOf(cur shard.State, res *request.Result) bool {
	if cur.Kind != zsetKind {
		res.SetErr(request.ErrWrongType)
		return false
	}
	return true
}

// zsetNext is cur (or a new key) holding the value v of count elements.
// a is the count with zsetBig.
func zsetNext(cur shard.State, live bool, v []byte, a int64) shard.State {
	if !live {
		return shard.State{Kind: zsetKind, Expire: noExpiry, A: a, Val: v}
	}
	cur.A, cur.Val = a, v
	return cur
}

// zadd is ZADD and ZINCRBY: zaddGenericCommand after its parsing, each
// pair as zsetAdd.
func (f *FSM) zadd(r *request.Request, now int64, res *request.Result) {
	fl := r.Args[0]
	f.store.Update(r.Key, now, func(cur shard.State, live bool) (shard.State, shard.Action) {
		if live && !zsetOf(cur, res) {
			return cur, shard.Keep
		}
		if !live && fl&request.ZAddXX != 0 {
			zaddReply(res, fl, 0, 0, 0, 0)
			return cur, shard.Keep
		}
		var (
			buf                       []byte
			added, updated, processed int
			last                      float64
			ok                        bool
		)
		// Redis creates a skiplist when the first member is too long for
		// a listpack.
		z := zaddState{count: 0, big: len(r.Keys[1]) > listpackValue}
		if live {
			z = zaddState{count: zcount(cur.A), big: cur.A&zsetBig != 0}
		}
		if len(r.Keys)/2 > zaddBulk {
			buf, added, updated, processed = f.zaddMany(cur.Val, r.Keys, fl, &z)
			ok = true
		} else {
			buf, added, updated, processed, last, ok = f.zaddFew(cur.Val, r.Keys, fl, &z)
		}
		if !ok {
			res.SetErr(request.ErrZNaN)
			return cur, shard.Keep
		}
		if len(buf) > maxZset {
			res.SetErr(request.ErrZTooLarge)
			return cur, shard.Keep
		}
		zaddReply(res, fl, added, updated, processed, last)
		if added+updated == 0 {
			return cur, shard.Keep
		}
		a := z.count
		if z.big {
			a |= zsetBig
		}
		return zsetNext(cur, live, buf, a), shard.Put
	})
	if cap(f.zsetBuf) > maxKeptLogBuf {
		f.zsetBuf = nil
	}
}

// zaddState is what a ZADD tracks of its set as it adds: the count, and
// whether Redis holds it as a skiplist by now.
type zaddState struct {
	count int64
	big   bool
}

// adding counts a new member, converting the set as zsetAdd does before
// it inserts one that a listpack cannot take.
func (z *zaddState) adding(member []byte) {
	if z.count+1 > listpackEntries || len(member) > listpackValue {
		z.big = true
	}
	z.count++
}

func zaddReply(res *request.Result, fl int64, added, updated, processed int, last float64) {
	switch {
	case fl&request.ZAddIncr == 0 && fl&request.ZAddCH != 0:
		res.SetInt(int64(added + updated))
	case fl&request.ZAddIncr == 0:
		res.SetInt(int64(added))
	case processed > 0:
		res.Kind, res.Data = request.KindDouble, formatScore(nil, last)
	default:
		setNil(res)
	}
}

// zaddFew applies a few pairs one by one to a copy of v in f.zsetBuf: a
// scan for the member, then a splice. ok false: an increment made NaN
// (INCR takes one pair, so nothing was changed).
func (f *FSM) zaddFew(v []byte, pairs [][]byte, fl int64, z *zaddState) (buf []byte, added, updated, processed int, last float64, ok bool) {
	buf = append(f.zsetBuf[:0], v...)
	defer func() { f.zsetBuf = buf }()
	nx, xx, gt, lt := fl&request.ZAddNX != 0, fl&request.ZAddXX != 0, fl&request.ZAddGT != 0, fl&request.ZAddLT != 0
	for i := 0; i < len(pairs); i += 2 {
		score, _ := request.ZScoreOf(pairs[i])
		member := pairs[i+1]
		e, found := zFind(buf, member)
		switch {
		case found && nx, !found && xx:
			continue
		case found:
			if fl&request.ZAddIncr != 0 {
				if score += e.score; math.IsNaN(score) {
					return buf, 0, 0, 0, 0, false
				}
			}
			if lt && score >= e.score || gt && score <= e.score {
				continue
			}
			processed++
			last = score
			if score != e.score {
				buf = zCut(buf, e.start, e.end)
				buf = zInsert(buf, storedScore(score, z.big), member)
				updated++
			}
		default:
			z.adding(member)
			buf = zInsert(buf, storedScore(score, z.big), member)
			added++
			processed++
			last = score
		}
	}
	return buf, added, updated, processed, last, true
}

// zaddMany applies many pairs (never INCR) at once: the elements decoded,
// the pairs applied through a map of members, one sort, one encoding, so a
// large ZADD costs O((n+m) log(n+m)) instead of a splice per pair.
func (f *FSM) zaddMany(v []byte, pairs [][]byte, fl int64, z *zaddState) (buf []byte, added, updated, processed int) {
	nx, xx, gt, lt := fl&request.ZAddNX != 0, fl&request.ZAddXX != 0, fl&request.ZAddGT != 0, fl&request.ZAddLT != 0
	elems := zElems(nil, v)
	index := make(map[string]int, len(elems)+len(pairs)/2)
	for i, e := range elems {
		index[string(e.member)] = i
	}
	for i := 0; i < len(pairs); i += 2 {
		score, _ := request.ZScoreOf(pairs[i])
		member := pairs[i+1]
		j, found := index[string(member)]
		switch {
		case found && nx, !found && xx:
		case found:
			cur := elems[j].score
			if lt && score >= cur || gt && score <= cur {
				continue
			}
			processed++
			if score != cur {
				elems[j].score = storedScore(score, z.big)
				updated++
			}
		default:
			z.adding(member)
			index[string(member)] = len(elems)
			elems = append(elems, zElem{score: storedScore(score, z.big), member: member})
			added++
			processed++
		}
	}
	if added+updated == 0 {
		return v, 0, 0, processed
	}
	slices.SortFunc(elems, func(a, b zElem) int {
		switch {
		case zLess(a.score, a.member, b.score, b.member):
			return -1
		case zLess(b.score, b.member, a.score, a.member):
			return 1
		}
		return 0
	})
	buf = f.zsetBuf[:0]
	for _, e := range elems {
		buf = zAppend(buf, e.score, e.member)
	}
	f.zsetBuf = buf
	return buf, added, updated, processed
}

// zrem is ZREM: one pass over the value, dropping the members named.
func (f *FSM) zrem(r *request.Request, now int64, res *request.Result) {
	f.store.Update(r.Key, now, func(cur shard.State, live bool) (shard.State, shard.Action) {
		if !live {
			res.SetInt(0)
			return cur, shard.Keep
		}
		if !zsetOf(cur, res) {
			return cur, shard.Keep
		}
		named := func(m []byte) bool {
			for _, k := range r.Keys {
				if bytes.Equal(k, m) {
					return true
				}
			}
			return false
		}
		if len(r.Keys) > zaddBulk {
			set := make(map[string]struct{}, len(r.Keys))
			for _, k := range r.Keys {
				set[string(k)] = struct{}{}
			}
			named = func(m []byte) bool { _, ok := set[string(m)]; return ok }
		}
		buf := f.zsetBuf[:0]
		removed := int64(0)
		zEach(cur.Val, func(e zElem) bool {
			if named(e.member) {
				removed++
			} else {
				buf = append(buf, cur.Val[e.start:e.end]...)
			}
			return true
		})
		f.zsetBuf = buf
		return zsetRemoved(cur, buf, removed, res)
	})
	if cap(f.zsetBuf) > maxKeptLogBuf {
		f.zsetBuf = nil
	}
}

// zsetRemoved answers how many elements a removal took and what becomes
// of the key: untouched when none, deleted when none is left.
func zsetRemoved(cur shard.State, v []byte, removed int64, res *request.Result) (shard.State, shard.Action) {
	res.SetInt(removed)
	switch {
	case removed == 0:
		return cur, shard.Keep
	case removed == zcount(cur.A):
		return cur, shard.Delete
	}
	cur.A, cur.Val = cur.A-removed, v // zsetBig stays
	return cur, shard.Put
}

// zsetCut removes the elements at [start, end) of cur's value: a prefix is
// cut without a copy (the sliding log's ZREMRANGEBYSCORE key -inf t).
func (f *FSM) zsetCut(cur shard.State, start, end int, removed int64, res *request.Result) (shard.State, shard.Action) {
	if start == 0 {
		return zsetRemoved(cur, cur.Val[end:], removed, res)
	}
	f.zsetBuf = append(append(f.zsetBuf[:0], cur.Val[:start]...), cur.Val[end:]...)
	return zsetRemoved(cur, f.zsetBuf, removed, res)
}

func (f *FSM) zremRangeByScore(r *request.Request, now int64, res *request.Result) {
	rng := scoreRangeOf(r.Args[0], r.Args[1], r.Args[2])
	f.store.Update(r.Key, now, func(cur shard.State, live bool) (shard.State, shard.Action) {
		if !live {
			res.SetInt(0)
			return cur, shard.Keep
		}
		if !zsetOf(cur, res) {
			return cur, shard.Keep
		}
		start, end, n := -1, 0, int64(0)
		zEach(cur.Val, func(e zElem) bool {
			if !rng.lteMax(e.score) {
				return false
			}
			if rng.gteMin(e.score) {
				if start < 0 {
					start = e.start
				}
				end = e.end
				n++
			}
			return true
		})
		if n == 0 {
			res.SetInt(0)
			return cur, shard.Keep
		}
		return f.zsetCut(cur, start, end, n, res)
	})
	if cap(f.zsetBuf) > maxKeptLogBuf {
		f.zsetBuf = nil
	}
}

// rankRange is Redis's sanitising of a rank range over n elements: the
// first and last index, ok false when it is empty.
func rankRange(start, end, n int64) (int64, int64, bool) {
	if start < 0 {
		start += n
	}
	if end < 0 {
		end += n
	}
	if start < 0 {
		start = 0
	}
	if start > end || start >= n {
		return 0, 0, false
	}
	if end >= n {
		end = n - 1
	}
	return start, end, true
}

func (f *FSM) zremRangeByRank(r *request.Request, now int64, res *request.Result) {
	f.store.Update(r.Key, now, func(cur shard.State, live bool) (shard.State, shard.Action) {
		if !live {
			res.SetInt(0)
			return cur, shard.Keep
		}
		if !zsetOf(cur, res) {
			return cur, shard.Keep
		}
		first, last, ok := rankRange(r.Args[0], r.Args[1], zcount(cur.A))
		if !ok {
			res.SetInt(0)
			return cur, shard.Keep
		}
		start, end, i := 0, 0, int64(0)
		zEach(cur.Val, func(e zElem) bool {
			if i == first {
				start = e.start
			}
			end = e.end
			i++
			return i <= last
		})
		return f.zsetCut(cur, start, end, last-first+1, res)
	})
	if cap(f.zsetBuf) > maxKeptLogBuf {
		f.zsetBuf = nil
	}
}

// readZset reads a sorted set for a read command into a pooled buffer and
// calls fn with its value and count; a missing key answers missing, a key
// of another kind WRONGTYPE. Any reading goroutine.
func (f *FSM) readZset(key []byte, now int64, res *request.Result, missing func(res *request.Result), fn func(v []byte, count int64)) {
	buf := peekBufs.Get().(*[]byte)
	defer func() {
		if cap(*buf) <= maxKeptLogBuf {
			peekBufs.Put(buf)
		}
	}()
	st, live := f.store.GetValue(key, now, *buf)
	if st.Val != nil {
		*buf = st.Val[:0]
	}
	switch {
	case !live:
		missing(res)
	case st.Kind != zsetKind:
		res.SetErr(request.ErrWrongType)
	default:
		fn(st.Val, zcount(st.A))
	}
}

func answerZero(res *request.Result) { res.SetInt(0) }

func (f *FSM) zcard(r *request.Request, now int64, res *request.Result) {
	st, live := f.store.Get(r.Key, now)
	switch {
	case !live:
		res.SetInt(0)
	case st.Kind != zsetKind:
		res.SetErr(request.ErrWrongType)
	default:
		res.SetInt(zcount(st.A))
	}
}

func (f *FSM) zcount(r *request.Request, now int64, res *request.Result) {
	rng := scoreRangeOf(r.Args[0], r.Args[1], r.Args[2])
	f.readZset(r.Key, now, res, answerZero, func(v []byte, _ int64) {
		n := int64(0)
		zEach(v, func(e zElem) bool {
			if !rng.lteMax(e.score) {
				return false
			}
			if rng.gteMin(e.score) {
				n++
			}
			return true
		})
		res.SetInt(n)
	})
}

func (f *FSM) zscore(r *request.Request, now int64, res *request.Result) {
	f.readZset(r.Key, now, res, setNil, func(v []byte, _ int64) {
		e, ok := zFind(v, r.Keys[0])
		if !ok {
			setNil(res)
			return
		}
		res.Kind, res.Data = request.KindDouble, formatScore(nil, e.score)
	})
}

func (f *FSM) zrank(r *request.Request, now int64, res *request.Result) {
	f.readZset(r.Key, now, res, setNil, func(v []byte, _ int64) {
		rank := int64(0)
		setNil(res)
		zEach(v, func(e zElem) bool {
			if bytes.Equal(e.member, r.Keys[0]) {
				res.SetInt(rank)
				return false
			}
			rank++
			return true
		})
	})
}
