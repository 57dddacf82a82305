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
)

// allFamilies is the order scripts are loaded and families are measured in.
var allFamilies = []family{familyCL, familyTB, familySL}

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
}

// families: CL is redis-cell's README example (burst 16, 30 per minute);
// the token bucket and the sliding log get the same shape: 16 at once, then
// 30 a minute (TB) or 16 per minute window (SL), in milliseconds.
var families = map[family]familySpec{
	familyCL: {command: "CL.THROTTLE", script: &gcraLua, scriptN: "gcra.lua", args: throttleArgs, fresh: [5]int64{0, 16, 15, -1, 2}},
	familyTB: {command: "TB.TAKE", script: &tokenBucketLua, scriptN: "tokenbucket.lua", args: []string{"16", "30", "60000"}, fresh: [5]int64{0, 16, 15, -1, 2000}},
	familySL: {command: "SL.HIT", script: &slidingLogLua, scriptN: "slidinglog.lua", args: []string{"16", "60000"}, fresh: [5]int64{0, 16, 15, -1, 60000}},
}

// name is the family's command, as rows and flags name it.
func (f family) name() string { return families[f].command }

// parseFamilies reads a comma-separated list of cl, tb, sl (or all).
func parseFamilies(s string) ([]family, error) {
	want := make(map[family]bool)
	for _, name := range strings.Split(s, ",") {
		switch strings.ToLower(strings.TrimSpace(name)) {
		case "all":
			for _, f := range allFamilies {
				want[f] = true
			}
		case "cl", "cl.throttle":
			want[familyCL] = true
		case "tb", "tb.take":
			want[familyTB] = true
		case "sl", "sl.hit":
			want[familySL] = true
		default:
			return nil, fmt.Errorf("unknown limiter family %q (want cl, tb, sl or all)", name)
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

// limiterCommand is the command that makes one decision of family f on key:
// the native command on Redcell, EVALSHA of the family's script on Redis.
func (s *server) limiterCommand(f family, key string, args ...string) []string {
	var cmd []string
	if s.kind.isRedcell() {
		cmd = []string{families[f].command, key}
	} else {
		cmd = []string{"EVALSHA", s.shas[f], "1", key}
	}
	return append(cmd, args...)
}

// loadScripts loads every family's script into a Redis server.
func (s *server) loadScripts(ctx context.Context) error {
	for _, f := range allFamilies {
		sha, err := s.loadScript(ctx, *families[f].script)
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
