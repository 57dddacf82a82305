package main

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// Test_LimiterScripts_WallClock drives tokenbucket.lua and slidinglog.lua
// on a real redis-server with the load arguments: a fresh key gets the
// reply the bench check expects, the 16 allowed calls count down, the 17th
// is limited with a wait in the right range, and the keys carry a PTTL and
// the Redis type the script uses. Time is Redis's wall clock, so the waits
// are checked as ranges wide enough for a slow machine (the calls are
// milliseconds apart; a token takes 2 s, the window is 60 s).
func Test_LimiterScripts_WallClock(t *testing.T) {
	s := startTestRedis(t)
	c := dialTest(t, s)
	call := func(f family, key string, args ...string) [5]int64 {
		t.Helper()
		v, err := c.do(s.limiterCommand(f, key, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		got, err := throttleReply(v)
		if err != nil {
			t.Fatalf("%s %s: %v", families[f].command, key, err)
		}
		return got
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := checkFamilies(ctx, s, "check", allFamilies); err != nil {
		t.Fatal(err)
	}

	const slack = 1000 // ms of wall-clock time the test may lose between calls
	for k := int64(1); k <= 16; k++ {
		got := call(familyTB, "tb", families[familyTB].args...)
		if got[0] != 0 || got[1] != 16 || got[2] != 16-k || got[3] != -1 || got[4] > k*2000 || got[4] < k*2000-slack {
			t.Fatalf("TB take %d: %v, want [0 16 %d -1 ~%d]", k, got, 16-k, k*2000)
		}
	}
	if got := call(familyTB, "tb", families[familyTB].args...); got[0] != 1 || got[2] != 0 || got[3] < 1 || got[3] > 2000 || got[4] > 32000 || got[4] < 32000-slack {
		t.Errorf("TB take 17: %v, want limited, remaining 0, retry in [1, 2000], reset ~32000", got)
	}
	if got := call(familyTB, "tb2", "16", "30", "60000", "17"); got[0] != 1 || got[2] != 16 || got[3] != -1 || got[4] != 0 {
		t.Errorf("TB cost above capacity: %v, want [1 16 16 -1 0]", got)
	}
	if v, err := c.do("EXISTS", "tb2"); err != nil || v.Int != 0 {
		t.Errorf("TB cost above capacity left a key: EXISTS %s %v", v, err)
	}
	if v, err := c.do("TYPE", "tb"); err != nil || v.Str != "hash" {
		t.Errorf("TYPE of a TB key: %s %v, want hash", v, err)
	}
	if v, err := c.do("PTTL", "tb"); err != nil || v.Int < 32000-slack || v.Int > 32000 {
		t.Errorf("PTTL of a TB key: %s %v, want ~32000", v, err)
	}

	for k := int64(1); k <= 16; k++ {
		if got := call(familySL, "sl", families[familySL].args...); got != [5]int64{0, 16, 16 - k, -1, 60000} {
			t.Fatalf("SL hit %d: %v, want [0 16 %d -1 60000]", k, got, 16-k)
		}
	}
	got := call(familySL, "sl", families[familySL].args...)
	if got[0] != 1 || got[2] != 0 || got[3] < 60000-slack || got[3] > 60000 || got[4] < 60000-slack || got[4] > 60000 || got[4] < got[3] {
		t.Errorf("SL hit 17: %v, want limited, remaining 0, retry and reset ~60000", got)
	}
	// A denied hit records nothing (DENIED FREE, SL.HIT's default), and
	// each allowed hit is its own member even within one microsecond.
	if v, err := c.do("ZCARD", "sl"); err != nil || v.Int != 16 {
		t.Errorf("ZCARD of the SL key: %s %v, want 16", v, err)
	}
	if v, err := c.do("PTTL", "sl"); err != nil || v.Int < 60000-slack || v.Int > 60000 {
		t.Errorf("PTTL of an SL key: %s %v, want ~60000", v, err)
	}
	// Hits at one instant: a pipeline of 16 on a fresh key, which Redis runs
	// back to back (often within one microsecond of TIME).
	for range 16 {
		c.send(s.limiterCommand(familySL, "burst", families[familySL].args...)...)
	}
	if err := c.flush(); err != nil {
		t.Fatal(err)
	}
	for k := range 16 {
		v, err := c.read()
		if err != nil {
			t.Fatal(err)
		}
		if got, err := throttleReply(v); err != nil || got[0] != 0 || got[2] != int64(15-k) {
			t.Fatalf("SL pipelined hit %d: %s %v", k+1, v, err)
		}
	}
	if v, err := c.do("ZCARD", "burst"); err != nil || v.Int != 16 {
		t.Errorf("ZCARD after 16 pipelined hits: %s %v, want 16", v, err)
	}
}

// Test_RunRedisBenchmark_Families runs redis-benchmark with the TB and SL
// workloads' command lines against Redis and checks the keys they left: a
// script that errored would be counted as requests by redis-benchmark.
func Test_RunRedisBenchmark_Families(t *testing.T) {
	needRedisBenchmark(t)
	s := startTestRedis(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := dialTest(t, s)
	for _, tc := range []struct {
		f        family
		typ      string
		prefix   string
		wantArgs string
	}{
		{familyTB, "hash", "tb:", "EVALSHA " + s.shas[familyTB] + " 1 tb:__rand_int__ 16 30 60000"},
		{familySL, "zset", "sl:", "EVALSHA " + s.shas[familySL] + " 1 sl:__rand_int__ 16 60000"},
	} {
		if _, err := c.do("FLUSHALL"); err != nil {
			t.Fatal(err)
		}
		w := workload{family: tc.f, clients: 4, pipeline: 8, keyspace: 50}
		if args := strings.Join(redisBenchmarkArgs(s, w, 2000), " "); !strings.HasSuffix(args, tc.wantArgs) {
			t.Errorf("%s: redis-benchmark %s, want it to end in %s", w, args, tc.wantArgs)
		}
		res, err := runRedisBenchmark(ctx, s, w, 2000)
		if err != nil {
			t.Fatalf("%s: %v", w, err)
		}
		if res.RPS <= 0 || res.Requests != 2000 {
			t.Errorf("%s: implausible result %+v", w, res)
		}
		// 2000 calls over 50 keys: every key was used and is exhausted.
		keys, err := c.do("KEYS", tc.prefix+"*")
		if err != nil || len(keys.Array) != 50 {
			t.Fatalf("%s: KEYS %s* %s %v, want 50 keys", w, tc.prefix, keys, err)
		}
		key := keys.Array[0].Str
		if v, err := c.do("TYPE", key); err != nil || v.Str != tc.typ {
			t.Errorf("%s: TYPE %s = %s %v, want %s", w, key, v, err, tc.typ)
		}
		v, err := c.do(s.limiterCommand(tc.f, key, families[tc.f].args...)...)
		if got, rerr := throttleReply(v); err != nil || rerr != nil || got[0] != 1 || got[2] != 0 {
			t.Errorf("%s: %s after the run: %s, want limited with remaining 0", w, key, v)
		}
	}
}

func Test_LimiterWorkloadsAndFamilies(t *testing.T) {
	var names []string
	for _, w := range limiterWorkloads {
		names = append(names, w.String())
	}
	want := []string{
		"TB.TAKE, 100000 random keys, -c 50 -P 16",
		"TB.TAKE, 100000 random keys, -c 50 -P 1",
		"SL.HIT, 100000 random keys, -c 50 -P 16",
		"SL.HIT, 100000 random keys, -c 50 -P 1",
	}
	if !slices.Equal(names, want) {
		t.Errorf("limiter workloads %q, want %q", names, want)
	}
	if got := (workload{clients: 50, pipeline: 16, keyspace: 100000}).String(); got != "100000 random keys, -c 50 -P 16" {
		t.Errorf("a CL workload is named %q; the comparison's names must not change", got)
	}
	// Ratios are per family: TB divides by TB's script, SL by SL's.
	tb, sl := limiterWorkloads[0], limiterWorkloads[2]
	ms := []measurement{
		{work: tb, kind: kindRedcell, median: benchResult{RPS: 300}},
		{work: tb, kind: kindRedisLua, median: benchResult{RPS: 100}},
		{work: sl, kind: kindRedcell, median: benchResult{RPS: 300}},
		{work: sl, kind: kindRedisLua, median: benchResult{RPS: 50}},
	}
	if r := ratioToRedisLua(ms, ms[0]); r != 3 {
		t.Errorf("TB ratio %v, want 3", r)
	}
	if r := ratioToRedisLua(ms, ms[2]); r != 6 {
		t.Errorf("SL ratio %v, want 6", r)
	}
	for _, tc := range []struct {
		in      string
		want    []family
		wantErr bool
	}{
		{in: "all", want: nativeFamilies},
		{in: "rr,cl", want: []family{familyCL, familyRR}},
		{in: "sl,TB", want: []family{familyTB, familySL}},
		{in: "cl", want: []family{familyCL}},
		{in: "fw", wantErr: true},
	} {
		got, err := parseFamilies(tc.in)
		if (err != nil) != tc.wantErr || !slices.Equal(got, tc.want) {
			t.Errorf("parseFamilies(%q) = %v, %v; want %v (error %v)", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
	for _, m := range []string{"limiters", "scripts"} {
		if !slices.Contains(allModes, m) {
			t.Errorf("-mode all = %v, want the %s mode in it", allModes, m)
		}
	}
}

// Test_MemoryMarkdown_Families: a row per family and server; the churn
// series only for the CL load that it follows.
func Test_MemoryMarkdown_Families(t *testing.T) {
	opts := memoryOptions{keys: 1000, churnFor: time.Second, churnRate: 10, conns: 4, families: allFamilies, slHits: 10}
	rs := []memoryResult{
		{kind: kindRedcell, family: familyCL, hits: 1, keys: 1000, rssEmpty: 1 << 20, rssLoaded: 2 << 20, churn: []rssSample{{rss: 2 << 20, keys: 1000}}},
		{kind: kindRedcell, family: familyTB, hits: 1, keys: 1000, rssEmpty: 1 << 20, rssLoaded: 3 << 20},
		{kind: kindRedcell, family: familySL, hits: 10, keys: 1000, rssEmpty: 1 << 20, rssLoaded: 4 << 20},
	}
	md := memoryMarkdown(rs, opts)
	for _, want := range []string{
		"| CL.THROTTLE | Redcell | 1.0 MiB | 2.0 MiB | 1049 |",
		"| TB.TAKE | Redcell | 1.0 MiB | 3.0 MiB | 2097 |",
		"| SL.HIT | Redcell | 1.0 MiB | 4.0 MiB | 3146 |",
		"SL.HIT `<key> 10 3600000` ×10 hits per key",
		"bench/tokenbucket.lua",
		"* Redcell: 2/1k",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("memory markdown lacks %q:\n%s", want, md)
		}
	}
	if strings.Count(md, "* Redcell") != 1 {
		t.Errorf("churn series for a family without churn:\n%s", md)
	}
}

// needRedisBenchmark skips the test without redis-benchmark, or fails it
// under CI=true, where .ci/run installs it.
func needRedisBenchmark(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("redis-benchmark"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("redis-benchmark not found (CI=true): %v", err)
		}
		t.Skipf("redis-benchmark not found: %v", err)
	}
}
