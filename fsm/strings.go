package fsm

import (
	"fmt"
	"math"
	"math/big"
	"strconv"

	"github.com/redcell/redcell/request"
	"github.com/redcell/redcell/shard"
)

// The string family in the state machine (Redis 7.0's t_string.c at the
// entry's now). A key is a shard.State of KindString whose value (Val) is
// the string's bytes (empty for ""), whose Expire is its lifetime (noExpiry
// without one), whose A is 0 and whose B is 0 but for an expiry past 2262
// (strExpiry). A CL key reads as a string too
// (stringOf): its TAT in decimal ns, as redis-cell stores it; a write that
// changes it makes it a plain string with the same expiry. SET replaces a
// key of any kind, as in Redis; every other command answers WRONGTYPE on a
// TB or SL key (MGET: nil).
var stringFamily = family{
	desc: request.Strings,
	ops: []op{
		{code: request.Set, valid: setValid, run: (*FSM).set},
		{code: request.SetGet, valid: setValid, run: (*FSM).set},
		{code: request.SetNX, valid: oneValue, run: (*FSM).setNX},
		{code: request.GetDel, run: (*FSM).getDel},
		{code: request.StrAppend, valid: oneValue, run: (*FSM).strAppend},
		{code: request.IncrBy, valid: incrValid, run: (*FSM).incrBy},
		{code: request.MSet, valid: pairsValid, run: (*FSM).mset},
		{code: request.MSetNX, valid: pairsValid, run: (*FSM).mset},
		{code: request.GetEx, valid: getExValid, run: (*FSM).getEx},
		{code: request.IncrByFloat, valid: oneValue, run: (*FSM).incrByFloat},
		{code: request.IncrEx, valid: incrExValid, run: (*FSM).incrEx}, // increx.go
		{code: request.Get, run: (*FSM).get},
		{code: request.StrLen, run: (*FSM).strLen},
		{code: request.MGet, run: (*FSM).mget},
	},
	hasValue:   true,
	emptyValue: true,
	check:      stringCheckRecord,
	pttl:       gcraPTTL,
	expiry:     strExpiry,
}

// strExpiry is CL's expiry rule: Expire is the lifetime, and an expiry
// past 2262 (where int64 ns end) keeps its millisecond in B, so that SET …
// PXAT and PEXPIRETIME are exact up to MaxInt64 ms as in Redis.
var strExpiry = expiryRule{ms: clExpiryMs, set: clSetExpiry}

// maxString is Redis's proto-max-bulk-len, the longest string APPEND makes
// (within what a snapshot record holds).
const maxString = 512 << 20

// strKind is the keyspace kind of a string key.
var strKind = keyKind(request.KeyString)

// stringOf is the string a live key reads as; ok false when it is not one.
// A string's Val aliases the keyspace inside Update; a CL key's decimal is
// freshly allocated.
func stringOf(st shard.State) (v []byte, ok bool) {
	switch st.Kind {
	case strKind:
		return st.Val, true
	case clKind:
		return strconv.AppendUint(nil, uint64(st.A), 10), true
	}
	return nil, false
}

// asString is the string key holding v that replaces cur, with cur's
// expiry (INCR, APPEND and KEEPTTL keep it).
func asString(cur shard.State, v []byte) shard.State {
	if cur.Kind == strKind {
		return shard.State{Kind: strKind, Expire: cur.Expire, B: cur.B, Val: v}
	}
	ms, has := keyExpiry(cur.Kind).expiryMs(cur)
	return strExpiry.with(shard.State{Kind: strKind, Val: v}, ms, has)
}

func setBulk(res *request.Result, v []byte) {
	res.Kind = request.KindBulk
	res.Data = append([]byte(nil), v...) // its own: v may alias the keyspace
}

func setNil(res *request.Result) { res.Kind = request.KindNil }

func stringCheckRecord(_ *recordReader, st shard.State, _ byte) error {
	if st.A != 0 || st.B != 0 && (st.Expire != noExpiry || st.B <= math.MaxInt64/1_000_000-1) {
		return fmt.Errorf("string with fixed fields %d, %d (expire %d)", st.A, st.B, st.Expire)
	}
	return nil
}

func oneValue(r *request.Request) string {
	if len(r.Keys) != 1 {
		return fmt.Sprintf("%d values, not 1", len(r.Keys))
	}
	return ""
}

const setFlags = request.SetNXFlag | request.SetXXFlag | request.SetKeepTTL | request.SetEX |
	request.SetPX | request.SetEXAT | request.SetPXAT | request.SetGetFlag

const setTimes = request.SetEX | request.SetPX | request.SetEXAT | request.SetPXAT

// onlyOneTime reports whether at most one of the expiry flags is set.
func onlyOneTime(fl int64) bool {
	t := fl & (setTimes | request.SetKeepTTL | request.SetPersist)
	return t&(t-1) == 0
}

func setValid(r *request.Request) string {
	if why := oneValue(r); why != "" {
		return why
	}
	if r.NArgs != 3 {
		return "SET without its flags, time and error code"
	}
	fl := r.Args[0]
	switch {
	case fl&^setFlags != 0:
		return "unknown SET flags"
	case fl&request.SetGetFlag != 0 && r.Code != request.Set:
		return "GET flag on GETSET"
	case fl&request.SetNXFlag != 0 && fl&request.SetXXFlag != 0:
		return "NX with XX"
	case !onlyOneTime(fl):
		return "two expiry options"
	case fl&setTimes != 0 && r.Args[1] <= 0:
		return "a non-positive expiry time"
	}
	return expireErrValid(r.Args[2])
}

// expireErrValid accepts the error codes a relative expiry may answer.
func expireErrValid(e int64) string {
	switch request.ErrCode(e) {
	case request.ErrSetExpireTime, request.ErrSetExExpire, request.ErrPSetExExpire, request.ErrGetExExpire:
		return ""
	}
	return fmt.Sprintf("expiry error code %d", e)
}

func incrValid(r *request.Request) string {
	if r.NArgs != 1 {
		return "INCRBY without its increment"
	}
	return ""
}

func pairsValid(r *request.Request) string {
	if len(r.Keys) == 0 || len(r.Keys)%2 != 0 {
		return fmt.Sprintf("%d keys and values, not pairs", len(r.Keys))
	}
	for i := 0; i < len(r.Keys); i += 2 {
		if len(r.Keys[i]) > maxSnapshotKey {
			return "key longer than a snapshot can hold"
		}
	}
	return ""
}

func getExValid(r *request.Request) string {
	if r.NArgs != 3 {
		return "GETEX without its flags, time and error code"
	}
	fl := r.Args[0]
	switch {
	case fl&^(setTimes|request.SetPersist) != 0:
		return "unknown GETEX flags"
	case !onlyOneTime(fl):
		return "two expiry options"
	case r.Args[2] != 0 && request.ErrCode(r.Args[2]) != request.ErrNotInteger:
		return expireErrValid(r.Args[2])
	case r.Args[2] == 0 && fl&setTimes != 0 && r.Args[1] <= 0:
		return "a non-positive expiry time"
	}
	return ""
}

// expiryAt turns a SET or GETEX time into absolute Unix ms at now; ok false
// when a relative one passes int64 ms.
func expiryAt(fl, when, now int64) (int64, bool) {
	if fl&(request.SetEX|request.SetPX) != 0 {
		nowMs := floorDiv(now, 1e6)
		if when > math.MaxInt64-nowMs {
			return 0, false
		}
		when += nowMs
	}
	return when, true
}

// set is SET (with NX, XX, GET, KEEPTTL and the expiry options), SETEX,
// PSETEX and GETSET: setGenericCommand's order, the expiry check first.
func (f *FSM) set(r *request.Request, now int64, res *request.Result) {
	fl := r.Args[0]
	when, ok := expiryAt(fl, r.Args[1], now)
	if !ok {
		res.SetErr(request.ErrCode(r.Args[2]))
		return
	}
	getOld := r.Code == request.SetGet || fl&request.SetGetFlag != 0
	f.store.Update(r.Key, now, func(cur shard.State, live bool) (shard.State, shard.Action) {
		if getOld {
			setNil(res)
			if live {
				v, ok := stringOf(cur)
				if !ok {
					res.SetErr(request.ErrWrongType)
					return cur, shard.Keep
				}
				setBulk(res, v)
			}
		}
		if fl&request.SetNXFlag != 0 && live || fl&request.SetXXFlag != 0 && !live {
			if !getOld {
				setNil(res)
			}
			return cur, shard.Keep
		}
		next := shard.State{Kind: strKind, Expire: noExpiry, Val: r.Keys[0]}
		switch {
		case fl&request.SetKeepTTL != 0 && live:
			ms, has := keyExpiry(cur.Kind).expiryMs(cur)
			next = strExpiry.with(next, ms, has)
		case fl&setTimes != 0:
			next = strExpiry.with(next, when, true)
		}
		if !getOld {
			res.Kind = request.KindOK
		}
		return next, shard.Put
	})
}

func (f *FSM) setNX(r *request.Request, now int64, res *request.Result) {
	f.store.Update(r.Key, now, func(cur shard.State, live bool) (shard.State, shard.Action) {
		if live {
			res.SetInt(0)
			return cur, shard.Keep
		}
		res.SetInt(1)
		return shard.State{Kind: strKind, Expire: noExpiry, Val: r.Keys[0]}, shard.Put
	})
}

func (f *FSM) getDel(r *request.Request, now int64, res *request.Result) {
	f.store.Update(r.Key, now, func(cur shard.State, live bool) (shard.State, shard.Action) {
		v, ok := readString(cur, live, res)
		if !ok {
			return cur, shard.Keep
		}
		setBulk(res, v)
		return cur, shard.Delete
	})
}

func (f *FSM) strAppend(r *request.Request, now int64, res *request.Result) {
	f.store.Update(r.Key, now, func(cur shard.State, live bool) (shard.State, shard.Action) {
		if !live {
			res.SetInt(int64(len(r.Keys[0])))
			return shard.State{Kind: strKind, Expire: noExpiry, Val: r.Keys[0]}, shard.Put
		}
		v, ok := stringOf(cur)
		if !ok {
			res.SetErr(request.ErrWrongType)
			return cur, shard.Keep
		}
		if len(v)+len(r.Keys[0]) > maxString {
			res.SetErr(request.ErrStringTooLong)
			return cur, shard.Keep
		}
		f.strBuf = append(append(f.strBuf[:0], v...), r.Keys[0]...)
		res.SetInt(int64(len(f.strBuf)))
		return asString(cur, f.strBuf), shard.Put
	})
	if cap(f.strBuf) > maxKeptLogBuf {
		f.strBuf = nil
	}
}

// incrBy is INCR, INCRBY, DECR and DECRBY: the value parses as string2ll.
func (f *FSM) incrBy(r *request.Request, now int64, res *request.Result) {
	incr := r.Args[0]
	f.store.Update(r.Key, now, func(cur shard.State, live bool) (shard.State, shard.Action) {
		var old int64
		if live {
			v, ok := stringOf(cur)
			if !ok {
				res.SetErr(request.ErrWrongType)
				return cur, shard.Keep
			}
			if old, ok = string2ll(v); !ok {
				res.SetErr(request.ErrNotInteger)
				return cur, shard.Keep
			}
		}
		if incr < 0 && old < 0 && incr < math.MinInt64-old || incr > 0 && old > 0 && incr > math.MaxInt64-old {
			res.SetErr(request.ErrOverflow)
			return cur, shard.Keep
		}
		res.SetInt(old + incr)
		f.strBuf = strconv.AppendInt(f.strBuf[:0], old+incr, 10)
		if !live {
			return shard.State{Kind: strKind, Expire: noExpiry, Val: f.strBuf}, shard.Put
		}
		return asString(cur, f.strBuf), shard.Put
	})
}

// incrByFloat is INCRBYFLOAT: the type check, then the value, then the
// increment, as Redis 7.0 (longdouble.go). The key keeps its expiry.
func (f *FSM) incrByFloat(r *request.Request, now int64, res *request.Result) {
	f.store.Update(r.Key, now, func(cur shard.State, live bool) (shard.State, shard.Action) {
		value, vinf := new(big.Float).SetPrec(longDoublePrec), 0
		if live {
			v, ok := stringOf(cur)
			if !ok {
				res.SetErr(request.ErrWrongType)
				return cur, shard.Keep
			}
			if value, vinf, ok = parseLongDouble(v); !ok {
				res.SetErr(request.ErrNotFloat)
				return cur, shard.Keep
			}
		}
		incr, iinf, ok := parseLongDouble(r.Keys[0])
		if !ok {
			res.SetErr(request.ErrNotFloat)
			return cur, shard.Keep
		}
		var sum *big.Float
		if vinf == 0 && iinf == 0 {
			sum, ok = addLongDouble(value, incr)
		}
		if !ok || sum == nil {
			res.SetErr(request.ErrFloatNaNOrInf)
			return cur, shard.Keep
		}
		f.strBuf = formatLongDouble(f.strBuf[:0], sum)
		setBulk(res, f.strBuf)
		if !live {
			return shard.State{Kind: strKind, Expire: noExpiry, Val: f.strBuf}, shard.Put
		}
		return asString(cur, f.strBuf), shard.Put
	})
}

// mset is MSET and MSETNX (which sets nothing when any key exists).
func (f *FSM) mset(r *request.Request, now int64, res *request.Result) {
	if r.Code == request.MSetNX {
		for i := 0; i < len(r.Keys); i += 2 {
			if _, live := f.store.Get(r.Keys[i], now); live {
				res.SetInt(0)
				return
			}
		}
	}
	for i := 0; i < len(r.Keys); i += 2 {
		v := r.Keys[i+1]
		f.store.Update(r.Keys[i], now, func(shard.State, bool) (shard.State, shard.Action) {
			return shard.State{Kind: strKind, Expire: noExpiry, Val: v}, shard.Put
		})
	}
	if r.Code == request.MSetNX {
		res.SetInt(1)
		return
	}
	res.Kind = request.KindOK
}

// getEx is GETEX: the lookup and type check come before the time's own
// errors, as in Redis 7.0.
func (f *FSM) getEx(r *request.Request, now int64, res *request.Result) {
	fl := r.Args[0]
	f.store.Update(r.Key, now, func(cur shard.State, live bool) (shard.State, shard.Action) {
		v, ok := readString(cur, live, res)
		if !ok {
			return cur, shard.Keep
		}
		if r.Args[2] != 0 {
			res.SetErr(request.ErrCode(r.Args[2]))
			return cur, shard.Keep
		}
		when, ok := expiryAt(fl, r.Args[1], now)
		if !ok {
			res.SetErr(request.ErrGetExExpire)
			return cur, shard.Keep
		}
		setBulk(res, v)
		rule := keyExpiry(cur.Kind)
		switch {
		case fl&setTimes != 0:
			return rule.with(cur, when, true), shard.Put
		case fl&request.SetPersist != 0:
			if _, has := rule.expiryMs(cur); has {
				return rule.with(cur, 0, false), shard.Put
			}
		}
		return cur, shard.Keep
	})
}

func (f *FSM) get(r *request.Request, now int64, res *request.Result) {
	st, live := f.store.GetValue(r.Key, now, nil)
	v, ok := readString(st, live, res)
	if !ok {
		return
	}
	res.Kind, res.Data = request.KindBulk, v // GetValue's copy: this result's own
	if res.Data == nil {
		res.Data = []byte{}
	}
}

func (f *FSM) strLen(r *request.Request, now int64, res *request.Result) {
	st, live := f.store.GetValue(r.Key, now, nil)
	if !live {
		res.SetInt(0)
		return
	}
	v, ok := stringOf(st)
	if !ok {
		res.SetErr(request.ErrWrongType)
		return
	}
	res.SetInt(int64(len(v)))
}

func (f *FSM) mget(r *request.Request, now int64, res *request.Result) {
	var data []byte
	for _, k := range r.Keys {
		st, live := f.store.GetValue(k, now, nil)
		v, ok := stringOf(st)
		data = request.AppendBulkItem(data, v, !live || !ok)
	}
	res.Kind, res.Data = request.KindBulks, data
}

// string2ll is Redis's strict integer parse: no '+', no leading zeros, no
// spaces, no "-0".
func string2ll(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 20 || b[0] == '+' {
		return 0, false
	}
	d := b
	if d[0] == '-' {
		d = d[1:]
	}
	if len(d) == 0 || (d[0] == '0' && len(b) > 1) {
		return 0, false
	}
	for _, c := range d {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(string(b), 10, 64)
	return n, err == nil
}

// readString is the common start of a command that reads a string: its
// value and true, or false with res answered (nil for a missing key,
// WRONGTYPE for a key of another type).
func readString(st shard.State, live bool, res *request.Result) ([]byte, bool) {
	if !live {
		setNil(res)
		return nil, false
	}
	v, ok := stringOf(st)
	if !ok {
		res.SetErr(request.ErrWrongType)
	}
	return v, ok
}
