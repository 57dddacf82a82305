package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// -fsync-delays: Go durations, 0 for none, distinct, not negative; the
// mode runs only when named, never in all.
func TestSlowDiskFlags(t *testing.T) {
	o, err := parseFlags([]string{"-mode", "slowdisk"}, io.Discard)
	if err != nil || !slices.Equal(o.modes, []string{"slowdisk"}) ||
		!slices.Equal(o.slowDisk.delays, []time.Duration{0, 500 * time.Microsecond, time.Millisecond, 2 * time.Millisecond}) {
		t.Fatalf("-mode slowdisk: modes %v delays %v, %v", o.modes, o.slowDisk.delays, err)
	}
	if o, _ := parseFlags([]string{"-mode", "all"}, io.Discard); slices.Contains(o.modes, slowDiskMode) {
		t.Errorf("all includes slowdisk: %v", o.modes)
	}
	if o, err := parseFlags([]string{"-mode", "slowdisk", "-fsync-delays", "0, 5ms"}, io.Discard); err != nil || !slices.Equal(o.slowDisk.delays, []time.Duration{0, 5 * time.Millisecond}) {
		t.Errorf("-fsync-delays '0, 5ms': %v, %v", o.slowDisk.delays, err)
	}
	for _, bad := range []string{"1", "-1ms", "1ms,1ms", "", "soon"} {
		if _, err := parseFlags([]string{"-fsync-delays", bad}, io.Discard); err == nil {
			t.Errorf("-fsync-delays %q accepted", bad)
		}
	}
}

// The mode's Redcell rows: for each delay Redcell, then each variant.
func TestSlowDiskServersInOrder(t *testing.T) {
	var got []string
	for _, sd := range slowDiskServers([]time.Duration{0, 500 * time.Microsecond}, []variant{{name: "direct"}}) {
		got = append(got, string(sd.kind()))
	}
	want := []string{"Redcell (fsync +0 ms)", "Redcell[direct] (fsync +0 ms)", "Redcell (fsync +0.5 ms)", "Redcell[direct] (fsync +0.5 ms)"}
	if !slices.Equal(got, want) {
		t.Errorf("kinds %q, want %q", got, want)
	}
}

// 50 clients that do not pipeline, one sync at a time of 2.5 ms each: at
// most 50 requests per sync, 400 syncs a second.
func TestSlowDiskBound(t *testing.T) {
	if got := slowDiskBound(50, 2.5); got != 20000 {
		t.Errorf("bound of 50 clients at 2.5 ms = %v, want 20000", got)
	}
	if got := slowDiskBound(50, 0); got != 0 {
		t.Errorf("bound without a sync time = %v, want 0", got)
	}
}

// The table: each Redcell row's delay, req/fsync, mean sync, ratios to both
// Redis servers, the bound and the share of it at -P 1 only; the Redis rows
// marked as not slowed; a row whose syncs were faster than its delay
// flagged; the Redcell rows under their base kind for the variants' table.
func TestSlowDiskMarkdown(t *testing.T) {
	p1 := workload{clients: 50, pipeline: 1, keyspace: 100000}
	p16 := workload{clients: 50, pipeline: 16, keyspace: 100000}
	servers := slowDiskServers([]time.Duration{0, 2 * time.Millisecond}, []variant{{name: "direct"}})
	syncs := func(ops, fsyncs, syncUs uint64) *batching {
		return &batching{ops: ops, fsyncs: fsyncs, stages: stageSums{syncUs: syncUs, syncs: fsyncs}}
	}
	ms := []measurement{
		{work: p1, kind: servers[0].kind(), median: benchResult{RPS: 40000, ServerCores: 0.8, Batching: syncs(40000, 2000, 800_000)}},
		{work: p1, kind: servers[1].kind(), median: benchResult{RPS: 42000, ServerCores: 0.7, Batching: syncs(42000, 2100, 840_000)}},
		{work: p1, kind: servers[2].kind(), median: benchResult{RPS: 15000, ServerCores: 0.3, Batching: syncs(15000, 400, 1_000_000)}},
		// Its syncs took 1 ms on average with 2 ms injected: not the slow-disk build.
		{work: p1, kind: servers[3].kind(), median: benchResult{RPS: 30000, ServerCores: 0.3, Batching: syncs(30000, 1000, 1_000_000)}},
		{work: p1, kind: kindRedisLua, median: benchResult{RPS: 30000, ServerCores: 0.9}},
		{work: p1, kind: kindRedisLuaFsync, median: benchResult{RPS: 15000, ServerCores: 0.9}},
		{work: p16, kind: servers[2].kind(), median: benchResult{RPS: 200000, ServerCores: 0.9, Batching: syncs(200000, 400, 1_000_000)}},
		{work: p16, kind: kindRedisLua, median: benchResult{RPS: 50000, ServerCores: 0.9}},
	}
	md := slowDiskMarkdown(ms, servers)
	for _, want := range []string{
		// 0.4 ms per sync: bound 50 / 0.4 ms = 125,000.
		fmt.Sprintf("| %s | Redcell | +0 ms | 40,000 | 0.000 | 0.000 | 20.0 | 20.0 | 0.400 | 1.33x | 2.67x | 125,000 | 32 %% |", p1),
		// 2.5 ms per sync: bound 20,000, 75 %.
		fmt.Sprintf("| %s | Redcell | +2 ms | 15,000 | 0.000 | 0.000 | 20.0 | 37.5 | 2.500 | 0.50x | 1.00x | 20,000 | 75 %% |", p1),
		fmt.Sprintf("| %s | Redis-Lua-fsync | not slowed | 15,000 |", p1),
		// No bound when pipelined.
		fmt.Sprintf("| %s | Redcell | +2 ms | 200,000 | 0.000 | 0.000 | 4.5 | 500.0 | 2.500 | 4.00x | - | - | - |", p16),
		"**Redis-Lua and Redis-Lua-fsync are not slowed**",
		"**WARNING: a mean WAL sync below the injected delay** (Redcell[direct] (fsync +2 ms) at " + p1.String() + ")",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("slowdisk table without\n%s\n%s", want, md)
		}
	}
	rows := summaryOfSlowDisk(ms, servers)
	if len(rows) != 5 || rows[1].kind != "Redcell[direct]" || rows[1].scenario != p1.String()+", fsync +0 ms" || rows[4].scenario != p16.String()+", fsync +2 ms" {
		t.Errorf("summary rows %+v", rows)
	}
	if vt := variantsMarkdown(rows, []serverKind{"Redcell[direct]"}); !strings.Contains(vt, "| "+p1.String()+", fsync +0 ms | 40,000 | 42,000 | 1.05x |") {
		t.Errorf("variants table of the slowdisk rows:\n%s", vt)
	}
}

// The slow-disk build really delays every WAL sync: nodes of that build
// with REDCELL_SLOWDISK_FSYNC 0 and 2ms, with ordinary and with direct
// syncs (--direct-wal-sync: the RawSyscall path), make the same decisions
// one at a time, interleaved, and INFO's mean WAL sync of each delayed
// node is at least 2 ms above that of the undelayed node syncing the same
// way. The data dirs are on tmpfs where there is one (/dev/shm): what is
// tested is the delay, and a real disk's syncs vary between two nodes by
// more than the margin nanosleep leaves above 2 ms (tens of µs of timer
// slack); on a disk the comparison can fail by that noise alone.
//
// It runs only with REDCELL_BENCH_E2E=1: it builds the server a second
// time, with the tag, which takes minutes of CPU on a cold build cache.
func TestSlowDiskBuildDelaysWALSyncs(t *testing.T) {
	needBenchE2E(t, "builds the server with -tags redcell_slowdisk and starts four nodes")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	root, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatal(err)
	}
	parent := t.TempDir()
	if filesystemType("/dev/shm") == "tmpfs" {
		if parent, err = os.MkdirTemp("/dev/shm", "redcell-slowdisk-test-"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(parent) })
	}
	f, err := newFleet(strings.TrimSuffix(strings.TrimSpace(string(root)), "/go.mod"), parent)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := f.closeAll(); err != nil {
			t.Error(err)
		}
	})
	const delay = 2 * time.Millisecond
	// Pairs: undelayed, delayed.
	kinds := []struct {
		sd    slowDiskServer
		flags []string
	}{
		{slowDiskServer{base: kindRedcell, delay: 0}, nil},
		{slowDiskServer{base: kindRedcell, delay: delay}, nil},
		{slowDiskServer{base: "Redcell[direct]", delay: 0}, []string{"--direct-wal-sync"}},
		{slowDiskServer{base: "Redcell[direct]", delay: delay}, []string{"--direct-wal-sync"}},
	}
	var servers []*server
	for _, k := range kinds {
		f.addRedcell(k.sd.kind(), redcellSpec{slowDisk: true, flags: k.flags, env: []string{slowDiskEnv + "=" + k.sd.delay.String()}})
		s, err := f.start(ctx, k.sd.kind())
		if err != nil {
			t.Fatal(err)
		}
		servers = append(servers, s)
	}
	before := make([]map[string]string, len(servers))
	for i, s := range servers {
		if before[i], err = infoSections(ctx, s, "persistence"); err != nil {
			t.Fatal(err)
		}
	}
	conns := make([]*respConn, len(servers))
	for i, s := range servers {
		if conns[i], err = dialRESP(ctx, s.addr()); err != nil {
			t.Fatal(err)
		}
		defer conns[i].Close()
	}
	const decisions = 150
	for n := range decisions {
		for i, c := range conns {
			c.setDeadline(time.Now().Add(5 * time.Second))
			if _, err := c.do(servers[i].throttleCommand(fmt.Sprintf("slowdisk:%d", n), throttleArgs...)...); err != nil {
				t.Fatalf("%s: %v", servers[i].kind, err)
			}
		}
	}
	mean := make([]float64, len(servers))
	for i, s := range servers {
		after, err := infoSections(ctx, s, "persistence")
		if err != nil {
			t.Fatal(err)
		}
		d := parseStageSums(after).since(parseStageSums(before[i]))
		ms, ok := d.syncMs()
		if !ok || d.syncs < decisions {
			t.Fatalf("%s: %d WAL syncs for %d decisions, %v ms each", s.kind, d.syncs, decisions, ms)
		}
		mean[i] = ms
		t.Logf("%s: %d syncs, mean %.3f ms (direct %s, ordinary %s)", s.kind, d.syncs, ms,
			after["log_wal_syncs_direct"], after["log_wal_syncs_ordinary"])
	}
	for i := 1; i < len(servers); i += 2 {
		if rise := mean[i] - mean[i-1]; rise < msFloat(delay) {
			t.Errorf("%s: mean WAL sync %.3f ms, %.3f ms above %s's %.3f; want at least %v more", servers[i].kind, mean[i], rise, servers[i-1].kind, mean[i-1], delay)
		}
	}
	// Direct syncs are suspended for 10 s after one slower than 20 ms (a
	// busy machine's), so not every sync need be direct; some must be.
	for i, s := range servers[2:] {
		after, err := infoSections(ctx, s, "persistence")
		if err != nil {
			t.Fatal(err)
		}
		if n := parseUintField(after["log_wal_syncs_direct"]) - parseUintField(before[2+i]["log_wal_syncs_direct"]); n == 0 {
			t.Errorf("%s made no direct sync: the RawSyscall path went untested", s.kind)
		}
	}
}
