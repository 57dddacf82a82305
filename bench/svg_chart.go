package main

import (
	"fmt"
	"html"
	"math"
	"os"
	"path/filepath"
	"strings"
)

// Chart geometry, in SVG user units.
const (
	chartPanelWidth  = 320
	chartPanelHeight = 300
	chartMarginLeft  = 64
	chartMarginTop   = 70
	chartPlotBottom  = 50 // room for the clients and ratio labels under each panel
	chartPanelGap    = 30
)

// serverColors gives each server one colour in every chart.
var serverColors = map[serverKind]string{
	kindRedcell:         "#c0392b",
	kindRedcellBaseline: "#e59866",
	kindRedisLua:        "#7f8c8d",
	kindRedisLuaFsync:   "#34495e",
}

// throughputSVG renders the matrix as grouped bars: one panel per pipeline
// depth, one group per client count, one bar per server, with its own y
// scale per panel (rates at -P 1 and -P 64 differ by an order of magnitude)
// and the value printed on each bar. Hand-written SVG: no dependencies.
func throughputSVG(ms []measurement, title string) string {
	kinds := measuredKinds(ms)
	rps := make(map[workload]map[serverKind]float64)
	for _, m := range ms {
		if rps[m.work] == nil {
			rps[m.work] = make(map[serverKind]float64)
		}
		rps[m.work][m.kind] = m.median.RPS
	}

	width := chartMarginLeft + len(matrixPipelines)*(chartPanelWidth+chartPanelGap)
	height := chartMarginTop + chartPanelHeight + chartPlotBottom + 10
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="%d" y="22" font-size="16" font-weight="bold">%s</text>`+"\n", chartMarginLeft, html.EscapeString(title))
	for i, k := range kinds { // legend
		x := chartMarginLeft + i*170
		fmt.Fprintf(&b, `<rect x="%d" y="34" width="12" height="12" fill="%s"/><text x="%d" y="45">%s</text>`+"\n", x, serverColors[k], x+17, html.EscapeString(string(k)))
	}

	for pi, p := range matrixPipelines {
		x0 := chartMarginLeft + pi*(chartPanelWidth+chartPanelGap)
		yTop := chartMarginTop
		yBottom := chartMarginTop + chartPanelHeight
		peak := 0.0
		for _, c := range matrixClients {
			for _, k := range kinds {
				peak = math.Max(peak, rps[workload{clients: c, pipeline: p, keyspace: 100000}][k])
			}
		}
		step := niceStep(peak / 4)
		top := step * math.Ceil(peak/step)
		if top == 0 {
			top = 1
		}
		scale := float64(chartPanelHeight-20) / top // leave room for value labels
		fmt.Fprintf(&b, `<text x="%d" y="%d" font-weight="bold">-P %d</text>`+"\n", x0+chartPanelWidth/2-18, yTop-6, p)
		for v := 0.0; v <= top+step/2; v += step { // y grid and labels
			y := float64(yBottom) - v*scale
			fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>`+"\n", x0, y, x0+chartPanelWidth, y)
			fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end" fill="#555">%s</text>`+"\n", x0-4, y+4, shortRate(v))
		}
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#333"/>`+"\n", x0, yBottom, x0+chartPanelWidth, yBottom)

		groupWidth := float64(chartPanelWidth) / float64(len(matrixClients))
		barWidth := groupWidth * 0.8 / float64(max(len(kinds), 1))
		for ci, c := range matrixClients {
			gx := float64(x0) + float64(ci)*groupWidth + groupWidth*0.1
			for ki, k := range kinds {
				v := rps[workload{clients: c, pipeline: p, keyspace: 100000}][k]
				h := v * scale
				bx := gx + float64(ki)*barWidth
				fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s, -c %d -P %d: %s rps</title></rect>`+"\n",
					bx, float64(yBottom)-h, barWidth-1, h, serverColors[k], html.EscapeString(string(k)), c, p, formatRPS(v))
				fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle" font-size="9">%s</text>`+"\n", bx+barWidth/2, float64(yBottom)-h-3, shortRate(v))
			}
			fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">-c %d</text>`+"\n", gx+groupWidth*0.4, yBottom+16, c)
			cell := rps[workload{clients: c, pipeline: p, keyspace: 100000}]
			if cell[kindRedcell] > 0 && cell[kindRedisLua] > 0 && len(kinds) > 1 {
				fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle" fill="%s" font-weight="bold">%s</text>`+"\n",
					gx+groupWidth*0.4, yBottom+31, serverColors[kindRedcell], formatRatio(cell[kindRedcell]/cell[kindRedisLua]))
			}
		}
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#555">decisions per second (redis-benchmark, 100000 random keys); each panel has its own scale; red figures: Redcell / Redis-Lua</text>`+"\n", chartMarginLeft, height-8)
	b.WriteString("</svg>\n")
	return b.String()
}

// writeSVG stores the chart at path, creating its directory.
func writeSVG(path, svg string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("create chart dir: %w", err)
	}
	if err := os.WriteFile(path, []byte(svg), 0o644); err != nil {
		return fmt.Errorf("write chart: %w", err)
	}
	return nil
}

// niceStep rounds x up to 1, 2 or 5 times a power of ten (grid spacing).
func niceStep(x float64) float64 {
	if x <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(x)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= x {
			return m * p
		}
	}
	return 10 * p
}

// shortRate prints a rate compactly for chart labels: 950, 12k, 1.2M.
func shortRate(v float64) string {
	switch {
	case v >= 1e6:
		return strings.TrimSuffix(fmt.Sprintf("%.2f", v/1e6), "0") + "M"
	case v >= 1e4:
		return fmt.Sprintf("%.0fk", v/1e3)
	case v >= 1e3:
		return fmt.Sprintf("%.1fk", v/1e3)
	}
	return fmt.Sprintf("%.0f", v)
}
