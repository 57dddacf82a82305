package server

import (
	"math/rand"
	"testing"
)

// TestHistogramBuckets: every value falls in a bucket whose range holds
// it, buckets are contiguous and increasing, and a bucket is at most 1/16
// of its values wide (the precision DESIGN.md and histogram.go state).
func TestHistogramBuckets(t *testing.T) {
	prevHigh := int64(-1)
	for i := 0; i < histBuckets; i++ {
		high := histBucketHigh(i)
		low := prevHigh + 1
		if high < low {
			t.Fatalf("bucket %d: high %d below low %d", i, high, low)
		}
		if low >= histSubBuckets && float64(high-low+1) > float64(low)/histSubBuckets {
			t.Errorf("bucket %d [%d, %d] wider than 1/16 of its low end", i, low, high)
		}
		for _, v := range []int64{low, high} {
			if b := histBucket(v); b != i {
				t.Errorf("value %d in bucket %d, want %d", v, b, i)
			}
		}
		prevHigh = high
	}
	if histBucket(1<<62) != histBuckets-1 || histBucket(-5) != 0 {
		t.Errorf("out-of-range values not clamped")
	}
}

// TestHistogramPercentiles: a percentile is at or above the true value
// and at most 6.25 % above it; LATENCY HISTOGRAM's buckets are Redis's
// powers of two from 1024 ns, cumulative.
func TestHistogramPercentiles(t *testing.T) {
	var h latencyHistogram
	rng := rand.New(rand.NewSource(1))
	vals := make([]int64, 10000)
	for i := range vals {
		vals[i] = 1 + rng.Int63n(5_000_000)
		h.record(vals[i])
	}
	counts, total := h.snapshot()
	if total != uint64(len(vals)) {
		t.Fatalf("total %d", total)
	}
	for _, p := range latencyPercentiles {
		got := percentile(&counts, total, p)
		below := 0
		for _, v := range vals {
			if v <= got {
				below++
			}
		}
		if float64(below) < p/100*float64(len(vals)) {
			t.Errorf("p%v = %d: only %d values at or below", p, got, below)
		}
	}
	var h2 latencyHistogram
	for _, v := range []int64{500, 1500, 1500, 3000, 70000} {
		h2.record(v)
	}
	c2, t2 := h2.snapshot()
	var got [][2]int64
	cumulative(&c2, t2, func(usec int64, n uint64) { got = append(got, [2]int64{usec, int64(n)}) })
	want := [][2]int64{{1, 1}, {2, 3}, {4, 4}, {131, 5}}
	if len(got) != len(want) {
		t.Fatalf("cumulative = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("cumulative = %v, want %v", got, want)
		}
	}
	if p := percentile(&c2, t2, 50); p < 1500 || float64(p) > 1500*1.0625 {
		t.Errorf("p50 of 500 1500 1500 3000 70000 = %d", p)
	}
}
