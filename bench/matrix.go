package main

import (
	"fmt"
	"path/filepath"
	"strings"
)

// The matrix mode's axes: client connections × pipeline depth, random keys.
var (
	matrixClients   = []int{1, 10, 50, 200}
	matrixPipelines = []int{1, 16, 64}
)

// matrixWorkloads is clients × pipeline over random keys, ordered by
// pipeline depth, then clients (the order of the chart's panels and bars).
func matrixWorkloads() []workload {
	var ws []workload
	for _, p := range matrixPipelines {
		for _, c := range matrixClients {
			ws = append(ws, workload{clients: c, pipeline: p, keyspace: 100000})
		}
	}
	return ws
}

// measuredKinds lists the servers that appear in ms, in allServerKinds order
// (the order of table columns and chart bars).
func measuredKinds(ms []measurement) []serverKind {
	var kinds []serverKind
	for _, k := range allServerKinds {
		for _, m := range ms {
			if m.kind == k {
				kinds = append(kinds, k)
				break
			}
		}
	}
	return kinds
}

// matrixMarkdown pivots the matrix into one row per (pipeline, clients)
// with each server's rps and p99, the Redcell / Redis-Lua ratio, and a link
// to the chart relative to the markdown file.
func matrixMarkdown(ms []measurement, svgPath, mdPath string) string {
	kinds := measuredKinds(ms)
	var b strings.Builder
	if rel, err := filepath.Rel(filepath.Dir(mdPath), svgPath); err == nil {
		fmt.Fprintf(&b, "![throughput by clients and pipeline depth](%s)\n\n", filepath.ToSlash(rel))
	}
	b.WriteString("| -P | -c |")
	for _, k := range kinds {
		fmt.Fprintf(&b, " %s rps | %s p99 ms |", k, k)
	}
	b.WriteString(" Redcell / Redis-Lua |\n|---:|---:|")
	b.WriteString(strings.Repeat("---:|---:|", len(kinds)))
	b.WriteString("---:|\n")
	for _, w := range matrixWorkloads() {
		fmt.Fprintf(&b, "| %d | %d |", w.pipeline, w.clients)
		var redcell, redisLua float64
		for _, k := range kinds {
			for _, m := range ms {
				if m.work == w && m.kind == k {
					fmt.Fprintf(&b, " %s | %.3f |", formatRPS(m.median.RPS), m.median.P99Ms)
					switch k {
					case kindRedcell:
						redcell = m.median.RPS
					case kindRedisLua:
						redisLua = m.median.RPS
					}
				}
			}
		}
		ratio := 0.0
		if redcell > 0 && redisLua > 0 {
			ratio = redcell / redisLua
		}
		fmt.Fprintf(&b, " %s |\n", formatRatio(ratio))
	}
	return b.String()
}
