package main

import (
	"fmt"
	"io"
	"strings"
)

// A baseline (-baseline REV) is Redcell built from another commit and run as
// one more server, alternating with the others scenario by scenario and
// round by round (runScenarios). On a machine whose speed drifts by tens of
// per cent within the hour, two runs an hour apart cannot tell a 5 %
// change; the same minutes, run for run, can. The fleet builds the baseline
// (fleet.buildBaseline); this file reads the pairs back.

// baselinePair is one workload's Redcell and Redcell-baseline measurements.
type baselinePair struct {
	head, baseline measurement
}

// baselineKinds maps each row kind of this commit's Redcell to the same
// row of the baseline's: a lone node, and the cluster mode's three rows.
var baselineKinds = map[serverKind]serverKind{
	kindRedcell:         kindRedcellBaseline,
	kindClusterLeader:   kindClusterLeaderBaseline,
	kindClusterSpread:   kindClusterSpreadBaseline,
	kindClusterFollower: kindClusterFollowerBaseline,
}

// baselinePairs pairs each workload's Redcell measurement with the
// baseline's (row by row in the cluster mode), in the order of ms; nil
// when no baseline ran.
func baselinePairs(ms []measurement) []baselinePair {
	var pairs []baselinePair
	for _, m := range ms {
		bk, ok := baselineKinds[m.kind]
		if !ok {
			continue
		}
		for _, o := range ms {
			if o.work == m.work && o.kind == bk {
				pairs = append(pairs, baselinePair{head: m, baseline: o})
			}
		}
	}
	return pairs
}

// scenario names the pair's row: the workload, and for a cluster row which
// one.
func (p baselinePair) scenario() string {
	if p.head.kind == kindRedcell {
		return p.head.work.String()
	}
	return fmt.Sprintf("%s, %s", p.head.work, p.head.kind)
}

// roundRatios is Redcell's rps over the baseline's round by round (the two
// ran next to each other in each round), and how many rounds Redcell was
// ahead.
func (p baselinePair) roundRatios() (ratios []float64, ahead int) {
	for i := range min(len(p.head.runs), len(p.baseline.runs)) {
		if b := p.baseline.runs[i].RPS; b > 0 {
			r := p.head.runs[i].RPS / b
			ratios = append(ratios, r)
			if r > 1 {
				ahead++
			}
		}
	}
	return ratios, ahead
}

// baselineMarkdown is the section that compares Redcell with the baseline:
// the medians' ratio and each round's, since one round is one alternating
// pair. "" when no baseline ran.
func baselineMarkdown(ms []measurement) string {
	pairs := baselinePairs(ms)
	if len(pairs) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("| scenario | Redcell rps | Redcell-baseline rps | ratio of medians | each round's ratio | rounds ahead |\n|---|---:|---:|---:|---|---:|\n")
	for _, p := range pairs {
		ratios, ahead := p.roundRatios()
		each := make([]string, len(ratios))
		for i, r := range ratios {
			each[i] = fmt.Sprintf("%.3f", r)
		}
		medianRatio := 0.0
		if p.baseline.median.RPS > 0 {
			medianRatio = p.head.median.RPS / p.baseline.median.RPS
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %d of %d |\n", p.scenario(), formatRPS(p.head.median.RPS), formatRPS(p.baseline.median.RPS),
			formatRatio(medianRatio), strings.Join(each, " / "), ahead, len(ratios))
	}
	b.WriteString("\n*Redcell ÷ Redcell-baseline*: the two ran next to each other in every round; a ratio is trustworthy only when most rounds agree on its side of 1.\n")
	return b.String()
}

// withBaseline appends the baseline section to a mode's markdown md, and
// prints it, when a baseline ran among ms; otherwise it returns md as is.
func withBaseline(w io.Writer, md string, ms []measurement) string {
	bl := baselineMarkdown(ms)
	if bl == "" {
		return md
	}
	fmt.Fprintf(w, "\nRedcell against Redcell-baseline:\n%s", bl)
	return md + "\n" + bl
}
