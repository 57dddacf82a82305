package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// The datatypes mode: the Redis commands rate limiters send natively,
// Redcell against Redis running the same commands, not durable and
// durable, in one run (issue 33's speed and memory targets). Its rows are
// driven by the Go client of pipeline_load.go, because a decision here is
// several commands on one key and redis-benchmark repeats one command.
// A decision is the unit of every rate: a pipeline of depth P carries P
// decisions, P × (commands per decision) commands.

// dtScenario is one row group of the mode's table.
type dtScenario struct {
	spec loadSpec
	// targets are Redcell's, as ratios of decisions/s to another server's
	// in the same run.
	targets []dtTarget
}

// dtTarget is one acceptance target: Redcell ≥ ratio × against.
type dtTarget struct {
	against serverKind
	ratio   float64
}

// datatypesScenarios are issue 33's: 100k random keys, 50 clients.
var datatypesScenarios = []dtScenario{
	{spec: loadSpec{shape: shapeCounter, clients: 50, pipeline: 16, keyspace: 100000},
		targets: []dtTarget{{kindRedisLua, 0.7}, {kindRedisLuaFsync, 1.0}}},
	{spec: loadSpec{shape: shapeCounter, clients: 50, pipeline: 1, keyspace: 100000},
		targets: []dtTarget{{kindRedisLua, 0.9}}},
	{spec: loadSpec{shape: shapeSlidingLog, clients: 50, pipeline: 16, keyspace: 100000},
		targets: []dtTarget{{kindRedisLua, 0.7}}},
}

// clientCheckSpecs are the client check's loads: INCRBY alone, which
// redis-benchmark can send too, on Redis not durable, by both clients, at
// one command per round trip and at 32 (the counter's pipeline of 16 pairs).
var clientCheckSpecs = []loadSpec{
	{shape: shapeIncr, clients: 50, pipeline: 1, keyspace: 100000},
	{shape: shapeIncr, clients: 50, pipeline: 32, keyspace: 100000},
}

// The check's two clients.
const (
	clientGo             = "Go client"
	clientRedisBenchmark = "redis-benchmark"
)

func (l loadSpec) String() string {
	return fmt.Sprintf("%s, %d random keys, -c %d -P %d", l.shape.spec().name, l.keyspace, l.clients, l.pipeline)
}

// commandsPerDecision is how many commands one decision of l sends.
func (l loadSpec) commandsPerDecision() int { return len(l.shape.spec().commands) }

// dtServerName is how the mode names a server: its Redis servers run no
// script here, so they are "Redis" and "Redis-fsync".
func dtServerName(k serverKind) string {
	switch k {
	case kindRedisLua:
		return "Redis"
	case kindRedisLuaFsync:
		return "Redis-fsync"
	default:
		return string(k)
	}
}

// dtResult is one run, or the median of runs, of one row.
type dtResult struct {
	DPS          float64 // decisions per second
	P50Ms, P99Ms float64 // per decision: its pipeline's write to its last reply
	// CPU in cores over the measured window: the server (and of it the
	// kernel's share), the client, everything else.
	ServerCores, ServerSysCores, ClientCores, ElsewhereCores float64
	Batching                                                 *batching
}

// dtRow is one (load, server, client) row: its runs and their median, or
// why it could not run.
type dtRow struct {
	spec        loadSpec
	kind        serverKind
	client      string
	unavailable string // non-empty: the server lacks the commands (the reply)
	runs        []dtResult
	median      dtResult
}

// perCommandUs is a CPU share in cores per command of the row, in µs.
func (r dtRow) perCommandUs(cores float64) float64 {
	if r.median.DPS <= 0 {
		return 0
	}
	return cores / (r.median.DPS * float64(r.spec.commandsPerDecision())) * 1e6
}

// medianDT takes the median of each figure separately.
func medianDT(runs []dtResult) dtResult {
	pick := func(f func(dtResult) float64) float64 {
		vs := make([]float64, len(runs))
		for i, r := range runs {
			vs[i] = f(r)
		}
		return median(vs)
	}
	var bs []benchResult
	for _, r := range runs {
		bs = append(bs, benchResult{Batching: r.Batching})
	}
	return dtResult{
		DPS:            pick(func(r dtResult) float64 { return r.DPS }),
		P50Ms:          pick(func(r dtResult) float64 { return r.P50Ms }),
		P99Ms:          pick(func(r dtResult) float64 { return r.P99Ms }),
		ServerCores:    pick(func(r dtResult) float64 { return r.ServerCores }),
		ServerSysCores: pick(func(r dtResult) float64 { return r.ServerSysCores }),
		ClientCores:    pick(func(r dtResult) float64 { return r.ClientCores }),
		ElsewhereCores: pick(func(r dtResult) float64 { return r.ElsewhereCores }),
		Batching:       mergeBatching(bs),
	}
}

// median of vs (sorted in place); 0 for none.
func median(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	slices.Sort(vs)
	if len(vs)%2 == 1 {
		return vs[len(vs)/2]
	}
	return (vs[len(vs)/2-1] + vs[len(vs)/2]) / 2
}

// dtRunner measures the mode's rows.
type dtRunner struct {
	seconds, warmup float64
	bench           benchmarkRunner // the client check's redis-benchmark runs
	progress        io.Writer
}

// runDatatypesThroughput measures every scenario on every server, then
// the client check on Redis not durable, in the order round → scenario →
// server (→ client), as every mode alternates. A server that answers a
// shape's first decision with "unknown command" gets a row saying so
// instead of figures (Redcell before sorted sets exist).
func runDatatypesThroughput(ctx context.Context, r dtRunner, servers []*server, rounds int) ([]dtRow, error) {
	var rows []*dtRow
	byKey := make(map[string]*dtRow)
	row := func(spec loadSpec, kind serverKind, client string) (*dtRow, bool) {
		key := fmt.Sprint(spec, kind, client)
		if x, ok := byKey[key]; ok {
			return x, false
		}
		x := &dtRow{spec: spec, kind: kind, client: client}
		byKey[key] = x
		rows = append(rows, x)
		return x, true
	}
	var redisLua *server
	for _, s := range servers {
		if s.kind == kindRedisLua {
			redisLua = s
		}
	}
	for round := 1; round <= rounds; round++ {
		for _, sc := range datatypesScenarios {
			for _, s := range servers {
				x, fresh := row(sc.spec, s.kind, clientGo)
				if fresh {
					if err := checkShape(ctx, s.addr(), sc.spec.shape); err != nil {
						if !isUnknownCommand(err) {
							return nil, fmt.Errorf("%s on %s: check: %w", sc.spec, s.label(), err)
						}
						x.unavailable = unavailableReason(err)
					}
				}
				if x.unavailable != "" {
					if round == 1 {
						fmt.Fprintf(r.progress, "  %-58s %-16s not available: %s\n", sc.spec, dtServerName(s.kind), x.unavailable)
					}
					continue
				}
				res, err := r.measureGo(ctx, s, sc.spec)
				if err != nil {
					return nil, fmt.Errorf("%s on %s: %w", sc.spec, s.label(), err)
				}
				x.runs = append(x.runs, res)
				r.printRun(round, rounds, sc.spec, s.kind, clientGo, res)
			}
		}
		if redisLua == nil {
			continue
		}
		for _, spec := range clientCheckSpecs {
			if err := checkShape(ctx, redisLua.addr(), spec.shape); err != nil {
				return nil, fmt.Errorf("client check on %s: %w", redisLua.label(), err)
			}
			x, _ := row(spec, redisLua.kind, clientGo)
			res, err := r.measureGo(ctx, redisLua, spec)
			if err != nil {
				return nil, fmt.Errorf("client check %s: %w", spec, err)
			}
			x.runs = append(x.runs, res)
			r.printRun(round, rounds, spec, redisLua.kind, clientGo, res)

			x, _ = row(spec, redisLua.kind, clientRedisBenchmark)
			if res, err = r.measureRedisBenchmark(ctx, redisLua, spec); err != nil {
				return nil, fmt.Errorf("client check %s with redis-benchmark: %w", spec, err)
			}
			x.runs = append(x.runs, res)
			r.printRun(round, rounds, spec, redisLua.kind, clientRedisBenchmark, res)
		}
	}
	out := make([]dtRow, len(rows))
	for i, x := range rows {
		if len(x.runs) > 0 {
			x.median = medianDT(x.runs)
		}
		out[i] = *x
	}
	return out, nil
}

func (r dtRunner) printRun(round, rounds int, spec loadSpec, kind serverKind, client string, res dtResult) {
	fmt.Fprintf(r.progress, "  round %d/%d  %-58s %-12s %-15s %10.0f dec/s  p50 %.3f ms  p99 %.3f ms  (cores: server %.2f, client %.2f, elsewhere %.2f)\n",
		round, rounds, spec, dtServerName(kind), client, res.DPS, res.P50Ms, res.P99Ms, res.ServerCores, res.ClientCores, res.ElsewhereCores)
}

// measureGo runs spec against s with the Go client, after the machine has
// gone quiet: warm-up, then the measured window, the server's CPU and
// (for Redcell) its batching counters sampled at the window's two ends.
func (r dtRunner) measureGo(ctx context.Context, s *server, spec loadSpec) (dtResult, error) {
	if err := r.waitQuiet(ctx); err != nil {
		return dtResult{}, err
	}
	t := serverTarget(s)
	pids := t.memberPIDs()
	var cpuBefore, cpuAfter cpuSnapshot
	var sysBefore, sysAfter uint64
	var batchBefore, batchAfter *batching
	// The CPU is sampled next to the window's edges, the counters (INFO
	// over a connection of its own) outside them.
	before := func() error {
		var err error
		if batchBefore, err = sampleBatching(ctx, t); err != nil {
			return err
		}
		_, sysBefore = processUserSys(s.pid())
		cpuBefore, err = takeCPUSnapshot(pids)
		return err
	}
	after := func() error {
		var err error
		if cpuAfter, err = takeCPUSnapshot(pids); err != nil {
			return err
		}
		_, sysAfter = processUserSys(s.pid())
		batchAfter, err = sampleBatching(ctx, t)
		return err
	}
	run, err := runPipelineLoad(ctx, s.addr(), spec, seconds(r.warmup), seconds(r.seconds), before, after)
	if err != nil {
		return dtResult{}, err
	}
	res := dtResult{
		DPS:   float64(run.decisions) / run.window.Seconds(),
		P50Ms: msFloat(run.latencies.quantile(0.5)),
		P99Ms: msFloat(run.latencies.quantile(0.99)),
	}
	res.ServerCores, res.ElsewhereCores = cpuShares(cpuBefore, cpuAfter, pids, run.clientCPU, run.window)
	res.ServerSysCores = (time.Duration(sysAfter-sysBefore) * time.Second / userHZ).Seconds() / run.window.Seconds()
	res.ClientCores = run.clientCPU.Seconds() / run.window.Seconds()
	res.Batching = batchAfter.since(batchBefore)
	return res, nil
}

// measureRedisBenchmark runs spec (one command per decision) with
// redis-benchmark, sized like every redis-benchmark row (probe, warm-up,
// measured run of about r.seconds).
func (r dtRunner) measureRedisBenchmark(ctx context.Context, s *server, spec loadSpec) (dtResult, error) {
	if err := r.waitQuiet(ctx); err != nil {
		return dtResult{}, err
	}
	w, err := redisBenchmarkWorkload(spec)
	if err != nil {
		return dtResult{}, err
	}
	res, _, err := r.bench.measure(ctx, serverTarget(s), w)
	if err != nil {
		return dtResult{}, err
	}
	return dtResult{DPS: res.RPS, P50Ms: res.P50Ms, P99Ms: res.P99Ms,
		ServerCores: res.ServerCores, ServerSysCores: -1, ClientCores: res.ClientCores, ElsewhereCores: res.ElsewhereCores}, nil
}

// redisBenchmarkWorkload is spec as a redis-benchmark load: only a
// one-command shape has one.
func redisBenchmarkWorkload(spec loadSpec) (workload, error) {
	sp := spec.shape.spec()
	if len(sp.commands) != 1 || spec.shape != shapeIncr {
		return workload{}, fmt.Errorf("%s is not one command: redis-benchmark cannot send it", sp.name)
	}
	return workload{clients: spec.clients, pipeline: spec.pipeline, keyspace: spec.keyspace,
		command: "INCRBY " + sp.prefix + "__rand_int__ 1"}, nil
}

func (r dtRunner) waitQuiet(ctx context.Context) error {
	waited, err := waitForQuiet(ctx, 0.15, 250*time.Millisecond, 10*time.Second)
	if err == nil && waited >= time.Second {
		fmt.Fprintf(r.progress, "  (waited %.1f s for the machine to go quiet)\n", waited.Seconds())
	}
	return err
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

func msFloat(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// dtRatio is row's decisions/s over the same load's on kind, with the Go
// client, in the same run; 0 when either is missing.
func dtRatio(rows []dtRow, row dtRow, kind serverKind) float64 {
	for _, o := range rows {
		if o.spec == row.spec && o.kind == kind && o.client == clientGo && o.median.DPS > 0 && row.median.DPS > 0 {
			return row.median.DPS / o.median.DPS
		}
	}
	return 0
}

// dtVerdicts states row's targets: "≥ 0.70× Redis: met", one per target.
func dtVerdicts(rows []dtRow, row dtRow, targets []dtTarget) string {
	if !row.kind.isRedcell() {
		return "-"
	}
	if row.unavailable != "" {
		return "not available"
	}
	var parts []string
	for _, t := range targets {
		v := "not measured"
		if got := dtRatio(rows, row, t.against); got > 0 {
			v = "**met**"
			if got < t.ratio {
				v = "**not met**"
			}
		}
		parts = append(parts, fmt.Sprintf("≥ %s %s: %s", formatRatio(t.ratio), dtServerName(t.against), v))
	}
	return strings.Join(parts, "; ")
}

// targetsOf is the targets of the scenario with spec (none for the check).
func targetsOf(spec loadSpec) []dtTarget {
	for _, sc := range datatypesScenarios {
		if sc.spec == spec {
			return sc.targets
		}
	}
	return nil
}

// datatypesMarkdown renders the throughput rows: the main table with its
// targets, where Redcell's client cycle went, and the client check.
func datatypesMarkdown(rows []dtRow) string {
	var b strings.Builder
	b.WriteString("Load: the bench's Go client (`bench/pipeline_load.go`), the same for every server: 50 connections, closed loop, each with one pipeline of P *decisions* in flight, on 100,000 random keys. " +
		"A decision is the commands a limiter sends for one request, on one key: `INCRBY key 1` + `EXPIRE key 60` (envoyproxy/ratelimit), or `ZADD key <now ms> <unique member>` + `ZREMRANGEBYSCORE key -inf <now − 60000>` + `ZCARD key` + `EXPIRE key 60` (a sorted-set sliding log). " +
		"**Rates count decisions**; a pipeline of P decisions is 2P (or 4P) commands. p50/p99 per decision, from its pipeline's write to its last reply. Redis runs the same commands natively: **Redis** `--save '' --appendonly no`, **Redis-fsync** `--appendonly yes --appendfsync always`; Redcell its defaults.\n\n")
	b.WriteString("| decision | -c / -P | server | decisions/s | commands/s | p50 ms | p99 ms | vs Redis | vs Redis-fsync | target | server CPU µs/cmd | of it kernel | client µs/cmd | cmd/fsync | busy elsewhere |\n")
	b.WriteString("|---|---|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|\n")
	for _, r := range rows {
		if r.client != clientGo || r.spec.shape == shapeIncr {
			continue
		}
		shape := fmt.Sprintf("-c %d -P %d", r.spec.clients, r.spec.pipeline)
		if r.unavailable != "" {
			fmt.Fprintf(&b, "| %s | %s | %s | not available (`%s`) | | | | | | %s | | | | | |\n",
				r.spec.shape.spec().name, shape, dtServerName(r.kind), markdownCode(r.unavailable), dtVerdicts(rows, r, targetsOf(r.spec)))
			continue
		}
		m := r.median
		pf, _, _ := batchingColumns(m.Batching)
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %.3f | %.3f | %s | %s | %s | %.2f | %s | %.2f | %s | %s |\n",
			r.spec.shape.spec().name, shape, dtServerName(r.kind), formatRPS(m.DPS), formatRPS(m.DPS*float64(r.spec.commandsPerDecision())),
			m.P50Ms, m.P99Ms, formatRatio(dtRatio(rows, r, kindRedisLua)), formatRatio(dtRatio(rows, r, kindRedisLuaFsync)),
			dtVerdicts(rows, r, targetsOf(r.spec)), r.perCommandUs(m.ServerCores), kernelShare(m), r.perCommandUs(m.ClientCores), pf, formatCores(m.ElsewhereCores))
	}
	b.WriteString("\n*server CPU µs/cmd*: the server's CPU time (all threads, user + system) per command, from /proc over the measured window; *of it kernel*: the system time's share (sockets, fsync), which the server's own code cannot make cheaper. " +
		"*client µs/cmd*: the Go client's own CPU per command (getrusage of the bench process, which does nothing else meanwhile). *cmd/fsync*: commands per fsync of Redcell's log (each command is one log operation). *busy elsewhere*: cores used by everything else; above ~0.2 the row is disturbed.\n")

	var stages strings.Builder
	for _, r := range rows {
		if r.client != clientGo || r.unavailable != "" {
			continue
		}
		cycle := 0.0
		if r.median.DPS > 0 {
			cycle = float64(r.spec.clients*r.spec.pipeline) / r.median.DPS * 1000
		}
		if cells, ok := stageCells(cycle, r.median.DPS*float64(r.spec.commandsPerDecision()), r.median.Batching); ok {
			fmt.Fprintf(&stages, "| %s, -c %d -P %d | %s | %s |\n", r.spec.shape.spec().name, r.spec.clients, r.spec.pipeline, dtServerName(r.kind), cells)
		}
	}
	if stages.Len() > 0 {
		b.WriteString("\n" + strings.Replace(stagesIntro, "clients × pipeline ÷ rps", "clients × P ÷ decisions/s", 1) + "\n\n")
		b.WriteString("| load | server | client cycle | queued | leader's log | of it, one WAL sync | quorum + apply | outside the log | apply per request, busy |\n|---|---|---:|---:|---:|---:|---:|---:|---:|\n")
		b.WriteString(stages.String())
	}

	var check strings.Builder
	for _, r := range rows {
		if r.spec.shape != shapeIncr || len(r.runs) == 0 {
			continue
		}
		m := r.median
		fmt.Fprintf(&check, "| -c %d -P %d | %s | %s | %.3f | %.3f | %.2f | %.2f | %.2f |\n", r.spec.clients, r.spec.pipeline, r.client, formatRPS(m.DPS), m.P50Ms, m.P99Ms,
			m.ClientCores, r.perCommandUs(m.ClientCores), r.perCommandUs(m.ServerCores))
	}
	if check.Len() > 0 {
		b.WriteString("\n**Client check**: `INCRBY <key> 1` alone on Redis (not durable), which redis-benchmark can send too, by the Go client and by redis-benchmark, alternating. " +
			"The Go client is not what bounds the rows above when it drives Redis as fast as redis-benchmark does, at no more CPU per command, and its cores stay below one (on two cores, Redis has the other).\n\n")
		b.WriteString("| -c / -P | client | commands/s | p50 ms | p99 ms | client cores | client µs/cmd | Redis CPU µs/cmd |\n|---|---|---:|---:|---:|---:|---:|---:|\n")
		b.WriteString(check.String())
	}
	return b.String()
}

// kernelShare is the system time's share of the server's CPU, "-" when
// unknown.
func kernelShare(m dtResult) string {
	if m.ServerSysCores < 0 || m.ServerCores <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f %%", 100*m.ServerSysCores/m.ServerCores)
}

// markdownCode makes s safe inside a table cell's code span.
func markdownCode(s string) string {
	s = strings.ReplaceAll(s, "|", "\\|")
	return strings.ReplaceAll(s, "`", "'")
}
