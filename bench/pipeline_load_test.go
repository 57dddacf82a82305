package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// decodeCommands reads RESP arrays of bulk strings from b as the server
// would, through the bench's own RESP reader.
func decodeCommands(t *testing.T, b []byte) [][]string {
	t.Helper()
	c := &respConn{r: bufio.NewReader(bytes.NewReader(b))}
	var out [][]string
	for c.r.Buffered() > 0 || len(out) == 0 {
		v, err := c.read()
		if err != nil {
			t.Fatalf("decode %q: %v", b, err)
		}
		if v.Kind != '*' {
			t.Fatalf("not a command array: %s", v)
		}
		var cmd []string
		for _, e := range v.Array {
			if e.Kind != '$' {
				t.Fatalf("argument not a bulk string: %s", v)
			}
			cmd = append(cmd, e.Str)
		}
		out = append(out, cmd)
		if _, err := c.r.Peek(1); err != nil {
			break
		}
	}
	return out
}

// The hand-written encoding is byte for byte what respConn.send writes,
// and a decision is its shape's commands on one key.
func TestAppendDecisionEncodesTheShapes(t *testing.T) {
	key := appendKey(nil, "rl:", 42)
	if string(key) != "rl:000000000042" {
		t.Fatalf("key %q, want rl:000000000042 (redis-benchmark's 12 digits)", key)
	}
	const now = int64(1780000000123)
	for _, tc := range []struct {
		shape decisionShape
		want  [][]string
	}{
		{shapeCounter, [][]string{{"INCRBY", string(key), "1"}, {"EXPIRE", string(key), "60"}}},
		{shapeSlidingLog, [][]string{{"ZADD", string(key), "1780000000123", "m-1"}, {"ZREMRANGEBYSCORE", string(key), "-inf", "1779999940123"},
			{"ZCARD", string(key)}, {"EXPIRE", string(key), "60"}}},
		{shapeIncr, [][]string{{"INCRBY", string(key), "1"}}},
	} {
		got := appendDecision(nil, tc.shape, key, now, []byte("m-1"))
		var want bytes.Buffer
		w := &respConn{w: bufio.NewWriter(&want)}
		for _, cmd := range tc.want {
			w.send(cmd...)
		}
		w.w.Flush()
		if !bytes.Equal(got, want.Bytes()) {
			t.Errorf("%s: encoded %q, want %q", tc.shape.spec().name, got, want.Bytes())
		}
		if n := len(tc.shape.spec().commands); n != len(tc.want) || len(tc.shape.spec().minReply) != n {
			t.Errorf("%s: spec lists %d commands and %d reply bounds, the encoding sends %d", tc.shape.spec().name, n, len(tc.shape.spec().minReply), len(tc.want))
		}
	}
}

// A pipeline of depth P holds P decisions, each its commands on one
// key of the keyspace, and sliding-log members never repeat.
func TestBuildPipelineGeneratesPairsOnOneKey(t *testing.T) {
	c := &loadClient{id: 7, rng: rand.New(rand.NewPCG(1, 2))}
	spec := loadSpec{shape: shapeCounter, clients: 1, pipeline: 16, keyspace: 100}
	cmds := decodeCommands(t, c.buildPipeline(nil, spec, 1000))
	if len(cmds) != 32 {
		t.Fatalf("%d commands for -P 16 pairs, want 32", len(cmds))
	}
	keys := make(map[string]bool)
	for i := 0; i < len(cmds); i += 2 {
		incr, exp := cmds[i], cmds[i+1]
		if incr[0] != "INCRBY" || exp[0] != "EXPIRE" || incr[1] != exp[1] || incr[2] != "1" || exp[2] != "60" {
			t.Fatalf("decision %d is %q %q, want INCRBY k 1, EXPIRE k 60 on one key", i/2, incr, exp)
		}
		n, err := strconv.Atoi(strings.TrimPrefix(incr[1], "rl:"))
		if err != nil || n < 0 || n >= 100 || len(incr[1]) != len("rl:")+keyDigits {
			t.Fatalf("key %q outside the keyspace of 100", incr[1])
		}
		keys[incr[1]] = true
	}
	if len(keys) < 2 {
		t.Errorf("16 decisions on %d distinct keys: not random", len(keys))
	}

	spec = loadSpec{shape: shapeSlidingLog, clients: 1, pipeline: 16, keyspace: 100}
	members := make(map[string]bool)
	for range 2 { // two pipelines in the same millisecond
		cmds = decodeCommands(t, c.buildPipeline(nil, spec, 5000))
		if len(cmds) != 64 {
			t.Fatalf("%d commands for -P 16 sliding-log decisions, want 64", len(cmds))
		}
		for i := 0; i < len(cmds); i += 4 {
			zadd, trim, card, exp := cmds[i], cmds[i+1], cmds[i+2], cmds[i+3]
			if zadd[0] != "ZADD" || trim[0] != "ZREMRANGEBYSCORE" || card[0] != "ZCARD" || exp[0] != "EXPIRE" ||
				trim[1] != zadd[1] || card[1] != zadd[1] || exp[1] != zadd[1] || zadd[2] != "5000" || trim[3] != "-55000" {
				t.Fatalf("decision %q %q %q %q", zadd, trim, card, exp)
			}
			if members[zadd[3]] {
				t.Fatalf("member %q repeated", zadd[3])
			}
			members[zadd[3]] = true
		}
	}
}

func TestReadIntReply(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    int64
		unknown bool
		errText string
	}{
		{in: ":0\r\n", want: 0},
		{in: ":123456789\r\n", want: 123456789},
		{in: ":-2\r\n", want: -2},
		{in: "-ERR unknown command 'ZADD', with args beginning with: 'k' \r\n", unknown: true, errText: "error reply: ERR unknown command"},
		{in: "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", errText: "error reply: WRONGTYPE"},
		{in: "$1\r\n1\r\n", errText: "want an integer reply"},
		{in: ":12x\r\n", errText: "bad integer"},
		{in: ":\r\n", errText: "bad integer"},
		{in: ":5\n", errText: "bad line"},
		{in: ":5", errText: "read"},
	} {
		got, err := readIntReply(bufio.NewReader(strings.NewReader(tc.in)))
		if tc.errText == "" {
			if err != nil || got != tc.want {
				t.Errorf("%q: %d, %v; want %d", tc.in, got, err, tc.want)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.errText) {
			t.Errorf("%q: error %v, want one containing %q", tc.in, err, tc.errText)
		}
		if isUnknownCommand(err) != tc.unknown {
			t.Errorf("%q: isUnknownCommand = %v, want %v", tc.in, !tc.unknown, tc.unknown)
		}
	}
	if isUnknownCommand(errors.New("ERR unknown command")) {
		t.Error("a Go error (not a reply) taken for an unknown command")
	}
}

// startTestRedisArgs starts a bare redis-server (no scripts) with extra
// arguments, stopped by PID when the test ends.
func startTestRedisArgs(t *testing.T, extra ...string) *server {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("redis-server not found (CI=true): %v", err)
		}
		t.Skipf("redis-server not found: %v", err)
	}
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	s := &server{kind: kindRedisLua, port: port, dataDir: dir, logPath: dir + "/server.log", exited: make(chan struct{})}
	if err := s.launch("redis-server", append(redisArgs(port, dir, false), extra...), "Ready to accept connections"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.stop(); err != nil {
			t.Error(err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.waitReady(ctx, true, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	return s
}

// The load generator drives a real Redis with each shape, closed loop,
// and leaves the keys the shapes mean: counters with a 60 s TTL, sorted
// sets of unique members. Its sample hooks run once each, around the
// window.
func TestRunPipelineLoadAgainstRedis(t *testing.T) {
	s := startTestRedis(t)
	ctx := context.Background()
	for _, shape := range []decisionShape{shapeCounter, shapeSlidingLog, shapeIncr} {
		if err := checkShape(ctx, s.addr(), shape); err != nil {
			t.Fatalf("%s: check: %v", shape.spec().name, err)
		}
		var before, after int
		spec := loadSpec{shape: shape, clients: 4, pipeline: 8, keyspace: 50}
		run, err := runPipelineLoad(ctx, s.addr(), spec, 100*time.Millisecond, 300*time.Millisecond,
			func() error { before++; return nil }, func() error { after++; return nil })
		if err != nil {
			t.Fatalf("%s: %v", shape.spec().name, err)
		}
		if before != 1 || after != 1 {
			t.Errorf("%s: hooks ran %d and %d times, want once each", shape.spec().name, before, after)
		}
		if run.decisions == 0 || run.latencies.total != uint64(run.decisions) || run.window < 300*time.Millisecond ||
			run.latencies.quantile(0.5) <= 0 || run.latencies.quantile(0.99) < run.latencies.quantile(0.5) {
			t.Errorf("%s: %d decisions, %d latencies (p50 %v, p99 %v), window %v", shape.spec().name, run.decisions,
				run.latencies.total, run.latencies.quantile(0.5), run.latencies.quantile(0.99), run.window)
		}
	}
	c := dialTest(t, s)
	key := string(appendKey(nil, "rl:", 0))
	for i := range 50 { // some key of the 50 was hit
		key = string(appendKey(nil, "rl:", uint64(i)))
		if v, _ := c.do("EXISTS", key); v.Int == 1 {
			break
		}
	}
	if v, err := c.do("TTL", key); err != nil || v.Int < 55 || v.Int > 60 {
		t.Errorf("TTL of counter %s: %s %v, want ~60", key, v, err)
	}
	if v, err := c.do("ZCARD", "zl:check"); err != nil || v.Int != 1 {
		t.Errorf("ZCARD of the check key: %s %v, want 1", v, err)
	}
	if v, err := c.do("TYPE", string(appendKey(nil, "zl:", 3))); err != nil || v.Str != "zset" {
		t.Errorf("TYPE of a sliding-log key: %s %v, want zset", v, err)
	}
}

// A server without sorted sets (Redis with ZADD renamed away stands in for
// Redcell before they land) is told apart by checkShape, its memory row is
// "not available", and a server answering another error fails the run.
func TestMissingCommandsAreNotAvailable(t *testing.T) {
	s := startTestRedisArgs(t, "--rename-command", "ZADD", "")
	ctx := context.Background()
	if err := checkShape(ctx, s.addr(), shapeCounter); err != nil {
		t.Fatalf("counter on Redis: %v", err)
	}
	err := checkShape(ctx, s.addr(), shapeSlidingLog)
	if !isUnknownCommand(err) {
		t.Fatalf("sliding log without ZADD: %v, want an unknown command", err)
	}
	// Driven anyway, every client's first reply is an error: the run ends
	// with it, at once, rather than counting errors as decisions.
	start := time.Now()
	_, err = runPipelineLoad(ctx, s.addr(), loadSpec{shape: shapeSlidingLog, clients: 8, pipeline: 4, keyspace: 10}, 0, 10*time.Second,
		func() error { return nil }, func() error { return nil })
	if !isUnknownCommand(err) || time.Since(start) > 5*time.Second {
		t.Errorf("load without ZADD: %v after %v, want the unknown command at once", err, time.Since(start))
	}
	if got := unavailableReason(err); got != "ERR unknown command 'ZADD'" {
		t.Errorf("not available because %q, want the reply without its arguments", got)
	}
	r, err := measureDTMemory(ctx, s, 1, 100, 2)
	if err != nil || r.unavailable != "ERR unknown command 'ZADD'" {
		t.Fatalf("zset memory row without ZADD: %+v, %v; want not available", r, err)
	}
	r, err = measureDTMemory(ctx, s, 0, 2000, 2)
	if n, _ := strconv.Atoi(r.dbsize); err != nil || r.unavailable != "" || r.rssLoaded <= r.rssEmpty || n < 2001 {
		t.Fatalf("counter memory row: %+v, %v; want 2000 keys (and the check keys) loaded", r, err)
	}
	// A key of another type answers WRONGTYPE: not "not available" but an error.
	c := dialTest(t, s)
	if _, err := c.do("DEL", "rl:check"); err != nil {
		t.Fatal(err)
	}
	if v, err := c.do("SADD", "rl:check", "x"); err != nil || v.Int != 1 {
		t.Fatalf("SADD: %s %v", v, err)
	}
	if err := checkShape(ctx, s.addr(), shapeCounter); err == nil || isUnknownCommand(err) {
		t.Fatalf("counter on a set key: %v, want WRONGTYPE as a failure", err)
	}
}

// Buckets are exact to the µs below 1 ms and within 1.6 % above, up to
// hours; quantiles are by nearest rank over the merged counts.
func TestLatencyHistogram(t *testing.T) {
	prev := -1
	for _, us := range []uint64{0, 1, 999, 1023, 1024, 1025, 1500, 4096, 50_000, 1_000_000, 30_000_000, 1 << 39} {
		i := histBucket(us)
		if i < prev {
			t.Fatalf("bucket of %d µs is %d, below the previous %d", us, i, prev)
		}
		prev = i
		got := histValue(i)
		if us < histLinear && got != float64(us)+0.5 {
			t.Errorf("%d µs reads back as %v", us, got)
		}
		if us >= histLinear && (got < float64(us)*0.984 || got > float64(us)*1.016) {
			t.Errorf("%d µs reads back as %v, beyond 1.6 %%", us, got)
		}
	}
	if histBucket(1<<62) != len(latencyHistogram{}.counts)-1 {
		t.Error("a latency beyond the range is not in the last bucket")
	}
	var a, b latencyHistogram
	for i := 1; i <= 98; i++ {
		a.record(time.Duration(i) * time.Microsecond)
	}
	b.record(100 * time.Millisecond)
	b.record(200 * time.Millisecond)
	a.merge(&b)
	if a.total != 100 {
		t.Fatalf("total %d after merging, want 100", a.total)
	}
	if got := a.quantile(0.5); got != 50500*time.Nanosecond {
		t.Errorf("p50 %v, want 50.5µs (the 50th of 1..98 µs, mid-bucket)", got)
	}
	if got := a.quantile(0.99); got < 98*time.Millisecond || got > 102*time.Millisecond {
		t.Errorf("p99 %v, want ~100ms (the 99th of 100)", got)
	}
	if got := a.quantile(1); got < 196*time.Millisecond || got > 204*time.Millisecond {
		t.Errorf("max %v, want ~200ms", got)
	}
	var empty latencyHistogram
	if empty.quantile(0.5) != 0 {
		t.Error("quantile of nothing")
	}
}

// Once its buffers have grown, the client allocates nothing per pipeline:
// building one, parsing its replies and counting its latencies.
func TestClientLoopDoesNotAllocate(t *testing.T) {
	c := &loadClient{id: 1, rng: rand.New(rand.NewPCG(3, 4))}
	spec := loadSpec{shape: shapeSlidingLog, clients: 1, pipeline: 16, keyspace: 100000}
	replies := strings.Repeat(":1\r\n", 64)
	r := bufio.NewReaderSize(strings.NewReader(""), 4096)
	c.buf = c.buildPipeline(c.buf[:0], spec, 1000)
	var lat latencyHistogram
	allocs := testing.AllocsPerRun(100, func() {
		c.buf = c.buildPipeline(c.buf[:0], spec, 1000)
		r.Reset(strings.NewReader(replies))
		for range 64 {
			if _, err := readIntReply(r); err != nil {
				t.Fatal(err)
			}
		}
		lat.record(time.Millisecond)
	})
	if allocs > 1 { // the strings.Reader handed to Reset
		t.Errorf("%v allocations per pipeline, want none of the client's own", allocs)
	}
}

// A pipeline larger than the socket takes at once is written in parts as
// the socket drains (EPOLLOUT), and its replies arrive over many reads.
func TestEventLoopWritesPipelinesInParts(t *testing.T) {
	s := startTestRedis(t)
	spec := loadSpec{shape: shapeSlidingLog, clients: 2, pipeline: 20000, keyspace: 1000}
	l, err := newEventLoop(s.addr(), spec)
	if err != nil {
		t.Fatal(err)
	}
	defer l.close()
	l.phase.Store(phaseMeasure)
	done := make(chan error, 1)
	go func() { done <- l.run(context.Background()) }()
	deadline := time.Now().Add(30 * time.Second)
	for l.done.Load() < 2*20000 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	l.phase.Store(phaseStop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := l.done.Load(); n < 2*20000 || l.lat.total != uint64(n) {
		t.Fatalf("%d decisions, %d latencies, want every pipeline of both clients answered", n, l.lat.total)
	}
	if l.outWaits == 0 {
		t.Errorf("a %d-byte pipeline went out without waiting for the socket once", len(l.clients[0].buf))
	}
}
