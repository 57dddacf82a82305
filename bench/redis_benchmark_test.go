package main

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

func Test_ParseBenchmarkCSV(t *testing.T) {
	const header = `"test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"` + "\n"
	tests := []struct {
		name    string
		in      string
		want    benchResult
		wantErr string
	}{
		{
			name: "redis-benchmark 7 output",
			in:   header + `"EVALSHA abc 1 user:__rand_int__ 15 30 60 1","116959.06","0.226","0.056","0.223","0.279","0.439","1.239"` + "\n",
			want: benchResult{RPS: 116959.06, AvgMs: 0.226, P50Ms: 0.223, P99Ms: 0.439, MaxMs: 1.239},
		},
		{
			name: "columns found by name, not position",
			in:   `"p99_latency_ms","rps","p50_latency_ms","avg_latency_ms","max_latency_ms"` + "\n" + `"2","100","1","1.5","3"` + "\n",
			want: benchResult{RPS: 100, AvgMs: 1.5, P50Ms: 1, P99Ms: 2, MaxMs: 3},
		},
		{
			name: "--cluster lists the masters first",
			in:   "Cluster has 3 master nodes:\n\nMaster 0: 40b3eab63f3f1d4fa48e09559401c5ed4efceaa6 127.0.0.1:27001\n\n" + header + `"CL.THROTTLE user:{tag}:__rand_int__ 15 30 60 1","9649.33","41.214","15.648","34.591","80.319","81.343","81.407"` + "\n",
			want: benchResult{RPS: 9649.33, AvgMs: 41.214, P50Ms: 34.591, P99Ms: 81.343, MaxMs: 81.407},
		},
		{name: "empty", in: "", wantErr: "0 rows"},
		{name: "header only", in: header, wantErr: "1 rows"},
		{name: "missing column", in: `"rps"` + "\n" + `"5"` + "\n", wantErr: `no "avg_latency_ms" column`},
		{name: "not a number", in: header + `"x","fast","0","0","0","0","0","0"` + "\n", wantErr: `column "rps"`},
		{name: "zero rps", in: header + `"x","0","0","0","0","0","0","0"` + "\n", wantErr: "the run failed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseBenchmarkCSV([]byte(tc.in))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// Test_RunRedisBenchmark_AgainstRedis runs the real redis-benchmark with the
// exact command lines bench uses (random keys and hot key) against
// redis-server with the script, so a change in its CSV or a script that
// errors shows up here rather than as a table of nonsense.
func Test_RunRedisBenchmark_AgainstRedis(t *testing.T) {
	needRedisBenchmark(t)
	s := startTestRedis(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := checkThrottle(ctx, s); err != nil {
		t.Fatal(err)
	}
	for _, w := range []workload{{clients: 4, pipeline: 1, keyspace: 1000}, {clients: 4, pipeline: 8, keyspace: 0}} {
		res, err := runRedisBenchmark(ctx, s, w, 2000)
		if err != nil {
			t.Fatalf("%s: %v", w, err)
		}
		// redis-benchmark's own CPU is measured (its rusage): the client column.
		if res.RPS <= 0 || res.P50Ms <= 0 || res.P99Ms < res.P50Ms || res.Requests != 2000 || res.ClientCores <= 0 || res.clientCPUPerRequestUs() <= 0 {
			t.Errorf("%s: implausible result %+v", w, res)
		}
	}
	// The hot key saw 2000 decisions (plus none elsewhere): it is exhausted,
	// but for the one token per 2 s (30 per 60 s) it regained since the run
	// ended: on a loaded machine the check may come seconds later.
	hotEnded := time.Now()
	c := dialTest(t, s)
	v, err := c.do(s.throttleCommand("user:hot", "15", "30", "60", "0")...)
	if err != nil {
		t.Fatal(err)
	}
	regained := int64(time.Since(hotEnded)/(2*time.Second)) + 1
	if got, err := throttleReply(v); err != nil || got[2] > regained {
		t.Errorf("hot key after the run: %s, want remaining at most %d", v, regained)
	}
	// A spread target (here the same server twice) runs one redis-benchmark
	// per node at once and adds their rates up.
	spread := target{kind: "spread", nodes: []*server{s, s}, members: []*server{s}}
	res, parts, err := runTarget(ctx, spread, workload{clients: 5, pipeline: 4, keyspace: 1000}, []int{3000, 2000})
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) != 2 || parts[0].Requests != 3000 || parts[1].Requests != 2000 || res.Requests != 5000 ||
		res.RPS != parts[0].RPS+parts[1].RPS || res.P99Ms != max(parts[0].P99Ms, parts[1].P99Ms) {
		t.Errorf("spread: result %+v from parts %+v", res, parts)
	}
}

func Test_ParseServersAndModes(t *testing.T) {
	servers := []struct {
		in      string
		want    []serverKind
		wantErr bool
	}{
		{in: "all", want: []serverKind{kindRedcell, kindRedisLua, kindRedisLuaFsync}},
		{in: "redis", want: []serverKind{kindRedisLua, kindRedisLuaFsync}},
		{in: "redis-lua-fsync,redcell", want: []serverKind{kindRedcell, kindRedisLuaFsync}},
		{in: "Redcell", want: []serverKind{kindRedcell}},
		{in: "memcached", wantErr: true},
	}
	for _, tc := range servers {
		got, err := parseServers(tc.in)
		if (err != nil) != tc.wantErr || !slices.Equal(got, tc.want) {
			t.Errorf("parseServers(%q) = %v, %v; want %v (error %v)", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
	modes := []struct {
		in      string
		want    []string
		wantErr bool
	}{
		{in: "compare", want: []string{"compare"}},
		{in: "all", want: allModes},
		{in: "memory,compare,memory", want: []string{"memory", "compare"}},
		{in: "cluster", want: []string{"cluster"}},
		{in: "fast", wantErr: true},
	}
	for _, tc := range modes {
		got, err := parseModes(tc.in)
		if (err != nil) != tc.wantErr || !slices.Equal(got, tc.want) {
			t.Errorf("parseModes(%q) = %v, %v; want %v (error %v)", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
	if !slices.Contains(allModes, "cluster") {
		t.Errorf("-mode all = %v, want the cluster mode in it", allModes)
	}
}

func Test_Formatting(t *testing.T) {
	tests := []struct{ got, want string }{
		{formatRPS(0), "0"},
		{formatRPS(999.6), "1,000"},
		{formatRPS(1234567.2), "1,234,567"},
		{formatRatio(0), "-"},
		{formatRatio(2.614), "2.61x"},
		{shellJoin([]string{"-mode", "compare", "-servers", "redis", "-tmp", "/a b"}), ` -mode compare -servers redis -tmp "/a b"`},
	}
	for i, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("case %d: got %q, want %q", i, tc.got, tc.want)
		}
	}
}

func Test_CPUShares(t *testing.T) {
	before := cpuSnapshot{machineBusy: 1000, procs: map[int]uint64{7: 100}}
	after := cpuSnapshot{machineBusy: 1300, procs: map[int]uint64{7: 200}} // 3 s busy, 1 s server
	server, elsewhere := cpuShares(before, after, []int{7}, 1500*time.Millisecond, 2*time.Second)
	if server != 0.5 || elsewhere != 0.25 {
		t.Errorf("server %v cores, elsewhere %v cores; want 0.5 and 0.25", server, elsewhere)
	}
	// Tick granularity can make the rest negative: clamp to zero.
	if _, elsewhere := cpuShares(before, after, []int{7}, 3*time.Second, 2*time.Second); elsewhere != 0 {
		t.Errorf("elsewhere %v, want 0", elsewhere)
	}
	snap, err := takeCPUSnapshot([]int{os.Getpid(), -1})
	if err != nil {
		t.Fatal(err)
	}
	if snap.machineBusy == 0 || snap.procs[-1] != 0 {
		t.Errorf("snapshot %+v: want machine ticks and 0 for a missing pid", snap)
	}
}

func Test_WaitForQuiet(t *testing.T) {
	ctx := context.Background()
	// Any machine is quieter than 1000 cores: returns after one window.
	waited, err := waitForQuiet(ctx, 1000, 10*time.Millisecond, 5*time.Second)
	if err != nil || waited >= 5*time.Second {
		t.Errorf("quiet machine: waited %v, err %v; want one window", waited, err)
	}
	// Nothing is quieter than -1 cores: gives up at the limit.
	waited, err = waitForQuiet(ctx, -1, 10*time.Millisecond, 50*time.Millisecond)
	if err != nil || waited < 50*time.Millisecond {
		t.Errorf("busy machine: waited %v, err %v; want the 50ms limit", waited, err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := waitForQuiet(cancelled, -1, 10*time.Millisecond, time.Minute); err == nil {
		t.Error("cancelled context: want an error")
	}
}
