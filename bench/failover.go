package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The failover mode: how long decisions stop when the leader of a local
// three-node cluster is killed with SIGKILL, and whether the cluster holds
// its leader while nothing fails. See bench/DESIGN.md, "Failover mode".
//
// Cycle: steady load for -quiet (terms read at its start and end: any
// change is an election while nothing failed), kill the leader, wait until
// a survivor leads and is ready and every client has had a decision since
// the kill, measure the gaps, restart the killed node on its data dir and
// wait until it has caught up. -kills cycles, then one last quiet window.

// failoverOptions are the failover mode's flags.
type failoverOptions struct {
	kills          int
	clientsPerNode int
	cpuHogs        int           // busy-loop processes beside the cluster
	quiet          time.Duration // steady load before each kill and after the last
	nodeFlags      []string      // extra flags for every node (e.g. the Raft timeouts)
	keepLogs       string        // directory the nodes' logs are copied to at the end ("": none)
}

// Bounds of the mode's waits.
const (
	failoverRecoverLimit = 20 * time.Second // kill → every client decided again
	failoverRejoinLimit  = 60 * time.Second // restart → caught up
	failoverPollEvery    = 10 * time.Millisecond
	// failoverTail is how long the window of a kill runs past the moment
	// every client has decided again: a client that got one decision and
	// then stalled again is still counted.
	failoverTail = 200 * time.Millisecond
)

// killRecord is what one kill measured.
type killRecord struct {
	killed, newLeader string
	// worst: the longest any one client went without a decision; anyone:
	// the longest no client had one.
	worst, anyone time.Duration
	// readyAfter: kill → a survivor reports itself a ready leader (INFO
	// polled every failoverPollEvery).
	readyAfter time.Duration
	complete   bool  // every client decided again within failoverRecoverLimit
	elections  int64 // term increments from the kill to the end of the rejoin
	rejoin     time.Duration
}

// quietRecord is one window of steady load.
type quietRecord struct {
	length                    time.Duration
	elections                 int64
	leaderBefore, leaderAfter string
	// maxLate is the most a 5 ms timer in bench fired late during the
	// window: how long this machine left a runnable thread waiting.
	maxLate time.Duration
}

// failoverRun is the whole run's record.
type failoverRun struct {
	opts   failoverOptions
	kills  []killRecord
	quiets []quietRecord
	totals failoverTotals
	wall   time.Duration
}

// runFailoverMode starts the cluster and the clients, runs the cycles,
// stops everything it started and returns the markdown section.
func runFailoverMode(ctx context.Context, f *fleet, o failoverOptions, progress io.Writer) (md string, err error) {
	c, err := startCluster(ctx, f, kindRedcell, clusterSize, func(string) []string { return o.nodeFlags }, progress)
	defer func() {
		// Whatever ran: the fleet stops each by PID (closeAll does the rest).
		for _, s := range f.servers {
			if s.kind == kindRedcell && s.name != "" {
				err = errors.Join(err, s.stop())
			}
		}
		if o.keepLogs != "" {
			err = errors.Join(err, keepNodeLogs(f, o.keepLogs))
		}
	}()
	if err != nil {
		return "", err
	}
	hogs, err := startCPUHogs(o.cpuHogs)
	defer hogs.stop()
	if err != nil {
		return "", err
	}
	nodes := slices.Clone(c.nodes)
	addrs := make([]string, len(nodes))
	for i, s := range nodes {
		addrs[i] = s.addr()
	}
	load := startFailoverLoad(addrs, o.clientsPerNode)
	defer load.halt()
	fmt.Fprintf(progress, "%d clients (%d per node), %d busy-loop processes; node flags: %s\n",
		len(load.clients), o.clientsPerNode, o.cpuHogs, flagsText(o.nodeFlags))

	run := &failoverRun{opts: o}
	began := time.Now()
	for cycle := 0; ; cycle++ {
		load.goHome()
		q, leader, err := quietWindow(ctx, nodes, o.quiet)
		if err != nil {
			return "", err
		}
		run.quiets = append(run.quiets, q)
		fmt.Fprintf(progress, "quiet %.1f s: %d elections, leader %s → %s; %d decisions so far; a 5 ms timer up to %s late; load average %s\n",
			q.length.Seconds(), q.elections, q.leaderBefore, q.leaderAfter, load.decisions(), msText(q.maxLate), loadAverage())
		if cycle == o.kills {
			break
		}
		rec, err := killLeader(ctx, f, nodes, leader, load, cycle+1)
		if err != nil {
			return "", err
		}
		run.kills = append(run.kills, rec)
		fmt.Fprintf(progress, "kill %d of %s: longest gap %s per client, %s for all; ready leader %s after %s; %d elections; rejoined in %.1f s\n",
			cycle+1, rec.killed, msText(rec.worst), msText(rec.anyone), rec.newLeader, msText(rec.readyAfter), rec.elections, rec.rejoin.Seconds())
	}
	run.totals = load.totals()
	run.wall = time.Since(began)
	md = failoverMarkdown(run)
	fmt.Fprintf(progress, "\n%s", md)
	return md, nil
}

// quietWindow runs steady load for d and reads the terms at its start and
// end. It returns the leader at the end.
func quietWindow(ctx context.Context, nodes []*server, d time.Duration) (quietRecord, *server, error) {
	leader, term0, err := agreedTerm(ctx, nodes)
	if err != nil {
		return quietRecord{}, nil, fmt.Errorf("before a quiet window: %w", err)
	}
	start := time.Now()
	maxLate, err := sleepMeasuringLateness(ctx, d)
	if err != nil {
		return quietRecord{}, nil, err
	}
	q := quietRecord{length: time.Since(start), leaderBefore: leader.name, maxLate: maxLate}
	end, term1, err := agreedTerm(ctx, nodes)
	if err != nil {
		return quietRecord{}, nil, fmt.Errorf("after a quiet window: %w", err)
	}
	q.leaderAfter, q.elections = end.name, term1-term0
	return q, end, nil
}

// sleepMeasuringLateness waits d in 5 ms steps and returns the most any
// step overran.
func sleepMeasuringLateness(ctx context.Context, d time.Duration) (time.Duration, error) {
	const step = 5 * time.Millisecond
	var maxLate time.Duration
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		t0 := time.Now()
		if err := sleepCtx(ctx, step); err != nil {
			return maxLate, err
		}
		maxLate = max(maxLate, time.Since(t0)-step)
	}
	return maxLate, nil
}

// agreedTerm waits (up to 10 s: an election a quiet window caused may still
// be settling) until every node names the same leader, and returns it with
// the highest term any node reports.
func agreedTerm(ctx context.Context, nodes []*server) (*server, int64, error) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		infos := make([]map[string]string, len(nodes))
		var lastErr error
		for i, s := range nodes {
			infos[i], lastErr = raftInfo(ctx, s)
		}
		if leader := agreedLeader(nodes, infos); leader != nil {
			return leader, maxTerm(infos), nil
		}
		if time.Now().After(deadline) {
			return nil, 0, fmt.Errorf("the nodes name no common leader (last error: %v)", lastErr)
		}
		if err := sleepCtx(ctx, 50*time.Millisecond); err != nil {
			return nil, 0, err
		}
	}
}

func maxTerm(infos []map[string]string) int64 {
	var t int64
	for _, info := range infos {
		if v, err := strconv.ParseInt(info["raft_term"], 10, 64); err == nil {
			t = max(t, v)
		}
	}
	return t
}

// killLeader kills leader with SIGKILL, measures the failover, restarts it
// (replacing it in nodes) and waits until it has caught up.
func killLeader(ctx context.Context, f *fleet, nodes []*server, leader *server, load *failoverLoad, n int) (killRecord, error) {
	rec := killRecord{killed: leader.name}
	var survivors []*server
	before := make([]map[string]string, 0, len(nodes))
	for _, s := range nodes {
		if s != leader {
			survivors = append(survivors, s)
		}
		if info, err := raftInfo(ctx, s); err == nil {
			before = append(before, info)
		}
	}
	termBefore := maxTerm(before)

	killAt := time.Now()
	if err := leader.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return rec, fmt.Errorf("kill %s (pid %d): %w", leader.label(), leader.pid(), err)
	}
	select {
	case <-leader.exited:
	case <-time.After(10 * time.Second):
		return rec, fmt.Errorf("%s (pid %d) still runs 10 s after SIGKILL", leader.label(), leader.pid())
	}

	deadline := killAt.Add(failoverRecoverLimit)
	for {
		if rec.newLeader == "" {
			for _, s := range survivors {
				if info, err := raftInfo(ctx, s); err == nil && info["raft_state"] == "leader" && info["raft_ready"] == "1" {
					rec.readyAfter, rec.newLeader = time.Since(killAt), s.name
					break
				}
			}
		}
		if rec.newLeader != "" && load.allSucceededSince(killAt) {
			rec.complete = true
			break
		}
		if time.Now().After(deadline) {
			break
		}
		if err := sleepCtx(ctx, failoverPollEvery); err != nil {
			return rec, err
		}
	}
	if err := sleepCtx(ctx, failoverTail); err != nil {
		return rec, err
	}
	rec.worst, rec.anyone = load.gaps(killAt, time.Now())

	restartAt := time.Now()
	s, err := f.relaunch(ctx, leader, fmt.Sprintf("server-restart-%d.log", n))
	if err != nil {
		return rec, err
	}
	nodes[slices.Index(nodes, leader)] = s
	if err := waitCaughtUp(ctx, nodes, s); err != nil {
		return rec, err
	}
	rec.rejoin = time.Since(restartAt)
	_, termAfter, err := agreedTerm(ctx, nodes)
	if err != nil {
		return rec, err
	}
	rec.elections = termAfter - termBefore
	return rec, nil
}

// waitCaughtUp waits until every node names the same leader, the restarted
// node has applied what that leader had committed when the wait began, and
// it has finished loading (else its clients, back home, meet LOADING).
func waitCaughtUp(ctx context.Context, nodes []*server, restarted *server) error {
	deadline := time.Now().Add(failoverRejoinLimit)
	var target int64 = -1
	last := "no answer yet"
	for {
		infos := make([]map[string]string, len(nodes))
		for i, s := range nodes {
			info, err := raftInfo(ctx, s)
			if err != nil {
				last = fmt.Sprintf("%s: %v", s.name, err)
			}
			infos[i] = info
		}
		leader := agreedLeader(nodes, infos)
		if leader != nil {
			li := infos[slices.Index(nodes, leader)]
			if target < 0 {
				target, _ = strconv.ParseInt(li["raft_commit_index"], 10, 64)
			}
			applied, _ := strconv.ParseInt(infos[slices.Index(nodes, restarted)]["raft_applied_index"], 10, 64)
			loading, err := isLoading(ctx, restarted)
			if applied >= target && err == nil && !loading {
				return nil
			}
			last = fmt.Sprintf("%s applied %d of %d, loading %v (%v)", restarted.name, applied, target, loading, err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not catch up within %v after its restart (%s)%s", restarted.label(), failoverRejoinLimit, last, logTail(restarted.logPath, 10))
		}
		if err := sleepCtx(ctx, 50*time.Millisecond); err != nil {
			return err
		}
	}
}

// keepNodeLogs copies every cluster node's log files (the first start's and
// each restart's) into dir as NAME-FILE, before the temp root is removed.
func keepNodeLogs(f *fleet, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	seen := make(map[string]bool)
	var errs []error
	for _, s := range f.servers {
		if s.kind != kindRedcell || s.name == "" || seen[s.dataDir] {
			continue
		}
		seen[s.dataDir] = true
		logs, _ := filepath.Glob(filepath.Join(s.dataDir, "*.log"))
		for _, p := range logs {
			b, err := os.ReadFile(p)
			if err == nil {
				err = os.WriteFile(filepath.Join(dir, s.name+"-"+filepath.Base(p)), b, 0o644)
			}
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// isLoading reads INFO persistence's loading field of s.
func isLoading(ctx context.Context, s *server) (bool, error) {
	c, err := dialRESP(ctx, s.addr())
	if err != nil {
		return false, err
	}
	defer c.Close()
	c.setDeadline(time.Now().Add(2 * time.Second))
	v, err := c.do("INFO", "persistence")
	if err != nil {
		return false, err
	}
	if v.Kind != '$' || v.Null {
		return false, fmt.Errorf("INFO persistence answered %s", v)
	}
	return parseInfo(v.Str)["loading"] != "0", nil
}

// sleepCtx waits d unless ctx ends first.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// cpuHogs are busy-loop processes (sh spinning on ':'): the other work of a
// loaded machine, scheduled by the kernel like the nodes.
type cpuHogs struct{ cmds []*exec.Cmd }

func startCPUHogs(n int) (*cpuHogs, error) {
	h := &cpuHogs{}
	for range n {
		cmd := exec.Command("sh", "-c", "while :; do :; done")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			return h, fmt.Errorf("start a busy loop: %w", err)
		}
		h.cmds = append(h.cmds, cmd)
	}
	return h, nil
}

// stop kills each by PID and reaps it.
func (h *cpuHogs) stop() {
	for _, cmd := range h.cmds {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
	h.cmds = nil
}

// ms prints a duration in whole milliseconds.
func msText(d time.Duration) string {
	return strconv.FormatInt(d.Round(time.Millisecond).Milliseconds(), 10) + " ms"
}

func flagsText(flags []string) string {
	if len(flags) == 0 {
		return "none (the defaults)"
	}
	return "`" + strings.Join(flags, " ") + "`"
}

// nearestRank is the p-quantile (0 < p <= 1) of sorted by nearest rank.
func nearestRank(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// distribution is "min / p50 / p90 / max" of ds.
func distribution(ds []time.Duration) string {
	s := slices.Sorted(slices.Values(ds))
	if len(s) == 0 {
		return "-"
	}
	return fmt.Sprintf("%s / %s / %s / %s", msText(s[0]), msText(nearestRank(s, 0.5)), msText(nearestRank(s, 0.9)), msText(s[len(s)-1]))
}

// failoverMarkdown is the mode's results section.
func failoverMarkdown(r *failoverRun) string {
	var b strings.Builder
	o := r.opts
	fmt.Fprintf(&b, "%d Redcell nodes on this machine (n1 bootstrapped, the others joined; own data dirs and fsyncs), node flags: %s. "+
		"%d clients per node, each one CL.THROTTLE at a time; on CLUSTERDOWN, TRYAGAIN or LOADING a client asks again after %v, on a broken connection "+
		"it moves to the next node, and all go back home once the killed node has rejoined. %d busy-loop processes beside them. "+
		"Each cycle: %.0f s of steady load, SIGKILL of the leader, restart on its data dir, wait until caught up. Run took %.0f s.\n\n",
		clusterSize, flagsText(o.nodeFlags), o.clientsPerNode, failoverErrorPause, o.cpuHogs, o.quiet.Seconds(), r.wall.Seconds())
	var worst, anyone, ready, rejoin []time.Duration
	incomplete, extra := 0, int64(0)
	for _, k := range r.kills {
		worst, anyone, ready, rejoin = append(worst, k.worst), append(anyone, k.anyone), append(ready, k.readyAfter), append(rejoin, k.rejoin)
		if !k.complete {
			incomplete++
		}
		extra += max(k.elections-1, 0)
	}
	var quietLen time.Duration
	var quietElections int64
	leaderMoves := 0
	var lates []time.Duration
	for _, q := range r.quiets {
		lates = append(lates, q.maxLate)
		quietLen += q.length
		quietElections += q.elections
		if q.leaderBefore != q.leaderAfter {
			leaderMoves++
		}
	}
	if len(r.kills) > 0 {
		fmt.Fprintf(&b, "| over %d kills | min / p50 / p90 / max |\n|---|---|\n", len(r.kills))
		fmt.Fprintf(&b, "| **longest gap without a decision, worst client** | **%s** |\n", distribution(worst))
		fmt.Fprintf(&b, "| longest gap without a decision anywhere | %s |\n", distribution(anyone))
		fmt.Fprintf(&b, "| kill → a survivor is a ready leader (INFO polled every %v) | %s |\n", failoverPollEvery, distribution(ready))
		fmt.Fprintf(&b, "| restart → caught up | %s |\n\n", distribution(rejoin))
		fmt.Fprintf(&b, "Elections beyond the one each kill needs: %d. Kills after which some client had no decision within %v: %d.\n",
			extra, failoverRecoverLimit, incomplete)
	}
	fmt.Fprintf(&b, "**Elections while nothing failed: %d** in %d windows of steady load (%.0f s in all); leader changed in %d of them. "+
		"How late a 5 ms timer in bench fired at worst, per window (how long the machine left a runnable thread waiting): %s.\n",
		quietElections, len(r.quiets), quietLen.Seconds(), leaderMoves, distribution(lates))
	t := r.totals
	fmt.Fprintf(&b, "\nDecisions: %d. Error replies: %s. Broken connections %d, refused dials %d, moves to another node %d.\n",
		t.decisions, countsText(t.errReplies), t.ioErrs, t.dialErrs, t.moves)
	if len(t.unexpected) > 0 {
		fmt.Fprintf(&b, "\n**Unexpected replies** (first few): %s\n", strings.Join(t.unexpected[:min(len(t.unexpected), 5)], "; "))
	}
	if len(r.kills) > 0 {
		b.WriteString("\n| kill | killed | new leader | worst client | anywhere | ready leader after | elections | rejoined after |\n|---:|---|---|---:|---:|---:|---:|---:|\n")
		for i, k := range r.kills {
			mark := ""
			if !k.complete {
				mark = " (incomplete)"
			}
			fmt.Fprintf(&b, "| %d | %s | %s | %s%s | %s | %s | %d | %.1f s |\n", i+1, k.killed, k.newLeader, msText(k.worst), mark, msText(k.anyone), msText(k.readyAfter), k.elections, k.rejoin.Seconds())
		}
	}
	return b.String()
}

// countsText is "WORD n, WORD n" sorted by word, or "none".
func countsText(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	keys := slices.Sorted(maps.Keys(m))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}
