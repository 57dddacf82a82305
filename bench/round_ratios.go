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
// Redis-Lua's run of that round cost per request, and the median ratio of
// the rounds in which Redis-Lua ran (nearly) cheapest: the rounds whose
// denominators are nearest the machine's undisturbed speed, so the ratio
// a slow phase flatters least.

// roundRatioRow is one Redcell row's ratios to Redis-Lua, round by round.
type roundRatioRow struct {
	row, ref measurement
	// usualClient is the median over the rounds of clientRatio (0 when no
	// round knows it), computed once by roundRatioRows for sameSpeed.
	usualClient float64
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
				r := roundRatioRow{row: m, ref: o}
				var all []float64
				for i := range min(len(m.runs), len(o.runs)) {
					if c := r.clientRatio(i); c > 0 {
						all = append(all, c)
					}
				}
				if len(all) > 0 {
					r.usualClient = median(all)
				}
				rows = append(rows, r)
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

// nearCheapestSlack is how much dearer than Redis-Lua's cheapest round a
// round may be and still count as run at about the same speed: one round
// alone is a noisy witness (Redcell's own CPU per decision moves too), so
// the section gives the median over all rounds near the cheapest.
const nearCheapestSlack = 0.10

// sameSpeed reports whether the two runs of round i saw about the same
// machine. redis-benchmark does the same work per request against either
// server, so its CPU per request is a witness of the machine's speed that
// both runs share. Not an exact one: how a server answers (bursts of
// replies after each fsync, or a steady stream) changes the client's cost
// too, by a quarter at -P 16. So the witness is the ratio of the client's
// cost in the row's run to its cost in Redis-Lua's, against that ratio's
// median over the rounds: a round whose ratio strays from the median by
// more than nearCheapestSlack ran its two servers at different speeds (on
// 2026-11-26 a round at Redis-Lua's usual cost had the client at 16.4 µs
// per request against Redis-Lua and 23.6 against Redcell, seconds before,
// where the other rounds' costs agreed). Unknown client costs (0) do not
// exclude a round.
func (r roundRatioRow) sameSpeed(i int) bool {
	ratio := r.clientRatio(i)
	if ratio <= 0 || r.usualClient <= 0 {
		return true
	}
	return max(ratio, r.usualClient) <= min(ratio, r.usualClient)*(1+nearCheapestSlack)
}

// clientRatio is redis-benchmark's CPU per request in the row's run of
// round i over its CPU per request in Redis-Lua's; 0 when either is unknown.
func (r roundRatioRow) clientRatio(i int) float64 {
	a, b := r.row.runs[i].clientCPUPerRequestUs(), r.ref.runs[i].clientCPUPerRequestUs()
	if a <= 0 || b <= 0 {
		return 0
	}
	return a / b
}

// nearCheapest returns Redis-Lua's least CPU per request over the rounds
// with a ratio and a CPU figure whose two runs saw the same speed
// (sameSpeed), and those of them (indexes) within nearCheapestSlack of it;
// 0 and nil if there are none.
func (r roundRatioRow) nearCheapest() (cheapest float64, near []int) {
	ratios, refCPU := r.rounds()
	usable := func(i int) bool { return ratios[i] > 0 && refCPU[i] > 0 && r.sameSpeed(i) }
	for i := range ratios {
		if usable(i) && (cheapest == 0 || refCPU[i] < cheapest) {
			cheapest = refCPU[i]
		}
	}
	for i := range ratios {
		if usable(i) && refCPU[i] <= cheapest*(1+nearCheapestSlack) {
			near = append(near, i)
		}
	}
	return cheapest, near
}

// roundRatiosMarkdown is the section: one line per Redcell row; "" when no
// row ran two rounds next to Redis-Lua.
func roundRatiosMarkdown(ms []measurement) string {
	rows := roundRatioRows(ms)
	if len(rows) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("| scenario | server | each round: ratio (Redis-Lua CPU µs/req) | Redis-Lua's cheapest round | rounds within 10 % of it | their median ratio |\n|---|---|---|---:|---|---:|\n")
	for _, r := range rows {
		ratios, refCPU := r.rounds()
		each := make([]string, len(ratios))
		for i := range ratios {
			each[i] = fmt.Sprintf("%s (%.1f)", formatRatio(ratios[i]), refCPU[i])
			if !r.sameSpeed(i) {
				each[i] += "†"
			}
		}
		cheapest, near := r.nearCheapest()
		cheapText, nearText, medianText := "-", "-", "-"
		if len(near) > 0 {
			cheapText = fmt.Sprintf("%.1f µs/req", cheapest)
			names := make([]string, len(near))
			nearRatios := make([]float64, len(near))
			for j, i := range near {
				names[j] = fmt.Sprint(i + 1)
				nearRatios[j] = ratios[i]
			}
			nearText = strings.Join(names, ", ")
			medianText = formatRatio(median(nearRatios))
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", r.row.work, r.row.kind, strings.Join(each, " / "), cheapText, nearText, medianText)
	}
	b.WriteString("\n*Round by round*: Redcell's rate over Redis-Lua's in each round (the two ran one after the other), with what Redis-Lua's run cost in CPU per request. Where that cost moves from round to round the machine's speed moved, and Redis + Lua, whose work misses the caches more, slows more than Redcell. The rounds in which Redis-Lua ran within 10 % of its cheapest are those nearest the machine's undisturbed speed; their median ratio is the one a slow phase flatters least. † marks a round left out of that choice: the ratio of redis-benchmark's own CPU per request in its two runs (the same work against either server) strayed more than 10 % from that ratio's median over the rounds, so the machine's speed changed between them.\n")
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
