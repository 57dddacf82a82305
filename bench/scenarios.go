package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"
)

// Workloads of each mode. The comparison uses redis-benchmark's default 50
// clients; -P 16 is where group commit pays off, -P 1 is the worst case for
// a durable server (one client's request per round trip), and 200 clients
// at -P 1 is an API gateway's fleet of callers that do not pipeline.
var (
	compareWorkloads = []workload{
		{clients: 50, pipeline: 1, keyspace: 100000},
		{clients: 200, pipeline: 1, keyspace: 100000},
		{clients: 50, pipeline: 16, keyspace: 100000},
		{clients: 50, pipeline: 1, keyspace: 0},
		{clients: 50, pipeline: 16, keyspace: 0},
	}
	latencyWorkloads = []workload{
		{clients: 1, pipeline: 1, keyspace: 100000},
	}
)

// target is what one row measures: the clients of a workload go to nodes
// (split evenly, one redis-benchmark process per node, all at once), and
// the CPU of members counts as the server's. A plain server is one node and
// its own only member; a cluster row lists every node as a member, because
// the followers' replication and fsyncs are part of serving the load.
type target struct {
	kind    serverKind // the row's label: a server kind or a cluster target
	nodes   []*server
	members []*server
}

// serverTarget is the target of one server on its own.
func serverTarget(s *server) target {
	return target{kind: s.kind, nodes: []*server{s}, members: []*server{s}}
}

// memberPIDs are the process ids whose CPU counts as the server's.
func (t target) memberPIDs() []int {
	pids := make([]int, len(t.members))
	for i, s := range t.members {
		pids[i] = s.pid()
	}
	return pids
}

// scenario is one workload and the targets it runs on, in order.
type scenario struct {
	work    workload
	targets []target
}

// measurement is the median of one workload on one target over the rounds.
// For a target spread over several nodes, nodeRuns[i] holds node i's own
// results and nodeMedians its medians.
type measurement struct {
	work        workload
	kind        serverKind
	median      benchResult
	runs        []benchResult
	nodes       []*server
	nodeRuns    [][]benchResult
	nodeMedians []benchResult
}

// runAlternating measures every workload on every server, in the order
// round → workload → server; see runScenarios.
func runAlternating(ctx context.Context, b benchmarkRunner, servers []*server, works []workload, rounds int, progress io.Writer) ([]measurement, error) {
	targets := make([]target, len(servers))
	for i, s := range servers {
		targets[i] = serverTarget(s)
	}
	scenarios := make([]scenario, len(works))
	for i, w := range works {
		scenarios[i] = scenario{work: w, targets: targets}
	}
	return runScenarios(ctx, b, scenarios, rounds, progress)
}

// runScenarios measures every scenario on each of its targets, in the order
// round → scenario → target, so that a slow minute of the machine hits
// every target of a scenario alike instead of all of one target's runs.
// Before each, it waits (up to 10 s) for the machine to go quiet, so the
// previous server's background work does not land in the next one's run. It
// prints one progress line per run (and per node of a spread target) to
// progress and returns one measurement per (workload, target), in scenario
// order, then targets' order.
func runScenarios(ctx context.Context, b benchmarkRunner, scenarios []scenario, rounds int, progress io.Writer) ([]measurement, error) {
	byKey := make(map[string]*measurement)
	var out []*measurement
	for round := 1; round <= rounds; round++ {
		for _, sc := range scenarios {
			w := sc.work
			for _, t := range sc.targets {
				key := w.String() + "|" + string(t.kind)
				m := byKey[key]
				if m == nil {
					m = &measurement{work: w, kind: t.kind, nodes: t.nodes}
					if len(t.nodes) > 1 {
						m.nodeRuns = make([][]benchResult, len(t.nodes))
					}
					byKey[key] = m
					out = append(out, m)
				}
				waited, err := waitForQuiet(ctx, 0.15, 250*time.Millisecond, 10*time.Second)
				if err != nil {
					return nil, err
				}
				if waited >= time.Second {
					fmt.Fprintf(progress, "  (waited %.1f s for the machine to go quiet)\n", waited.Seconds())
				}
				res, parts, err := b.measure(ctx, t, w)
				if err != nil {
					return nil, fmt.Errorf("%s on %s: %w", w, t.kind, err)
				}
				m.runs = append(m.runs, res)
				fmt.Fprintf(progress, "  round %d/%d  %-32s %-27s %10.0f rps  p50 %.3f ms  p99 %.3f ms  (%d req, %.1f s; cores: server %.2f, client %.2f, elsewhere %.2f)\n",
					round, rounds, w, t.kind, res.RPS, res.P50Ms, res.P99Ms, res.Requests, res.Elapsed.Seconds(), res.ServerCores, res.ClientCores, res.ElsewhereCores)
				for i, p := range parts {
					m.nodeRuns[i] = append(m.nodeRuns[i], p)
					fmt.Fprintf(progress, "      %-12s %-15s %10.0f rps  p50 %.3f ms  p99 %.3f ms  (%d req, %.1f s)\n",
						t.nodes[i].label(), t.nodes[i].addr(), p.RPS, p.P50Ms, p.P99Ms, p.Requests, p.Elapsed.Seconds())
				}
			}
		}
	}
	result := make([]measurement, len(out))
	for i, m := range out {
		m.median = medianResult(m.runs)
		for _, runs := range m.nodeRuns {
			m.nodeMedians = append(m.nodeMedians, medianResult(runs))
		}
		result[i] = *m
	}
	return result, nil
}

// medianResult takes the median of each figure separately; with one run it
// is that run.
func medianResult(runs []benchResult) benchResult {
	pick := func(f func(benchResult) float64) float64 {
		vs := make([]float64, len(runs))
		for i, r := range runs {
			vs[i] = f(r)
		}
		slices.Sort(vs)
		if len(vs)%2 == 1 {
			return vs[len(vs)/2]
		}
		return (vs[len(vs)/2-1] + vs[len(vs)/2]) / 2
	}
	var total time.Duration
	var reqs int
	for _, r := range runs {
		total += r.Elapsed
		reqs += r.Requests
	}
	return benchResult{
		Requests: reqs,
		Elapsed:  total,
		RPS:      pick(func(r benchResult) float64 { return r.RPS }),
		AvgMs:    pick(func(r benchResult) float64 { return r.AvgMs }),
		P50Ms:    pick(func(r benchResult) float64 { return r.P50Ms }),
		P99Ms:    pick(func(r benchResult) float64 { return r.P99Ms }),
		MaxMs:    pick(func(r benchResult) float64 { return r.MaxMs }),

		ServerCores:    pick(func(r benchResult) float64 { return r.ServerCores }),
		ClientCores:    pick(func(r benchResult) float64 { return r.ClientCores }),
		ElsewhereCores: pick(func(r benchResult) float64 { return r.ElsewhereCores }),
		Batching:       mergeBatching(runs),
	}
}

// ratioToRedisLua is m's rps divided by Redis-Lua's rps on the same
// workload in the same run, or 0 when Redis-Lua was not measured.
func ratioToRedisLua(all []measurement, m measurement) float64 {
	return ratioTo(all, m, kindRedisLua)
}

// ratioTo is m's rps divided by the rps of kind on the same workload in
// the same run, or 0 when kind was not measured.
func ratioTo(all []measurement, m measurement, kind serverKind) float64 {
	for _, o := range all {
		if o.work == m.work && o.kind == kind && o.median.RPS > 0 {
			return m.median.RPS / o.median.RPS
		}
	}
	return 0
}
