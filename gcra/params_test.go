package gcra

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// bigNanos is the reference for secondsToNanosFloat: the exact product in
// math/big, rounded once to float64 (big.Float.Float64 rounds to nearest,
// ties to even).
func bigNanos(period int64) float64 {
	exact := new(big.Int).Mul(big.NewInt(period), big.NewInt(nanosPerSecond))
	f, _ := new(big.Float).SetInt(exact).Float64()
	return f
}

// bigInterval is the reference for NewParams' T: exact product, one rounding,
// an IEEE division done as a 53-bit big.Float quotient (round to nearest
// even, the same correctly rounded result), then trunc_sat in big.Int.
func bigInterval(count, period int64) int64 {
	if count == 0 || period == 0 {
		return 0
	}
	num := new(big.Float).SetFloat64(bigNanos(period))
	// float64(count): rounded to 53 bits, nearest even.
	den := new(big.Float).SetPrec(53).SetMode(big.ToNearestEven).SetInt64(count)
	q := new(big.Float).SetPrec(53).SetMode(big.ToNearestEven).Quo(num, den)
	i, _ := q.Int(nil) // truncates toward zero
	switch {
	case i.Cmp(big.NewInt(math.MaxInt64)) > 0:
		return math.MaxInt64
	case i.Cmp(big.NewInt(math.MinInt64)) < 0:
		return math.MinInt64
	}
	return i.Int64()
}

// interestingInt64s are values where conversions and products change regime.
func interestingInt64s() []int64 {
	vs := []int64{0, 1, 2, 3, 7, 10, 999, 1000, 1001, 1e6, 1e9, 1e9 + 1,
		9007199, 9007200, // around 2^53/1e9: the product leaves float64's exact range
		1<<53 - 1, 1 << 53, 1<<53 + 1, 1<<53 + 3, 1<<54 + 1, // period itself no longer exact
		9223372036, 9223372037, // around 2^63/1e9: the product leaves int64
		9166977397236497, 9030570219491501, 9036248455400353,
		math.MaxInt64 - 1, math.MaxInt64}
	for s := 10; s < 63; s += 3 {
		vs = append(vs, 1<<s-1, 1<<s, 1<<s+1)
	}
	out := make([]int64, 0, 2*len(vs)+1)
	for _, v := range vs {
		out = append(out, v, -v)
	}
	return append(out, math.MinInt64)
}

// logUniformInt64 draws magnitudes spread over every bit length, either sign.
func logUniformInt64(r *rand.Rand) int64 {
	bits := r.IntN(64)
	v := int64(r.Uint64() >> (64 - bits) >> 1) // below 2^(bits-1); 0 when bits == 0
	if r.IntN(2) == 0 {
		return -v
	}
	return v
}

func TestSecondsToNanosFloat_MatchesBig(t *testing.T) {
	check := func(p int64) {
		t.Helper()
		if got, want := secondsToNanosFloat(p), bigNanos(p); got != want {
			t.Fatalf("secondsToNanosFloat(%d) = %v (%x), want %v (%x)", p, got, math.Float64bits(got), want, math.Float64bits(want))
		}
	}
	for _, p := range interestingInt64s() {
		check(p)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 200_000 {
		check(logUniformInt64(r))
		check(int64(r.Uint64())) // mostly huge magnitudes, where rounding matters
	}
}

// TestSecondsToNanosFloat_NaiveAgreesUpTo2p53 pins the spec's remark: for
// |P| <= 2^53, float64(P)*1e9 is already the exact product rounded once.
func TestSecondsToNanosFloat_NaiveAgreesUpTo2p53(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 200_000 {
		p := r.Int64N(1<<53+1) - r.Int64N(1<<53+1)
		if got, naive := secondsToNanosFloat(p), float64(p)*1e9; got != naive {
			t.Fatalf("P=%d: exact %v, naive %v", p, got, naive)
		}
	}
}

// TestNewParams_ExactProductChangesT shows the exact-product path is not
// cosmetic: for these periods beyond 2^53, rounding period first and the
// product again gives a different T.
func TestNewParams_ExactProductChangesT(t *testing.T) {
	cases := []struct{ period, count, want, naive int64 }{
		{9166977397236497, 9166977397236497405, 1_000_000, 999_999},
		{9030570219491501, 9030570219491501053, 1_000_000, 999_999},
		{-9036248455400353, 9036248455400352765, -1_000_000, -999_999},
	}
	for _, tc := range cases {
		p, err := NewParams(0, tc.count, tc.period, 1)
		if err != nil || p.Interval != tc.want {
			t.Errorf("NewParams(period %d, count %d) = %+v, %v; want T %d", tc.period, tc.count, p, err, tc.want)
		}
		if ref := bigInterval(tc.count, tc.period); ref != tc.want {
			t.Errorf("big reference gives %d, want %d", ref, tc.want)
		}
		if naive := truncSat(float64(tc.period) * 1e9 / float64(tc.count)); naive != tc.naive {
			t.Errorf("naive T = %d, expected it to differ as %d", naive, tc.naive)
		}
	}
}

func TestNewParams_MatchesBigReference(t *testing.T) {
	check := func(burst, count, period, qty int64) {
		t.Helper()
		p, err := NewParams(burst, count, period, qty)
		want := bigInterval(count, period)
		if want == 0 {
			if err != ErrZeroRate {
				t.Fatalf("NewParams(%d, %d, %d, %d) = %+v, %v; want ErrZeroRate", burst, count, period, qty, p, err)
			}
			return
		}
		wantP := Params{Interval: want, Limit: burst + 1, Quantity: qty}
		if err != nil || p != wantP {
			t.Fatalf("NewParams(%d, %d, %d, %d) = %+v, %v; want %+v", burst, count, period, qty, p, err, wantP)
		}
	}
	vals := interestingInt64s()
	for _, c := range vals {
		for _, per := range vals {
			check(4, c, per, 1)
		}
	}
	r := rand.New(rand.NewPCG(5, 6))
	for range 100_000 {
		check(logUniformInt64(r), logUniformInt64(r), logUniformInt64(r), logUniformInt64(r))
	}
}

func TestTruncSat(t *testing.T) {
	cases := []struct {
		f    float64
		want int64
	}{
		{math.NaN(), 0},
		{math.Inf(1), math.MaxInt64},
		{math.Inf(-1), math.MinInt64},
		{0x1p63, math.MaxInt64},
		{-0x1p63, math.MinInt64},
		{0x1p63 - 1024, math.MaxInt64 - 1023}, // largest float64 below 2^63
		{-0x1p63 + 1024, math.MinInt64 + 1024},
		{1e300, math.MaxInt64},
		{-1e300, math.MinInt64},
		{2.9, 2},
		{-2.9, -2},
		{0.5, 0},
		{-0.5, 0},
		{math.Copysign(0, -1), 0},
	}
	for _, tc := range cases {
		if got := truncSat(tc.f); got != tc.want {
			t.Errorf("truncSat(%v) = %d, want %d", tc.f, got, tc.want)
		}
	}
}
