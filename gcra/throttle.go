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

// Throttle decides one CL.THROTTLE at time now (Unix ns).
//
// tat is the stored TAT when the key exists. Callers pass present=false when
// the key is absent or its TAT <= now ("a TAT in the past behaves like an
// absent key"); Throttle then uses tat = now. A present tat <= now is not an
// error: it follows the spec's formulas literally (new_tat = max(now, tat) +
// inc, a limited call's ttl = tat - now), which is what redis-cell answers
// while its millisecond key expiry lags behind the TAT (see DESIGN.md).
//
// newTAT is the key's TAT after the call: on Keep it is the TAT the decision
// saw (now for an absent key), so it is always safe to read, but only Store
// and StoreExpireError ask the caller to write it.
//
// Arithmetic wraps like int64 exactly where the spec says it wraps: limit,
// tau = T·limit, inc = T·Q, the new TAT and every difference. The only float
// operation is the one division behind Remaining, which is a reply value and
// never state.
//
// Throttle is pure and does not allocate, so any goroutine may call it; the
// fsm's apply loop calls it (through shard) once per CL.THROTTLE decision.
func Throttle(tat int64, present bool, now int64, p Params) (r Reply, newTAT int64, o Outcome) {
	interval := p.Interval
	tau := interval * p.Limit    // delay variation tolerance
	inc := interval * p.Quantity // the cost of this request in time

	if !present {
		tat = now
	}
	newTAT = max(now, tat) + inc
	allowAt := newTAT - tau

	var retry, ttl int64
	if now < allowAt {
		// Limited: nothing is written, no TTL refresh.
		r.Limited = 1
		retry = minusOneSecond
		if inc <= tau {
			retry = allowAt - now
		}
		ttl = tat - now
		newTAT = tat
		o = Keep
	} else {
		// Allowed, boundary inclusive.
		retry = minusOneSecond
		ttl = newTAT - now
		o = Store
		if ttl/nanosPerMilli <= expireErrorMillis {
			o = StoreExpireError
		}
	}

	r.Limit = p.Limit
	r.Remaining = remaining(tau-ttl, interval)
	r.RetryAfter = Secs(retry)
	r.ResetAfter = Secs(ttl)
	return r, newTAT, o
}

// Peek answers what Throttle would with no effect (CL.PEEK): the identical
// Reply, and ErrExpire exactly when Throttle's outcome is StoreExpireError (a
// client must see the same error a CL.THROTTLE would have produced). Same
// arguments, purity and callers as Throttle.
func Peek(tat int64, present bool, now int64, p Params) (Reply, error) {
	r, _, o := Throttle(tat, present, now, p)
	if o == StoreExpireError {
		return r, ErrExpire
	}
	return r, nil
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
func remaining(next, interval int64) int64 {
	if next <= -interval {
		return 0
	}
	return truncSat(float64(next/nanosPerMicro) / float64(interval/nanosPerMicro))
}

// Secs converts a duration in ns to redis-cell's whole seconds (spec:
// secs(d)): d truncated toward zero, plus 1 when d > 0 and its sub-second
// part holds at least one whole millisecond. So 2.0005 s → 2, 2.001 s → 3,
// 0.0005 s → 0, -0.5 s → 0 and -1 s → -1. It never overflows.
func Secs(d int64) int64 {
	s := d / nanosPerSecond
	if d > 0 && d%nanosPerSecond >= nanosPerMilli {
		s++
	}
	return s
}
