package main

import (
	"fmt"
	"io"
	"strings"
)

// Ratios round by round. A row's ratio divides its median by Redis-Lua's
// median, and both servers ran in every round, one right after the other
// (runScenarios). But the denominator moves with the machine: on this
// project's VM, Redis + Lua's CPU per request at -c 50 -P 1 ranged from its
// usual 20–21 µs to over 40 on slow days, within the same hour, because its
// work misses the caches more than Redcell's (bench/DESIGN.md, "The
// machine's own speed moves"). A median ratio from such a run mixes rounds
// at different speeds. This section lists every round's ratio next to what
// Redis-Lua's run of that round cost per request, and names the round in
// which Redis-Lua ran cheapest: the round whose denominator is nearest the
// machine's undisturbed speed, so the ratio that flatters Redcell least.

// roundRatioRow is one Redcell row's ratios to Redis-Lua, round by round.
type roundRatioRow struct {
	row, ref measurement
}

// roundRatioRows pairs every row that is not a Redis server with Redis-Lua's
// row of the same workload, where both ran at least two rounds, in the
// order of ms.
func roundRatioRows(ms []measurement) []roundRatioRow {
	var rows []roundRatioRow
	for _, m := range ms {
		if m.kind == kindRedisLua || m.kind == kindRedisLuaFsync {
			continue
		}
		for _, o := range ms {
			if o.work == m.work && o.kind == kindRedisLua && min(len(m.runs), len(o.runs)) >= 2 {
				rows = append(rows, roundRatioRow{row: m, ref: o})
			}
		}
	}
	return rows
}

// rounds returns each round's ratio and Redis-Lua's CPU per request in that
// round (0 where unmeasured), for the rounds both ran.
func (r roundRatioRow) rounds() (ratios, refCPU []float64) {
	for i := range min(len(r.row.runs), len(r.ref.runs)) {
		ratio := 0.0
		if ref := r.ref.runs[i].RPS; ref > 0 {
			ratio = r.row.runs[i].RPS / ref
		}
		ratios = append(ratios, ratio)
		refCPU = append(refCPU, r.ref.runs[i].cpuPerRequestUs())
	}
	return ratios, refCPU
}

// cheapestRound is the index of the round in which Redis-Lua used the least
// CPU per request, among rounds with a ratio and a CPU figure; -1 if none.
func (r roundRatioRow) cheapestRound() int {
	ratios, refCPU := r.rounds()
	best := -1
	for i := range ratios {
		if ratios[i] <= 0 || refCPU[i] <= 0 {
			continue
		}
		if best < 0 || refCPU[i] < refCPU[best] {
			best = i
		}
	}
	return best
}

// roundRatiosMarkdown is the section: one line per Redcell row; "" when no
// row ran two rounds next to Redis-Lua.
func roundRatiosMarkdown(ms []measurement) string {
	rows := roundRatioRows(ms)
	if len(rows) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("| scenario | server | each round: ratio (Redis-Lua CPU µs/req) | Redis-Lua's cheapest round | ratio there |\n|---|---|---|---:|---:|\n")
	for _, r := range rows {
		ratios, refCPU := r.rounds()
		each := make([]string, len(ratios))
		for i := range ratios {
			each[i] = fmt.Sprintf("%s (%.1f)", formatRatio(ratios[i]), refCPU[i])
		}
		cheapest, there := "-", "-"
		if i := r.cheapestRound(); i >= 0 {
			cheapest = fmt.Sprintf("round %d: %.1f µs/req", i+1, refCPU[i])
			there = formatRatio(ratios[i])
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", r.row.work, r.row.kind, strings.Join(each, " / "), cheapest, there)
	}
	b.WriteString("\n*Round by round*: Redcell's rate over Redis-Lua's in each round (the two ran one after the other), with what Redis-Lua's run cost in CPU per request. Where that cost moves from round to round the machine's speed moved, and Redis + Lua, whose work misses the caches more, slows more than Redcell; the ratio in its cheapest round is the one nearest the machine's undisturbed speed.\n")
	return b.String()
}

// withRoundRatios appends the section to a mode's markdown md, and prints
// it, when some row ran at least two rounds next to Redis-Lua; otherwise it
// returns md as is.
func withRoundRatios(w io.Writer, md string, ms []measurement) string {
	rr := roundRatiosMarkdown(ms)
	if rr == "" {
		return md
	}
	fmt.Fprintf(w, "\nRound by round, against Redis-Lua:\n%s", rr)
	return md + "\n" + rr
}
