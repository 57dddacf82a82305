package main

import (
	"fmt"
	"io"
	"strings"
)

// The regression guard of -baseline: every row where this commit did worse
// than the baseline by more than regressionThreshold, in throughput (fewer
// requests a second), CPU per request (more) or bytes per key (more). Each
// mode that ran the baseline ends with it, and the run ends with it for
// every mode together: the table release notes quote. It reads the medians
// over the rounds, as the baseline table does (baseline.go).

// regressionThreshold is how much worse a figure must be to be listed.
const regressionThreshold = 0.05

// regression is one figure of one row that fell.
type regression struct {
	mode, scenario, figure string
	head, baseline         float64
}

// ratio is this commit's figure over the baseline's.
func (r regression) ratio() float64 { return r.head / r.baseline }

// regressions lists every figure of rows where this commit's row (Redcell,
// or a cluster row of this commit's cluster) is worse than the baseline's
// row of the same mode and scenario by more than regressionThreshold, in
// the order of rows. ran is false when no baseline row is among rows.
func regressions(rows []summaryRow) (fell []regression, ran bool) {
	for _, h := range rows {
		bk, ok := baselineKinds[h.kind]
		if !ok {
			continue
		}
		for _, b := range rows {
			if b.kind != bk || b.mode != h.mode || b.scenario != h.scenario {
				continue
			}
			ran = true
			scenario := h.scenario
			if h.kind != kindRedcell {
				scenario += ", " + string(h.kind)
			}
			add := func(figure string, head, base float64, higherIsWorse bool) {
				if head <= 0 || base <= 0 {
					return
				}
				r := head / base
				if (higherIsWorse && r > 1+regressionThreshold) || (!higherIsWorse && r < 1-regressionThreshold) {
					fell = append(fell, regression{mode: h.mode, scenario: scenario, figure: figure, head: head, baseline: base})
				}
			}
			add("rps", h.rate, b.rate, false)
			add("CPU µs/req", h.cpuUs, b.cpuUs, true)
			add("bytes/key", h.bytesPerKey, b.bytesPerKey, true)
		}
	}
	return fell, ran
}

// regressionsMarkdown is the guard's table of rows, "none" in words when
// nothing fell; "" when no baseline ran among rows.
func regressionsMarkdown(rows []summaryRow) string {
	fell, ran := regressions(rows)
	if !ran {
		return ""
	}
	if len(fell) == 0 {
		return "none: no row of this commit is more than 5 % below Redcell-baseline in rps, or above it in CPU µs/req or bytes/key.\n"
	}
	var b strings.Builder
	b.WriteString("| mode | scenario | figure | this commit | Redcell-baseline | this ÷ baseline |\n|---|---|---|---:|---:|---:|\n")
	for _, r := range fell {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", r.mode, r.scenario, r.figure, formatFigure(r.figure, r.head), formatFigure(r.figure, r.baseline), formatRatio(r.ratio()))
	}
	b.WriteString("\nMedians over the rounds; rps lower, CPU µs/req or bytes/key higher than the baseline's by more than 5 %. On a shared machine a row can fall by noise alone: check it against the baseline table's round-by-round ratios, or rerun it with more rounds.\n")
	return b.String()
}

// formatFigure prints a figure of the regression table in its unit.
func formatFigure(figure string, v float64) string {
	switch figure {
	case "rps":
		return formatRPS(v)
	case "CPU µs/req":
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.0f", v)
	}
}

// regressionsTitle heads the guard's table, in a mode and at the end.
const regressionsTitle = "Rows that fell by more than 5 %"

// withRegressions appends the guard's table to a mode's markdown md, and
// prints it, when the baseline ran among rows; otherwise it returns md as
// is.
func withRegressions(w io.Writer, md string, rows []summaryRow) string {
	t := regressionsMarkdown(rows)
	if t == "" {
		return md
	}
	fmt.Fprintf(w, "\n%s (this commit against Redcell-baseline):\n%s", regressionsTitle, t)
	return md + "\n**" + regressionsTitle + "** (this commit against Redcell-baseline)\n\n" + t
}
