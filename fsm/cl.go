package fsm

import (
	"fmt"
	"math"

	"github.com/redcell/redcell/gcra"
	"github.com/redcell/redcell/internal/expiry"
	"github.com/redcell/redcell/request"
	"github.com/redcell/redcell/shard"
)

// The redis-cell family (CL.THROTTLE, CL.PEEK) in the state machine: how
// its requests are checked and applied, and how its keys are stored. A key
// is a shard.State of KindGCRA with the TAT in A and redis-cell's
// millisecond expiry model in Expire (gcraExpire).
var clFamily = family{
	write: request.Throttle,
	read:  request.Peek,
	kinds: []shard.Kind{shard.KindGCRA},
	valid: clValid,
	apply: (*FSM).throttle,
	peek:  (*FSM).clPeek,
	pttl:  gcraPTTL,
}

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
		if live && cur.Kind != shard.KindGCRA {
			res.SetErr(request.ErrWrongType)
			return cur, shard.Keep
		}
		rep, tat, outcome := gcra.Throttle(cur.A, live, now, p)
		switch outcome {
		case gcra.Store:
			setThrottle(res, rep)
		case gcra.StoreExpireError:
			res.SetErr(request.ErrExpire)
		default:
			setThrottle(res, rep)
			return cur, shard.Keep
		}
		// A TAT at or before now is the same as no key (a refund into the
		// past, or quantity 0 on a fresh key).
		if tat > now {
			return shard.State{Kind: shard.KindGCRA, Expire: gcraExpire(now, tat), A: tat}, shard.Put
		}
		if live {
			return cur, shard.Delete
		}
		return cur, shard.Keep
	})
}

func (f *FSM) clPeek(r *request.Request, now int64, res *request.Result) {
	st, live := f.store.Get(r.Key, now)
	if live && st.Kind != shard.KindGCRA {
		res.SetErr(request.ErrWrongType)
		return
	}
	rep, err := gcra.Peek(st.A, live, now, gcraParams(r))
	if err != nil {
		res.SetErr(request.ErrExpire)
		return
	}
	setThrottle(res, rep)
}

// gcraExpire is when a CL key written at now with TAT tat stops existing, as
// redis-cell stores it: Redis expires the key at ms(now) + trunc_ms(tat-now)
// (RedisModule_SetExpire with a whole-millisecond TTL) and a key lives while
// the millisecond clock has not passed that instant. So the key can vanish up
// to ~1 ms before its TAT, which the replies of fast rates show. Returned as
// the first nanosecond at which the key is gone.
func gcraExpire(now, tat int64) int64 {
	ms := floorDiv(now, 1e6) + (tat-now)/1e6 + 1
	if ms > math.MaxInt64/1_000_000 {
		return math.MaxInt64
	}
	return ms * 1e6
}

// gcraPTTL is Redis's PTTL of a live CL key: its expiry millisecond minus the
// current millisecond (0 in the key's last millisecond).
func gcraPTTL(st shard.State, now int64) int64 {
	if st.Expire == math.MaxInt64 {
		return expiry.MsUp(st.Expire - now)
	}
	return st.Expire/1e6 - 1 - floorDiv(now, 1e6)
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && (a < 0) != (b < 0) {
		q--
	}
	return q
}
