package slidinglog

import (
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"testing"
)

// Reference models, sharing no code with hit.go or encoding.go:
//
//   - listModel: the log as a plain list of timestamps, rules 2 and 24–28,
//     32 applied literally; capped (rule 26: keep the newest limit) or
//     uncapped (keep everything), for small limits and costs;
//   - runModel: (time, count) runs with big.Int sums, newest-first walks,
//     for limits and costs up to 2^63−1.
//
// Both take the parameters per call, so they also cover parameter changes
// (rule 29).

const now0 = 1_700_000_000_123_456_789

func msUpModel(x int64) int64 { // ⌈x/10^6⌉ in big.Int, 0 for x ≤ 0
	if x <= 0 {
		return 0
	}
	q := new(big.Int).Add(big.NewInt(x), big.NewInt(nanosPerMilli-1))
	return q.Quo(q, big.NewInt(nanosPerMilli)).Int64()
}

type listModel struct {
	log    []int64 // ascending; may hold entries dead under some window
	expire int64
	capped bool
}

func (m *listModel) call(now int64, p Params, peek bool) Reply {
	if now >= m.expire {
		m.log = nil // rule 2: the key is gone
	}
	L, n := p.Limit, p.Cost
	W, G := p.WindowMs*nanosPerMilli, p.MinGapMs*nanosPerMilli
	var live []int64
	for _, t := range m.log {
		if now < t+W {
			live = append(live, t)
		}
	}
	c := int64(len(live))
	allowed := c+n <= L && (G == 0 || c == 0 || now-live[c-1] >= G)
	if peek && allowed {
		return Reply{0, L, max(0, L-c-n), -1, p.WindowMs}
	}
	after := live
	if !peek && (allowed || p.DeniedCount) {
		for range n {
			after = append(after, now)
		}
		if m.capped && int64(len(after)) > L {
			after = after[int64(len(after))-L:]
		}
		m.log, m.expire = after, now+W
	}
	c2 := int64(len(after))
	r := Reply{0, L, max(0, L-c2), -1, 0}
	if c2 > 0 {
		r.ResetAfter = msUpModel(after[c2-1] + W - now)
	}
	if !allowed {
		r.Limited = 1
		if n <= L {
			var wc, wg int64
			if c2+n > L {
				wc = after[c2-(L-n+1)] + W - now // the (L−n+1)-th newest
			}
			if G > 0 && c2 > 0 {
				wg = max(0, after[c2-1]+G-now)
			}
			r.RetryAfter = msUpModel(max(wc, wg))
		}
	}
	return r
}

// runs compresses the model's (capped) log into runs, for comparing states.
func (m *listModel) runs() []Run {
	var out []Run
	for _, t := range m.log {
		if len(out) > 0 && out[len(out)-1].Time == t {
			out[len(out)-1].Count++
		} else {
			out = append(out, Run{t, 1})
		}
	}
	return out
}

type runModel struct {
	log    []Run // ascending
	expire int64
}

func (m *runModel) call(now int64, p Params, peek bool) Reply {
	if now >= m.expire {
		m.log = nil
	}
	L, n := big.NewInt(p.Limit), big.NewInt(p.Cost)
	W, G := p.WindowMs*nanosPerMilli, p.MinGapMs*nanosPerMilli
	var live []Run
	c := new(big.Int)
	for _, r := range m.log {
		if now < r.Time+W {
			live = append(live, r)
			c.Add(c, big.NewInt(r.Count))
		}
	}
	cn := new(big.Int).Add(c, n)
	newest := func(rs []Run) int64 { return rs[len(rs)-1].Time }
	allowed := cn.Cmp(L) <= 0 && (G == 0 || len(live) == 0 || now-newest(live) >= G)
	if peek && allowed {
		return Reply{0, p.Limit, new(big.Int).Sub(L, cn).Int64(), -1, p.WindowMs}
	}
	after := live
	if !peek && (allowed || p.DeniedCount) {
		// Keep the newest L of live + n at now, walking newest first.
		all := append(slices.Clone(live), Run{now, p.Cost})
		if len(live) > 0 && newest(live) == now {
			all = slices.Clone(live)
			merged := new(big.Int).Add(big.NewInt(all[len(all)-1].Count), n)
			if merged.Cmp(L) > 0 { // only the newest L can stay anyway
				merged.Set(L)
			}
			all[len(all)-1].Count = merged.Int64()
		}
		var kept []Run
		room := new(big.Int).Set(L)
		for i := len(all) - 1; i >= 0 && room.Sign() > 0; i-- {
			k := big.NewInt(all[i].Count)
			if k.Cmp(room) > 0 {
				k.Set(room)
			}
			kept = append(kept, Run{all[i].Time, k.Int64()})
			room.Sub(room, k)
		}
		slices.Reverse(kept)
		after = kept
		m.log, m.expire = kept, now+W
	}
	c2 := new(big.Int)
	for _, r := range after {
		c2.Add(c2, big.NewInt(r.Count))
	}
	rem := new(big.Int).Sub(L, c2)
	if rem.Sign() < 0 {
		rem.SetInt64(0)
	}
	r := Reply{0, p.Limit, rem.Int64(), -1, 0}
	if len(after) > 0 {
		r.ResetAfter = msUpModel(newest(after) + W - now)
	}
	if !allowed {
		r.Limited = 1
		if p.Cost <= p.Limit {
			var wc, wg int64
			if new(big.Int).Add(c2, n).Cmp(L) > 0 {
				k := new(big.Int).Sub(L, n) // find the (L−n+1)-th newest: skip L−n
				for i := len(after) - 1; i >= 0; i-- {
					k.Sub(k, big.NewInt(after[i].Count))
					if k.Sign() < 0 {
						wc = after[i].Time + W - now
						break
					}
				}
			}
			if G > 0 && len(after) > 0 {
				wg = max(0, newest(after)+G-now)
			}
			r.RetryAfter = msUpModel(max(wc, wg))
		}
	}
	return r
}

// --- generators -----------------------------------------------------------

func logUniform(r *rand.Rand, lo, hi int64) int64 {
	switch r.IntN(8) {
	case 0:
		return lo
	case 1:
		return hi
	}
	span := uint64(hi - lo)
	v := r.Uint64() >> (63 - r.IntN(64))
	if span != math.MaxUint64 {
		v %= span + 1
	}
	return lo + int64(v)
}

func smallParams(r *rand.Rand, limit, windowMs int64) Params {
	cost := 1 + r.Int64N(3)
	switch r.IntN(8) {
	case 0:
		cost = limit + 1 + r.Int64N(2)
	case 1:
		cost = limit
	}
	gap := int64(0)
	if r.IntN(3) == 0 {
		gap = r.Int64N(windowMs + 1)
	}
	p, err := NewParams(limit, windowMs, cost, gap, r.IntN(2) == 0)
	if err != nil {
		panic(err)
	}
	return p
}

func smallStep(r *rand.Rand, windowMs int64) int64 {
	W := windowMs * nanosPerMilli
	switch r.IntN(6) {
	case 0:
		return 0
	case 1:
		return 1
	case 2:
		return r.Int64N(W/4 + 1)
	case 3:
		return W - 1 + r.Int64N(3)
	}
	return r.Int64N(W/2 + 1)
}

func decodeOK(t *testing.T, b []byte) []Run {
	t.Helper()
	runs, err := Decode(nil, b)
	if err != nil {
		t.Fatalf("log %x: %v", b, err)
	}
	return runs
}

// TestModel_List: fixed limit and window per sequence, random COST, MINGAP
// and DENIED: the package, the capped list (whose state must equal the
// package's, run for run) and the uncapped list (rule 30: capping changes no
// reply) all agree.
func TestModel_List(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var dst []byte
	for range 4000 {
		limit, windowMs := 1+r.Int64N(12), 1+r.Int64N(40)
		capped, uncapped := &listModel{capped: true}, &listModel{}
		var st State
		now := int64(now0)
		for range 80 {
			p := smallParams(r, limit, windowMs)
			peek := r.IntN(6) == 0
			var got Reply
			if peek {
				var err error
				if got, err = Peek(st, now, p); err != nil {
					t.Fatal(err)
				}
			} else {
				var next State
				var o Outcome
				got, next, o = Hit(st, now, p, dst[:0])
				checkHit(t, st, now, p, got, next, o)
				if o == Store {
					dst = next.Log
					st = State{next.Expire, slices.Clone(next.Log)}
				}
			}
			want := capped.call(now, p, peek)
			if u := uncapped.call(now, p, peek); u != want {
				t.Fatalf("capping changed a reply: capped %v, uncapped %v", want, u)
			}
			if got != want {
				t.Fatalf("%+v at %d, log %v: got %v, model %v", p, now, decodeOK(t, st.Log), got, want)
			}
			if runs := decodeOK(t, st.Log); st.Expire != capped.expire || (Live(st.Expire, now) && !slices.Equal(runs, capped.runs())) {
				t.Fatalf("state %v expiring %d, model %v expiring %d", runs, st.Expire, capped.runs(), capped.expire)
			}
			now += smallStep(r, windowMs)
		}
	}
}

// TestModel_ParameterChanges: limit, window, COST, MINGAP and DENIED drawn
// per call (rule 29); the capped list model still agrees, state included.
func TestModel_ParameterChanges(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var dst []byte
	for range 4000 {
		m := &listModel{capped: true}
		rm := &runModel{}
		var st State
		now := int64(now0)
		for range 60 {
			windowMs := 1 + r.Int64N(40)
			p := smallParams(r, 1+r.Int64N(12), windowMs)
			peek := r.IntN(6) == 0
			want := m.call(now, p, peek)
			if rr := rm.call(now, p, peek); rr != want {
				t.Fatalf("models disagree: list %v, runs %v", want, rr)
			}
			var got Reply
			if peek {
				got, _ = Peek(st, now, p)
			} else {
				var next State
				var o Outcome
				got, next, o = Hit(st, now, p, dst[:0])
				checkHit(t, st, now, p, got, next, o)
				if o == Store {
					dst = next.Log
					st = State{next.Expire, slices.Clone(next.Log)}
				}
			}
			if got != want {
				t.Fatalf("%+v at %d: got %v, model %v", p, now, got, want)
			}
			if runs := decodeOK(t, st.Log); st.Expire != m.expire || (Live(st.Expire, now) && !slices.Equal(runs, m.runs())) {
				t.Fatalf("state %v expiring %d, model %v expiring %d", runs, st.Expire, m.runs(), m.expire)
			}
			now += smallStep(r, 20)
		}
	}
}

// TestModel_Extremes: limits and costs up to 2^63−1, windows up to what
// CheckAt allows at a clock near 2^63, against the big.Int run model.
func TestModel_Extremes(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	var dst []byte
	for range 3000 {
		m := &runModel{}
		var st State
		windowMs := logUniform(r, 1, MaxWindowMs)
		now := logUniform(r, 0, math.MaxInt64-windowMs*nanosPerMilli)
		limit := logUniform(r, 1, math.MaxInt64)
		for range 40 {
			cost := logUniform(r, 1, math.MaxInt64)
			if r.IntN(2) == 0 {
				cost = logUniform(r, 1, limit)
			}
			w := windowMs
			if r.IntN(4) == 0 {
				w = logUniform(r, 1, windowMs)
			}
			gap := int64(0)
			if r.IntN(3) == 0 {
				gap = logUniform(r, 0, w)
			}
			lim := limit
			if r.IntN(4) == 0 {
				lim = logUniform(r, 1, math.MaxInt64)
			}
			p, err := NewParams(lim, w, cost, gap, r.IntN(2) == 0)
			if err != nil || p.CheckAt(now) != nil {
				t.Fatalf("generator: %v", err)
			}
			peek := r.IntN(5) == 0
			want := m.call(now, p, peek)
			var got Reply
			if peek {
				got, _ = Peek(st, now, p)
			} else {
				var next State
				var o Outcome
				got, next, o = Hit(st, now, p, dst[:0])
				checkHit(t, st, now, p, got, next, o)
				if o == Store {
					dst = next.Log
					st = State{next.Expire, slices.Clone(next.Log)}
				}
			}
			if got != want {
				t.Fatalf("%+v at %d, log %v: got %v, model %v", p, now, decodeOK(t, st.Log), got, want)
			}
			if runs := decodeOK(t, st.Log); st.Expire != m.expire || (Live(st.Expire, now) && !slices.Equal(runs, m.log)) {
				t.Fatalf("state %v expiring %d, model %v expiring %d", runs, st.Expire, m.log, m.expire)
			}
			step := logUniform(r, 0, windowMs*nanosPerMilli)
			if now+step > math.MaxInt64-windowMs*nanosPerMilli || now+step < now {
				break
			}
			now += step
		}
	}
}

// TestProperty_RetryIsHonest: with the same call repeated and no other
// traffic, a DENIED FREE denial with retry_after R is allowed R ms later
// and not 1 ms before.
func TestProperty_RetryIsHonest(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	var dst []byte
	limited := 0
	for range 20000 {
		limit, windowMs := 1+r.Int64N(8), 1+r.Int64N(30)
		var st State
		now := int64(now0)
		for range r.IntN(12) {
			p := smallParams(r, limit, windowMs)
			if _, next, o := Hit(st, now, p, dst[:0]); o == Store {
				st = State{next.Expire, slices.Clone(next.Log)}
			}
			now += smallStep(r, windowMs) / 3
		}
		p := smallParams(r, limit, windowMs)
		p.DeniedCount = false
		rep, _ := Peek(st, now, p)
		if rep.Limited == 0 || rep.RetryAfter < 0 {
			continue
		}
		limited++
		if again, _ := Peek(st, now+rep.RetryAfter*nanosPerMilli, p); again.Limited != 0 {
			t.Fatalf("%+v: %v at %d, still limited after retry_after: %v", p, rep, now, again)
		}
		if again, _ := Peek(st, now+(rep.RetryAfter-1)*nanosPerMilli, p); again.Limited != 1 {
			t.Fatalf("%+v: %v at %d, allowed 1 ms before retry_after: %v", p, rep, now, again)
		}
	}
	if limited < 2000 {
		t.Fatalf("only %d limited replies: the generator is off", limited)
	}
}

// checkHit holds for every decision of Hit.
func checkHit(t *testing.T, st State, now int64, p Params, r Reply, next State, o Outcome) {
	t.Helper()
	if r.Limit != p.Limit || r.Limited < 0 || r.Limited > 1 || r.Remaining < 0 || r.Remaining > p.Limit || r.ResetAfter < 0 || r.ResetAfter > p.WindowMs && o == Store {
		t.Fatalf("reply out of range: %v for %+v", r, p)
	}
	switch {
	case r.Limited == 0 && (r.RetryAfter != -1 || o != Store || r.ResetAfter != p.WindowMs):
		t.Fatalf("allowed reply %v with %v", r, o)
	case r.Limited == 1 && (p.Cost > p.Limit) != (r.RetryAfter == -1):
		t.Fatalf("limited COST %d of %d with retry_after %d", p.Cost, p.Limit, r.RetryAfter)
	case r.Limited == 1 && r.RetryAfter != -1 && r.RetryAfter < 1:
		t.Fatalf("limited with retry_after %d", r.RetryAfter)
	case r.Limited == 1 && (o == Store) != p.DeniedCount:
		t.Fatalf("limited with DENIED COUNT %v: %v", p.DeniedCount, o)
	case r.Limited == 1 && p.DeniedCount && p.MinGapMs > 0 && p.Cost <= p.Limit && r.RetryAfter < p.MinGapMs:
		t.Fatalf("recorded denial with MINGAP %d answers %d", p.MinGapMs, r.RetryAfter)
	}
	switch o {
	case Keep:
		if next.Expire != st.Expire || !slices.Equal(next.Log, st.Log) {
			t.Fatalf("Keep changed the state")
		}
	case Store:
		runs, err := Decode(nil, next.Log)
		if err != nil || len(runs) == 0 || next.Expire != now+p.WindowMs*nanosPerMilli {
			t.Fatalf("stored %x expiring %d: %v", next.Log, next.Expire, err)
		}
		var total int64
		for _, run := range runs {
			total += run.Count
			if run.Time > now || run.Time+p.WindowMs*nanosPerMilli <= now {
				t.Fatalf("stored entry at %d is not live at %d", run.Time, now)
			}
		}
		if total > p.Limit || runs[len(runs)-1].Time != now || total != p.Limit-r.Remaining {
			t.Fatalf("stored %v for %v, limit %d", runs, r, p.Limit)
		}
		if len(next.Log) > len(st.Log)+MaxGrowth {
			t.Fatalf("log grew from %d to %d bytes", len(st.Log), len(next.Log))
		}
	default:
		t.Fatalf("outcome %v", o)
	}
}
