package main

import (
	"io"
	"strings"
	"testing"
)

// runsCosting makes one measured run per (rps, server CPU µs per request).
func runsCosting(pairs ...[2]float64) []benchResult {
	var rs []benchResult
	for _, p := range pairs {
		rs = append(rs, benchResult{RPS: p[0], ServerCores: p[0] * p[1] / 1e6})
	}
	return rs
}

// Every Redcell row (a lone node, a baseline, a cluster row) is paired with
// Redis-Lua's row of its workload round by round, and the rounds in which
// Redis-Lua ran within 10 % of its cheapest give the median ratio.
func TestRoundRatiosMarkdown(t *testing.T) {
	p1 := workload{clients: 50, pipeline: 1, keyspace: 100000}
	p16 := workload{clients: 50, pipeline: 16, keyspace: 100000}
	ms := []measurement{
		{work: p1, kind: kindRedcell, runs: runsCosting([2]float64{40000, 20}, [2]float64{45000, 16}, [2]float64{39000, 21}, [2]float64{44000, 17})},
		{work: p1, kind: kindRedcellBaseline, runs: runsCosting([2]float64{36000, 22}, [2]float64{36000, 22}, [2]float64{30000, 25}, [2]float64{40000, 19})},
		// rounds 2 and 4 are within 10 % of the cheapest (20.5 and 22.5 µs); rounds 1 and 3 are not
		{work: p1, kind: kindRedisLua, runs: runsCosting([2]float64{32000, 30}, [2]float64{48000, 20.5}, [2]float64{30000, 33}, [2]float64{40000, 22.5})},
		{work: p1, kind: kindRedisLuaFsync, runs: runsCosting([2]float64{25000, 30}, [2]float64{25000, 30}, [2]float64{25000, 30}, [2]float64{25000, 30})},
		{work: p16, kind: kindClusterLeader, runs: runsCosting([2]float64{150000, 6}, [2]float64{160000, 6})},
		{work: p16, kind: kindRedisLua, runs: runsCosting([2]float64{100000, 9.5}, [2]float64{0, 0})},
	}
	md := roundRatiosMarkdown(ms)
	for _, want := range []string{
		"| 100000 random keys, -c 50 -P 1 | Redcell | 1.25x (30.0) / 0.94x (20.5) / 1.30x (33.0) / 1.10x (22.5) | 20.5 µs/req | 2, 4 | 1.02x |",
		"| 100000 random keys, -c 50 -P 1 | Redcell-baseline | 1.12x (30.0) / 0.75x (20.5) / 1.00x (33.0) / 1.00x (22.5) | 20.5 µs/req | 2, 4 | 0.88x |",
		// a round in which Redis-Lua measured nothing has no ratio and cannot be the cheapest
		"| 100000 random keys, -c 50 -P 16 | Redcell-3 leader | 1.50x (9.5) / - (0.0) | 9.5 µs/req | 1 | 1.50x |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("section without %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "| Redis-Lua |") || strings.Contains(md, "| Redis-Lua-fsync |") {
		t.Errorf("a Redis row got its own line:\n%s", md)
	}
	if got := strings.Count(md, "\n| 100000"); got != 3 {
		t.Errorf("%d rows, want 3:\n%s", got, md)
	}

	// One round has nothing to compare round by round; nor has a mode
	// without Redis-Lua.
	one := []measurement{
		{work: p1, kind: kindRedcell, runs: runsCosting([2]float64{40000, 20})},
		{work: p1, kind: kindRedisLua, runs: runsCosting([2]float64{46000, 21})},
	}
	if got := roundRatiosMarkdown(one); got != "" {
		t.Errorf("one round: %q", got)
	}
	// A round whose two runs saw different machine speeds (the client's own
	// CPU per request differs by more than 10 %) is marked and cannot be
	// chosen, even where Redis-Lua ran cheapest.
	withClient := func(rs []benchResult, clientUs ...float64) []benchResult {
		for i, c := range clientUs {
			rs[i].ClientCores = rs[i].RPS * c / 1e6
		}
		return rs
	}
	moved := []measurement{
		{work: p1, kind: kindRedcell, runs: withClient(runsCosting([2]float64{32000, 26}, [2]float64{40000, 20}, [2]float64{42000, 19}), 23.6, 18, 17)},
		{work: p1, kind: kindRedisLua, runs: withClient(runsCosting([2]float64{38000, 24.7}, [2]float64{36000, 26}, [2]float64{37000, 26.5}), 16.4, 17, 17.5)},
	}
	md = roundRatiosMarkdown(moved)
	if want := "| 100000 random keys, -c 50 -P 1 | Redcell | 0.84x (24.7)† / 1.11x (26.0) / 1.14x (26.5) | 26.0 µs/req | 2, 3 | 1.12x |"; !strings.Contains(md, want) {
		t.Errorf("section without %q:\n%s", want, md)
	}

	// A client that costs less against Redcell in every round (replies in
	// bursts, as at -P 16) is the usual state of things, not a change of speed.
	steady := []measurement{
		{work: p16, kind: kindRedcell, runs: withClient(runsCosting([2]float64{300000, 2.4}, [2]float64{330000, 2.2}), 1.7, 1.6)},
		{work: p16, kind: kindRedisLua, runs: withClient(runsCosting([2]float64{60000, 16}, [2]float64{64000, 15}), 2.3, 2.2)},
	}
	md = roundRatiosMarkdown(steady)
	if want := "| 100000 random keys, -c 50 -P 16 | Redcell | 5.00x (16.0) / 5.16x (15.0) | 15.0 µs/req | 1, 2 | 5.08x |"; !strings.Contains(md, want) {
		t.Errorf("section without %q:\n%s", want, md)
	}

	if got := withRoundRatios(io.Discard, "md", ms[:2]); got != "md" {
		t.Errorf("without Redis-Lua: %q", got)
	}
	if got := withRoundRatios(io.Discard, "md", ms); !strings.HasPrefix(got, "md\n| scenario |") {
		t.Errorf("section not appended: %q", got)
	}
}
