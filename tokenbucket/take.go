// Package tokenbucket decides TB.TAKE and TB.PEEK: a token bucket with
// greedy (continuous) or INTERVAL (all at once) refill, exactly as the
// contract's limiters.md sections A–D and F state it.
//
// Everything here is a pure function of (state, parameters, now): no clock,
// no locks, no I/O, no allocation, no floating point. The state machine
// calls Take while applying a committed entry, with the entry's replicated
// time as now, and Peek for TB.PEEK; the command layer calls Parse. Every
// instant and every reply field fits in int64 once CheckAt has accepted the
// parameters at now; comparisons whose intermediate sums could pass 2^63−1
// are decided on exact values (rearranged differences, or 128-bit products
// from math/bits). See DESIGN.md.
package tokenbucket

import (
	"math/bits"

	"github.com/redcell/redcell/internal/expiry"
)

// State is one key's bucket, three int64s that fit the keyspace's fixed
// record (shard.State: Expire → Expire, Tokens → A, Anchor → B; the Kind
// byte says greedy or INTERVAL).
//
// The key exists iff now < Expire, and at or after Expire it is equivalent
// to a fresh (full) bucket. The zero State is therefore a missing key for
// every now ≥ 0, which is every now Redcell has.
type State struct {
	// Expire is the instant the key becomes equivalent to fresh (rule 2).
	// Greedy: full_at, the instant the bucket is full again — the whole
	// greedy state. INTERVAL: anchor + ⌈(capacity − tokens)/refill_tokens⌉·P
	// with the parameters of the call that wrote it.
	Expire int64
	// Tokens (INTERVAL only) is the tokens left at Anchor, after the last
	// write: 0 ≤ Tokens < that call's capacity.
	Tokens int64
	// Anchor (INTERVAL only) is the origin of the refill grid: refills land
	// at Anchor + k·P, k ≥ 1. 0 ≤ Anchor ≤ the time of the last write.
	Anchor int64
}

// Reply is the five-integer TB.* reply, in wire order.
type Reply struct {
	Limited    int64 // 0 allowed, 1 limited
	Limit      int64 // capacity
	Remaining  int64 // whole tokens left after the call
	RetryAfter int64 // ms until the same call would be allowed; −1 when allowed or never
	ResetAfter int64 // ms until the bucket is full; 0 when full
}

// Ints returns the reply as the five integers of the wire array.
func (r Reply) Ints() [5]int64 {
	return [5]int64{r.Limited, r.Limit, r.Remaining, r.RetryAfter, r.ResetAfter}
}

// Outcome says what the caller must do with the key after Take.
type Outcome uint8

const (
	// Keep: write nothing. The key stays as it was (a missing key stays
	// missing, a live key keeps its Expire).
	Keep Outcome = iota
	// Store: store the returned State (its Expire > now: the key is live).
	Store
	// Delete: the call filled the bucket (a refund); remove the key.
	Delete
	// Reject: p.CheckAt(now) fails; answer its ErrNotInteger, change
	// nothing. The state machine checks CheckAt before WRONGTYPE, so it
	// never sees this from Take.
	Reject
	// Corrupt: the stored State is one Take never writes; answer
	// ErrCorrupt, change nothing.
	Corrupt
)

// String names the outcome for test failures and logs.
func (o Outcome) String() string {
	switch o {
	case Keep:
		return "Keep"
	case Store:
		return "Store"
	case Delete:
		return "Delete"
	case Reject:
		return "Reject"
	case Corrupt:
		return "Corrupt"
	}
	return "Outcome(?)"
}

// Take decides one TB.TAKE at now (Unix ns, the replicated clock) with the
// call's parameters p, greedy or INTERVAL as p says. st is the key's stored
// state, or the zero State when the key is missing; a State whose Expire is
// at or before now is a missing key too (rule 2), whatever its other fields.
// The caller has already answered WRONGTYPE for a live key of another family.
//
// On Store, next is the state to keep (next.Expire > now is the key's new
// lifetime); on Keep, next == st; on Delete, Reject and Corrupt next is the
// zero State or st and must not be stored.
//
// Take is pure and does not allocate.
func Take(st State, now int64, p Params) (r Reply, next State, o Outcome) {
	if p.CheckAt(now) != nil {
		return Reply{}, st, Reject
	}
	if p.Interval {
		return takeInterval(st, now, p)
	}
	return takeGreedy(st, now, p)
}

// Peek answers TB.PEEK: exactly the reply Take would give (remaining after
// the hypothetical take, refunds included), with no effect. The error is
// ErrNotInteger where Take would Reject and ErrCorrupt where it would say
// Corrupt.
func Peek(st State, now int64, p Params) (Reply, error) {
	r, _, o := Take(st, now, p)
	switch o {
	case Reject:
		return Reply{}, ErrNotInteger
	case Corrupt:
		return Reply{}, ErrCorrupt
	}
	return r, nil
}

// Live reports whether a key whose state expires at expire exists at now.
func Live(expire, now int64) bool { return expiry.Live(expire, now) }

// PTTL is the key's PTTL at now (see expiry.PTTL).
func PTTL(expire, now int64) int64 { return expiry.PTTL(expire, now) }

// takeGreedy is rules 13–17. The state is one instant, full_at (= Expire);
// d = full_at − now is the debt in ns (0 for a missing or full key).
// CheckAt guarantees now + capacity·T ≤ 2^63−1, and a live key has
// now < full_at ≤ 2^63−1, so d fits and so does every sum below that the
// rules allow; the comparisons that could pass 2^63−1 (d + n·T against
// capacity·T) are rearranged as differences of non-negative values.
func takeGreedy(st State, now int64, p Params) (Reply, State, Outcome) {
	capacity, t, capT, n := p.Capacity, p.emission, p.span, p.Cost
	live := now < st.Expire
	var d int64
	if live {
		d = st.Expire - now
	}
	switch {
	case n > capacity: // rule 15: can never fit
		return Reply{1, capacity, greedyAvailable(d, capacity, t), -1, expiry.MsUp(d)}, st, Keep

	case n >= 0: // rule 14
		room := capT - n*t // n·T ≤ capacity·T fits; room ≥ 0
		if d > room {
			return Reply{1, capacity, greedyAvailable(d, capacity, t), expiry.MsUp(d - room), expiry.MsUp(d)}, st, Keep
		}
		if n == 0 {
			return Reply{0, capacity, greedyAvailable(d, capacity, t), -1, expiry.MsUp(d)}, st, Keep
		}
		d += n * t // ≤ capacity·T, and now + capacity·T fits
		return Reply{0, capacity, greedyAvailable(d, capacity, t), -1, expiry.MsUp(d)}, State{Expire: now + d}, Store

	default: // rule 16: refund; NewParams checked |n|·T ≤ 2^63−1
		back := int64(magnitude(n) * uint64(t))
		if d <= back {
			full := Reply{0, capacity, capacity, -1, 0}
			if live {
				return full, State{}, Delete
			}
			return full, st, Keep // a refund on a missing key creates nothing
		}
		d -= back
		return Reply{0, capacity, greedyAvailable(d, capacity, t), -1, expiry.MsUp(d)}, State{Expire: now + d}, Store
	}
}

// greedyAvailable is rule 13's whole tokens for a debt of d ns: capacity
// when d = 0, else max(0, capacity − ⌈d/T⌉).
func greedyAvailable(d, capacity, t int64) int64 {
	if d == 0 {
		return capacity
	}
	return max(0, capacity-((d-1)/t+1))
}

// takeInterval is rules 18–23. It first reduces the stored (tokens,
// anchor) to the bucket at now under the call's parameters: available
// tokens a, and whether the bucket is full (then it is exactly a missing
// key). For a bucket that is not full, sinceGrid = now − g, where g is the
// latest refill instant ≤ now (0 ≤ sinceGrid < P).
func takeInterval(st State, now int64, p Params) (Reply, State, Outcome) {
	capacity, n := p.Capacity, p.Cost
	live := now < st.Expire
	full, a, sinceGrid := true, capacity, int64(0)
	if live {
		if st.Tokens < 0 || st.Anchor > now {
			return Reply{}, st, Corrupt
		}
		// now ≥ Anchor, so the difference is exact in uint64 whatever the
		// sign of Anchor; k = ⌊(now − anchor)/P⌋ refills have arrived
		// (one landing exactly at now counts).
		elapsed := uint64(now) - uint64(st.Anchor)
		k := elapsed / uint64(p.period)
		if st.Tokens < capacity {
			// Full iff tokens + k·refill_tokens ≥ capacity, decided on the
			// exact 128-bit product.
			hi, lo := bits.Mul64(k, uint64(p.RefillTokens))
			if missing := uint64(capacity - st.Tokens); hi == 0 && lo < missing {
				full = false
				a = st.Tokens + int64(lo) // < capacity
				sinceGrid = int64(elapsed % uint64(p.period))
			}
		}
	}

	// resetAfter is rule 21 for a bucket holding tokens at the grid point
	// now − sinceGrid: the refill that fills it, relative to now.
	resetAfter := func(tokens int64) int64 {
		if tokens >= capacity {
			return 0
		}
		return expiry.MsUp(periodsFor(capacity-tokens, p)*p.period - sinceGrid)
	}

	switch {
	case n > capacity: // rule 20: can never fit
		return Reply{1, capacity, a, -1, resetAfter(a)}, st, Keep

	case n == 0: // COST 0 never writes
		return Reply{0, capacity, a, -1, resetAfter(a)}, st, Keep

	case n > 0:
		if n > a { // rule 20; a full bucket always has room, so g is defined
			retry := periodsFor(n-a, p)*p.period - sinceGrid
			return Reply{1, capacity, a, expiry.MsUp(retry), resetAfter(a)}, st, Keep
		}
		// Rule 19: from a full bucket the anchor is now (sinceGrid = 0),
		// otherwise the current grid point g. Either way anchor = now −
		// sinceGrid, and the key lives until the refill that fills it.
		tokens := a - n
		anchor := now - sinceGrid
		expire := anchor + periodsFor(capacity-tokens, p)*p.period
		return Reply{0, capacity, tokens, -1, expiry.MsUp(expire - now)},
			State{Expire: expire, Tokens: tokens, Anchor: anchor}, Store

	default: // rule 22: refund, no nanosecond arithmetic
		fullReply := Reply{0, capacity, capacity, -1, 0}
		if full {
			if live { // stored, but full under this call's parameters
				return fullReply, State{}, Delete
			}
			return fullReply, st, Keep // a refund on a missing key does nothing
		}
		if magnitude(n) >= uint64(capacity-a) {
			return fullReply, State{}, Delete
		}
		tokens := a + int64(magnitude(n))
		anchor := now - sinceGrid
		expire := anchor + periodsFor(capacity-tokens, p)*p.period
		return Reply{0, capacity, tokens, -1, expiry.MsUp(expire - now)},
			State{Expire: expire, Tokens: tokens, Anchor: anchor}, Store
	}
}

// periodsFor is ⌈missing / refill_tokens⌉ for 1 ≤ missing ≤ capacity: the
// refills needed for missing tokens. At most ⌈capacity/refill_tokens⌉, so
// its product with P is at most the span, which CheckAt bounds.
func periodsFor(missing int64, p Params) int64 {
	return (missing-1)/p.RefillTokens + 1
}
