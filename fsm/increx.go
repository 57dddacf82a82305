package fsm

import (
	"encoding/binary"
	"math"
	"math/big"
	"strconv"

	"github.com/redcell/redcell/request"
	"github.com/redcell/redcell/shard"
)

// INCREX (Redis 8.8, data-types.md "INCREX"), part of the string family: a
// string key incremented within [LBOUND, UBOUND] and given an expiry in one
// write, at the entry's now.
//
//   - A missing key starts at 0. Integer mode (the default, BYINT) reads
//     the value as INCRBY does (string2ll), BYFLOAT as INCRBYFLOAT does (a
//     long double, longdouble.go) and refuses a NaN or infinite result with
//     INCRBYFLOAT's error. A CL key is a string holding its TAT.
//   - A result outside the bounds (which default to the type's limits: the
//     int64 range, or none for BYFLOAT) is skipped: the reply is [current,
//     0] and the record is kept as it was (WATCH sees no write). With
//     SATURATE the result is clamped to the bound it passed and the reply's
//     second element is the increment actually applied (new - current).
//   - The expiry options are SET's; none keeps the key's expiry, PERSIST
//     removes it, ENX sets it only when the key has none (a missing key has
//     none). An absolute time in the past stores the value and the key is
//     gone at once, as SET … EXAT does.
//
// The order of the errors: BYFLOAT's floats (the increment, LBOUND, UBOUND,
// then LBOUND > UBOUND) and the time's error the parser passed on, then a
// relative time past int64 ms at now, then WRONGTYPE, then the stored
// value's error, then a NaN or infinite result. In integer mode the parser
// has already answered everything before the overflow check.

func incrExValid(r *request.Request) string {
	const known = request.IncrExFloat | request.IncrExLBound | request.IncrExUBound | request.IncrExSaturate |
		incrExTimes | request.IncrExPersist | request.IncrExENX
	if r.NArgs != 6 {
		return "INCREX without its flags, increment, bounds, time and error code"
	}
	fl := r.Args[0]
	t := fl & (incrExTimes | request.IncrExPersist)
	switch {
	case fl&^known != 0:
		return "unknown INCREX flags"
	case t&(t-1) != 0:
		return "two expiry options"
	case fl&request.IncrExENX != 0 && fl&incrExTimes == 0:
		return "ENX without an expiry time"
	}
	if fl&request.IncrExFloat != 0 {
		if len(r.Keys) != 3 || r.Args[1] != 0 || r.Args[2] != 0 || r.Args[3] != 0 {
			return "BYFLOAT without its three floats, or with integers"
		}
		switch e := request.ErrCode(r.Args[5]); {
		case e == request.ErrNotInteger || e == request.ErrIncrExExpire:
			return ""
		case e != request.ErrNone:
			return "INCREX time error code"
		}
	} else {
		switch {
		case len(r.Keys) != 0:
			return "floats in integer mode"
		case r.Args[5] != 0:
			return "a time error in integer mode"
		case fl&request.IncrExLBound != 0 && fl&request.IncrExUBound != 0 && r.Args[2] > r.Args[3]:
			return "LBOUND above UBOUND"
		}
	}
	if fl&incrExTimes != 0 && r.Args[4] <= 0 {
		return "a non-positive expiry time"
	}
	return ""
}

// incrExTimes are INCREX's expiry options that carry a time.
const incrExTimes = request.IncrExEX | request.IncrExPX | request.IncrExEXAT | request.IncrExPXAT

// incrExFloats are a BYFLOAT call's operands; a nil bound is none.
type incrExFloats struct {
	incr   *big.Float
	incInf int
	lb, ub *big.Float
}

// parseIncrExFloats parses BYFLOAT's increment and bounds (the parser's
// order), or answers the error.
func parseIncrExFloats(r *request.Request) (incrExFloats, request.ErrCode) {
	var x incrExFloats
	var ok bool
	if x.incr, x.incInf, ok = parseLongDouble(r.Keys[0]); !ok {
		return x, request.ErrNotFloat
	}
	// A bound may be infinite: -inf as LBOUND or +inf as UBOUND bounds
	// nothing; +inf as LBOUND or -inf as UBOUND leaves no finite result
	// within the bounds.
	bound := func(text []byte, flag int64) (*big.Float, bool) {
		if r.Args[0]&flag == 0 {
			return nil, true
		}
		f, inf, ok := parseLongDouble(text)
		if ok && inf != 0 {
			f = new(big.Float).SetPrec(longDoublePrec).SetInf(inf < 0)
		}
		return f, ok
	}
	if x.lb, ok = bound(r.Keys[1], request.IncrExLBound); !ok {
		return x, request.ErrNotFloat
	}
	if x.ub, ok = bound(r.Keys[2], request.IncrExUBound); !ok {
		return x, request.ErrNotFloat
	}
	if x.lb != nil && x.ub != nil && x.lb.Cmp(x.ub) > 0 {
		return x, request.ErrIncrExBounds
	}
	return x, request.ErrNone
}

// incrEx is INCREX.
func (f *FSM) incrEx(r *request.Request, now int64, res *request.Result) {
	fl := r.Args[0]
	byFloat := fl&request.IncrExFloat != 0
	var floats incrExFloats
	if byFloat {
		var e request.ErrCode
		if floats, e = parseIncrExFloats(r); e == request.ErrNone {
			e = request.ErrCode(r.Args[5])
		}
		if e != request.ErrNone {
			res.SetErr(e)
			return
		}
	}
	when := r.Args[4]
	if fl&(request.IncrExEX|request.IncrExPX) != 0 {
		nowMs := floorDiv(now, 1e6)
		if when > math.MaxInt64-nowMs {
			res.SetErr(request.ErrIncrExExpire)
			return
		}
		when += nowMs
	}
	f.store.Update(r.Key, now, func(cur shard.State, live bool) (shard.State, shard.Action) {
		var v []byte
		if live {
			var ok bool
			if v, ok = stringOf(cur); !ok {
				res.SetErr(request.ErrWrongType)
				return cur, shard.Keep
			}
		}
		var applied bool
		if byFloat {
			applied = f.incrExFloat(v, live, &floats, fl, res)
		} else {
			applied = f.incrExInt(v, live, r, res)
		}
		if !applied {
			return cur, shard.Keep
		}
		next := shard.State{Kind: strKind, Expire: noExpiry, Val: f.strBuf}
		has := false
		if live {
			next = asString(cur, f.strBuf)
			_, has = strExpiry.expiryMs(next)
		}
		switch {
		case fl&incrExTimes != 0 && !(fl&request.IncrExENX != 0 && has):
			next = strExpiry.with(next, when, true)
		case fl&request.IncrExPersist != 0:
			next = strExpiry.with(next, 0, false)
		}
		return next, shard.Put
	})
}

// incrExInt is integer mode on the value v (live: the key exists): it
// answers res and, when the value changes, leaves the new one in f.strBuf
// and returns true.
func (f *FSM) incrExInt(v []byte, live bool, r *request.Request, res *request.Result) bool {
	fl, incr := r.Args[0], r.Args[1]
	var old int64
	if live {
		var ok bool
		if old, ok = string2ll(v); !ok {
			res.SetErr(request.ErrNotInteger)
			return false
		}
	}
	lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
	if fl&request.IncrExLBound != 0 {
		lo = r.Args[2]
	}
	if fl&request.IncrExUBound != 0 {
		hi = r.Args[3]
	}
	sum, over := addInt64(old, incr)
	next, applied := sum, incr
	switch {
	case over > 0 || over == 0 && sum > hi:
		next = hi
	case over < 0 || over == 0 && sum < lo:
		next = lo
	}
	if next != sum || over != 0 {
		var dover int
		applied, dover = subInt64(next, old)
		if fl&request.IncrExSaturate == 0 || dover != 0 {
			setInts(res, old, 0) // skipped: past a bound, or an increment int64 cannot hold
			return false
		}
	}
	setInts(res, next, applied)
	f.strBuf = strconv.AppendInt(f.strBuf[:0], next, 10)
	return true
}

// addInt64 is a + b, and the side it overflowed int64 to (+1, -1) or 0.
func addInt64(a, b int64) (int64, int) {
	s := a + b
	switch {
	case a > 0 && b > 0 && s < 0:
		return s, 1
	case a < 0 && b < 0 && s >= 0:
		return s, -1
	}
	return s, 0
}

// subInt64 is a - b, and the side it overflowed int64 to (+1, -1) or 0.
func subInt64(a, b int64) (int64, int) {
	s := a - b
	switch {
	case a >= 0 && b < 0 && s < 0:
		return s, 1
	case a < 0 && b > 0 && s >= 0:
		return s, -1
	}
	return s, 0
}

func setInts(res *request.Result, a, b int64) {
	res.Kind = request.KindInts
	res.Data = request.AppendIntItem(request.AppendIntItem(make([]byte, 0, 2*binary.MaxVarintLen64), a), b)
}

// incrExFloat is BYFLOAT mode on the value v, as incrExInt.
func (f *FSM) incrExFloat(v []byte, live bool, x *incrExFloats, fl int64, res *request.Result) bool {
	old, oinf := new(big.Float).SetPrec(longDoublePrec), 0
	if live {
		var ok bool
		if old, oinf, ok = parseLongDouble(v); !ok {
			res.SetErr(request.ErrNotFloat)
			return false
		}
	}
	var sum *big.Float
	ok := oinf == 0 && x.incInf == 0
	if ok {
		sum, ok = addLongDouble(old, x.incr)
	}
	if !ok {
		res.SetErr(request.ErrFloatNaNOrInf)
		return false
	}
	next := sum
	switch {
	case x.ub != nil && sum.Cmp(x.ub) > 0:
		next = x.ub
	case x.lb != nil && sum.Cmp(x.lb) < 0:
		next = x.lb
	}
	if next != sum {
		var diffOK bool
		var diff *big.Float
		if !next.IsInf() {
			diff, diffOK = addLongDouble(next, new(big.Float).SetPrec(longDoublePrec).Neg(old))
		}
		if fl&request.IncrExSaturate == 0 || !diffOK {
			res.Kind, res.Data = request.KindDoubles, appendDoubles(old, nil)
			return false
		}
		res.Kind, res.Data = request.KindDoubles, appendDoubles(next, diff)
	} else {
		res.Kind, res.Data = request.KindDoubles, appendDoubles(sum, x.incr)
	}
	f.strBuf = formatLongDouble(f.strBuf[:0], next)
	return true
}

// appendDoubles is a KindDoubles reply of a and b (nil: 0), each formatted
// as INCRBYFLOAT formats its result.
func appendDoubles(a, b *big.Float) []byte {
	var buf [64]byte
	data := request.AppendItem(nil, formatLongDouble(buf[:0], a))
	if b == nil {
		return request.AppendItem(data, []byte{'0'})
	}
	return request.AppendItem(data, formatLongDouble(buf[:0], b))
}
