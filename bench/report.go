package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
)

// resultsReport describes a run (machine, command, build) and renders one
// markdown results file per mode, bench/results/<mode>.md, each replacing
// the previous run's: the README quotes these files. It is used by the main
// goroutine only.
type resultsReport struct {
	info     machineInfo
	command  string
	quick    bool
	seconds  float64 // measured run's target duration
	warmup   float64 // unmeasured run of the same load before it
	build    string  // how the Redcell binary was compiled ("" when no Redcell ran)
	baseline string  // the Redcell-baseline's commit and build ("" without -baseline)
	variants string  // the -variants and their flags ("" without)
	// slowDiskBuild is how the slowdisk mode's binary was compiled ("" when
	// it was not built).
	slowDiskBuild string
}

// markdown renders the results file of one mode: the run's description,
// then the mode's section under title. loadEnd is the load average when the
// mode ended.
func (r *resultsReport) markdown(title, body, loadEnd string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Redcell benchmark results\n\n")
	fmt.Fprintf(&b, "Produced by `%s` on %s.", r.command, r.info.Date)
	if r.quick {
		fmt.Fprintf(&b, " **Quick run (-quick): short runs for a smoke check, not for quoting.**")
	}
	fmt.Fprintf(&b, "\n\n| | |\n|---|---|\n")
	fmt.Fprintf(&b, "| machine | %d CPUs, %s, Linux %s |\n", r.info.CPUs, r.info.CPUModel, r.info.Kernel)
	fmt.Fprintf(&b, "| CPU idle | %s (a halted vCPU's wake-up is part of a lone client's round trip) |\n", r.info.CPUIdle)
	fmt.Fprintf(&b, "| Go | %s |\n", r.info.GoVersion)
	fmt.Fprintf(&b, "| Redis | %s |\n", r.info.RedisServer)
	fmt.Fprintf(&b, "| Redcell commit | %s |\n", r.info.Commit)
	if r.build != "" {
		fmt.Fprintf(&b, "| Redcell build | %s |\n", r.build)
	}
	if r.baseline != "" {
		fmt.Fprintf(&b, "| Redcell-baseline | %s |\n", r.baseline)
	}
	if r.variants != "" {
		fmt.Fprintf(&b, "| Redcell variants | %s |\n", r.variants)
	}
	if r.slowDiskBuild != "" {
		fmt.Fprintf(&b, "| Redcell slow-disk build | %s |\n", r.slowDiskBuild)
	}
	fmt.Fprintf(&b, "| data dirs on | %s |\n", r.info.DataFS)
	fmt.Fprintf(&b, "| fsync there | %s |\n", r.info.Fsync)
	fmt.Fprintf(&b, "| load average (1/5/15 min) | %s at the start of the run, %s at the end of this mode |\n", r.info.LoadStart, loadEnd)
	fmt.Fprintf(&b, "| runs | each measured run ~%.0f s, after a probe and %.1f s of the same load unmeasured (`-seconds`, `-warmup`) |\n", r.seconds, r.warmup)
	fmt.Fprintf(&b, "| load | redis-benchmark, CL.THROTTLE `<key> %s` (Redis: EVALSHA of bench/gcra.lua); TB.TAKE and SL.HIT (limiters, memory) in their sections |\n", strings.Join(throttleArgs, " "))
	fmt.Fprintf(&b, "\nServers: **Redcell** (durable: one fsync per batch), **Redis-Lua** (`--save '' --appendonly no`, not durable), **Redis-Lua-fsync** (`--appendonly yes --appendfsync always`). Ratios divide by Redis-Lua measured in the same run; see bench/DESIGN.md.\n")
	fmt.Fprintf(&b, "\n## %s\n\n%s", title, body)
	return b.String()
}

// writeFile replaces path with the run's description followed by sections
// (markdown that starts with its own "## title"), creating its directory:
// the one file of a run given -md.
func (r *resultsReport) writeFile(path, sections string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("create results dir: %w", err)
	}
	head, _, _ := strings.Cut(r.markdown("", "", loadAverage()), "\n## ")
	if err := os.WriteFile(path, []byte(head+"\n"+sections), 0o644); err != nil {
		return fmt.Errorf("write results: %w", err)
	}
	return nil
}

// write replaces dir/<mode>.md with the mode's results file, creating dir,
// and returns the file's path.
func (r *resultsReport) write(dir, mode, title, body string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("create results dir: %w", err)
	}
	path := filepath.Join(dir, mode+".md")
	if err := os.WriteFile(path, []byte(r.markdown(title, body, loadAverage())), 0o644); err != nil {
		return "", fmt.Errorf("write results: %w", err)
	}
	return path, nil
}

// printMeasurements prints the one table of a mode: scenario, server, rps,
// p50, p99 and the ratio to Redis-Lua of the same run.
func printMeasurements(w io.Writer, ms []measurement) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "scenario\tserver\t%10s\t%7s\t%7s\t%12s\t%9s\t%9s\t%10s\t%14s\t%15s\n", "rps", "p50 ms", "p99 ms", "vs Redis-Lua", "CPU us/req", "client us/req", "req/fsync", "req/entry p50-p90", "busy elsewhere")
	for _, m := range ms {
		pf, p50, p90 := batchingColumns(m.median.Batching)
		fmt.Fprintf(tw, "%s\t%s\t%10s\t%7.3f\t%7.3f\t%12s\t%9.1f\t%9.1f\t%10s\t%14s\t%15s\n", m.work, m.kind, formatRPS(m.median.RPS), m.median.P50Ms, m.median.P99Ms,
			formatRatio(ratioToRedisLua(ms, m)), m.median.cpuPerRequestUs(), m.median.clientCPUPerRequestUs(), pf, p50+" / "+p90, formatCores(m.median.ElsewhereCores))
	}
	tw.Flush()
}

// measurementsMarkdown is printMeasurements as a markdown table.
func measurementsMarkdown(ms []measurement) string {
	var b strings.Builder
	b.WriteString("| scenario | server | rps | p50 ms | p99 ms | vs Redis-Lua | CPU µs/req | client µs/req | req/fsync | req/entry p50 / p90 | busy elsewhere |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, m := range ms {
		pf, p50, p90 := batchingColumns(m.median.Batching)
		fmt.Fprintf(&b, "| %s | %s | %s | %.3f | %.3f | %s | %.1f | %.1f | %s | %s / %s | %s |\n", m.work, m.kind, formatRPS(m.median.RPS), m.median.P50Ms, m.median.P99Ms,
			formatRatio(ratioToRedisLua(ms, m)), m.median.cpuPerRequestUs(), m.median.clientCPUPerRequestUs(), pf, p50, p90, formatCores(m.median.ElsewhereCores))
	}
	b.WriteString("\n*CPU µs/req*: the server's CPU time (all its threads, user + system; for a cluster, every node's) per request. *client µs/req*: the same for the load generator (every redis-benchmark process of the run, from its rusage); redis-benchmark is single-threaded, so where a process's share nears a whole core (client µs/req × rps ÷ 10⁶ per process) the client, not the server, bounds the row. *req/fsync*: decisions per fsync of the leader's log; *req/entry p50 / p90*: the size class (power-of-two bucket of INFO `raft_entry_ops_histogram`) of the log entry that carried the median and the 90th-percentile decision.\n")
	b.WriteString("\n*busy elsewhere*: CPU cores used during the run by everything but the measured server and redis-benchmark (other servers' background work, other processes); above ~0.2 the row is disturbed.\n")
	return b.String()
}

// formatRPS prints a rate with thousands separators.
func formatRPS(rps float64) string {
	s := fmt.Sprintf("%.0f", rps)
	var out []byte
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	return string(out)
}

func formatRatio(r float64) string {
	if r == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx", r)
}

// formatCores prints a CPU share in cores.
func formatCores(c float64) string {
	return fmt.Sprintf("%.2f cores", c)
}

// formatBytes prints a byte count in MiB with one decimal.
func formatBytes(n int64) string {
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}
