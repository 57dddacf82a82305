package server

import (
	"math"
	"math/bits"
	"sync/atomic"
)

// latencyHistogram counts command latencies in nanoseconds, for INFO
// latencystats and LATENCY HISTOGRAM. Redis keeps an HdrHistogram per
// command (two significant digits, 1 ns to 1 s); this is a compact
// log-linear one of its own: values below 16 ns have a bucket each, and
// every power of two above is cut into histSubBuckets equal buckets, so a
// bucket is at most 1/16 of its values wide. A percentile is reported as
// its bucket's highest value, as HdrHistogram reports the highest value
// equivalent to it: at most 6.25 % above the true value (Redis's: 1 %).
// Values from 2^36 ns (about 69 s) up count in the last bucket.
//
// Recording is one atomic add and takes no lock, from any connection
// goroutine; readers (INFO, LATENCY HISTOGRAM) load the counts one by one,
// so a read concurrent with records may see some of them and not others.
type latencyHistogram struct {
	counts [histBuckets]atomic.Uint64
}

const (
	histSubBits    = 4
	histSubBuckets = 1 << histSubBits // buckets per power of two
	histMaxExp     = 35               // the highest power of two with buckets of its own
	histBuckets    = histSubBuckets + (histMaxExp-histSubBits+1)*histSubBuckets
)

// histBucket is the bucket of a value of ns nanoseconds.
func histBucket(ns int64) int {
	if ns < histSubBuckets {
		return int(max(ns, 0))
	}
	e := bits.Len64(uint64(ns)) - 1 // ns's highest bit
	if e > histMaxExp {
		return histBuckets - 1
	}
	sub := int(uint64(ns)>>(e-histSubBits)) & (histSubBuckets - 1)
	return histSubBuckets + (e-histSubBits)*histSubBuckets + sub
}

// histBucketHigh is the highest value in bucket i.
func histBucketHigh(i int) int64 {
	if i < histSubBuckets {
		return int64(i)
	}
	e := (i-histSubBuckets)/histSubBuckets + histSubBits
	sub := (i - histSubBuckets) % histSubBuckets
	low := int64(histSubBuckets+sub) << (e - histSubBits)
	return low + int64(1)<<(e-histSubBits) - 1
}

// record counts one latency of ns nanoseconds. Any goroutine.
func (h *latencyHistogram) record(ns int64) { h.recordN(ns, 1) }

// recordN records n latencies of ns each.
func (h *latencyHistogram) recordN(ns int64, n int) { h.counts[histBucket(ns)].Add(uint64(n)) }

// snapshot copies the counts, for the readers that walk them more than once.
func (h *latencyHistogram) snapshot() (counts [histBuckets]uint64, total uint64) {
	for i := range h.counts {
		counts[i] = h.counts[i].Load()
		total += counts[i]
	}
	return counts, total
}

// percentile is the value below or at which p percent of the recorded
// latencies are (the highest value of that bucket), in nanoseconds; 0 when
// nothing was recorded. As HdrHistogram's hdr_value_at_percentile: the
// count to reach is p % of the total, rounded half up, at least 1.
func percentile(counts *[histBuckets]uint64, total uint64, p float64) int64 {
	if total == 0 {
		return 0
	}
	want := uint64(math.Max(1, math.Floor(p/100*float64(total)+0.5)))
	var seen uint64
	for i, n := range counts {
		seen += n
		if seen >= want {
			return histBucketHigh(i)
		}
	}
	return histBucketHigh(histBuckets - 1)
}

// cumulative calls fn with LATENCY HISTOGRAM's buckets: as Redis's
// (hdr_iter_log_init(1024, 2)), powers of two from 1024 ns, each reported
// in whole microseconds (1, 2, 4, 8, 16, 32, 65, 131 …) with the count of
// latencies at or below it, the ones that add nothing to the count left
// out.
func cumulative(counts *[histBuckets]uint64, total uint64, fn func(usec int64, count uint64)) {
	var seen, prev uint64
	i := 0
	for limit := int64(1024); seen < total; limit *= 2 {
		for i < histBuckets && histBucketHigh(i) < limit {
			seen += counts[i]
			i++
		}
		if i == histBuckets {
			seen = total
		}
		if seen > prev {
			fn(limit/1000, seen)
		}
		prev = seen
	}
}
