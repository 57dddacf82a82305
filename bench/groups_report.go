package main

import (
	"fmt"
	"slices"
	"strings"
)

// The groups mode's tables and its cost model.

// medianGroupsRun is the run of median requests a second (its per-node
// figures stay those of one run, so they add up).
func medianGroupsRun(runs []groupsRun) groupsRun {
	s := slices.Clone(runs)
	slices.SortFunc(s, func(a, b groupsRun) int {
		switch {
		case a.res.RPS < b.res.RPS:
			return -1
		case a.res.RPS > b.res.RPS:
			return 1
		}
		return 0
	})
	return s[(len(s)-1)/2]
}

// perDecisionUs is each node's CPU in µs per decision of the whole
// cluster.
func (r groupsRun) perDecisionUs() []float64 {
	out := make([]float64, len(r.cores))
	if r.res.RPS <= 0 {
		return out
	}
	for i, c := range r.cores {
		out[i] = c / r.res.RPS * 1e6
	}
	return out
}

// byRole formats per-node values with the nodes leading a group first,
// marked L, the others F: "L 5.1 · F 2.0 2.1".
func byRole(vs []float64, leading []int, format string) string {
	var lead, follow []string
	for i, v := range vs {
		if i < len(leading) && leading[i] > 0 {
			lead = append(lead, fmt.Sprintf(format, v))
		} else {
			follow = append(follow, fmt.Sprintf(format, v))
		}
	}
	out := "L " + strings.Join(lead, " ")
	if len(follow) > 0 {
		out += " · F " + strings.Join(follow, " ")
	}
	return out
}

// groupsTable is one quota's table: a row per load, both clusters.
func groupsTable(runs map[string][]groupsRun, quota float64) string {
	var b strings.Builder
	if quota > 0 {
		fmt.Fprintf(&b, "**Each node held to %.2f of a core** (cgroup CPU quota):\n\n", quota)
	} else {
		b.WriteString("**Bare machine** (every node, and redis-benchmark, on the same 2 cores):\n\n")
	}
	b.WriteString("| load | groups=1 rps | groups=3 rps | ÷ | CPU µs/decision, groups=1 | groups=3 | WAL syncs/s, groups=1 | groups=3 |\n")
	b.WriteString("|---|---:|---:|---:|---|---|---|---|\n")
	for _, w := range groupsWorkloads {
		one := runs[w.String()+"|"+string(groupsKind(1))]
		three := runs[w.String()+"|"+string(groupsKind(3))]
		if len(one) == 0 || len(three) == 0 {
			continue
		}
		a, c := medianGroupsRun(one), medianGroupsRun(three)
		ratio := 0.0
		if a.res.RPS > 0 {
			ratio = c.res.RPS / a.res.RPS
		}
		fmt.Fprintf(&b, "| %s | %.0f | %.0f | %.2fx | %s | %s | %s | %s |\n", w, a.res.RPS, c.res.RPS, ratio,
			byRole(a.perDecisionUs(), a.leading, "%.1f"), joinFloats(c.perDecisionUs(), "%.1f"),
			byRole(a.syncsSec, a.leading, "%.0f"), joinFloats(c.syncsSec, "%.0f"))
	}
	b.WriteString("\n")
	return b.String()
}

// groupsKind is the row label of the cluster of g groups.
func groupsKind(g int) serverKind { return serverKind(fmt.Sprintf("Redcell-3 groups=%d", g)) }

// costModel turns the bare machine's one-group runs with cluster-mode
// clients (everything decided by one leader, copied by two followers, no
// forwarding) into CPU per decision on a leader and on a follower, and
// predicts what N nodes of 16 cores would decide with the groups' leaders
// spread.
func costModel(bare map[string][]groupsRun) string {
	var b strings.Builder
	b.WriteString("**Cost model** (from the bare machine's `groups=1` runs with `--cluster`: one leader decides everything, two followers copy it):\n\n")
	b.WriteString("| load | leader µs/decision | follower µs/decision | leader WAL syncs/s | decisions per sync | predicted decisions/s, 3 × 16 cores | 6 × 16 | 12 × 16 |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, w := range groupsWorkloads {
		if !w.cluster {
			continue
		}
		runs := bare[w.String()+"|"+string(groupsKind(1))]
		if len(runs) == 0 {
			continue
		}
		r := medianGroupsRun(runs)
		us := r.perDecisionUs()
		var lead, follow, leadSyncs float64
		var nf int
		for i, v := range us {
			if r.leading[i] > 0 {
				lead, leadSyncs = v, r.syncsSec[i]
			} else {
				follow += v
				nf++
			}
		}
		if nf > 0 {
			follow /= float64(nf)
		}
		perSync := 0.0
		if leadSyncs > 0 {
			perSync = r.res.RPS / leadSyncs
		}
		// Every decision costs its group's leader once and two followers
		// (a replication factor of 3): L + 2F µs of CPU, wherever the
		// leaders are, once they are spread.
		cost := lead + 2*follow
		predict := func(nodes int) string {
			if cost <= 0 {
				return "–"
			}
			return fmt.Sprintf("%.1fM", float64(nodes)*16*1e6/cost/1e6)
		}
		fmt.Fprintf(&b, "| %s | %.1f | %.1f | %.0f | %.0f | %s | %s | %s |\n", w, lead, follow, leadSyncs, perSync, predict(3), predict(6), predict(12))
	}
	b.WriteString("\nPrediction: N × 16 cores × 10⁶ ÷ (L + 2F) decisions a second, every core busy with decisions, " +
		"leaders spread evenly, three voters a group, clients on other machines. " +
		"It assumes CPU bounds each node, not its disk: the node's groups share one WAL and its fsyncs " +
		"(decisions per sync grow with the load, as the column shows), and a node needs (its decisions a second ÷ decisions per sync) fsyncs a second. " +
		"Today every node votes in every group, so beyond three nodes a decision would cost N − 1 followers, not two: " +
		"the 6- and 12-node figures need the replication factor of the next step.\n")
	return b.String()
}
