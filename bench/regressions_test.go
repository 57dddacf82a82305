package main

import (
	"strings"
	"testing"
)

// The guard lists every figure in which this commit is worse than the
// baseline by more than 5 % (rps lower; CPU µs/req, bytes/key higher),
// with both values and the ratio, pairs cluster rows with the baseline
// cluster's, and says "none" when nothing fell; without a baseline there
// is no table.
func TestRegressionsTable(t *testing.T) {
	rows := []summaryRow{
		// rps -10 %: fell. CPU +4 %: within.
		{mode: "compare", scenario: "P1", kind: kindRedcell, rate: 36000, cpuUs: 20.8},
		{mode: "compare", scenario: "P1", kind: kindRedcellBaseline, rate: 40000, cpuUs: 20},
		{mode: "compare", scenario: "P1", kind: kindRedisLua, rate: 10000, cpuUs: 5},
		// rps -4 %: within; CPU +8 %: fell.
		{mode: "compare", scenario: "P16", kind: kindRedcell, rate: 288000, cpuUs: 3.24},
		{mode: "compare", scenario: "P16", kind: kindRedcellBaseline, rate: 300000, cpuUs: 3.0},
		// Faster and cheaper: nothing.
		{mode: "limiters", scenario: "TB", kind: kindRedcell, rate: 110, cpuUs: 9},
		{mode: "limiters", scenario: "TB", kind: kindRedcellBaseline, rate: 100, cpuUs: 10},
		// The same scenario name in another mode is another row.
		{mode: "latency", scenario: "P1", kind: kindRedcell, rate: 5000},
		{mode: "latency", scenario: "P1", kind: kindRedcellBaseline, rate: 5100},
		// Memory: bytes/key +10 %.
		{mode: "memory", scenario: "CL.THROTTLE keys", kind: kindRedcell, bytesPerKey: 110},
		{mode: "memory", scenario: "CL.THROTTLE keys", kind: kindRedcellBaseline, bytesPerKey: 100},
		// A variant is not paired with anything.
		{mode: "compare", scenario: "P1", kind: "Redcell[direct]", rate: 1},
		// The cluster's rows against the baseline cluster's.
		{mode: "cluster", scenario: "P16", kind: kindClusterSpread, rate: 100000},
		{mode: "cluster", scenario: "P16", kind: kindClusterSpreadBaseline, rate: 120000},
		// A figure one side lacks is not judged.
		{mode: "libraries", scenario: "redis_rate", kind: kindRedcell, rate: 100},
		{mode: "libraries", scenario: "redis_rate", kind: kindRedcellBaseline, rate: 100, cpuUs: 1},
	}
	fell, ran := regressions(rows)
	if !ran || len(fell) != 4 {
		t.Fatalf("regressions %+v (ran %v), want 4", fell, ran)
	}
	md := regressionsMarkdown(rows)
	for _, want := range []string{
		"| mode | scenario | figure | this commit | Redcell-baseline | this ÷ baseline |",
		"| compare | P1 | rps | 36,000 | 40,000 | 0.90x |",
		"| compare | P16 | CPU µs/req | 3.2 | 3.0 | 1.08x |",
		"| memory | CL.THROTTLE keys | bytes/key | 110 | 100 | 1.10x |",
		"| cluster | P16, Redcell-3 spread | rps | 100,000 | 120,000 | 0.83x |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("regressions table without\n%s\n%s", want, md)
		}
	}
	if strings.Contains(md, "limiters") || strings.Contains(md, "latency") || strings.Contains(md, "libraries") {
		t.Errorf("a row that did not fall is listed:\n%s", md)
	}

	if md := regressionsMarkdown(rows[5:9]); !strings.HasPrefix(md, "none") {
		t.Errorf("nothing fell, the table says %q", md)
	}
	if md := regressionsMarkdown([]summaryRow{rows[0], rows[2]}); md != "" {
		t.Errorf("a table without a baseline: %q", md)
	}
	var printed strings.Builder
	if got := withRegressions(&printed, "mode\n", rows[5:7]); !strings.Contains(got, "**Rows that fell by more than 5 %**") || !strings.Contains(printed.String(), "none") {
		t.Errorf("withRegressions: %q, printed %q", got, printed.String())
	}
}

// Each mode's rows reach the guard with the figures its own table gives:
// medians, CPU per request (per decision), bytes per key; rows that could
// not run, and the datatypes mode's client check, stay out.
func TestSummaryRowsOfEachMode(t *testing.T) {
	w := workload{clients: 50, pipeline: 1, keyspace: 100000}
	ms := []measurement{{work: w, kind: kindRedcell, median: benchResult{RPS: 40000, ServerCores: 0.8}, runs: runsAt(30000, 40000, 50000)}}
	if got := summaryOfMeasurements("compare", ms); len(got) != 1 || got[0] != (summaryRow{mode: "compare", scenario: w.String(), kind: kindRedcell, rate: 40000, cpuUs: 20}) {
		t.Errorf("compare rows %+v", got)
	}
	libs := []libraryRow{{lib: "redis_rate", kind: kindRedcell, median: 30000, cpuUsMedian: 25}}
	if got := summaryOfLibraries(libs); len(got) != 1 || got[0].rate != 30000 || got[0].cpuUs != 25 || got[0].mode != "libraries" {
		t.Errorf("libraries rows %+v", got)
	}
	spec := datatypesScenarios[0].spec
	dt := []dtRow{
		{spec: spec, kind: kindRedcell, client: clientGo, median: dtResult{DPS: 100000, ServerCores: 1.5}},
		{spec: spec, kind: kindRedcellBaseline, client: clientGo, unavailable: "ERR unknown command"},
		{spec: clientCheckSpecs[0], kind: kindRedisLua, client: clientGo, median: dtResult{DPS: 100000}},
	}
	mem := []dtMemResult{{shape: 0, kind: kindRedcell, keys: 1000, rssEmpty: 0, rssLoaded: 96000}}
	got := summaryOfDatatypes(dt, mem)
	if len(got) != 2 || got[0].cpuUs != 15 || got[0].scenario != spec.String() || got[1].bytesPerKey != 96 || got[1].scenario != dtMemShapes[0].name {
		t.Errorf("datatypes rows %+v", got)
	}
	mr := []memoryResult{{kind: kindRedcell, family: familySL, hits: 10, keys: 1000, rssLoaded: 500000}}
	if got := summaryOfMemory(mr); len(got) != 1 || got[0].scenario != "SL.HIT keys, 10 hits each" || got[0].bytesPerKey != 500 {
		t.Errorf("memory rows %+v", got)
	}
}
