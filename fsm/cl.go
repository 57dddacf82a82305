package fsm

import (
	"fmt"
	"math"
	"strconv"

	"github.com/redcell/redcell/gcra"
	"github.com/redcell/redcell/request"
	"github.com/redcell/redcell/shard"
)

// The redis-cell family (CL.THROTTLE, CL.PEEK) in the state machine: how
// its requests are checked and applied, and how its keys are stored. A key
// is a shard.State of KindGCRA:
//
//   - A: the TAT, an unsigned 64-bit instant in ns (up to year 2554) kept in
//     an int64's bits;
//   - Expire: redis-cell's millisecond expiry (gcraExpire) as the first ns
//     the key is gone, saturated at MaxInt64 (year 2262) for the shard's
//     liveness rule;
//   - B: 0 while Expire is exact (every key whose expiry falls before 2262,
//     so the common key is bit for bit what it was before B was used);
//     otherwise the expiry in Unix ms, which int64 ms hold for 292 million
//     years. Same 25 bytes per key either way. Expire MaxInt64 with B 0 is
//     a key without expiry (PERSIST), which lives until the next
//     CL.THROTTLE gives it redis-cell's expiry again.
var clFamily = family{
	desc: request.GCRA,
	ops: []op{
		{code: request.Throttle, valid: clValid, run: (*FSM).throttle},
		{code: request.Peek, valid: clValid, run: (*FSM).clPeek},
	},
	check:  clCheck,
	pttl:   gcraPTTL,
	expiry: expiryRule{ms: clExpiryMs, set: clSetExpiry},
}

// clKind is the keyspace kind of a CL key.
var clKind = keyKind(request.KeyGCRA)

// gcraArgs is how many arguments Throttle and Peek carry: the GCRA
// parameters Interval, Limit, Quantity.
const gcraArgs = 3

// gcraParams rebuilds the parameters a Throttle or Peek request carries.
func gcraParams(r *request.Request) gcra.Params {
	return gcra.Params{Interval: r.Args[0], Limit: r.Args[1], Quantity: r.Args[2]}
}

func clValid(r *request.Request) string {
	if r.NArgs != gcraArgs {
		return fmt.Sprintf("%d arguments, not the %d GCRA parameters", r.NArgs, gcraArgs)
	}
	// gcra.NewParams never returns T = 0 (that is redis-cell's zero
	// rate error, answered at parse time). Any other Interval, Limit
	// and Quantity, negative ones included, is a valid request with
	// the spec's wrapping arithmetic.
	if r.Args[0] == 0 {
		return "GCRA emission interval 0"
	}
	return ""
}

// setReply makes res a limiter's five-integer reply.
func setReply(res *request.Result, ints [5]int64) {
	res.Kind = request.KindThrottle
	res.Ints = ints
}

func setThrottle(res *request.Result, rep gcra.Reply) {
	setReply(res, [5]int64{rep.Limited, rep.Limit, rep.Remaining, rep.RetryAfter, rep.ResetAfter})
}

func (f *FSM) throttle(r *request.Request, now int64, res *request.Result) {
	p := gcraParams(r)
	f.store.Update(r.Key, now, func(cur shard.State, live bool) (shard.State, shard.Action) {
		tat, ok := clTAT(cur, live)
		if !ok {
			res.SetErr(request.ErrWrongType)
			return cur, shard.Keep
		}
		d := gcra.Decide(uint64(tat), live, now, p)
		switch d.Outcome {
		case gcra.Store:
			setThrottle(res, d.Reply)
		case gcra.StoreExpireError:
			res.SetErr(request.ErrExpire)
		default:
			setThrottle(res, d.Reply)
			return cur, shard.Keep
		}
		// A TAT at or before now (exactly: the TTL before the stored TAT
		// wraps) is the same as no key: a refund into the past, or
		// quantity 0 on a fresh key.
		if d.Live {
			expire, expireMs := gcraExpire(now, d.TTLMillis)
			return shard.State{Kind: clKind, Expire: expire, A: int64(d.TAT), B: expireMs}, shard.Put
		}
		if live {
			return cur, shard.Delete
		}
		return cur, shard.Keep
	})
}

func (f *FSM) clPeek(r *request.Request, now int64, res *request.Result) {
	st, live := f.store.GetValue(r.Key, now, nil)
	tat, ok := clTAT(st, live)
	if !ok {
		res.SetErr(request.ErrWrongType)
		return
	}
	rep, err := gcra.Peek(tat, live, now, gcraParams(r))
	if err != nil {
		res.SetErr(request.ErrExpire)
		return
	}
	setThrottle(res, rep)
}

// clTAT is the TAT a live key holds for CL.THROTTLE and CL.PEEK: a CL
// key's, or a plain string's that parses as an int64 (CL keys are strings,
// as in redis-cell); ok false for any other key (WRONGTYPE).
func clTAT(cur shard.State, live bool) (tat int64, ok bool) {
	switch {
	case !live:
		return 0, true
	case cur.Kind == clKind:
		return cur.A, true
	case cur.Kind == strKind:
		// redis-cell parses its TAT with Rust's i64 parse, which takes a
		// '+' and leading zeros as ParseInt does.
		v, err := strconv.ParseInt(string(cur.Val), 10, 64)
		return v, err == nil
	}
	return 0, false
}

// gcraExpire is when a CL key written at now with a TTL of ttlMs whole
// milliseconds (the exact TTL truncated, gcra.Decision.TTLMillis) stops
// existing, as redis-cell stores it: Redis expires the key at
// ms(now) + ttlMs (RedisModule_SetExpire with a whole-millisecond TTL) and a
// key lives while the millisecond clock has not passed that instant. So the
// key can vanish up to ~1 ms before its TAT, which the replies of fast rates
// show.
//
// expire is the first nanosecond at which the key is gone, saturated at
// MaxInt64; expireMs is 0 when expire is exact, else redis-cell's expiry
// millisecond itself (past 2262, where int64 ns end; B of the state).
func gcraExpire(now, ttlMs int64) (expire, expireMs int64) {
	ms := floorDiv(now, 1e6) + ttlMs // |ttlMs| < 2^49: no overflow
	if ms+1 > math.MaxInt64/1_000_000 {
		return math.MaxInt64, ms
	}
	return (ms + 1) * 1e6, 0
}

// gcraWideExpiry reports whether st's B is a wide expiry gcraExpire could
// have written: Expire saturated and the millisecond past its range.
func gcraWideExpiry(st shard.State) bool {
	return st.Expire == math.MaxInt64 && st.B > math.MaxInt64/1_000_000-1 // B+1 would overflow at PEXPIREAT's MaxInt64
}

// clCheck refuses a snapshot record B could not hold: a wide expiry
// (gcraWideExpiry) is only written from version 3 on.
func clCheck(_ *recordReader, st shard.State, version byte) error {
	if st.B != 0 && !(version >= 3 && gcraWideExpiry(st)) {
		return fmt.Errorf("CL key with expiry %d ns and %d ms", st.Expire, st.B)
	}
	return nil
}

// gcraPTTL is Redis's PTTL of a live CL key: its expiry millisecond minus the
// current millisecond (0 in the key's last millisecond).
func gcraPTTL(st shard.State, now int64) int64 {
	if st.B != 0 {
		return st.B - floorDiv(now, 1e6)
	}
	if st.Expire == noExpiry {
		return -1 // PERSIST took its expiry away
	}
	return st.Expire/1e6 - 1 - floorDiv(now, 1e6)
}

// clExpiryMs is a CL key's expiry millisecond, as redis-cell's key holds it
// (an explicit EXPIRE's included).
func clExpiryMs(st shard.State) (int64, bool) {
	switch {
	case st.B != 0:
		return st.B, true
	case st.Expire == noExpiry:
		return 0, false
	}
	return st.Expire/1e6 - 1, true
}

// clSetExpiry gives a CL key the expiry ms, or none, leaving its TAT: an
// explicit expiry is the key's lifetime until the next CL.THROTTLE sets
// redis-cell's again, as Redis keeps a module's string key.
func clSetExpiry(st shard.State, ms int64, ok bool) shard.State {
	if !ok {
		st.Expire, st.B = noExpiry, 0
		return st
	}
	if ms > math.MaxInt64/1_000_000-1 { // past 2262: keep the ms in B
		st.Expire, st.B = noExpiry, ms
		return st
	}
	st.Expire, st.B = (ms+1)*1e6, 0
	return st
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && (a < 0) != (b < 0) {
		q--
	}
	return q
}
