package metrics

import (
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// latencyBounds are the upper bounds of the command latency histogram's
// buckets: from a lone node's pipelined decision (tens of µs) through a
// cluster's commit (a few ms) to a request that waited out a failover
// (seconds).
var latencyBounds = [...]time.Duration{
	25 * time.Microsecond, 50 * time.Microsecond, 100 * time.Microsecond, 250 * time.Microsecond, 500 * time.Microsecond,
	time.Millisecond, 2500 * time.Microsecond, 5 * time.Millisecond, 10 * time.Millisecond, 25 * time.Millisecond,
	50 * time.Millisecond, 100 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond,
	time.Second, 2500 * time.Millisecond, 5 * time.Second, 10 * time.Second,
}

// latencyHistogram is one command's latency distribution. Unlike
// prometheus.Histogram it takes n observations of the same duration in one
// call (observeN): a pipeline of 16 CL.THROTTLE calls, all answered in the
// same write, costs two atomic adds, not 16 observations. The count is the
// sum of the buckets, so a scrape never sees a count that disagrees with
// them. Safe for concurrent use; allocation-free.
type latencyHistogram struct {
	buckets  [len(latencyBounds) + 1]atomic.Uint64 // the last: above every bound
	sumNanos atomic.Uint64
}

// observeN records n observations of d.
func (h *latencyHistogram) observeN(d time.Duration, n uint64) {
	if d < 0 {
		d = 0 // a stepped clock: count it, in the first bucket
	}
	i := 0
	for i < len(latencyBounds) && d > latencyBounds[i] {
		i++
	}
	h.buckets[i].Add(n)
	h.sumNanos.Add(n * uint64(d))
}

// count is how many observations h holds.
func (h *latencyHistogram) count() uint64 {
	var n uint64
	for i := range h.buckets {
		n += h.buckets[i].Load()
	}
	return n
}

// metric is h as a Prometheus histogram of desc (seconds) with labels.
func (h *latencyHistogram) metric(desc *prometheus.Desc, labels ...string) prometheus.Metric {
	cum := make(map[float64]uint64, len(latencyBounds))
	var n uint64
	for i, b := range latencyBounds {
		n += h.buckets[i].Load()
		cum[b.Seconds()] = n
	}
	n += h.buckets[len(latencyBounds)].Load()
	return prometheus.MustNewConstHistogram(desc, n, float64(h.sumNanos.Load())/1e9, cum, labels...)
}
