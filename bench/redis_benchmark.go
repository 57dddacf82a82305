package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"math"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

// throttleArgs are the CL.THROTTLE parameters of every load scenario:
// max_burst 15, 30 per 60 s (T = 2 s), quantity 1 — redis-cell's README example.
var throttleArgs = []string{"15", "30", "60", "1"}

// workload is one redis-benchmark load shape.
type workload struct {
	family   family // the limiter driven; the zero value is CL.THROTTLE
	clients  int
	pipeline int
	keyspace int // distinct random keys (user:__rand_int__); 0 = one hot key
	// command, when set, is sent instead of the family's decision: one
	// plain command, space-separated, its key written with __rand_int__
	// (the datatypes mode's client check).
	command string
	// cluster runs redis-benchmark as a cluster-mode client (--cluster):
	// it reads the slot map from the node it is given and spreads its
	// clients over the masters, each client's keys hash-tagged ({tag}) to
	// its master's slots. The groups mode only.
	cluster bool
}

func (w workload) String() string {
	keys := "hot key"
	if w.keyspace > 0 {
		keys = fmt.Sprintf("%d random keys", w.keyspace)
	}
	if w.command != "" {
		keys = w.command + ", " + keys
	} else if w.family != familyCL {
		keys = w.family.name() + ", " + keys
	}
	if w.cluster {
		keys += ", --cluster"
	}
	return fmt.Sprintf("%s, -c %d -P %d", keys, w.clients, w.pipeline)
}

// benchResult is what one redis-benchmark run measured. Latencies are per
// request as redis-benchmark reports them (with -P, from the write of the
// pipeline to the reply of that request).
type benchResult struct {
	Requests int
	Elapsed  time.Duration
	RPS      float64
	AvgMs    float64
	P50Ms    float64
	P99Ms    float64
	MaxMs    float64
	// CPU during the run, in cores: the measured server, the load generator
	// (every redis-benchmark process of the run, from its rusage), and
	// everything else on the machine (other servers, other work) — the
	// run's noise.
	ServerCores    float64
	ClientCores    float64
	ElsewhereCores float64
	// Batching of a Redcell target during the run (nil for Redis).
	Batching *batching
}

// cpuPerRequestUs is the measured server's CPU time per request, in
// microseconds (0 when unknown).
func (r benchResult) cpuPerRequestUs() float64 {
	if r.RPS <= 0 {
		return 0
	}
	return r.ServerCores / r.RPS * 1e6
}

// clientCPUPerRequestUs is redis-benchmark's CPU time per request, in
// microseconds (0 when unknown). Near 1e6 ÷ rps per process (a whole core:
// redis-benchmark is single-threaded) the load generator, not the server,
// bounds the run.
func (r benchResult) clientCPUPerRequestUs() float64 {
	if r.RPS <= 0 {
		return 0
	}
	return r.ClientCores / r.RPS * 1e6
}

// benchmarkRunner runs redis-benchmark against one target at a time.
// seconds is the target duration of a measured run; each run is preceded by
// a short probe run whose rate sizes a warm-up run of about warmup seconds
// (none when 0), whose rate in turn sizes the measured run's -n.
type benchmarkRunner struct {
	seconds    float64
	warmup     float64
	probeFloor int // smallest probe -n
}

// measure runs the probe and then the measured run of w against t. With
// several nodes the probe sizes each node's -n from that node's own rate
// under the same concurrent load, so the redis-benchmark processes end
// together. It returns the combined result and, for several nodes, each
// node's (nil for one).
func (b benchmarkRunner) measure(ctx context.Context, t target, w workload) (benchResult, []benchResult, error) {
	clients, err := splitClients(w.clients, len(t.nodes))
	if err != nil {
		return benchResult{}, nil, err
	}
	probeN := max(b.probeFloor, w.clients*w.pipeline*4)
	ns := make([]int, len(clients))
	for i, c := range clients {
		ns[i] = max((probeN*c+w.clients-1)/w.clients, c*w.pipeline*4)
	}
	_, probes, err := runTarget(ctx, t, w, ns)
	if err != nil {
		return benchResult{}, nil, fmt.Errorf("probe: %w", err)
	}
	sizeFor := func(rates []benchResult, seconds float64) {
		for i, c := range clients {
			n := int(math.Ceil(rates[i].RPS * seconds))
			// At least a few full pipelines per client, so every client gets going.
			ns[i] = max(n, c*w.pipeline*4, 1000)
		}
	}
	if b.warmup > 0 {
		sizeFor(probes, b.warmup)
		if _, probes, err = runTarget(ctx, t, w, ns); err != nil {
			return benchResult{}, nil, fmt.Errorf("warm-up: %w", err)
		}
	}
	sizeFor(probes, b.seconds)
	res, parts, err := runTarget(ctx, t, w, ns)
	if len(parts) == 1 {
		parts = nil
	}
	return res, parts, err
}

// splitClients spreads clients connections over nodes as evenly as
// possible, the first nodes taking one more (50 over 3: 17, 17, 16).
func splitClients(clients, nodes int) ([]int, error) {
	if nodes < 1 || clients < nodes {
		return nil, fmt.Errorf("cannot spread %d clients over %d nodes", clients, nodes)
	}
	out := make([]int, nodes)
	for i := range out {
		out[i] = clients / nodes
		if i < clients%nodes {
			out[i]++
		}
	}
	return out, nil
}

// redisBenchmarkArgs is the redis-benchmark command line for n requests of
// w against s.
func redisBenchmarkArgs(s *server, w workload, n int) []string {
	args := []string{
		"-h", "127.0.0.1", "-p", strconv.Itoa(s.port),
		"-c", strconv.Itoa(w.clients), "-P", strconv.Itoa(w.pipeline),
		"-n", strconv.Itoa(n), "--csv",
	}
	if w.command != "" {
		if w.keyspace > 0 {
			args = append(args, "-r", strconv.Itoa(w.keyspace))
		}
		return append(args, strings.Fields(w.command)...)
	}
	// Each family has its own keys: one server runs every family's
	// scenarios in turn, and a key belongs to one family (WRONGTYPE
	// otherwise, on Redcell as on Redis, whose scripts use a hash and a
	// sorted set).
	prefix := "user:"
	if w.family != familyCL {
		prefix = strings.ToLower(w.family.name()[:2]) + ":"
	}
	if w.cluster {
		args = append([]string{"--cluster"}, args...)
		prefix += "{tag}:"
	}
	key := prefix + "hot"
	if w.keyspace > 0 {
		args = append(args, "-r", strconv.Itoa(w.keyspace))
		key = prefix + "__rand_int__"
	}
	return append(args, s.limiterCommand(w.family, key, families[w.family].args...)...)
}

// runRedisBenchmark runs redis-benchmark once against one server and parses
// its CSV output. It blocks for the whole run; cancelling ctx kills
// redis-benchmark.
func runRedisBenchmark(ctx context.Context, s *server, w workload, n int) (benchResult, error) {
	res, _, err := runTarget(ctx, serverTarget(s), w, []int{n})
	return res, err
}

// runTarget runs w once against t: w's clients split over t.nodes, one
// redis-benchmark process per node with ns[i] requests, all started at once.
// It returns the combined result (see combineResults) and each process's.
// CPU is measured around the whole group: the server's share is that of
// every process in t.members, the load generators' is left out of
// "elsewhere". If one process fails, the others are killed.
func runTarget(ctx context.Context, t target, w workload, ns []int) (benchResult, []benchResult, error) {
	clients, err := splitClients(w.clients, len(t.nodes))
	if err != nil {
		return benchResult{}, nil, err
	}
	if len(ns) != len(t.nodes) {
		return benchResult{}, nil, fmt.Errorf("%d request counts for %d nodes", len(ns), len(t.nodes))
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type proc struct {
		node           *server
		args           []string
		cmd            *exec.Cmd
		stdout, stderr bytes.Buffer
		err            error
		took           time.Duration
	}
	procs := make([]*proc, len(t.nodes))
	for i, s := range t.nodes {
		p := &proc{node: s, args: redisBenchmarkArgs(s, workload{family: w.family, clients: clients[i], pipeline: w.pipeline, keyspace: w.keyspace, command: w.command, cluster: w.cluster}, ns[i])}
		p.cmd = exec.CommandContext(ctx, "redis-benchmark", p.args...)
		p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
		procs[i] = p
	}
	pids := t.memberPIDs()
	batchBefore, err := sampleBatching(ctx, t)
	if err != nil {
		return benchResult{}, nil, err
	}
	before, err := takeCPUSnapshot(pids)
	if err != nil {
		return benchResult{}, nil, err
	}
	start := time.Now()
	var wg sync.WaitGroup
	for _, p := range procs {
		if p.err = p.cmd.Start(); p.err != nil {
			cancel()
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.err = p.cmd.Wait()
			p.took = time.Since(start)
			if p.err != nil {
				cancel() // a failed run would leave the others' numbers meaningless
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	after, err := takeCPUSnapshot(pids)
	if err != nil {
		return benchResult{}, nil, err
	}
	var errs []error
	parts := make([]benchResult, len(procs))
	var loadGenCPU time.Duration
	for i, p := range procs {
		if p.err != nil {
			errs = append(errs, fmt.Errorf("redis-benchmark %v: %w: %s", p.args, p.err, p.stderr.String()))
			continue
		}
		loadGenCPU += p.cmd.ProcessState.UserTime() + p.cmd.ProcessState.SystemTime()
		res, err := parseBenchmarkCSV(p.stdout.Bytes())
		if err != nil {
			errs = append(errs, fmt.Errorf("redis-benchmark against %s: %w (stderr: %s)", p.node.label(), err, p.stderr.String()))
			continue
		}
		res.Requests, res.Elapsed = ns[i], p.took
		parts[i] = res
	}
	if len(errs) > 0 {
		return benchResult{}, nil, errors.Join(errs...)
	}
	res := combineResults(parts, elapsed)
	res.ServerCores, res.ElsewhereCores = cpuShares(before, after, pids, loadGenCPU, elapsed)
	res.ClientCores = loadGenCPU.Seconds() / elapsed.Seconds()
	batchAfter, err := sampleBatching(ctx, t)
	if err != nil {
		return benchResult{}, nil, err
	}
	res.Batching = batchAfter.since(batchBefore)
	return res, parts, nil
}

// combineResults merges the results of concurrent redis-benchmark
// processes into one row: rates and requests add up, the average latency is
// weighted by requests, and p50, p99 and max are the worst process's (the
// exact percentiles of the union cannot be had from the CSV). elapsed is
// the wall time of the whole group. One result is returned as it is, with
// elapsed.
func combineResults(parts []benchResult, elapsed time.Duration) benchResult {
	var r benchResult
	var weighted float64
	for _, p := range parts {
		r.Requests += p.Requests
		r.RPS += p.RPS
		weighted += p.AvgMs * float64(p.Requests)
		r.P50Ms = max(r.P50Ms, p.P50Ms)
		r.P99Ms = max(r.P99Ms, p.P99Ms)
		r.MaxMs = max(r.MaxMs, p.MaxMs)
	}
	if r.Requests > 0 {
		r.AvgMs = weighted / float64(r.Requests)
	}
	r.Elapsed = elapsed
	return r
}

// parseBenchmarkCSV reads redis-benchmark --csv output: a header row naming
// the columns, then one row for the single test run.
func parseBenchmarkCSV(out []byte) (benchResult, error) {
	// With --cluster, redis-benchmark lists the masters it found before
	// the CSV: the table starts at its header.
	if i := bytes.Index(out, []byte("\"test\",")); i > 0 {
		out = out[i:]
	}
	rows, err := csv.NewReader(bytes.NewReader(out)).ReadAll()
	if err != nil {
		return benchResult{}, fmt.Errorf("parse CSV: %w", err)
	}
	if len(rows) != 2 {
		return benchResult{}, fmt.Errorf("want a header and one row, got %d rows: %q", len(rows), out)
	}
	col := make(map[string]int, len(rows[0]))
	for i, name := range rows[0] {
		col[name] = i
	}
	get := func(name string) (float64, error) {
		i, ok := col[name]
		if !ok || i >= len(rows[1]) {
			return 0, fmt.Errorf("no %q column in %q", name, out)
		}
		v, err := strconv.ParseFloat(rows[1][i], 64)
		if err != nil {
			return 0, fmt.Errorf("column %q: %w", name, err)
		}
		return v, nil
	}
	var r benchResult
	for _, f := range []struct {
		name string
		dst  *float64
	}{
		{"rps", &r.RPS}, {"avg_latency_ms", &r.AvgMs}, {"p50_latency_ms", &r.P50Ms},
		{"p99_latency_ms", &r.P99Ms}, {"max_latency_ms", &r.MaxMs},
	} {
		if *f.dst, err = get(f.name); err != nil {
			return benchResult{}, err
		}
	}
	if r.RPS <= 0 {
		return benchResult{}, fmt.Errorf("rps %v: the run failed (server errors?)", r.RPS)
	}
	return r, nil
}
