package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// batching is how a Redcell run packed its decisions, from the members'
// INFO counters before and after the run: decisions per fsync (what the
// durable write path amortises over) and the distribution of decisions per
// log entry (INFO raft_entry_ops_histogram). Only the leader proposes, so
// the members' counters add up to the leader's.
type batching struct {
	ops, entries, fsyncs uint64
	// hist[i] counts entries of 2^i to 2^(i+1)-1 decisions.
	hist map[int]uint64
	// stages: the proposer's per-batch stage sums (stages.go).
	stages stageSums
}

// sampleBatching reads the counters of every Redcell member of t; a target
// with no Redcell member gives nil and no error.
func sampleBatching(ctx context.Context, t target) (*batching, error) {
	var b *batching
	var proposerOps uint64
	for _, s := range t.members {
		if !s.kind.isRedcell() {
			continue
		}
		info, err := infoSections(ctx, s, "raft", "persistence")
		if err != nil {
			return nil, fmt.Errorf("batching counters of %s: %w", s.label(), err)
		}
		if b == nil {
			b = &batching{hist: make(map[int]uint64)}
		}
		ops := parseUintField(info["raft_ops_proposed"])
		b.ops += ops
		b.entries += parseUintField(info["raft_entries_proposed"])
		// The fsyncs are the proposer's (the leader's): in a cluster every
		// member fsyncs every entry, and their sum would divide the
		// decisions by the cluster size.
		if ops >= proposerOps {
			proposerOps, b.fsyncs = ops, parseUintField(info["log_fsyncs"])
			b.stages = parseStageSums(info)
		}
		for _, kv := range strings.Split(info["raft_entry_ops_histogram"], ",") {
			label, n, ok := strings.Cut(kv, "=")
			if !ok {
				continue
			}
			lo, err1 := strconv.ParseUint(label, 10, 64)
			cnt, err2 := strconv.ParseUint(n, 10, 64)
			if err1 != nil || err2 != nil || lo == 0 {
				continue
			}
			b.hist[log2(lo)] += cnt
		}
	}
	return b, nil
}

func parseUintField(s string) uint64 {
	v, _ := strconv.ParseUint(s, 10, 64)
	return v
}

func log2(v uint64) int {
	n := -1
	for ; v > 0; v >>= 1 {
		n++
	}
	return n
}

// since is the run's share: after minus before.
func (b *batching) since(before *batching) *batching {
	if b == nil || before == nil {
		return nil
	}
	d := &batching{ops: b.ops - before.ops, entries: b.entries - before.entries, fsyncs: b.fsyncs - before.fsyncs, hist: make(map[int]uint64),
		stages: b.stages.since(before.stages)}
	for k, v := range b.hist {
		if n := v - before.hist[k]; n > 0 {
			d.hist[k] = n
		}
	}
	return d
}

// perFsync is decisions per fsync of the leader's log (0 when unknown).
func (b *batching) perFsync() float64 {
	if b == nil || b.fsyncs == 0 {
		return 0
	}
	return float64(b.ops) / float64(b.fsyncs)
}

// quantile is the bucket holding the q-quantile of decisions per entry,
// weighted by decisions (what the typical decision rode in), as "lo-hi".
func (b *batching) quantile(q float64) string {
	if b == nil || b.ops == 0 {
		return "-"
	}
	// Weight each bucket by its decisions, estimated at the bucket's
	// middle; the buckets are powers of two, so this is coarse by design.
	var total float64
	weights := make(map[int]float64)
	maxK := 0
	for k, n := range b.hist {
		w := float64(n) * (float64(uint64(1)<<k) * 1.5)
		if k == 0 {
			w = float64(n)
		}
		weights[k] = w
		total += w
		maxK = max(maxK, k)
	}
	var acc float64
	for k := 0; k <= maxK; k++ {
		acc += weights[k]
		if acc >= q*total {
			lo := uint64(1) << k
			if k == 0 {
				return "1"
			}
			return fmt.Sprintf("%d-%d", lo, 2*lo-1)
		}
	}
	return "-"
}

// infoSections is the node's INFO of the given sections as field → value.
func infoSections(ctx context.Context, s *server, sections ...string) (map[string]string, error) {
	out := make(map[string]string)
	for _, sec := range sections {
		c, err := dialRESP(ctx, s.addr())
		if err != nil {
			return nil, err
		}
		c.setDeadline(time.Now().Add(2 * time.Second))
		v, err := c.do("INFO", sec)
		c.Close()
		if err != nil {
			return nil, err
		}
		if v.Kind != '$' || v.Null {
			return nil, fmt.Errorf("INFO %s answered %s", sec, v)
		}
		for k, val := range parseInfo(v.Str) {
			out[k] = val
		}
	}
	return out, nil
}

// mergeBatching adds up the batching of several runs (nil when none has it).
func mergeBatching(runs []benchResult) *batching {
	var m *batching
	for _, r := range runs {
		if r.Batching == nil {
			continue
		}
		if m == nil {
			m = &batching{hist: make(map[int]uint64)}
		}
		m.ops += r.Batching.ops
		m.entries += r.Batching.entries
		m.fsyncs += r.Batching.fsyncs
		m.stages = m.stages.plus(r.Batching.stages)
		for k, v := range r.Batching.hist {
			m.hist[k] += v
		}
	}
	return m
}

// batchingColumns formats decisions per fsync and the p50 and p90 of
// decisions per entry, or dashes for a server without a log.
func batchingColumns(b *batching) (perFsync, p50, p90 string) {
	if b == nil || b.ops == 0 {
		return "-", "-", "-"
	}
	pf := "-"
	if f := b.perFsync(); f > 0 {
		pf = fmt.Sprintf("%.1f", f)
	}
	return pf, b.quantile(0.5), b.quantile(0.9)
}
