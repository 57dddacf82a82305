package main

import "testing"

// The batching columns come from INFO counters: the difference of two
// samples, decisions per fsync, and the size class of the entry that carried
// the median and 90th-percentile decision.
func TestBatchingSinceAndQuantiles(t *testing.T) {
	before := &batching{ops: 100, entries: 10, fsyncs: 10, hist: map[int]uint64{0: 10}}
	after := &batching{ops: 100 + 10 + 64*40, entries: 10 + 10 + 40, fsyncs: 10 + 50, hist: map[int]uint64{0: 20, 6: 40}}
	d := after.since(before)
	if d.ops != 10+64*40 || d.entries != 50 || d.fsyncs != 50 {
		t.Fatalf("since = %+v", d)
	}
	if got := d.perFsync(); got != float64(10+64*40)/50 {
		t.Fatalf("perFsync = %v", got)
	}
	// Nearly every decision rode in a 64-127 entry.
	if p50, p90 := d.quantile(0.5), d.quantile(0.9); p50 != "64-127" || p90 != "64-127" {
		t.Fatalf("quantiles %s %s", p50, p90)
	}
	pf, p50, p90 := batchingColumns(nil)
	if pf != "-" || p50 != "-" || p90 != "-" {
		t.Fatalf("nil batching columns %s %s %s", pf, p50, p90)
	}
	m := mergeBatching([]benchResult{{Batching: d}, {}, {Batching: d}})
	if m.ops != 2*d.ops || m.hist[6] != 80 {
		t.Fatalf("merge = %+v", m)
	}
}
