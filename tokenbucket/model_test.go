package tokenbucket

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// Three reference models, none sharing code with take.go:
//
//   - tokenModel: greedy refill as an exact rational token counter (big.Rat)
//     stepped through time — the bucket a user pictures, no full_at;
//   - stepModel: INTERVAL refill simulated one refill at a time, with
//     retry and reset found by stepping forward to the refill that brings
//     the tokens;
//   - specModel: limiters.md rules 13–23 transcribed literally in big.Int,
//     used where parameters change between calls and at the int64 limits.
//
// The first two hold parameters fixed (their pictures do not say what a
// parameter change means); the third follows the contract's rules for
// changes.

var (
	bigMilli = big.NewInt(nanosPerMilli)
	ratMilli = new(big.Rat).SetInt64(nanosPerMilli)
)

// msUpRat is ms_up of an exact rational number of ns.
func msUpRat(x *big.Rat) int64 {
	if x.Sign() <= 0 {
		return 0
	}
	q := new(big.Rat).Quo(x, ratMilli)
	n := new(big.Int).Quo(q.Num(), q.Denom()) // floor, q > 0
	if !q.IsInt() {
		n.Add(n, big.NewInt(1))
	}
	return mustInt64(n)
}

func msUpBig(x *big.Int) int64 {
	if x.Sign() <= 0 {
		return 0
	}
	n := new(big.Int).Sub(x, big.NewInt(1))
	n.Quo(n, bigMilli)
	return mustInt64(n.Add(n, big.NewInt(1)))
}

func mustInt64(n *big.Int) int64 {
	if !n.IsInt64() {
		panic("model value beyond int64: " + n.String())
	}
	return n.Int64()
}

func floorRat(x *big.Rat) int64 {
	return mustInt64(new(big.Int).Div(x.Num(), x.Denom())) // Euclidean: floor for a positive denominator
}

// tokenModel is a greedy bucket as a token count: tokens refill at 1/T per
// ns up to capacity; the key exists while tokens < capacity.
type tokenModel struct {
	capacity, t int64
	tokens      *big.Rat // at time at
	at          int64
}

func newTokenModel(p Params, now int64) *tokenModel {
	return &tokenModel{capacity: p.Capacity, t: p.emission, tokens: new(big.Rat).SetInt64(p.Capacity), at: now}
}

func (m *tokenModel) advance(now int64) {
	if now < m.at {
		panic("time went back")
	}
	gain := new(big.Rat).SetFrac(big.NewInt(now-m.at), big.NewInt(m.t))
	m.tokens.Add(m.tokens, gain)
	if c := new(big.Rat).SetInt64(m.capacity); m.tokens.Cmp(c) > 0 {
		m.tokens = c
	}
	m.at = now
}

// until is the ns until the bucket holds x tokens (≤ 0: already).
func (m *tokenModel) until(x int64) *big.Rat {
	d := new(big.Rat).Sub(new(big.Rat).SetInt64(x), m.tokens)
	return d.Mul(d, new(big.Rat).SetInt64(m.t))
}

func (m *tokenModel) pttl(now int64) int64 {
	m.advance(now)
	if m.tokens.Cmp(new(big.Rat).SetInt64(m.capacity)) >= 0 {
		return -2
	}
	return msUpRat(m.until(m.capacity))
}

func (m *tokenModel) call(now, n int64, peek bool) Reply {
	m.advance(now)
	before := new(big.Rat).Set(m.tokens)
	limited, retry := int64(0), int64(-1)
	switch {
	case n > m.capacity:
		limited = 1
	case n >= 0:
		if m.tokens.Cmp(new(big.Rat).SetInt64(n)) >= 0 {
			m.tokens.Sub(m.tokens, new(big.Rat).SetInt64(n))
		} else {
			limited, retry = 1, msUpRat(m.until(n))
		}
	default:
		back := new(big.Rat).SetInt(new(big.Int).Neg(big.NewInt(n)))
		if n == math.MinInt64 {
			back.SetInt(new(big.Int).Lsh(big.NewInt(1), 63))
		}
		m.tokens.Add(m.tokens, back)
		if c := new(big.Rat).SetInt64(m.capacity); m.tokens.Cmp(c) > 0 {
			m.tokens = c
		}
	}
	r := Reply{limited, m.capacity, floorRat(m.tokens), retry, msUpRat(m.until(m.capacity))}
	if peek {
		m.tokens = before
	}
	return r
}

// stepModel is an INTERVAL bucket simulated refill by refill.
type stepModel struct {
	capacity, rt, period int64
	exists               bool
	tokens, anchor       int64
}

func addChecked(a, b int64) int64 {
	s := a + b
	if (b > 0 && s < a) || (b < 0 && s > a) {
		panic("model overflow")
	}
	return s
}

// settle applies every refill up to now; a full bucket is no key.
func (m *stepModel) settle(now int64) {
	for m.exists && m.tokens < m.capacity && addChecked(m.anchor, m.period) <= now {
		m.anchor += m.period
		m.tokens = refill(m.tokens, m.rt, m.capacity)
	}
	if m.tokens >= m.capacity {
		m.exists = false
	}
}

// at is the first refill instant at which the bucket holds x tokens.
func (m *stepModel) at(x int64) int64 {
	t, tok := m.anchor, m.tokens
	for tok < x {
		t = addChecked(t, m.period)
		tok = refill(tok, m.rt, m.capacity)
	}
	return t
}

// refill is min(capacity, tokens + rt) without overflow.
func refill(tokens, rt, capacity int64) int64 {
	if rt >= capacity-tokens {
		return capacity
	}
	return tokens + rt
}

func (m *stepModel) pttl(now int64) int64 {
	m.settle(now)
	if !m.exists {
		return -2
	}
	return msUpBig(big.NewInt(m.at(m.capacity) - now))
}

func (m *stepModel) call(now, n int64, peek bool) Reply {
	m.settle(now)
	saved := *m
	avail := m.capacity
	if m.exists {
		avail = m.tokens
	}
	limited, retry := int64(0), int64(-1)
	switch {
	case n > m.capacity:
		limited = 1
	case n == 0:
	case n > 0 && n <= avail:
		if !m.exists {
			m.exists, m.anchor, m.tokens = true, now, m.capacity
		}
		m.tokens -= n
	case n > 0:
		limited, retry = 1, msUpBig(big.NewInt(m.at(n)-now))
	default:
		if m.exists {
			back := uint64(-n)
			if back >= uint64(m.capacity-m.tokens) {
				m.tokens = m.capacity
				m.exists = false
			} else {
				m.tokens += int64(back)
			}
		}
	}
	r := Reply{limited, m.capacity, m.capacity, retry, 0}
	if m.exists {
		r.Remaining = m.tokens
		r.ResetAfter = msUpBig(big.NewInt(m.at(m.capacity) - now))
	}
	if peek {
		*m = saved
	}
	return r
}

// specModel is rules 13–23 in big.Int. It returns the reply and the key's
// state after the call: exists, and (big) expire, tokens, anchor.
type specState struct {
	exists                 bool
	expire, tokens, anchor *big.Int
}

func bi(x int64) *big.Int { return big.NewInt(x) }

func ceilDiv(a, b *big.Int) *big.Int { // a ≥ 0, b > 0
	q := new(big.Int).Add(a, new(big.Int).Sub(b, bi(1)))
	return q.Quo(q, b)
}

func specModel(s specState, now int64, p Params) (Reply, specState) {
	N := bi(now)
	capacity, n := bi(p.Capacity), bi(p.Cost)
	P := new(big.Int).Mul(bi(p.PeriodMs), bigMilli)
	if s.exists && s.expire.Cmp(N) <= 0 {
		s = specState{} // rule 2: gone
	}
	if !p.Interval {
		T := new(big.Int).Quo(P, bi(p.RefillTokens))
		capT := new(big.Int).Mul(capacity, T)
		d := bi(0)
		if s.exists {
			d.Sub(s.expire, N)
		}
		avail := func(d *big.Int) int64 {
			if d.Sign() == 0 {
				return p.Capacity
			}
			a := new(big.Int).Sub(capacity, ceilDiv(d, T))
			if a.Sign() < 0 {
				return 0
			}
			return mustInt64(a)
		}
		nT := new(big.Int).Mul(n, T)
		switch {
		case n.Cmp(capacity) > 0:
			return Reply{1, p.Capacity, avail(d), -1, msUpBig(d)}, s
		case n.Sign() >= 0:
			over := new(big.Int).Add(d, nT)
			over.Sub(over, capT)
			if over.Sign() > 0 {
				return Reply{1, p.Capacity, avail(d), msUpBig(over), msUpBig(d)}, s
			}
			if n.Sign() == 0 {
				return Reply{0, p.Capacity, avail(d), -1, msUpBig(d)}, s
			}
			d2 := new(big.Int).Add(d, nT)
			return Reply{0, p.Capacity, avail(d2), -1, msUpBig(d2)},
				specState{exists: true, expire: new(big.Int).Add(N, d2), tokens: bi(0), anchor: bi(0)}
		default:
			d2 := new(big.Int).Add(d, nT) // nT < 0
			if d2.Sign() <= 0 {
				return Reply{0, p.Capacity, p.Capacity, -1, 0}, specState{}
			}
			return Reply{0, p.Capacity, avail(d2), -1, msUpBig(d2)},
				specState{exists: true, expire: new(big.Int).Add(N, d2), tokens: bi(0), anchor: bi(0)}
		}
	}
	// INTERVAL.
	rt := bi(p.RefillTokens)
	full, a, g := true, new(big.Int).Set(capacity), new(big.Int).Set(N)
	if s.exists {
		k := new(big.Int).Sub(N, s.anchor)
		k.Div(k, P)
		sum := new(big.Int).Add(s.tokens, new(big.Int).Mul(k, rt))
		if sum.Cmp(capacity) < 0 {
			full, a = false, sum
			g = new(big.Int).Add(s.anchor, new(big.Int).Mul(k, P))
		}
	}
	fillAt := func(anchor, tokens *big.Int) *big.Int {
		x := ceilDiv(new(big.Int).Sub(capacity, tokens), rt)
		return x.Add(anchor, x.Mul(x, P))
	}
	reset := func() int64 {
		if full {
			return 0
		}
		return msUpBig(new(big.Int).Sub(fillAt(g, a), N))
	}
	av := mustInt64(a)
	switch {
	case n.Cmp(capacity) > 0:
		return Reply{1, p.Capacity, av, -1, reset()}, s
	case n.Sign() == 0:
		return Reply{0, p.Capacity, av, -1, reset()}, s
	case n.Sign() > 0 && n.Cmp(a) <= 0:
		tokens := new(big.Int).Sub(a, n)
		e := fillAt(g, tokens)
		return Reply{0, p.Capacity, mustInt64(tokens), -1, msUpBig(new(big.Int).Sub(e, N))},
			specState{exists: true, expire: e, tokens: tokens, anchor: g}
	case n.Sign() > 0:
		x := ceilDiv(new(big.Int).Sub(n, a), rt)
		x.Add(g, x.Mul(x, P))
		return Reply{1, p.Capacity, av, msUpBig(x.Sub(x, N)), reset()}, s
	default:
		if full {
			return Reply{0, p.Capacity, p.Capacity, -1, 0}, specState{}
		}
		tokens := new(big.Int).Sub(a, n)
		if tokens.Cmp(capacity) >= 0 {
			return Reply{0, p.Capacity, p.Capacity, -1, 0}, specState{}
		}
		e := fillAt(g, tokens)
		return Reply{0, p.Capacity, mustInt64(tokens), -1, msUpBig(new(big.Int).Sub(e, N))},
			specState{exists: true, expire: e, tokens: tokens, anchor: g}
	}
}

func toSpec(st State, now int64) specState {
	if now >= st.Expire {
		return specState{}
	}
	return specState{exists: true, expire: bi(st.Expire), tokens: bi(st.Tokens), anchor: bi(st.Anchor)}
}

// sameState compares the package's state with the spec model's, for the
// fields that family uses.
func sameState(st State, s specState, now int64, interval bool) bool {
	if !s.exists {
		return now >= st.Expire
	}
	if !s.expire.IsInt64() || st.Expire != s.expire.Int64() {
		return false
	}
	return !interval || (s.tokens.Int64() == st.Tokens && s.anchor.Int64() == st.Anchor)
}

// --- generators -----------------------------------------------------------

const now0 = 1_700_000_000_123_456_789

// logUniform draws from [lo, hi] with a log-uniform magnitude, often hitting
// the ends.
func logUniform(r *rand.Rand, lo, hi int64) int64 {
	switch r.IntN(8) {
	case 0:
		return lo
	case 1:
		return hi
	}
	span := uint64(hi - lo)
	bitsN := r.IntN(64) + 1
	v := r.Uint64() >> (64 - bitsN)
	if span != math.MaxUint64 {
		v %= span + 1
	}
	return lo + int64(v)
}

// saneParams: what clients send — small capacities, periods of ms to s.
func saneParams(r *rand.Rand, interval bool) Params {
	for {
		capacity := 1 + r.Int64N(20)
		p, err := NewParams(capacity, 1+r.Int64N(capacity+3), 1+r.Int64N(3000), 1, interval)
		if err == nil {
			return p
		}
	}
}

// extremeParams: spans close to what CheckAt allows at now, capacities and
// rates of any size; base is the clock the sequence starts at.
func extremeParams(r *rand.Rand, interval bool) (Params, int64) {
	for {
		capacity := logUniform(r, 1, math.MaxInt64)
		rt := logUniform(r, 1, math.MaxInt64)
		if interval && capacity/rt > 60 {
			rt = capacity/60 + 1 // keep the step model's loops short
		}
		period := logUniform(r, 1, MaxPeriodMs)
		p, err := NewParams(capacity, rt, period, 1, interval)
		if err != nil {
			continue
		}
		room := math.MaxInt64 - p.span
		base := logUniform(r, 0, room)
		if r.IntN(2) == 0 {
			base = room - logUniform(r, 0, min(room, 4*p.span))
		}
		return p, base
	}
}

// cost draws a COST around the interesting values for capacity c.
func cost(r *rand.Rand, c int64, interval bool) int64 {
	switch r.IntN(10) {
	case 0:
		return 0
	case 1:
		return -logUniform(r, 1, c)
	case 2:
		if interval {
			return math.MinInt64
		}
		return -1
	case 3:
		return c + 1 + r.Int64N(3)
	case 4:
		return c
	}
	return 1 + r.Int64N(min(c, 4))
}

// step draws the time to the next call: zero, around the emission interval
// or period, or long.
func step(r *rand.Rand, p Params) int64 {
	unit := p.emission
	if p.Interval {
		unit = p.period
	}
	unit = min(unit, math.MaxInt64/4)
	switch r.IntN(6) {
	case 0:
		return 0
	case 1:
		return max(0, unit+r.Int64N(3)-1)
	case 2:
		return r.Int64N(unit*2 + 1)
	case 3:
		return r.Int64N(3*nanosPerMilli + 1)
	case 4:
		return r.Int64N(max(1, p.span/3))
	}
	return r.Int64N(max(1, p.span/4*5))
}

// --- properties -------------------------------------------------------------

type model interface {
	call(now, n int64, peek bool) Reply
	pttl(now int64) int64
}

// replayAgainst runs a random call sequence with fixed parameters (COST
// varies) through Take/Peek and m, comparing every reply, the key's
// existence and its PTTL before and after each call, and the state with
// specModel.
func replayAgainst(t *testing.T, r *rand.Rand, p Params, now int64, m model, calls int) {
	t.Helper()
	var st State
	for range calls {
		if err := p.CheckAt(now); err != nil {
			return
		}
		if got, want := PTTL(st.Expire, now), m.pttl(now); got != want {
			t.Fatalf("%+v at %d: PTTL %d, model %d (state %+v)", p, now, got, want, st)
		}
		q := p
		q.Cost = cost(r, p.Capacity, p.Interval)
		q, err := NewParams(q.Capacity, q.RefillTokens, q.PeriodMs, q.Cost, q.Interval)
		if err != nil {
			continue // a greedy refund whose |n|·T does not fit
		}
		peek := r.IntN(5) == 0
		want := m.call(now, q.Cost, peek)
		got, next, o := Take(st, now, q)
		if got != want {
			t.Fatalf("%+v at %d, state %+v: Take %v, model %v", q, now, st, got, want)
		}
		sr, ss := specModel(toSpec(st, now), now, q)
		if sr != got || (!peek && o != Keep && !sameState(next, ss, now, q.Interval)) {
			t.Fatalf("%+v at %d, state %+v: Take %v %+v %v, spec %v %+v", q, now, st, got, next, o, sr, ss)
		}
		if !peek {
			switch o {
			case Store:
				st = next
			case Delete:
				st = State{}
			}
		}
		if got, want := PTTL(st.Expire, now), m.pttl(now); got != want {
			t.Fatalf("%+v after the call at %d: PTTL %d, model %d", q, now, got, want)
		}
		if next := now + step(r, p); next >= now {
			now = next
		}
	}
}

func TestModel_GreedyTokenCounter(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 3000 {
		p := saneParams(r, false)
		replayAgainst(t, r, p, now0, newTokenModel(p, now0), 60)
	}
	for range 3000 {
		p, base := extremeParams(r, false)
		replayAgainst(t, r, p, base, newTokenModel(p, base), 30)
	}
}

func TestModel_IntervalStepping(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 3000 {
		p := saneParams(r, true)
		replayAgainst(t, r, p, now0, &stepModel{capacity: p.Capacity, rt: p.RefillTokens, period: p.period}, 60)
	}
	for range 3000 {
		p, base := extremeParams(r, true)
		replayAgainst(t, r, p, base, &stepModel{capacity: p.Capacity, rt: p.RefillTokens, period: p.period}, 30)
	}
}

// TestModel_ParameterChanges: every call draws new parameters (same
// family); the contract reinterprets the stored state (rules 17, 23), which
// specModel transcribes.
func TestModel_ParameterChanges(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for i := range 4000 {
		interval := i%2 == 1
		var st State
		now := int64(now0)
		extreme := i%4 >= 2
		if extreme {
			_, now = extremeParams(r, interval)
		}
		for range 40 {
			var p Params
			if extreme {
				p, _ = extremeParams(r, interval)
			} else {
				p = saneParams(r, interval)
			}
			p, err := NewParams(p.Capacity, p.RefillTokens, p.PeriodMs, cost(r, p.Capacity, interval), interval)
			if err != nil || p.CheckAt(now) != nil {
				continue
			}
			got, next, o := Take(st, now, p)
			want, ws := specModel(toSpec(st, now), now, p)
			if got != want || (o != Keep && !sameState(next, ws, now, interval)) {
				t.Fatalf("%+v at %d, state %+v: Take %v %+v %v, spec %v %+v", p, now, st, got, next, o, want, ws)
			}
			checkInvariants(t, st, now, p, got, next, o)
			switch o {
			case Store:
				st = next
			case Delete:
				st = State{}
			}
			now += step(r, p) / 2
			if now < 0 {
				break
			}
		}
	}
}

// TestProperty_RetryAndResetAreHonest: with parameters unchanged and no other
// traffic, a limited call is allowed exactly retry_after ms later (and not a
// millisecond earlier), and the bucket is full exactly reset_after ms later.
func TestProperty_RetryAndResetAreHonest(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	limited := 0
	for i := range 20000 {
		p := saneParams(r, i%2 == 1)
		now := int64(now0)
		var st State
		for range 1 + r.IntN(8) { // drain it a little
			q, _ := NewParams(p.Capacity, p.RefillTokens, p.PeriodMs, 1+r.Int64N(p.Capacity), p.Interval)
			if _, next, o := Take(st, now, q); o == Store {
				st = next
			}
			now += r.Int64N(p.period / 2)
		}
		q, _ := NewParams(p.Capacity, p.RefillTokens, p.PeriodMs, 1+r.Int64N(p.Capacity), p.Interval)
		rep, _, _ := Take(st, now, q)
		if rep.Limited == 1 {
			limited++
			later := now + rep.RetryAfter*nanosPerMilli
			if again, _, _ := Take(st, later, q); again.Limited != 0 {
				t.Fatalf("%+v: limited %v at %d, still limited at +retry_after: %v", q, rep, now, again)
			}
			if again, _, _ := Take(st, later-nanosPerMilli, q); again.Limited != 1 {
				t.Fatalf("%+v: limited %v at %d, already allowed 1 ms before retry_after: %v", q, rep, now, again)
			}
		}
		// reset_after of the current state (COST 0): full exactly then.
		look, _ := NewParams(p.Capacity, p.RefillTokens, p.PeriodMs, 0, p.Interval)
		full, _ := NewParams(p.Capacity, p.RefillTokens, p.PeriodMs, p.Capacity, p.Interval)
		cur, _ := Peek(st, now, look)
		if again, _ := Peek(st, now+cur.ResetAfter*nanosPerMilli, full); again.Limited != 0 {
			t.Fatalf("%+v: reset_after %d but not full then: %v", p, cur.ResetAfter, again)
		}
		if cur.ResetAfter > 0 {
			if again, _ := Peek(st, now+(cur.ResetAfter-1)*nanosPerMilli, full); again.Limited != 1 {
				t.Fatalf("%+v: reset_after %d but already full 1 ms earlier: %v", p, cur.ResetAfter, again)
			}
			if PTTL(st.Expire, now) != cur.ResetAfter {
				t.Fatalf("%+v: PTTL %d, reset_after %d", p, PTTL(st.Expire, now), cur.ResetAfter)
			}
		}
	}
	if limited < 2000 {
		t.Fatalf("only %d limited calls: the generator is off", limited)
	}
}

// checkInvariants holds for every decision (the fuzz target uses it too).
func checkInvariants(t *testing.T, st State, now int64, p Params, r Reply, next State, o Outcome) {
	t.Helper()
	if pr, err := Peek(st, now, p); err != nil || pr != r {
		t.Fatalf("Peek %v %v != Take %v", pr, err, r)
	}
	if r.Limit != p.Capacity || r.Limited < 0 || r.Limited > 1 || r.Remaining < 0 || r.Remaining > p.Capacity || r.ResetAfter < 0 {
		t.Fatalf("reply out of range: %v for %+v", r, p)
	}
	switch {
	case r.Limited == 0 && r.RetryAfter != -1:
		t.Fatalf("allowed with retry_after %d", r.RetryAfter)
	case r.Limited == 1 && (p.Cost > p.Capacity) != (r.RetryAfter == -1):
		t.Fatalf("limited COST %d of %d with retry_after %d", p.Cost, p.Capacity, r.RetryAfter)
	case r.Limited == 1 && r.RetryAfter != -1 && r.RetryAfter < 1:
		t.Fatalf("limited with retry_after %d", r.RetryAfter)
	case r.Limited == 1 && o != Keep, o == Store && p.Cost == 0:
		t.Fatalf("%v with %v for COST %d", r, o, p.Cost)
	case (r.Remaining == p.Capacity) != (r.ResetAfter == 0) && r.Limited == 0 && p.Cost != 0:
		t.Fatalf("allowed reply %v: full iff reset_after 0", r)
	}
	switch o {
	case Keep:
		if next != st {
			t.Fatalf("Keep changed the state")
		}
	case Store:
		// A take stays within the span; a refund only shortens the debt,
		// which may exceed the span after the parameters changed.
		if next.Expire <= now || (next.Expire > now+p.span && (p.Cost > 0 || next.Expire >= st.Expire)) {
			t.Fatalf("stored expire %d at %d (span %d, was %d)", next.Expire, now, p.span, st.Expire)
		}
		if PTTL(next.Expire, now) != r.ResetAfter {
			t.Fatalf("stored expire %d: PTTL %d, reply reset_after %d", next.Expire, PTTL(next.Expire, now), r.ResetAfter)
		}
		if p.Interval && (next.Tokens < 0 || next.Tokens >= p.Capacity || next.Anchor > now) {
			t.Fatalf("stored INTERVAL state %+v at %d", next, now)
		}
		look, _ := NewParams(p.Capacity, p.RefillTokens, p.PeriodMs, 0, p.Interval)
		if again, _, o2 := Take(next, now, look); o2 != Keep || again.Remaining != r.Remaining || again.ResetAfter != r.ResetAfter {
			t.Fatalf("after %v, COST 0 says %v", r, again)
		}
	case Delete:
		if now >= st.Expire || r.Remaining != p.Capacity || r.ResetAfter != 0 || p.Cost >= 0 {
			t.Fatalf("Delete with %v (state %+v at %d)", r, st, now)
		}
	default:
		t.Fatalf("outcome %v", o)
	}
}
