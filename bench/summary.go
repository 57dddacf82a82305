package main

import "fmt"

// summaryRow is one row of any mode reduced to the figures the run-wide
// tables compare (the variants' table, variants.go; the regression guard,
// regressions.go): medians over the rounds, as each mode's own table
// gives them. A figure the mode does not measure is 0.
type summaryRow struct {
	mode     string
	scenario string
	kind     serverKind
	// rate is requests per second (decisions per second in the libraries
	// and datatypes modes).
	rate float64
	// cpuUs is the server's CPU µs per request (per decision).
	cpuUs float64
	// bytesPerKey is the memory rows' ΔRSS ÷ keys.
	bytesPerKey float64
}

// summaryOfMeasurements is the rows of a redis-benchmark mode (compare,
// limiters, scripts, latency, cluster, slowdisk).
func summaryOfMeasurements(mode string, ms []measurement) []summaryRow {
	rows := make([]summaryRow, 0, len(ms))
	for _, m := range ms {
		rows = append(rows, summaryRow{mode: mode, scenario: m.work.String(), kind: m.kind, rate: m.median.RPS, cpuUs: m.median.cpuPerRequestUs()})
	}
	return rows
}

// summaryOfLibraries is the libraries mode's rows.
func summaryOfLibraries(rs []libraryRow) []summaryRow {
	rows := make([]summaryRow, 0, len(rs))
	for _, r := range rs {
		rows = append(rows, summaryRow{mode: "libraries", scenario: r.lib, kind: r.kind, rate: r.median, cpuUs: r.cpuUsMedian})
	}
	return rows
}

// summaryOfDatatypes is the datatypes mode's throughput rows (the Go
// client's, not the client check's) and its memory rows; rows that could
// not run are left out.
func summaryOfDatatypes(rs []dtRow, mem []dtMemResult) []summaryRow {
	var rows []summaryRow
	for _, r := range rs {
		if r.client != clientGo || r.spec.shape == shapeIncr || r.unavailable != "" || r.median.DPS <= 0 {
			continue
		}
		rows = append(rows, summaryRow{mode: "datatypes", scenario: r.spec.String(), kind: r.kind,
			rate: r.median.DPS, cpuUs: r.median.ServerCores / r.median.DPS * 1e6})
	}
	for _, r := range mem {
		if r.unavailable != "" {
			continue
		}
		rows = append(rows, summaryRow{mode: "datatypes", scenario: dtMemShapes[r.shape].name, kind: r.kind, bytesPerKey: r.bytesPerKey()})
	}
	return rows
}

// summaryOfMemory is the memory mode's rows: bytes per key of each family.
func summaryOfMemory(rs []memoryResult) []summaryRow {
	rows := make([]summaryRow, 0, len(rs))
	for _, r := range rs {
		scenario := r.family.name() + " keys"
		if r.hits > 1 {
			scenario = fmt.Sprintf("%s keys, %d hits each", r.family.name(), r.hits)
		}
		rows = append(rows, summaryRow{mode: "memory", scenario: scenario, kind: r.kind, bytesPerKey: r.bytesPerKey()})
	}
	return rows
}
