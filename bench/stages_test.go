package main

import (
	"strings"
	"testing"
)

// The stage table splits a client's cycle (clients × pipeline ÷ rps) into
// the proposer's per-batch stages and what is left outside the log; samples
// from different nodes (after smaller than before) give no row rather than
// a wrong one.
func TestStagesSplitTheClientCycle(t *testing.T) {
	before := parseStageSums(map[string]string{"raft_batches_timed": "10", "raft_batch_queue_usec_total": "100",
		"raft_batch_local_log_usec_total": "1000", "raft_batch_quorum_apply_usec_total": "50",
		"log_wal_sync_usec_total": "900", "log_wal_syncs_direct": "7", "log_wal_syncs_ordinary": "3",
		"fsm_apply_usec_total": "40", "fsm_ops_applied": "8"})
	after := stageSums{batches: 10 + 1000, queueUs: 100 + 200_000, logUs: 1000 + 300_000, quorumUs: 50 + 100_000,
		syncUs: 900 + 125_000, syncs: 10 + 500, applyUs: 40 + 1_000_000, applied: 8 + 200_000}
	d := after.since(before)
	q, l, c, ok := d.perBatchMs()
	if !ok || q != 0.2 || l != 0.3 || c != 0.1 {
		t.Fatalf("per batch %v %v %v %v; want 0.2 0.3 0.1", q, l, c, ok)
	}
	if s, ok := d.syncMs(); !ok || s != 0.25 {
		t.Fatalf("one WAL sync %v ms (%v); want 0.25", s, ok)
	}
	if _, _, _, ok := before.since(after).perBatchMs(); ok {
		t.Fatal("a sample that went backwards gave stage times")
	}

	w := workload{clients: 50, pipeline: 1, keyspace: 100000}
	if got := clientCycleMs(w, 50_000); got != 1 {
		t.Fatalf("cycle of 50 clients at 50k rps = %v ms; want 1", got)
	}
	ms := []measurement{
		{work: w, kind: kindRedcell, median: benchResult{RPS: 50_000, Batching: &batching{stages: d}}},
		{work: w, kind: kindRedisLua, median: benchResult{RPS: 60_000}},
	}
	md := stagesMarkdown(ms)
	// 5 µs of apply per request at 50k requests a second: 25 % of the run.
	if !strings.Contains(md, "| 1.000 | 0.200 | 0.300 | 0.250 | 0.100 | 0.400 | 5.00 µs, 25 % |") {
		t.Fatalf("row missing or wrong:\n%s", md)
	}
	if strings.Contains(md, string(kindRedisLua)) {
		t.Fatalf("a server without a log got a row:\n%s", md)
	}
	// A server without the sync and apply counters: they show as unknown.
	old := d
	old.syncUs, old.syncs, old.applyUs, old.applied = 0, 0, 0, 0
	ms[0].median.Batching = &batching{stages: old}
	if md := stagesMarkdown(ms); !strings.Contains(md, "| 1.000 | 0.200 | 0.300 | - | 0.100 | 0.400 | - |") {
		t.Fatalf("row without sync times missing or wrong:\n%s", md)
	}
	if stagesMarkdown(ms[1:]) != "" {
		t.Fatal("a table without Redcell rows")
	}
}
