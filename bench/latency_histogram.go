package main

import (
	"math/bits"
	"time"
)

// latencyHistogram counts latencies in fixed buckets, so that the load
// generator records each decision without allocating: a growing slice of
// samples would make the client collect garbage in the middle of a run, a
// pause no redis-benchmark row has. Buckets are 1 µs wide up to 1,024 µs,
// then 64 per power of two (within 1.6 % of the value) up to about 2^40 µs,
// far beyond any run. The zero value is ready; it is owned by one
// goroutine until merged.
type latencyHistogram struct {
	counts [histLinear + histSubBuckets*(histMaxExp-histLinearExp+1)]uint64
	total  uint64
}

const (
	histLinearExp  = 10 // below 2^10 µs, one bucket per µs
	histLinear     = 1 << histLinearExp
	histSubBits    = 6 // 64 buckets per power of two above it
	histSubBuckets = 1 << histSubBits
	histMaxExp     = 40
)

// histBucket is the bucket of a latency of us microseconds.
func histBucket(us uint64) int {
	if us < histLinear {
		return int(us)
	}
	e := bits.Len64(us) - 1 // 2^e <= us < 2^(e+1), e >= histLinearExp
	if e > histMaxExp {
		return histLinear + histSubBuckets*(histMaxExp-histLinearExp+1) - 1
	}
	m := (us >> (e - histSubBits)) & (histSubBuckets - 1)
	return histLinear + (e-histLinearExp)*histSubBuckets + int(m)
}

// histValue is the middle of bucket i, in microseconds.
func histValue(i int) float64 {
	if i < histLinear {
		return float64(i) + 0.5
	}
	e := histLinearExp + (i-histLinear)/histSubBuckets
	m := uint64((i - histLinear) % histSubBuckets)
	lo := (histSubBuckets + m) << (e - histSubBits)
	width := uint64(1) << (e - histSubBits)
	return float64(lo) + float64(width)/2
}

// record counts one latency.
func (h *latencyHistogram) record(d time.Duration) {
	us := uint64(max(d, 0) / time.Microsecond)
	h.counts[histBucket(us)]++
	h.total++
}

// merge adds o's counts to h.
func (h *latencyHistogram) merge(o *latencyHistogram) {
	for i, n := range o.counts {
		h.counts[i] += n
	}
	h.total += o.total
}

// quantile is the p-quantile (0 < p <= 1) by nearest rank, as the middle
// of its bucket; 0 when nothing was recorded.
func (h *latencyHistogram) quantile(p float64) time.Duration {
	if h.total == 0 {
		return 0
	}
	rank := uint64(p*float64(h.total) + 0.999999) // ceil, without float noise at exact ranks
	rank = min(max(rank, 1), h.total)
	var seen uint64
	for i, n := range h.counts {
		if seen += n; seen >= rank {
			return time.Duration(histValue(i) * float64(time.Microsecond))
		}
	}
	return 0
}
