package main

import (
	"context"
	_ "embed"
	"fmt"
	"slices"
	"strings"
)

// The Lua scripts every Redis server under test loads besides gcra.lua: the
// token bucket and the sorted-set sliding log as they are usually written,
// the baselines of TB.TAKE and SL.HIT.
var (
	//go:embed tokenbucket.lua
	tokenBucketLua string
	//go:embed slidinglog.lua
	slidingLogLua string
	//go:embed redis_rate.lua
	redisRateLua string
)

// family is a limiter family bench can load: the native command Redcell
// answers and the Lua script that does the same on Redis. The zero value
// is CL.THROTTLE, so every workload that names no family is the comparison
// it always was.
type family string

const (
	familyCL family = ""
	familyTB family = "TB"
	familySL family = "SL"
	// familyRR is go-redis/redis_rate's GCRA script, which every server,
	// Redcell included, runs by EVALSHA (the scripts mode).
	familyRR family = "RR"
)

// allFamilies is the order scripts are loaded and families are measured in;
// nativeFamilies are those Redcell answers with its own command (what
// "all" means to the memory mode).
var (
	allFamilies    = []family{familyCL, familyTB, familySL, familyRR}
	nativeFamilies = []family{familyCL, familyTB, familySL}
)

// familySpec is what one family needs to be driven: the native command,
// the script, the load arguments and the reply a fresh key gets.
type familySpec struct {
	command string   // Redcell's command
	script  *string  // the Redis script (its text, embedded)
	scriptN string   // the script's file name, for tables and errors
	args    []string // parameters of every load scenario
	// fresh is the reply of the first call on a fresh key with args: the
	// check every server must pass before it is measured.
	fresh [5]int64
	// scripted: Redcell runs the script too (EVALSHA), and command only
	// names the family in tables.
	scripted bool
}

// families: CL is redis-cell's README example (burst 16, 30 per minute);
// the token bucket and the sliding log get the same shape: 16 at once, then
// 30 a minute (TB) or 16 per minute window (SL), in milliseconds.
var families = map[family]familySpec{
	familyCL: {command: "CL.THROTTLE", script: &gcraLua, scriptN: "gcra.lua", args: throttleArgs, fresh: [5]int64{0, 16, 15, -1, 2}},
	familyTB: {command: "TB.TAKE", script: &tokenBucketLua, scriptN: "tokenbucket.lua", args: []string{"16", "30", "60000"}, fresh: [5]int64{0, 16, 15, -1, 2000}},
	familySL: {command: "SL.HIT", script: &slidingLogLua, scriptN: "slidinglog.lua", args: []string{"16", "60000"}, fresh: [5]int64{0, 16, 15, -1, 60000}},
	// redis_rate.PerMinute(10) as Allow sends it: burst 10, rate 10, period
	// 60 s, cost 1; a fresh key answers {1, 9, "-1", "6"} (checkRedisRate).
	familyRR: {command: "redis_rate", script: &redisRateLua, scriptN: "redis_rate.lua", args: []string{"10", "10", "60", "1"}, scripted: true},
}

// name is the family's command, as rows and flags name it.
func (f family) name() string { return families[f].command }

// parseFamilies reads a comma-separated list of cl, tb, sl (or all).
func parseFamilies(s string) ([]family, error) {
	want := make(map[family]bool)
	for _, name := range strings.Split(s, ",") {
		switch strings.ToLower(strings.TrimSpace(name)) {
		case "all":
			for _, f := range nativeFamilies {
				want[f] = true
			}
		case "cl", "cl.throttle":
			want[familyCL] = true
		case "tb", "tb.take":
			want[familyTB] = true
		case "sl", "sl.hit":
			want[familySL] = true
		case "rr", "redis_rate":
			want[familyRR] = true
		default:
			return nil, fmt.Errorf("unknown limiter family %q (want cl, tb, sl, rr or all)", name)
		}
	}
	var out []family
	for _, f := range allFamilies {
		if want[f] {
			out = append(out, f)
		}
	}
	return out, nil
}

// limiterWorkloads are the limiters mode's scenarios: TB.TAKE and SL.HIT at
// 100k random keys, 50 clients, -P 16 and -P 1. Each row's ratio is to the
// same family's script on Redis-Lua (the workload includes the family).
var limiterWorkloads = func() []workload {
	var ws []workload
	for _, f := range []family{familyTB, familySL} {
		for _, p := range []int{16, 1} {
			ws = append(ws, workload{family: f, clients: 50, pipeline: p, keyspace: 100000})
		}
	}
	return ws
}()

// scriptWorkloads are the scripts mode's scenarios (issue 34): redis_rate's
// GCRA script by EVALSHA on every server, at 100k random keys, 50 clients,
// -P 16 and -P 1.
var scriptWorkloads = []workload{
	{family: familyRR, clients: 50, pipeline: 16, keyspace: 100000},
	{family: familyRR, clients: 50, pipeline: 1, keyspace: 100000},
}

// limiterCommand is the command that makes one decision of family f on key:
// the native command on Redcell, EVALSHA of the family's script on Redis
// (and on Redcell for a scripted family).
func (s *server) limiterCommand(f family, key string, args ...string) []string {
	var cmd []string
	if s.kind.isRedcell() && !families[f].scripted {
		cmd = []string{families[f].command, key}
	} else {
		cmd = []string{"EVALSHA", s.shas[f], "1", key}
	}
	return append(cmd, args...)
}

// loadScripts loads every family's script into a Redis server, and the
// scripted families' into Redcell.
func (s *server) loadScripts(ctx context.Context) error {
	for _, f := range allFamilies {
		if s.kind.isRedcell() && !families[f].scripted {
			continue
		}
		sha, err := s.loadScript(ctx, *families[f].script)
		if err != nil && s.kind.isRedcell() {
			continue // a -baseline build without scripts: its check fails if it is measured
		}
		if err != nil {
			return fmt.Errorf("%s: %w", families[f].scriptN, err)
		}
		if s.shas == nil {
			s.shas = make(map[family]string)
		}
		s.shas[f] = sha
	}
	return nil
}

// scriptsNote names the scripts of the families in ws, for report headers.
func scriptsNote(ws []workload) string {
	var fs []family
	for _, w := range ws {
		if !slices.Contains(fs, w.family) {
			fs = append(fs, w.family)
		}
	}
	parts := make([]string, len(fs))
	for i, f := range fs {
		spec := families[f]
		parts[i] = fmt.Sprintf("%s `<key> %s` (Redis: EVALSHA of bench/%s)", spec.command, strings.Join(spec.args, " "), spec.scriptN)
	}
	return strings.Join(parts, "; ")
}

// checkRedisRate checks redis_rate's reply to a fresh key with the
// family's arguments (burst 10, rate 10 per 60 s, cost 1): allowed 1,
// remaining 9, retry_after "-1", reset_after "6".
func checkRedisRate(v respValue) error {
	if v.Kind != '*' || len(v.Array) != 4 {
		return fmt.Errorf("not a 4-element array: %s", v)
	}
	a := v.Array
	if a[0].Kind != ':' || a[0].Int != 1 || a[1].Kind != ':' || a[1].Int != 9 || a[2].Str != "-1" || a[3].Str != "6" {
		return fmt.Errorf("answered %s, want [1 9 \"-1\" \"6\"]", v)
	}
	return nil
}

// scriptsModeNote heads the scripts mode's results: what it backs.
const scriptsModeNote = "Load: go-redis/redis_rate v10's GCRA script (bench/redis_rate.lua, `redis_rate.PerMinute(10)`: `EVALSHA <sha> 1 <key> 10 10 60 1`) on every server, Redcell included; Redcell runs it in its state machine, durably, and Redis-Lua in memory. Issue 34's targets: -P 16 ≥ 1.0× and -P 1 ≥ 0.8× of Redis-Lua.\n\n"
