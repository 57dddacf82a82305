package gcra

import (
	"errors"
	"math"
	"testing"
)

// now0 is the decision time used by the edge-case tables: the vectors'
// epoch, so overflow cases sit where the vectors put them.
const now0 int64 = 1700000000123456789

// throttleCase is one decision: CL.THROTTLE's four integers, the stored
// state, and the exact expected answer. Expected values were computed with an
// independent, spec-literal Python model (arbitrary-precision integers wrapped
// to int64 by hand, IEEE doubles for the two divisions), not with this code.
type throttleCase struct {
	name                         string
	maxBurst, count, period, qty int64
	tat                          int64
	present                      bool
	now                          int64

	wantInterval int64
	want         Reply
	wantNewTAT   int64
	wantOutcome  Outcome
}

var throttleCases = []throttleCase{
	// README example.
	{name: "readme fresh key", maxBurst: 15, count: 30, period: 60, qty: 1, now: now0,
		wantInterval: 2e9, want: Reply{0, 16, 15, -1, 2}, wantNewTAT: now0 + 2e9, wantOutcome: Store},

	// Emission intervals below a microsecond: remaining divides by T/1000 == 0.
	{name: "T=500ns remaining is MaxInt64 (x/0=+Inf)", maxBurst: 10, count: 2_000_000, period: 1, qty: 1, now: now0,
		wantInterval: 500, want: Reply{0, 11, math.MaxInt64, -1, 0}, wantNewTAT: now0 + 500, wantOutcome: Store},
	{name: "T=500ns burst 0 remaining 0 (0/0=NaN)", maxBurst: 0, count: 2_000_000, period: 1, qty: 1, now: now0,
		wantInterval: 500, want: Reply{0, 1, 0, -1, 0}, wantNewTAT: now0 + 500, wantOutcome: Store},
	{name: "T=1ns remaining 0", maxBurst: 10, count: 1_000_000_000, period: 1, qty: 1, now: now0,
		wantInterval: 1, want: Reply{0, 11, 0, -1, 0}, wantNewTAT: now0 + 1, wantOutcome: Store},
	{name: "T=1ns burst 0", maxBurst: 0, count: 1_000_000_000, period: 1, qty: 1, now: now0,
		wantInterval: 1, want: Reply{0, 1, 0, -1, 0}, wantNewTAT: now0 + 1, wantOutcome: Store},

	// 3 per second: float division truncated.
	{name: "3 per 1s T=333333333", maxBurst: 2, count: 3, period: 1, qty: 1, now: now0,
		wantInterval: 333333333, want: Reply{0, 3, 2, -1, 1}, wantNewTAT: 1700000000456790122, wantOutcome: Store},
	{name: "3 per 1s quantity 0 fresh", maxBurst: 2, count: 3, period: 1, qty: 0, now: now0,
		wantInterval: 333333333, want: Reply{0, 3, 3, -1, 0}, wantNewTAT: now0, wantOutcome: Store},

	// max_burst below 0.
	{name: "max_burst -1 limit 0 limited retry -1", maxBurst: -1, count: 1, period: 10, qty: 1, now: now0,
		wantInterval: 1e10, want: Reply{1, 0, 0, -1, 0}, wantNewTAT: now0, wantOutcome: Keep},
	{name: "max_burst -1 quantity 0 passes", maxBurst: -1, count: 1, period: 10, qty: 0, now: now0,
		wantInterval: 1e10, want: Reply{0, 0, 0, -1, 0}, wantNewTAT: now0, wantOutcome: Store},
	{name: "max_burst -2 quantity 0 limited", maxBurst: -2, count: 1, period: 10, qty: 0, now: now0,
		wantInterval: 1e10, want: Reply{1, -1, 0, -1, 0}, wantNewTAT: now0, wantOutcome: Keep},

	// Negative count or period: negative T.
	{name: "negative count", maxBurst: 5, count: -1, period: 10, qty: 1, now: now0,
		wantInterval: -1e10, want: Reply{1, 6, 0, -1, 0}, wantNewTAT: now0, wantOutcome: Keep},
	{name: "negative period", maxBurst: 5, count: 1, period: -10, qty: 1, now: now0,
		wantInterval: -1e10, want: Reply{1, 6, 0, -1, 0}, wantNewTAT: now0, wantOutcome: Keep},
	{name: "negative count and period", maxBurst: 5, count: -1, period: -10, qty: 1, now: now0,
		wantInterval: 1e10, want: Reply{0, 6, 5, -1, 10}, wantNewTAT: now0 + 1e10, wantOutcome: Store},
	{name: "negative T negative quantity", maxBurst: 5, count: -1, period: 10, qty: -1, now: now0,
		wantInterval: -1e10, want: Reply{1, 6, 0, -1, 0}, wantNewTAT: now0, wantOutcome: Keep},
	{name: "negative T present key", maxBurst: 5, count: -1, period: 10, qty: 1,
		tat: now0 + 30e9, present: true, now: now0,
		wantInterval: -1e10, want: Reply{1, 6, 0, -1, 30}, wantNewTAT: now0 + 30e9, wantOutcome: Keep},

	// Overflowing products wrap silently.
	{name: "max_burst MaxInt64 limit wraps to MinInt64", maxBurst: math.MaxInt64, count: 1, period: 1, qty: 1, now: now0,
		wantInterval: 1e9, want: Reply{1, math.MinInt64, 0, -1, 0}, wantNewTAT: now0, wantOutcome: Keep},
	{name: "tau wraps (limit MaxInt64)", maxBurst: math.MaxInt64 - 1, count: 1, period: 1, qty: 1, now: now0,
		wantInterval: 1e9, want: Reply{1, math.MaxInt64, 0, -1, 0}, wantNewTAT: now0, wantOutcome: Keep},
	{name: "tau wraps (T 1e18, limit 1e10+1)", maxBurst: 1e10, count: 1, period: 1e9, qty: 1, now: now0,
		wantInterval: 1e18, want: Reply{0, 10000000001, 4, -1, 1000000000}, wantNewTAT: 2700000000123456789, wantOutcome: Store},
	{name: "inc wraps to a refund past int64", maxBurst: 5, count: 1, period: 1, qty: 1e10, now: now0,
		wantInterval: 1e9, want: Reply{0, 6, 8446744079, -1, -8446744073}, wantNewTAT: -6746744073586094827, wantOutcome: StoreExpireError},
	{name: "allow_at beyond int64 from a huge stored TAT", maxBurst: 5, count: 1, period: 1, qty: 1,
		tat: math.MaxInt64 - 7, present: true, now: now0,
		wantInterval: 1e9, want: Reply{1, 6, 0, 7523372032, 7523372037}, wantNewTAT: math.MaxInt64 - 7, wantOutcome: Keep},
	{name: "max_burst MinInt64", maxBurst: math.MinInt64, count: 1, period: 1, qty: 1, now: now0,
		wantInterval: 1e9, want: Reply{0, math.MinInt64 + 1, 0, -1, 1}, wantNewTAT: now0 + 1e9, wantOutcome: Store},
	// Exact sums (spec "Width"): now + MaxInt64 does not wrap into the past,
	// and allow_at = new_tat − MinInt64 lies far ahead, so these are limited.
	{name: "T saturates at MaxInt64", maxBurst: math.MaxInt64, count: 1, period: math.MaxInt64, qty: 1, now: now0,
		wantInterval: math.MaxInt64, want: Reply{1, math.MinInt64, 0, -1, 0}, wantNewTAT: now0, wantOutcome: Keep},
	{name: "T saturates at MaxInt64 quantity 0", maxBurst: math.MaxInt64, count: 1, period: math.MaxInt64, qty: 0, now: now0,
		wantInterval: math.MaxInt64, want: Reply{1, math.MinInt64, 0, -1, 0}, wantNewTAT: now0, wantOutcome: Keep},
	{name: "period MinInt64 count -1 saturates up", maxBurst: 5, count: -1, period: math.MinInt64, qty: 1, now: now0,
		wantInterval: math.MaxInt64, want: Reply{1, 6, 0, -1, 0}, wantNewTAT: now0, wantOutcome: Keep},
	{name: "period MinInt64 count 1 saturates down", maxBurst: 5, count: 1, period: math.MinInt64, qty: 1, now: now0,
		wantInterval: math.MinInt64, want: Reply{0, 6, 0, -1, -9223372036}, wantNewTAT: -7523372036731319019, wantOutcome: StoreExpireError},
	{name: "period 1e10 count 1e10 (product past 2^63)", maxBurst: 5, count: 1e10, period: 1e10, qty: 1, now: now0,
		wantInterval: 1e9, want: Reply{0, 6, 5, -1, 1}, wantNewTAT: now0 + 1e9, wantOutcome: Store},

	// Instants past 2262 (the end of int64 ns): the stored TAT is an unsigned
	// 64-bit instant and the sums are exact.
	{name: "1 per 3.8e9 s: TAT past 2262 stored", maxBurst: 1, count: 1, period: 3_800_000_000, qty: 1,
		tat: 5500000000123456789, present: true, now: now0,
		wantInterval: 3.8e18, want: Reply{0, 2, 0, -1, 7600000000}, wantNewTAT: int64(-9146744073586094827), wantOutcome: Store},
	{name: "1 per 3.8e9 s: TAT past 2262 read back, limited", maxBurst: 1, count: 1, period: 3_800_000_000, qty: 1,
		tat: int64(-9146744073586094827), present: true, now: now0,
		wantInterval: 3.8e18, want: Reply{1, 2, 0, 3800000000, 7600000000}, wantNewTAT: int64(-9146744073586094827), wantOutcome: Keep},
	{name: "period 5e9 s burst 0 second call limited", maxBurst: 0, count: 1, period: 5_000_000_000, qty: 1,
		tat: 6700000000123456789, present: true, now: now0,
		wantInterval: 5e18, want: Reply{1, 1, 0, 5000000000, 5000000000}, wantNewTAT: 6700000000123456789, wantOutcome: Keep},
	{name: "TAT near 2^64 plus MaxInt64 increment: new TAT wraps mod 2^64, TTL exact", maxBurst: math.MaxInt64 - 1, count: 1, period: math.MaxInt64, qty: 1,
		tat: -1, present: true, now: now0,
		wantInterval: math.MaxInt64, want: Reply{1, math.MaxInt64, 0, -1, 16746744074}, wantNewTAT: -1, wantOutcome: Keep},

	// Quantities against the limit.
	{name: "quantity > limit fresh", maxBurst: 4, count: 1, period: 1, qty: 6, now: now0,
		wantInterval: 1e9, want: Reply{1, 5, 5, -1, 0}, wantNewTAT: now0, wantOutcome: Keep},
	{name: "quantity == limit fresh", maxBurst: 4, count: 1, period: 1, qty: 5, now: now0,
		wantInterval: 1e9, want: Reply{0, 5, 0, -1, 5}, wantNewTAT: now0 + 5e9, wantOutcome: Store},
	{name: "quantity == limit used key waits", maxBurst: 4, count: 1, period: 1, qty: 5,
		tat: now0 + 2e9, present: true, now: now0,
		wantInterval: 1e9, want: Reply{1, 5, 3, 2, 2}, wantNewTAT: now0 + 2e9, wantOutcome: Keep},

	// Quantity 0.
	{name: "quantity 0 missing key: remaining = limit, no key", maxBurst: 5, count: 1, period: 10, qty: 0, now: now0,
		wantInterval: 1e10, want: Reply{0, 6, 6, -1, 0}, wantNewTAT: now0, wantOutcome: Store},
	{name: "quantity 0 TAT more than tau ahead is limited", maxBurst: 1, count: 1, period: 1, qty: 0,
		tat: now0 + 10e9, present: true, now: now0,
		wantInterval: 1e9, want: Reply{1, 2, 0, 8, 10}, wantNewTAT: now0 + 10e9, wantOutcome: Keep},
	{name: "quantity 0 TAT exactly tau ahead is allowed", maxBurst: 1, count: 1, period: 1, qty: 0,
		tat: now0 + 2e9, present: true, now: now0,
		wantInterval: 1e9, want: Reply{0, 2, 0, -1, 2}, wantNewTAT: now0 + 2e9, wantOutcome: Store},

	// Refunds (negative quantity).
	{name: "refund on fresh key: TTL -1s errors", maxBurst: 1, count: 1, period: 1, qty: -1, now: now0,
		wantInterval: 1e9, want: Reply{0, 2, 3, -1, -1}, wantNewTAT: now0 - 1e9, wantOutcome: StoreExpireError},
	{name: "refund TTL -1ms is stored, key gone", maxBurst: 0, count: 1000, period: 1, qty: -1, now: now0,
		wantInterval: 1e6, want: Reply{0, 1, 2, -1, 0}, wantNewTAT: now0 - 1e6, wantOutcome: Store},
	{name: "refund TTL -2ms errors", maxBurst: 0, count: 1000, period: 1, qty: -2, now: now0,
		wantInterval: 1e6, want: Reply{0, 1, 3, -1, 0}, wantNewTAT: now0 - 2e6, wantOutcome: StoreExpireError},
	{name: "refund TTL -1.5ms truncates to -1: stored", maxBurst: 0, count: 2000, period: 3, qty: -1, now: now0,
		wantInterval: 1.5e6, want: Reply{0, 1, 2, -1, 0}, wantNewTAT: now0 - 1.5e6, wantOutcome: Store},
	{name: "refund TTL -3ms errors", maxBurst: 0, count: 2000, period: 3, qty: -2, now: now0,
		wantInterval: 1.5e6, want: Reply{0, 1, 3, -1, 0}, wantNewTAT: now0 - 3e6, wantOutcome: StoreExpireError},
	{name: "refund within debt", maxBurst: 5, count: 1, period: 1, qty: -2,
		tat: now0 + 3e9, present: true, now: now0,
		wantInterval: 1e9, want: Reply{0, 6, 5, -1, 1}, wantNewTAT: now0 + 1e9, wantOutcome: Store},
	{name: "refund exactly the debt", maxBurst: 5, count: 1, period: 1, qty: -3,
		tat: now0 + 3e9, present: true, now: now0,
		wantInterval: 1e9, want: Reply{0, 6, 6, -1, 0}, wantNewTAT: now0, wantOutcome: Store},
	{name: "refund beyond the debt errors", maxBurst: 5, count: 1, period: 1, qty: -4,
		tat: now0 + 3e9, present: true, now: now0,
		wantInterval: 1e9, want: Reply{0, 6, 7, -1, -1}, wantNewTAT: now0 - 1e9, wantOutcome: StoreExpireError},

	// A present TAT already in the past (redis-cell's ms expiry lagging):
	// the formulas apply literally.
	{name: "present past TAT allowed = fresh", maxBurst: 5, count: 1, period: 1, qty: 1,
		tat: now0 - 123456790, present: true, now: now0,
		wantInterval: 1e9, want: Reply{0, 6, 5, -1, 1}, wantNewTAT: now0 + 1e9, wantOutcome: Store},
	{name: "present past TAT limited keeps ttl = tat-now", maxBurst: 5, count: 1, period: 1, qty: 7,
		tat: now0 - 123456790, present: true, now: now0,
		wantInterval: 1e9, want: Reply{1, 6, 6, -1, 0}, wantNewTAT: now0 - 123456790, wantOutcome: Keep},
	{name: "present past TAT sub-ms T", maxBurst: 0, count: 2000, period: 1, qty: 2,
		tat: now0 - 456789, present: true, now: now0,
		wantInterval: 500000, want: Reply{1, 1, 1, -1, 0}, wantNewTAT: now0 - 456789, wantOutcome: Keep},
	{name: "absent ignores the tat argument", maxBurst: 5, count: 1, period: 1, qty: 7,
		tat: now0 + 99e9, present: false, now: now0,
		wantInterval: 1e9, want: Reply{1, 6, 6, -1, 0}, wantNewTAT: now0, wantOutcome: Keep},
}

func TestThrottle_EdgeCases(t *testing.T) {
	for _, tc := range throttleCases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := NewParams(tc.maxBurst, tc.count, tc.period, tc.qty)
			if err != nil {
				t.Fatalf("NewParams(%d, %d, %d, %d): %v", tc.maxBurst, tc.count, tc.period, tc.qty, err)
			}
			wantParams := Params{Interval: tc.wantInterval, Limit: tc.maxBurst + 1, Quantity: tc.qty}
			if p != wantParams {
				t.Fatalf("NewParams = %+v, want %+v", p, wantParams)
			}
			r, newTAT, o := Throttle(tc.tat, tc.present, tc.now, p)
			if r != tc.want || newTAT != tc.wantNewTAT || o != tc.wantOutcome {
				t.Errorf("Throttle = %v, %d, %v; want %v, %d, %v", r, newTAT, o, tc.want, tc.wantNewTAT, tc.wantOutcome)
			}
			pr, perr := Peek(tc.tat, tc.present, tc.now, p)
			if pr != tc.want {
				t.Errorf("Peek = %v, want %v", pr, tc.want)
			}
			if wantErr := tc.wantOutcome == StoreExpireError; (perr != nil) != wantErr || (perr != nil && !errors.Is(perr, ErrExpire)) {
				t.Errorf("Peek error = %v, want ErrExpire: %v", perr, wantErr)
			}
		})
	}
}

func TestNewParams_ZeroRate(t *testing.T) {
	cases := []struct {
		name          string
		count, period int64
	}{
		{"count 0", 0, 1},
		{"period 0", 1, 0},
		{"both 0", 0, 0},
		{"count 0 negative period", 0, -5},
		{"count > period*1e9 (T 0.99ns)", 1_000_000_001, 1},
		{"count 2e9 per 1s (T 0.5ns)", 2_000_000_000, 1},
		{"negative, |T| < 1ns", -2_000_000_000, 1},
		{"count MinInt64 period -1", math.MinInt64, -1},
		{"count MaxInt64 period 1", math.MaxInt64, 1},
		{"count MaxInt64 period 9223372035", math.MaxInt64, 9223372035},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := NewParams(7, tc.count, tc.period, 1)
			if !errors.Is(err, ErrZeroRate) {
				t.Fatalf("NewParams(7, %d, %d, 1) = %+v, %v; want ErrZeroRate", tc.count, tc.period, p, err)
			}
			if err.Error() != "Zero rates are not supported" {
				t.Errorf("error text %q", err)
			}
		})
	}
	// The smallest rates that are not zero.
	if p, err := NewParams(0, 1_000_000_000, 1, 1); err != nil || p.Interval != 1 {
		t.Errorf("1e9 per 1s = %+v, %v; want T = 1", p, err)
	}
	if p, err := NewParams(0, math.MaxInt64, 9223372037, 1); err != nil || p.Interval != 1 {
		t.Errorf("MaxInt64 per 9223372037s = %+v, %v; want T = 1", p, err)
	}
}

func TestSecs(t *testing.T) {
	cases := []struct {
		d    int64
		want int64
	}{
		// The spec's examples.
		{2_000_000_000, 2},   // 2.000 s
		{2_000_500_000, 2},   // 2.0005 s
		{2_001_000_000, 3},   // 2.001 s
		{999_999_900, 1},     // 0.9999999 s
		{500_000, 0},         // 0.0005 s
		{-500_000_000, 0},    // -0.5 s
		{-1_000_000_000, -1}, // -1 s
		// Around the millisecond threshold and zero.
		{0, 0},
		{1, 0},
		{999_999, 0},
		{1_000_000, 1},
		{1_000_999_999, 1},
		{1_001_000_000, 2},
		{-1, 0},
		{-1_500_000_000, -1},
		{-2_999_999_999, -2},
		// Extremes never overflow.
		{math.MaxInt64, 9223372037},
		{math.MinInt64, -9223372036},
	}
	for _, tc := range cases {
		if got := Secs(tc.d); got != tc.want {
			t.Errorf("Secs(%d) = %d, want %d", tc.d, got, tc.want)
		}
	}
}

func TestOutcome_String(t *testing.T) {
	for o, want := range map[Outcome]string{Keep: "Keep", Store: "Store", StoreExpireError: "StoreExpireError", 9: "Outcome(?)"} {
		if got := o.String(); got != want {
			t.Errorf("Outcome(%d).String() = %q, want %q", o, got, want)
		}
	}
}
