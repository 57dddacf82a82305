package gcra

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// bigDecide is the spec's algorithm written with math/big integers, as a
// model independent of Decide's 128-bit helpers: every sum and difference is
// exact, and only the three products (and the stored TAT, mod 2^64) are
// wrapped by hand. T is derived here too, from the exact P·1e9 rounded once
// by big.Float.
func bigDecide(maxBurst, count, period, qty int64, tat uint64, present bool, now int64) (T int64, d Decision, zero bool) {
	if count == 0 || period == 0 {
		return 0, d, true
	}
	prod := new(big.Int).Mul(big.NewInt(period), big.NewInt(1e9))
	pf, _ := new(big.Float).SetInt(prod).Float64()
	T = bigTruncSat(pf / float64(count))
	if T == 0 {
		return 0, d, true
	}
	wrap := func(x *big.Int) int64 { // two's complement int64 of x
		m := new(big.Int).And(x, new(big.Int).SetUint64(math.MaxUint64))
		return int64(m.Uint64())
	}
	limit := wrap(new(big.Int).Add(big.NewInt(maxBurst), big.NewInt(1)))
	tau := wrap(new(big.Int).Mul(big.NewInt(T), big.NewInt(limit)))
	inc := wrap(new(big.Int).Mul(big.NewInt(T), big.NewInt(qty)))

	bNow := big.NewInt(now)
	bTat := new(big.Int).Set(bNow)
	if present {
		bTat.SetUint64(tat)
	}
	base := bNow
	if bTat.Cmp(bNow) > 0 {
		base = bTat
	}
	newTAT := new(big.Int).Add(base, big.NewInt(inc))
	allowAt := new(big.Int).Sub(newTAT, big.NewInt(tau))
	var retry, ttl *big.Int
	if bNow.Cmp(allowAt) < 0 {
		d.Limited = 1
		retry = big.NewInt(-1e9)
		if inc <= tau {
			retry = new(big.Int).Sub(allowAt, bNow)
		}
		ttl = new(big.Int).Sub(bTat, bNow)
		d.TAT = uint64(wrap(bTat))
		d.Outcome = Keep
	} else {
		retry = big.NewInt(-1e9)
		ttl = new(big.Int).Sub(newTAT, bNow)
		d.TAT = uint64(wrap(newTAT))
		d.Outcome = Store
		ms := new(big.Int).Quo(ttl, big.NewInt(1e6)) // Quo truncates toward zero
		if ms.Cmp(big.NewInt(-2)) <= 0 {
			d.Outcome = StoreExpireError
		}
		d.Live = ttl.Sign() > 0
		d.TTLMillis = ms.Int64()
	}
	d.Limit = limit
	next := new(big.Int).Sub(big.NewInt(tau), ttl)
	if next.Cmp(new(big.Int).Neg(big.NewInt(T))) > 0 {
		nf, _ := new(big.Float).SetInt(new(big.Int).Quo(next, big.NewInt(1000))).Float64()
		d.Remaining = bigTruncSat(nf / float64(T/1000))
	}
	d.RetryAfter = bigSecs(retry)
	d.ResetAfter = bigSecs(ttl)
	return T, d, false
}

func bigTruncSat(f float64) int64 {
	switch {
	case math.IsNaN(f):
		return 0
	case f >= math.MaxInt64: // 2^63 as a float64
		return math.MaxInt64
	case f <= math.MinInt64:
		return math.MinInt64
	}
	return int64(f)
}

func bigSecs(d *big.Int) int64 {
	q, r := new(big.Int).QuoRem(d, big.NewInt(1e9), new(big.Int))
	if d.Sign() > 0 && r.Cmp(big.NewInt(1e6)) >= 0 {
		q.Add(q, big.NewInt(1))
	}
	return q.Int64()
}

// edgyInt64 draws values that hit the int64 limits, the 2^53 and 2^63/1e9
// boundaries, small numbers, and uniform values of every magnitude.
func edgyInt64(r *rand.Rand) int64 {
	specials := []int64{0, 1, -1, 2, -2, math.MaxInt64, math.MinInt64, math.MaxInt64 - 1, math.MinInt64 + 1,
		1 << 53, -(1 << 53), math.MaxInt64 / nanosPerSecond, math.MaxInt64/nanosPerSecond + 1, -(math.MaxInt64 / nanosPerSecond) - 1,
		1e9, 1e6, 1000, 3_800_000_000, 5_000_000_000}
	switch r.IntN(4) {
	case 0:
		return specials[r.IntN(len(specials))]
	case 1:
		return specials[r.IntN(len(specials))] + r.Int64N(5) - 2
	case 2:
		return r.Int64N(200) - 100
	}
	v := int64(r.Uint64() >> r.IntN(64))
	if r.IntN(2) == 0 {
		v = -v
	}
	return v
}

// TestDecide_MatchesBigIntModel compares Decide (and NewParams) with the
// math/big model over random parameters, stored TATs and instants, near the
// int64 limits included, and checks Throttle and Peek agree with Decide.
func TestDecide_MatchesBigIntModel(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 2))
	n := 300_000
	if testing.Short() {
		n = 30_000
	}
	for i := 0; i < n; i++ {
		maxBurst, count, period, qty := edgyInt64(r), edgyInt64(r), edgyInt64(r), edgyInt64(r)
		if r.IntN(3) == 0 { // sane rates too, so that allowed paths are common
			count, period = r.Int64N(100)+1, r.Int64N(4e9)+1
			maxBurst, qty = r.Int64N(20)-1, r.Int64N(25)-3
		}
		now := int64(1700000000123456789) + r.Int64N(2e18)
		if r.IntN(8) == 0 {
			now = edgyInt64(r)
		}
		present := r.IntN(3) != 0
		var tat uint64
		switch r.IntN(4) {
		case 0:
			tat = r.Uint64()
		case 1:
			tat = uint64(now) + uint64(r.Int64N(1e12))
		case 2:
			tat = uint64(edgyInt64(r))
		default:
			tat = uint64(now) + uint64(edgyInt64(r))
		}

		wantT, want, zero := bigDecide(maxBurst, count, period, qty, tat, present, now)
		p, err := NewParams(maxBurst, count, period, qty)
		if zero {
			if err != ErrZeroRate {
				t.Fatalf("NewParams(%d,%d,%d,%d) = %+v, %v; want ErrZeroRate", maxBurst, count, period, qty, p, err)
			}
			continue
		}
		if err != nil || p.Interval != wantT {
			t.Fatalf("NewParams(%d,%d,%d,%d) = %+v, %v; want T %d", maxBurst, count, period, qty, p, err, wantT)
		}
		got := Decide(tat, present, now, p)
		if got != want {
			t.Fatalf("Decide(tat %d, present %v, now %d, %+v) (B=%d C=%d P=%d Q=%d)\n got %+v\nwant %+v",
				tat, present, now, p, maxBurst, count, period, qty, got, want)
		}
		rep, newTAT, o := Throttle(int64(tat), present, now, p)
		if rep != want.Reply || uint64(newTAT) != want.TAT || o != want.Outcome {
			t.Fatalf("Throttle disagrees with Decide: %+v %d %v vs %+v", rep, newTAT, o, want)
		}
		prep, perr := Peek(int64(tat), present, now, p)
		if prep != want.Reply || (perr != nil) != (want.Outcome == StoreExpireError) {
			t.Fatalf("Peek disagrees with Decide: %+v %v vs %+v", prep, perr, want)
		}
	}
}

// TestWide_AgainstBig checks the 128-bit helpers on random operands of the
// magnitudes Decide builds (below 2^68).
func TestWide_AgainstBig(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	toBig := func(w wide) *big.Int {
		b := new(big.Int).Lsh(big.NewInt(w.hi), 64)
		return b.Add(b, new(big.Int).SetUint64(w.lo))
	}
	rnd := func() wide {
		w := wideUint(r.Uint64()).add(wideUint(r.Uint64())).add(wideUint(r.Uint64()))
		if r.IntN(2) == 0 {
			w = w.neg()
		}
		if r.IntN(4) == 0 {
			w = wideInt(edgyInt64(r))
		}
		return w
	}
	for i := 0; i < 100_000; i++ {
		a, b := rnd(), rnd()
		ba, bb := toBig(a), toBig(b)
		if got, want := toBig(a.add(b)), new(big.Int).Add(ba, bb); got.Cmp(want) != 0 {
			t.Fatalf("%v + %v = %v, want %v", ba, bb, got, want)
		}
		if got, want := toBig(a.sub(b)), new(big.Int).Sub(ba, bb); got.Cmp(want) != 0 {
			t.Fatalf("%v - %v = %v, want %v", ba, bb, got, want)
		}
		if a.less(b) != (ba.Cmp(bb) < 0) || a.positive() != (ba.Sign() > 0) || a.negative() != (ba.Sign() < 0) {
			t.Fatalf("comparisons of %v and %v wrong", ba, bb)
		}
		for _, d := range []uint64{1000, 1e6, 1e9} {
			q, rem := a.quo(d)
			bq, br := new(big.Int).QuoRem(ba, new(big.Int).SetUint64(d), new(big.Int))
			if bq.Int64() != q || br.Int64() != rem {
				t.Fatalf("%v quo %d = %d r %d, want %v r %v", ba, d, q, rem, bq, br)
			}
		}
	}
}
