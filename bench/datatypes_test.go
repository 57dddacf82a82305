package main

import (
	"io"
	"slices"
	"strings"
	"testing"
)

// The mode is in "all", and its flags parse.
func TestDatatypesModeIsPartOfAll(t *testing.T) {
	if !slices.Contains(allModes, "datatypes") {
		t.Fatalf("-mode all = %v, want datatypes in it", allModes)
	}
	o, err := parseFlags([]string{"-mode", "datatypes", "-quick"}, io.Discard)
	if err != nil || !slices.Equal(o.modes, []string{"datatypes"}) || o.memory.keys != 100000 {
		t.Fatalf("-mode datatypes -quick: %+v, %v", o, err)
	}
}

// The scenarios are issue 33's: 50 clients, 100k random keys, the counter
// at -P 16 and -P 1 and the sliding log at -P 16, with their targets.
func TestDatatypesScenariosAndTargets(t *testing.T) {
	want := map[loadSpec][]dtTarget{
		{shape: shapeCounter, clients: 50, pipeline: 16, keyspace: 100000}:    {{kindRedisLua, 0.7}, {kindRedisLuaFsync, 1.0}},
		{shape: shapeCounter, clients: 50, pipeline: 1, keyspace: 100000}:     {{kindRedisLua, 0.9}},
		{shape: shapeSlidingLog, clients: 50, pipeline: 16, keyspace: 100000}: {{kindRedisLua, 0.7}},
	}
	if len(datatypesScenarios) != len(want) {
		t.Fatalf("%d scenarios, want %d", len(datatypesScenarios), len(want))
	}
	for _, sc := range datatypesScenarios {
		if !slices.Equal(sc.targets, want[sc.spec]) {
			t.Errorf("%s: targets %v, want %v", sc.spec, sc.targets, want[sc.spec])
		}
	}
	for _, spec := range clientCheckSpecs {
		w, err := redisBenchmarkWorkload(spec)
		if err != nil {
			t.Fatal(err)
		}
		s := &server{kind: kindRedisLua, port: 6379}
		args := redisBenchmarkArgs(s, w, 1000)
		if !slices.Equal(args[len(args)-5:], []string{"-r", "100000", "INCRBY", "in:__rand_int__", "1"}) {
			t.Errorf("redis-benchmark args %q, want -r 100000 INCRBY in:__rand_int__ 1 at the end", args)
		}
	}
	if _, err := redisBenchmarkWorkload(datatypesScenarios[0].spec); err == nil {
		t.Error("redis-benchmark given a two-command decision")
	}
}

// The table counts decisions, gives commands beside them, divides by
// Redis and Redis-fsync of the same load, states each target, shows a
// missing command as "not available", and lists the client check apart.
func TestDatatypesMarkdown(t *testing.T) {
	p16, p1, zl := datatypesScenarios[0].spec, datatypesScenarios[1].spec, datatypesScenarios[2].spec
	check := clientCheckSpecs[0]
	row := func(spec loadSpec, kind serverKind, client string, dps, cores float64) dtRow {
		r := dtResult{DPS: dps, P50Ms: 1, P99Ms: 2, ServerCores: cores, ServerSysCores: cores / 4, ClientCores: 0.5}
		return dtRow{spec: spec, kind: kind, client: client, runs: []dtResult{r}, median: r}
	}
	redcellP16 := row(p16, kindRedcell, clientGo, 80_000, 1.6)
	redcellP16.median.Batching = &batching{ops: 1000, fsyncs: 10, stages: stageSums{batches: 100, queueUs: 10_000, logUs: 50_000, quorumUs: 20_000, syncUs: 30_000, syncs: 100}}
	rows := []dtRow{
		redcellP16,
		row(p16, kindRedisLua, clientGo, 100_000, 0.9),
		row(p16, kindRedisLuaFsync, clientGo, 90_000, 0.9),
		row(p1, kindRedcell, clientGo, 20_000, 1),
		row(p1, kindRedisLua, clientGo, 40_000, 0.5),
		{spec: zl, kind: kindRedcell, client: clientGo, unavailable: "error reply: ERR unknown command 'ZADD', with args beginning with: 'zl:check' "},
		row(zl, kindRedisLua, clientGo, 50_000, 0.9),
		row(check, kindRedisLua, clientGo, 60_000, 0.6),
		row(check, kindRedisLua, clientRedisBenchmark, 58_000, 0.6),
	}
	rows[len(rows)-1].median.ServerSysCores = -1
	md := datatypesMarkdown(rows)
	for _, want := range []string{
		// 80k decisions = 160k commands; 0.80× Redis (target 0.7 met), 0.89× Redis-fsync (1.0 not met);
		// 1.6 cores / 160k commands = 10 µs, a quarter of it kernel; 1,000 ops per 10 fsyncs.
		"| INCRBY + EXPIRE | -c 50 -P 16 | Redcell | 80,000 | 160,000 | 1.000 | 2.000 | 0.80x | 0.89x | ≥ 0.70x Redis: **met**; ≥ 1.00x Redis-fsync: **not met** | 10.00 | 25 % | 3.12 | 100.0 |",
		"| INCRBY + EXPIRE | -c 50 -P 16 | Redis | 100,000 | 200,000 | 1.000 | 2.000 | 1.00x | 1.11x | - | 4.50 |",
		"| INCRBY + EXPIRE | -c 50 -P 1 | Redcell | 20,000 | 40,000 | 1.000 | 2.000 | 0.50x | - | ≥ 0.90x Redis: **not met** |",
		"| ZADD + ZREMRANGEBYSCORE + ZCARD + EXPIRE | -c 50 -P 16 | Redcell | not available (`error reply: ERR unknown command 'ZADD', with args beginning with: 'zl:check' `) | | | | | | not available |",
		"| ZADD + ZREMRANGEBYSCORE + ZCARD + EXPIRE | -c 50 -P 16 | Redis | 50,000 | 200,000 |",
		// The stage table: cycle 50 × 16 ÷ 80k = 10 ms; 0.1 queued, 0.5 log, 0.3 sync, 0.2 quorum, 9.2 outside.
		"| INCRBY + EXPIRE, -c 50 -P 16 | Redcell | 10.000 | 0.100 | 0.500 | 0.300 | 0.200 | 9.200 |",
		"| -c 50 -P 1 | Go client | 60,000 | 1.000 | 2.000 | 0.50 | 8.33 | 10.00 |",
		"| -c 50 -P 1 | redis-benchmark | 58,000 |",
		"clients × P ÷ decisions/s",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("table without %q:\n%s", want, md)
		}
	}
	if strings.Count(md, "INCRBY alone") != 0 || strings.Count(md, "| Redis-fsync |") != 1 {
		t.Errorf("the client check's rows leaked into the main table, or rows are missing:\n%s", md)
	}
}

func TestDatatypesMemoryMarkdown(t *testing.T) {
	rs := []dtMemResult{
		{shape: 0, kind: kindRedcell, keys: 1000, rssEmpty: 1 << 20, rssLoaded: 1<<20 + 100_000, dbsize: "1001"},
		{shape: 0, kind: kindRedisLua, keys: 1000, rssEmpty: 1 << 20, rssLoaded: 1<<20 + 120_000, dbsize: "1001"},
		{shape: 1, kind: kindRedcell, keys: 1000, unavailable: "error reply: ERR unknown command 'ZADD'"},
		{shape: 1, kind: kindRedisLua, keys: 1000, rssEmpty: 1 << 20, rssLoaded: 1<<20 + 400_000, dbsize: "1001"},
	}
	md := datatypesMemoryMarkdown(rs, 1000, 4)
	for _, want := range []string{
		"| counter with a TTL (INCRBY + EXPIRE) | Redcell | 1.0 MiB | 1.1 MiB | 100 | 0.83x | ≤ 1.00x Redis: **met** |",
		"| counter with a TTL (INCRBY + EXPIRE) | Redis | 1.0 MiB | 1.1 MiB | 120 | - | - |",
		"| sorted set of 10 members (ZADD + EXPIRE) | Redcell | not available (`error reply: ERR unknown command 'ZADD'`) | | | | not available |",
		"| sorted set of 10 members (ZADD + EXPIRE) | Redis | 1.0 MiB | 1.4 MiB | 400 |",
		"RSS, not Redis's `used_memory`",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("memory table without %q:\n%s", want, md)
		}
	}
	rs[0].rssLoaded = 1<<20 + 130_000
	if md := datatypesMemoryMarkdown(rs, 1000, 4); !strings.Contains(md, "| 130 | 1.08x | ≤ 1.00x Redis: **not met** |") {
		t.Errorf("a counter above Redis's bytes/key not marked:\n%s", md)
	}
}

// Medians are per figure, over rounds.
func TestMedianDT(t *testing.T) {
	m := medianDT([]dtResult{{DPS: 3, P99Ms: 9}, {DPS: 1, P99Ms: 1}, {DPS: 2, P99Ms: 5}})
	if m.DPS != 2 || m.P99Ms != 5 {
		t.Errorf("median %+v, want DPS 2, p99 5", m)
	}
	if median([]float64{4, 1, 3, 2}) != 2.5 || median(nil) != 0 {
		t.Error("median of an even count or of none")
	}
}
