package gcra

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/redcell/redcell/internal/clmodel"
)

// bigDecide is internal/clmodel's math/big model of the spec in Decide's
// terms: a model independent of Decide's 128-bit helpers.
func bigDecide(maxBurst, count, period, qty int64, tat uint64, present bool, now int64) (T int64, d Decision, zero bool) {
	T = clmodel.Interval(count, period)
	if T == 0 {
		return 0, d, true
	}
	m := clmodel.Decide(maxBurst, count, period, qty, tat, present, now)
	d.Reply = Reply{m.Reply[0], m.Reply[1], m.Reply[2], m.Reply[3], m.Reply[4]}
	d.TAT = m.TAT
	switch {
	case !m.Write:
		d.Outcome = Keep
	case m.ExpireError:
		d.Outcome = StoreExpireError
	default:
		d.Outcome = Store
	}
	if m.Write {
		d.Live = m.TTL.Sign() > 0
		d.TTLMillis = m.TTLMillis
	}
	return T, d, false
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
		for _, d := range []int64{1000, 1e6, 1e9} {
			q, rem := a.quo(d)
			bq, br := new(big.Int).QuoRem(ba, big.NewInt(d), new(big.Int))
			if bq.Int64() != q || br.Int64() != rem {
				t.Fatalf("%v quo %d = %d r %d, want %v r %v", ba, d, q, rem, bq, br)
			}
		}
	}
}
