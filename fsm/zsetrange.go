package fsm

import (
	"bytes"

	"github.com/redcell/redcell/request"
)

// ZRANGE in its three kinds (ranks, scores, members), each forward or
// reversed, as Redis 7.0's genericZrange*Command walk a listpack: find the
// first element of the range from the start (or the last from the end),
// skip LIMIT's offset without looking at the range, then emit up to count
// elements while they stay in it. A negative offset skips to the end (an
// empty reply), a negative count is no limit. The elements are decoded
// once into a slice, so a reversed walk is an index going down.

func (f *FSM) zrange(r *request.Request, now int64, res *request.Result) {
	fl := r.Args[0]
	rev := fl&request.ZRangeRev != 0
	res.Kind = request.KindArray
	f.readZset(r.Key, now, res, func(*request.Result) {}, func(v []byte, count int64) {
		elems := zElems(make([]zElem, 0, count), v)
		offset, limit := r.Args[3], r.Args[4]
		var from int
		var ok bool
		var inRange func(e *zElem) bool
		switch {
		case fl&request.ZRangeByScore != 0:
			from, inRange, ok = scoreStart(elems, scoreRangeOf(r.Args[1], r.Args[2], fl), rev)
		case fl&request.ZRangeByLex != 0:
			from, inRange, ok = lexStart(elems, r.Keys[0], r.Keys[1], rev)
		default:
			first, last, any := rankRange(r.Args[1], r.Args[2], count)
			if !any {
				return
			}
			if rev {
				first, last = count-1-first, count-1-last
			}
			// A rank range takes no LIMIT: its length is the count.
			from, ok = int(first), true
			inRange = func(*zElem) bool { return true }
			limit = last - first + 1
			if rev {
				limit = first - last + 1
			}
		}
		if !ok {
			return
		}
		if offset < 0 || offset > 0 && offset >= count {
			return
		}
		step := 1
		if rev {
			step = -1
		}
		i := from + step*int(offset)
		withScores := fl&request.ZRangeWithScores != 0
		if withScores {
			res.Kind = request.KindScored
		}
		var data []byte
		for ; i >= 0 && i < len(elems) && limit != 0; i += step {
			e := &elems[i]
			if !inRange(e) {
				break
			}
			data = request.AppendItem(data, e.member)
			if withScores {
				var text [32]byte
				data = request.AppendItem(data, formatScore(text[:0], e.score))
			}
			limit--
		}
		res.Data = data
	})
}

// scoreStart is where a score range starts (zzlFirstInRange, or
// zzlLastInRange reversed) and the test that ends it; ok false when empty.
func scoreStart(elems []zElem, rng zScoreRange, rev bool) (int, func(*zElem) bool, bool) {
	if rng.min > rng.max || rng.min == rng.max && (rng.minEx || rng.maxEx) {
		return 0, nil, false
	}
	if !rev {
		for i := range elems {
			if rng.gteMin(elems[i].score) {
				return i, func(e *zElem) bool { return rng.lteMax(e.score) }, rng.lteMax(elems[i].score)
			}
		}
		return 0, nil, false
	}
	for i := len(elems) - 1; i >= 0; i-- {
		if rng.lteMax(elems[i].score) {
			return i, func(e *zElem) bool { return rng.gteMin(e.score) }, rng.gteMin(elems[i].score)
		}
	}
	return 0, nil, false
}

// lexCmp is Redis's sdscmplex of a member against a bound: "-" is below and
// "+" above every member.
func lexCmp(m []byte, b request.LexBound) int {
	switch {
	case b.Min:
		return 1
	case b.Max:
		return -1
	}
	return bytes.Compare(m, b.Value)
}

// boundCmp compares two bounds as sdscmplex does.
func boundCmp(a, b request.LexBound) int {
	switch {
	case a.Min && b.Min, a.Max && b.Max:
		return 0
	case a.Min || b.Max:
		return -1
	case a.Max || b.Min:
		return 1
	}
	return bytes.Compare(a.Value, b.Value)
}

func lexGteMin(m []byte, min request.LexBound) bool {
	if min.Exclusive {
		return lexCmp(m, min) > 0
	}
	return lexCmp(m, min) >= 0
}

func lexLteMax(m []byte, max request.LexBound) bool {
	if max.Exclusive {
		return lexCmp(m, max) < 0
	}
	return lexCmp(m, max) <= 0
}

// lexStart is scoreStart for a lex range (zzlFirstInLexRange,
// zzlLastInLexRange), with zzlIsInLexRange's test first: the last element
// must reach the minimum and the first the maximum. With mixed scores the
// members are not in order, and the answer is the walk's, as Redis's.
func lexStart(elems []zElem, minItem, maxItem []byte, rev bool) (int, func(*zElem) bool, bool) {
	min, _ := request.ParseLexItem(minItem)
	max, _ := request.ParseLexItem(maxItem)
	c := boundCmp(min, max)
	if c > 0 || c == 0 && (min.Exclusive || max.Exclusive) || len(elems) == 0 ||
		!lexGteMin(elems[len(elems)-1].member, min) || !lexLteMax(elems[0].member, max) {
		return 0, nil, false
	}
	if !rev {
		for i := range elems {
			if lexGteMin(elems[i].member, min) {
				return i, func(e *zElem) bool { return lexLteMax(e.member, max) }, lexLteMax(elems[i].member, max)
			}
		}
		return 0, nil, false
	}
	for i := len(elems) - 1; i >= 0; i-- {
		if lexLteMax(elems[i].member, max) {
			return i, func(e *zElem) bool { return lexGteMin(e.member, min) }, lexGteMin(elems[i].member, min)
		}
	}
	return 0, nil, false
}
