package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"math"
	"os/exec"
	"strconv"
	"time"
)

// throttleArgs are the CL.THROTTLE parameters of every load scenario:
// max_burst 15, 30 per 60 s (T = 2 s), quantity 1 — redis-cell's README example.
var throttleArgs = []string{"15", "30", "60", "1"}

// workload is one redis-benchmark load shape.
type workload struct {
	clients  int
	pipeline int
	keyspace int // distinct random keys (user:__rand_int__); 0 = one hot key
}

func (w workload) String() string {
	keys := "hot key"
	if w.keyspace > 0 {
		keys = fmt.Sprintf("%d random keys", w.keyspace)
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
	// CPU during the run, in cores: the measured server, and everything else
	// on the machine except redis-benchmark itself (other servers, other
	// work) — the run's noise.
	ServerCores    float64
	ElsewhereCores float64
}

// benchmarkRunner runs redis-benchmark against one server at a time.
// seconds is the target duration of a measured run; each run is preceded by
// a short probe run (which also warms the server up) whose rate sizes -n.
type benchmarkRunner struct {
	seconds    float64
	probeFloor int // smallest probe -n
}

// measure runs the probe and then the measured run of w against s.
func (b benchmarkRunner) measure(ctx context.Context, s *server, w workload) (benchResult, error) {
	probeN := max(b.probeFloor, w.clients*w.pipeline*4)
	probe, err := runRedisBenchmark(ctx, s, w, probeN)
	if err != nil {
		return benchResult{}, fmt.Errorf("probe: %w", err)
	}
	n := int(math.Ceil(probe.RPS * b.seconds))
	// At least a few full pipelines per client, so every client gets going.
	n = max(n, w.clients*w.pipeline*4, 1000)
	return runRedisBenchmark(ctx, s, w, n)
}

// redisBenchmarkArgs is the redis-benchmark command line for n requests of
// w against s.
func redisBenchmarkArgs(s *server, w workload, n int) []string {
	args := []string{
		"-h", "127.0.0.1", "-p", strconv.Itoa(s.port),
		"-c", strconv.Itoa(w.clients), "-P", strconv.Itoa(w.pipeline),
		"-n", strconv.Itoa(n), "--csv",
	}
	key := "user:hot"
	if w.keyspace > 0 {
		args = append(args, "-r", strconv.Itoa(w.keyspace))
		key = "user:__rand_int__"
	}
	return append(args, s.throttleCommand(key, throttleArgs...)...)
}

// runRedisBenchmark runs redis-benchmark once and parses its CSV output. It
// blocks for the whole run; cancelling ctx kills redis-benchmark.
func runRedisBenchmark(ctx context.Context, s *server, w workload, n int) (benchResult, error) {
	args := redisBenchmarkArgs(s, w, n)
	cmd := exec.CommandContext(ctx, "redis-benchmark", args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	before, err := takeCPUSnapshot([]int{s.pid()})
	if err != nil {
		return benchResult{}, err
	}
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return benchResult{}, fmt.Errorf("redis-benchmark %v: %w: %s", args, err, stderr.String())
	}
	elapsed := time.Since(start)
	after, err := takeCPUSnapshot([]int{s.pid()})
	if err != nil {
		return benchResult{}, err
	}
	res, err := parseBenchmarkCSV(stdout.Bytes())
	if err != nil {
		return benchResult{}, fmt.Errorf("redis-benchmark against %s: %w (stderr: %s)", s.kind, err, stderr.String())
	}
	res.Requests, res.Elapsed = n, elapsed
	loadGenCPU := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	res.ServerCores, res.ElsewhereCores = cpuShares(before, after, s.pid(), loadGenCPU, elapsed)
	return res, nil
}

// parseBenchmarkCSV reads redis-benchmark --csv output: a header row naming
// the columns, then one row for the single test run.
func parseBenchmarkCSV(out []byte) (benchResult, error) {
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
