// Package gcra decides redis-cell's CL.THROTTLE: the generic cell rate
// algorithm over one stored integer, the theoretical arrival time (TAT).
//
// Everything here is a pure function of its arguments: no clock, no locks, no
// I/O, no allocation. The state machine (fsm → shard) calls Throttle while
// applying a committed log entry, with the entry's replicated time as now;
// CL.PEEK calls Peek. Because the stored state and every step that changes it
// are integer arithmetic, replicas that apply the same entries hold the same
// TATs bit for bit. The rules are redis-cell v0.5.0's (internal/vectors holds
// replies recorded from it); DESIGN.md gives them as coded and explains the
// choices.
package gcra

import "errors"

// ErrExpire is redis-cell's answer when an allowed call's TTL truncates to
// -2 ms or less (a large refund on a nearly full bucket). redis-cell has
// already written the new TAT when it answers this; the text is part of the
// wire contract, so callers must not wrap it before formatting the reply.
var ErrExpire = errors.New("Error while setting key expire")

const (
	nanosPerMilli  = 1_000_000
	nanosPerMicro  = 1_000
	minusOneSecond = -nanosPerSecond // retry_after when allowed or never possible

	// expireErrorMillis is the truncated TTL at and below which redis-cell's
	// store refuses the expiry (spec: "TTL truncates to ≤ -2 ms").
	expireErrorMillis = -2
)

// Reply is the five-integer CL.THROTTLE reply, in wire order.
type Reply struct {
	Limited    int64 // 0 allowed, 1 limited
	Limit      int64 // max_burst + 1
	Remaining  int64 // tokens left after this call
	RetryAfter int64 // whole seconds until the request would be allowed; -1 when allowed or never
	ResetAfter int64 // whole seconds until the bucket is full again
}

// Outcome says what the caller must do to the stored state after Throttle.
type Outcome uint8

const (
	// Keep: write nothing (the call was limited).
	Keep Outcome = iota
	// Store: store TAT := newTAT. The key lives while newTAT > now; a newTAT
	// <= now means the key is gone (delete it, or let the sweeper drop it).
	Store
	// StoreExpireError: store newTAT (it is <= now, so the key is gone) AND
	// answer ErrExpire instead of the reply.
	StoreExpireError
)

// String names the outcome for test failures and logs.
func (o Outcome) String() string {
	switch o {
	case Keep:
		return "Keep"
	case Store:
		return "Store"
	case StoreExpireError:
		return "StoreExpireError"
	}
	return "Outcome(?)"
}

// Decision is everything one CL.THROTTLE decides: the reply, what to do
// with the stored state, and how long the key then lives.
type Decision struct {
	Reply
	Outcome Outcome
	// TAT is the stored TAT after the call, an unsigned 64-bit instant in ns
	// (the spec keeps it so, and it wraps only there: the exact new TAT mod
	// 2^64). On Keep it is the TAT the decision saw (now for an absent key).
	TAT uint64
	// Live reports whether the key exists after a Store or StoreExpireError:
	// the exact TTL (new TAT − now, before any wrap) is positive.
	Live bool
	// TTLMillis is that exact TTL truncated to whole ms, what redis-cell
	// hands to Redis's expiry (meaningful when Live).
	TTLMillis int64
}

// Decide decides one CL.THROTTLE at time now (Unix ns).
//
// tat is the stored TAT (unsigned 64-bit ns) when the key exists. Callers
// pass present=false when the key is absent; Decide then uses tat = now. A
// present tat <= now is not an error: it follows the spec's formulas
// literally (new_tat = max(now, tat) + inc, a limited call's ttl = tat − now),
// which is what redis-cell answers while its millisecond key expiry lags
// behind the TAT (see DESIGN.md).
//
// Exactly the three products wrap like int64 (limit, tau = T·limit,
// inc = T·Q) and the stored TAT wraps mod 2^64; new_tat, allow_at, the
// comparison, ttl and next are exact (128-bit) integers, as the spec's
// "Width" paragraph demands. The only float operation is the one division
// behind Remaining, which is a reply value and never state.
//
// Decide is pure and does not allocate, so any goroutine may call it; the
// fsm's apply loop calls it (through shard) once per CL.THROTTLE decision.
func Decide(tat uint64, present bool, now int64, p Params) (d Decision) {
	interval := p.Interval
	tau := interval * p.Limit    // delay variation tolerance (wraps)
	inc := interval * p.Quantity // the cost of this request in time (wraps)

	nowW := wideInt(now)
	tatW := nowW
	if present {
		tatW = wideUint(tat)
	}
	newTAT := nowW
	if nowW.less(tatW) {
		newTAT = tatW
	}
	newTAT = newTAT.add(wideInt(inc))
	allowAt := newTAT.sub(wideInt(tau))

	var retry, ttl wide
	if nowW.less(allowAt) {
		// Limited: nothing is written, no TTL refresh.
		d.Limited = 1
		retry = wideInt(minusOneSecond)
		if inc <= tau {
			retry = allowAt.sub(nowW)
		}
		ttl = tatW.sub(nowW)
		d.TAT = tatW.lo // tat, or now's bits for an absent key
		d.Outcome = Keep
	} else {
		// Allowed, boundary inclusive.
		retry = wideInt(minusOneSecond)
		ttl = newTAT.sub(nowW)
		d.TAT = newTAT.lo // the stored TAT wraps mod 2^64
		d.Outcome = Store
		if !wideInt(expireErrorMillis * nanosPerMilli).less(ttl) {
			d.Outcome = StoreExpireError // trunc_ms(ttl) <= -2
		}
		d.Live = ttl.positive()
		d.TTLMillis, _ = ttl.quo(nanosPerMilli)
	}

	d.Limit = p.Limit
	d.Remaining = remaining(wideInt(tau).sub(ttl), interval)
	d.RetryAfter = secsWide(retry)
	d.ResetAfter = secsWide(ttl)
	return d
}

// Throttle is Decide for callers that keep the TAT as an int64 (the same
// 64 bits: a TAT past 2262 reads as negative there, so compare it through
// Decide's Live rather than with now). newTAT is Decision.TAT's bits.
func Throttle(tat int64, present bool, now int64, p Params) (r Reply, newTAT int64, o Outcome) {
	d := Decide(uint64(tat), present, now, p)
	return d.Reply, int64(d.TAT), d.Outcome
}

// Peek answers what Throttle would with no effect (CL.PEEK): the identical
// Reply, and ErrExpire exactly when Throttle's outcome is StoreExpireError (a
// client must see the same error a CL.THROTTLE would have produced). Same
// arguments, purity and callers as Throttle.
func Peek(tat int64, present bool, now int64, p Params) (Reply, error) {
	d := Decide(uint64(tat), present, now, p)
	if d.Outcome == StoreExpireError {
		return d.Reply, ErrExpire
	}
	return d.Reply, nil
}

// remaining is redis-cell's token count: next/T in whole microseconds, as a
// float64 division truncated and saturated, or 0 when next <= -T.
//
// Both operands are truncated to microseconds before the division because
// redis-cell divides Duration::num_microseconds values. IEEE division then
// gives x/0 = ±Inf (saturated to MaxInt64 or MinInt64) and 0/0 = NaN (0), which
// is why 1 ns < T < 1 µs reports MaxInt64 and T = 1 ns reports 0. Division is
// a single correctly rounded IEEE operation, so every replica and every
// architecture gets the same answer.
func remaining(next wide, interval int64) int64 {
	if !wideInt(interval).neg().less(next) { // next <= -T, -T exact (T may be MinInt64)
		return 0
	}
	micros, _ := next.quo(nanosPerMicro)
	return truncSat(float64(micros) / float64(interval/nanosPerMicro))
}

// Secs converts a duration in ns to redis-cell's whole seconds (spec:
// secs(d)): d truncated toward zero, plus 1 when d > 0 and its sub-second
// part holds at least one whole millisecond. So 2.0005 s → 2, 2.001 s → 3,
// 0.0005 s → 0, -0.5 s → 0 and -1 s → -1. It never overflows.
func Secs(d int64) int64 { return secsWide(wideInt(d)) }

// secsWide is Secs of an exact wide duration (|d| < 2^68 ns, so the whole
// seconds fit an int64 with room to spare).
func secsWide(d wide) int64 {
	s, sub := d.quo(nanosPerSecond)
	if d.positive() && sub >= nanosPerMilli {
		s++
	}
	return s
}
