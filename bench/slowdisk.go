package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The slowdisk mode: how Redcell behaves when every fsync of its log takes
// longer, as on cloud block storage, in one run: the same scenarios at each
// delay of -fsync-delays (0, 0.5, 1 and 2 ms), beside Redis + Lua and Redis
// + Lua with appendfsync always on the real disk. The delay is injected by
// a second build of this commit's server (cmd/redcell/slowdisk.go, build
// tag redcell_slowdisk), which spends it in a blocking system call on the
// syncing thread after every WAL sync; the normal build has no such code.

// slowDiskTag is the build tag of the slow-disk binary, and slowDiskEnv
// the variable it reads the delay from (cmd/redcell/slowdisk.go).
const (
	slowDiskTag = "redcell_slowdisk"
	slowDiskEnv = "REDCELL_SLOWDISK_FSYNC"
)

// slowDiskOptions sizes the slowdisk mode.
type slowDiskOptions struct {
	delays []time.Duration // added to every WAL sync, one set of servers each
}

// slowDiskWorkloads are the mode's scenarios: the compare mode's 100k
// random keys at 50 clients, pipelined and not.
var slowDiskWorkloads = []workload{
	{clients: 50, pipeline: 16, keyspace: 100000},
	{clients: 50, pipeline: 1, keyspace: 100000},
}

// parseDelays reads -fsync-delays: comma-separated Go durations ("0" for
// none), distinct and not negative, in the order given.
func parseDelays(s string) ([]time.Duration, error) {
	var ds []time.Duration
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		d, err := time.ParseDuration(part)
		if err != nil {
			return nil, fmt.Errorf("-fsync-delays: %w", err)
		}
		if d < 0 {
			return nil, fmt.Errorf("-fsync-delays: %v is negative", d)
		}
		if slices.Contains(ds, d) {
			return nil, fmt.Errorf("-fsync-delays: %v given twice", d)
		}
		ds = append(ds, d)
	}
	if len(ds) == 0 {
		return nil, errors.New("-fsync-delays: no delay given")
	}
	return ds, nil
}

// formatDelay prints a delay in ms: "0 ms", "0.5 ms", "2 ms".
func formatDelay(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', -1, 64) + " ms"
}

// slowDiskServer is one Redcell kind of the mode: a base kind (Redcell, or
// a variant) at one delay.
type slowDiskServer struct {
	base  serverKind
	delay time.Duration
}

// kind is the row's label: "Redcell (fsync +1 ms)".
func (s slowDiskServer) kind() serverKind {
	return serverKind(fmt.Sprintf("%s (fsync +%s)", s.base, formatDelay(s.delay)))
}

// slowDiskServers are the mode's Redcell kinds in alternation order: for
// each delay, Redcell then each variant.
func slowDiskServers(delays []time.Duration, variants []variant) []slowDiskServer {
	var out []slowDiskServer
	for _, d := range delays {
		out = append(out, slowDiskServer{base: kindRedcell, delay: d})
		for _, v := range variants {
			out = append(out, slowDiskServer{base: v.kind(), delay: d})
		}
	}
	return out
}

// runSlowDiskMode starts the slow-disk build once per delay and base kind,
// and Redis-Lua and Redis-Lua-fsync once (those of kinds), runs
// slowDiskWorkloads alternating round → scenario → server, stops what it
// started, prints the table and returns the markdown section and the
// Redcell rows for the variants' table (the scenario names the delay).
func runSlowDiskMode(ctx context.Context, f *fleet, kinds []serverKind, variants []variant, o slowDiskOptions, runner benchmarkRunner, rounds int, progress io.Writer) (md string, rows []summaryRow, err error) {
	if !slices.Contains(kinds, kindRedcell) {
		return "", nil, errors.New("the slowdisk mode needs redcell in -servers")
	}
	var started []*server
	defer func() {
		for i := len(started) - 1; i >= 0; i-- {
			if stopErr := f.stop(started[i]); stopErr != nil {
				err = errors.Join(err, stopErr)
			}
		}
	}()
	flags := map[serverKind][]string{}
	for _, v := range variants {
		flags[v.kind()] = v.flags
	}
	servers := slowDiskServers(o.delays, variants)
	var targets []target
	for _, sd := range servers {
		f.addRedcell(sd.kind(), redcellSpec{slowDisk: true, flags: flags[sd.base], env: []string{slowDiskEnv + "=" + sd.delay.String()}})
	}
	order := make([]serverKind, 0, len(servers)+2)
	for _, sd := range servers {
		order = append(order, sd.kind())
	}
	for _, k := range []serverKind{kindRedisLua, kindRedisLuaFsync} {
		if slices.Contains(kinds, k) {
			order = append(order, k)
		}
	}
	for _, k := range order {
		s, err := f.start(ctx, k)
		if err != nil {
			return "", nil, err
		}
		started = append(started, s)
		if err := checkThrottle(ctx, s); err != nil {
			return "", nil, err
		}
		fmt.Fprintf(progress, "started %s pid %d on %s\n", s.kind, s.pid(), s.addr())
		targets = append(targets, serverTarget(s))
	}
	scenarios := make([]scenario, len(slowDiskWorkloads))
	for i, w := range slowDiskWorkloads {
		scenarios[i] = scenario{work: w, targets: targets}
	}
	ms, err := runScenarios(ctx, runner, scenarios, rounds, progress)
	if err != nil {
		return "", nil, err
	}
	md = slowDiskMarkdown(ms, servers)
	if st := stagesMarkdown(ms); st != "" {
		md += "\n" + st + "\n\n" + slowDiskStagesNote
	}
	fmt.Fprintf(progress, "\n%s", md)
	return md, summaryOfSlowDisk(ms, servers), nil
}

// slowDiskStagesNote says what the stages table shows of the bound.
const slowDiskStagesNote = "At -P 1 the *leader's log* is the sync a request waits for and the rest of the cycle is the clients' round trip between two of its syncs: " +
	"the node answering the entry, the clients turning their replies into their next requests, the node reading them (and, with two cohorts, the other cohort's sync). " +
	"clients ÷ sync is reached only when that round trip costs nothing; with the load generator on the same cores it does not, and what a row can reach is clients ÷ (sync + round trip), " +
	"with one cohort of clients per sync (req/fsync near the number of clients), which is what the batcher's merge of cohorts gives on a slow disk (group/DESIGN.md, rule 4).\n"

// slowDiskBound is what closed-loop clients that do not pipeline can reach
// at most, in requests a second, for a mean WAL sync of syncMs: each has
// one request in flight, so a sync carries at most clients of them, and
// syncs are made one at a time, so there are at most 1 ÷ syncMs of them
// a second. 0 when the sync time is unknown.
func slowDiskBound(clients int, syncMs float64) float64 {
	if syncMs <= 0 {
		return 0
	}
	return float64(clients) / syncMs * 1000
}

// slowDiskMarkdown is the mode's table: every row, the Redcell rows with
// their delay, decisions per fsync, the mean WAL sync INFO measured, the
// ratios to both Redis servers and, at -P 1, the bound of slowDiskBound
// and the row's share of it; then the notes.
func slowDiskMarkdown(ms []measurement, servers []slowDiskServer) string {
	byKind := make(map[serverKind]slowDiskServer, len(servers))
	for _, sd := range servers {
		byKind[sd.kind()] = sd
	}
	var b strings.Builder
	b.WriteString("| scenario | server | fsync delay | rps | p50 ms | p99 ms | CPU µs/req | req/fsync | one WAL sync ms | vs Redis-Lua | vs Redis-Lua-fsync | bound: clients ÷ sync | % of bound | busy elsewhere |\n")
	b.WriteString("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	var short []string
	for _, m := range ms {
		sd, isRedcell := byKind[m.kind]
		server, delay := string(m.kind), "not slowed"
		pf, syncCell, bound, share := "-", "-", "-", "-"
		if isRedcell {
			server, delay = string(sd.base), "+"+formatDelay(sd.delay)
			pf, _, _ = batchingColumns(m.median.Batching)
			if syncMs, ok := syncMsOf(m.median.Batching); ok {
				syncCell = fmt.Sprintf("%.3f", syncMs)
				if m.work.pipeline == 1 {
					bd := slowDiskBound(m.work.clients, syncMs)
					bound, share = formatRPS(bd), fmt.Sprintf("%.0f %%", 100*m.median.RPS/bd)
				}
				if syncMs < msFloat(sd.delay) {
					short = append(short, fmt.Sprintf("%s at %s", m.kind, m.work))
				}
			}
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %.3f | %.3f | %s | %s | %s | %s | %s | %s | %s | %s |\n",
			m.work, server, delay, formatRPS(m.median.RPS), m.median.P50Ms, m.median.P99Ms, formatCPU(m.median.cpuPerRequestUs()), pf, syncCell,
			formatRatio(ratioTo(ms, m, kindRedisLua)), formatRatio(ratioTo(ms, m, kindRedisLuaFsync)), bound, share, formatCores(m.median.ElsewhereCores))
	}
	b.WriteString("\n*fsync delay*: how much longer the slow-disk build of this commit's server (`-tags " + slowDiskTag + "`, `" + slowDiskEnv + "`) makes every WAL sync: " +
		"after the real fdatasync, a nanosleep of that length on the same thread, through the same kind of system call (ordinary or direct), so the runtime sees one longer fsync; +0 ms is that build with nothing injected. " +
		"**Redis-Lua and Redis-Lua-fsync are not slowed**: their disk is the real one (appendfsync always fsyncs there), and they run once per scenario, not once per delay. " +
		"*one WAL sync ms*: the server's own mean (INFO `log_wal_sync_usec_total` ÷ its WAL syncs), the delay included. " +
		"*bound: clients ÷ sync*, at -P 1: closed-loop clients that do not pipeline have one request each in flight, so one sync carries at most `clients` of them, and syncs are made one at a time, so no more than clients ÷ (mean sync time) requests a second can be answered; *% of bound* is how close the row came. " +
		"*req/fsync*: decisions per fsync of the log; CPU µs/req and busy elsewhere as in the comparison.\n")
	if len(short) > 0 {
		fmt.Fprintf(&b, "\n**WARNING: a mean WAL sync below the injected delay** (%s): the delay did not take; is the binary the slow-disk build?\n", strings.Join(short, "; "))
	}
	return b.String()
}

// syncMsOf is the mean WAL sync of a run's batching, in ms.
func syncMsOf(bt *batching) (float64, bool) {
	if bt == nil {
		return 0, false
	}
	return bt.stages.syncMs()
}

// summaryOfSlowDisk is the mode's Redcell rows under their base kind, the
// delay in the scenario, for the variants' table.
func summaryOfSlowDisk(ms []measurement, servers []slowDiskServer) []summaryRow {
	byKind := make(map[serverKind]slowDiskServer, len(servers))
	for _, sd := range servers {
		byKind[sd.kind()] = sd
	}
	var rows []summaryRow
	for _, m := range ms {
		sd, ok := byKind[m.kind]
		if !ok {
			continue
		}
		rows = append(rows, summaryRow{mode: slowDiskMode, scenario: fmt.Sprintf("%s, fsync +%s", m.work, formatDelay(sd.delay)), kind: sd.base,
			rate: m.median.RPS, cpuUs: m.median.cpuPerRequestUs()})
	}
	return rows
}
