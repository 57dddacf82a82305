package gcra

import (
	"math/rand/v2"
	"testing"
)

// checkDecision asserts the invariants every decision must keep, whatever the
// inputs: Peek answers exactly what Throttle answers, limited calls write
// nothing, and the outcome agrees with the reply. It is shared by the
// property tests and FuzzThrottle.
func checkDecision(t *testing.T, tat int64, present bool, now int64, p Params) (Reply, int64, Outcome) {
	t.Helper()
	r, newTAT, o := Throttle(tat, present, now, p)

	// Pure: the same call answers the same, and Peek has the same reply.
	if r2, newTAT2, o2 := Throttle(tat, present, now, p); r2 != r || newTAT2 != newTAT || o2 != o {
		t.Fatalf("Throttle not deterministic: %v %d %v then %v %d %v", r, newTAT, o, r2, newTAT2, o2)
	}
	pr, perr := Peek(tat, present, now, p)
	if pr != r {
		t.Fatalf("Peek reply %v != Throttle reply %v (tat %d present %v now %d %+v)", pr, r, tat, present, now, p)
	}
	if (perr == ErrExpire) != (o == StoreExpireError) || (perr != nil && perr != ErrExpire) {
		t.Fatalf("Peek error %v with outcome %v", perr, o)
	}

	if r.Limit != p.Limit {
		t.Fatalf("reply limit %d, params limit %d", r.Limit, p.Limit)
	}
	seen := now // the TAT the decision reads
	if present {
		seen = tat
	}
	switch {
	case r.Limited == 1:
		if o != Keep {
			t.Fatalf("limited reply %v with outcome %v", r, o)
		}
		if newTAT != seen {
			t.Fatalf("limited call changed the TAT: %d -> %d", seen, newTAT)
		}
	case r.Limited == 0:
		if o != Store && o != StoreExpireError {
			t.Fatalf("allowed reply %v with outcome %v", r, o)
		}
		if r.RetryAfter != -1 {
			t.Fatalf("allowed reply with retry_after %d", r.RetryAfter)
		}
		ttl := newTAT - now // wraps exactly as Throttle's ttl does
		if (o == StoreExpireError) != (ttl/nanosPerMilli <= -2) {
			t.Fatalf("outcome %v with ttl %d ns", o, ttl)
		}
		if o == StoreExpireError && now >= 0 && newTAT > now {
			t.Fatalf("StoreExpireError leaves a live key: newTAT %d > now %d", newTAT, now)
		}
	default:
		t.Fatalf("limited = %d", r.Limited)
	}
	return r, newTAT, o
}

// saneParams draws parameters a real client sends: positive rates with T a
// whole number of microseconds, small bursts, quantities within the limit.
func saneParams(r *rand.Rand) Params {
	interval := (1 + r.Int64N(10_000_000)) * 1000 // 1 µs .. 10 s
	limit := 1 + r.Int64N(100)
	return Params{Interval: interval, Limit: limit, Quantity: r.Int64N(limit + 1)}
}

// saneState draws a stored TAT between now and a little beyond tau (a key may
// be over its tolerance after its max_burst was lowered), or an absent key.
func saneState(r *rand.Rand, now int64, p Params) (int64, bool) {
	if r.IntN(4) == 0 {
		return 0, false
	}
	return now + 1 + r.Int64N(p.Interval*(p.Limit+2)), true
}

func TestProperty_RandomInputsKeepInvariants(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for range 300_000 {
		p := Params{Interval: logUniformInt64(r), Limit: logUniformInt64(r), Quantity: logUniformInt64(r)}
		if p.Interval == 0 {
			continue // NewParams never returns it
		}
		checkDecision(t, logUniformInt64(r), r.IntN(2) == 0, logUniformInt64(r), p)
	}
}

// TestProperty_AllowedThenPeekZero: after an allowed Store, CL.PEEK with
// quantity 0 at the same instant shows the same remaining and reset_after.
func TestProperty_AllowedThenPeekZero(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	allowed := 0
	for range 100_000 {
		now := now0 + r.Int64N(1e12)
		p := saneParams(r)
		tat, present := saneState(r, now, p)
		reply, newTAT, o := checkDecision(t, tat, present, now, p)
		if o != Store {
			continue
		}
		allowed++
		peek := p
		peek.Quantity = 0
		got, err := Peek(newTAT, newTAT > now, now, peek)
		if err != nil || got.Limited != 0 || got.Remaining != reply.Remaining || got.ResetAfter != reply.ResetAfter {
			t.Fatalf("after %v (tat %d present %v now %d %+v) Peek(q=0) = %v, %v", reply, tat, present, now, p, got, err)
		}
	}
	if allowed < 10_000 {
		t.Fatalf("only %d allowed decisions: the generator is off", allowed)
	}
}

// TestProperty_RetryAfterIsHonest: a limited call that reports a retry_after
// is allowed once that many seconds have passed. Secs rounds a remainder of
// less than a millisecond down, so the retry waits one extra millisecond.
func TestProperty_RetryAfterIsHonest(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	limited := 0
	for range 100_000 {
		now := now0 + r.Int64N(1e12)
		p := saneParams(r)
		p.Quantity = 1 + r.Int64N(p.Limit)
		tat, present := saneState(r, now, p)
		reply, _, _ := checkDecision(t, tat, present, now, p)
		if reply.Limited == 0 {
			continue
		}
		limited++
		if reply.RetryAfter < 0 {
			t.Fatalf("quantity %d <= limit %d but retry_after %d", p.Quantity, p.Limit, reply.RetryAfter)
		}
		later := now + reply.RetryAfter*nanosPerSecond + nanosPerMilli
		if again, _, _ := Throttle(tat, present && tat > later, later, p); again.Limited != 0 {
			t.Fatalf("limited %v at %d (tat %d %+v), still limited %v after retry_after", reply, now, tat, p, again)
		}
		// And not a whole second earlier (when that is still in the future).
		if reply.RetryAfter >= 2 {
			earlier := later - 2*nanosPerSecond
			if again, _, _ := Throttle(tat, present && tat > earlier, earlier, p); again.Limited != 1 {
				t.Fatalf("limited %v at %d, but already allowed at %d", reply, now, earlier)
			}
		}
	}
	if limited < 10_000 {
		t.Fatalf("only %d limited decisions: the generator is off", limited)
	}
}

// TestProperty_BurstAtOneInstant: a fresh key takes exactly limit requests of
// quantity 1 at one instant, remaining counting down to 0, then is limited
// with retry_after of one emission interval.
func TestProperty_BurstAtOneInstant(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	for range 2_000 {
		p := saneParams(r)
		p.Quantity = 1
		now := now0 + r.Int64N(1e12)
		tat, present := int64(0), false
		for i := int64(1); i <= p.Limit; i++ {
			reply, newTAT, o := checkDecision(t, tat, present, now, p)
			want := Reply{0, p.Limit, p.Limit - i, -1, Secs(i * p.Interval)}
			if reply != want || o != Store || newTAT != now+i*p.Interval {
				t.Fatalf("%+v request %d: %v %d %v, want %v", p, i, reply, newTAT, o, want)
			}
			tat, present = newTAT, true
		}
		reply, _, o := checkDecision(t, tat, present, now, p)
		want := Reply{1, p.Limit, 0, Secs(p.Interval), Secs(p.Limit * p.Interval)}
		if reply != want || o != Keep {
			t.Fatalf("%+v request past the burst: %v %v, want %v Keep", p, reply, o, want)
		}
	}
}

// FuzzThrottle feeds arbitrary integers through NewParams and Throttle: it
// must never panic, must keep every invariant of checkDecision, and must
// agree with internal/clmodel's math/big model on every field of Decide.
func FuzzThrottle(f *testing.F) {
	for _, tc := range throttleCases {
		f.Add(tc.tat, tc.present, tc.now, tc.maxBurst, tc.count, tc.period, tc.qty)
	}
	f.Fuzz(func(t *testing.T, tat int64, present bool, now, maxBurst, count, period, quantity int64) {
		p, err := NewParams(maxBurst, count, period, quantity)
		if err != nil {
			if err != ErrZeroRate {
				t.Fatalf("NewParams error %v", err)
			}
			return
		}
		if p.Interval == 0 || p.Limit != maxBurst+1 || p.Quantity != quantity {
			t.Fatalf("NewParams(%d, %d, %d, %d) = %+v", maxBurst, count, period, quantity, p)
		}
		checkDecision(t, tat, present, now, p)
		_, want, _ := bigDecide(maxBurst, count, period, quantity, uint64(tat), present, now)
		if got := Decide(uint64(tat), present, now, p); got != want {
			t.Fatalf("Decide = %+v, math/big model %+v", got, want)
		}
	})
}
