package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// The restart mode: how soon a restarted node serves again. See
// bench/DESIGN.md, "Restart mode".
//
// For a small log (restartSmallLog decisions, one log entry each) and a
// large one (-keys keys, a snapshot of them, then half as many decisions
// again in the log after it), it restarts with SIGKILL (a) a lone node,
// (b) a follower of a three-node cluster while the other two run, and (c)
// that cluster's leader (it comes back as a follower), -restarts times
// each. A cluster node stays down for -restart-down (from the kill) first:
// hashicorp/raft's leader backs off from a peer it cannot reach, so the
// downtime is part of what a restart costs. Each restart times, from the
// moment before exec: the first reply of any kind, INFO persistence
// loading:0, and the first CL.THROTTLE decision answered, polling one
// connection every restartPollEvery; and it reads from the node's log what
// the restore of its snapshot and its loading took.

// restartOptions are the restart mode's flags.
type restartOptions struct {
	rounds    int           // restarts per row
	largeKeys int           // keys of the large log (-keys)
	downFor   time.Duration // kill → restart of a cluster node
}

// Bounds and pace of the mode.
const (
	restartSmallLog   = 100
	restartPollEvery  = 2 * time.Millisecond
	restartServeLimit = 120 * time.Second // exec → first decision
	restartProbeKey   = "bench:restart:probe"
)

// restartSample is one restart's times, from the moment before exec.
type restartSample struct {
	firstReply, loaded, decided time.Duration
	// From the node's log: the startup snapshot's restore, and the end of
	// loading (how, and how long after Open).
	restore, loadTook time.Duration
	loadHow           string
}

// restartRow is one scenario at one log size.
type restartRow struct {
	scenario, log string
	snapBytes     int64 // last_snapshot_bytes before the restarts
	logBytes      int64 // log_bytes_since_snapshot before the restarts
	samples       []restartSample
}

// runRestartMode runs every row and returns the markdown section.
func runRestartMode(ctx context.Context, f *fleet, o restartOptions, progress io.Writer) (md string, err error) {
	var rows []restartRow
	for _, size := range []string{"small", "large"} {
		r, err := restartLone(ctx, f, o, size, progress)
		if err != nil {
			return "", err
		}
		rows = append(rows, r)
		rs, err := restartClusterRows(ctx, f, o, size, progress)
		if err != nil {
			return "", err
		}
		rows = append(rows, rs...)
	}
	return restartMarkdown(rows, o), nil
}

// restartLone is row (a): a lone node restarted on its data dir.
func restartLone(ctx context.Context, f *fleet, o restartOptions, size string, progress io.Writer) (restartRow, error) {
	s, err := f.startNode(ctx, kindRedcell, "lone-"+size, nil)
	if err != nil {
		return restartRow{}, err
	}
	defer func() { f.stop(s) }() // the restarted process, by then
	if err := fillLog(ctx, []*server{s}, s, size, o.largeKeys, progress); err != nil {
		return restartRow{}, err
	}
	row := restartRow{scenario: "(a) lone node", log: size}
	row.snapBytes, row.logBytes = logSizes(ctx, s)
	for i := range o.rounds {
		if err := killServer(s); err != nil {
			return row, err
		}
		next, sample, err := restartAndProbe(ctx, f, s, fmt.Sprintf("restart-%d.log", i+1))
		if err != nil {
			return row, err
		}
		s = next
		row.samples = append(row.samples, sample)
		fmt.Fprintf(progress, "%s, %s log, restart %d: %s\n", row.scenario, size, i+1, sample)
	}
	return row, nil
}

// restartClusterRows are rows (b) and (c) on one three-node cluster.
func restartClusterRows(ctx context.Context, f *fleet, o restartOptions, size string, progress io.Writer) (rows []restartRow, err error) {
	c, err := startCluster(ctx, f, kindRedcell, clusterSize, nil, progress)
	defer func() {
		if c == nil {
			return
		}
		for _, s := range c.nodes {
			err = errors.Join(err, f.stop(s))
		}
	}()
	if err != nil {
		return nil, err
	}
	nodes := slices.Clone(c.nodes)
	if err := fillLog(ctx, nodes, c.leader, size, o.largeKeys, progress); err != nil {
		return nil, err
	}
	for _, which := range []string{"follower", "leader"} {
		row := restartRow{scenario: "(b) follower, 2 others running", log: size}
		if which == "leader" {
			row.scenario = "(c) leader, comes back as follower"
		}
		for i := range o.rounds {
			leader, err := waitAgreedLeader(ctx, nodes, nodes)
			if err != nil {
				return rows, err
			}
			victim := leader
			if which == "follower" {
				victim = nodes[(slices.Index(nodes, leader)+1)%len(nodes)]
			}
			if i == 0 {
				row.snapBytes, row.logBytes = logSizes(ctx, victim)
			}
			killedAt := time.Now()
			if err := killServer(victim); err != nil {
				return rows, err
			}
			others := slices.DeleteFunc(slices.Clone(nodes), func(s *server) bool { return s == victim })
			if _, err := waitAgreedLeader(ctx, others, nodes); err != nil {
				return rows, err
			}
			if err := sleepCtx(ctx, time.Until(killedAt.Add(o.downFor))); err != nil {
				return rows, err
			}
			next, sample, err := restartAndProbe(ctx, f, victim, fmt.Sprintf("restart-%s-%d.log", which, i+1))
			if err != nil {
				return rows, err
			}
			nodes[slices.Index(nodes, victim)] = next
			c.nodes = nodes
			row.samples = append(row.samples, sample)
			fmt.Fprintf(progress, "%s, %s log, restart %d of %s: %s\n", row.scenario, size, i+1, victim.name, sample)
			if err := waitCaughtUp(ctx, nodes, next); err != nil {
				return rows, err
			}
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// fillLog writes the log of a size: small, restartSmallLog decisions one
// at a time; large, keys keys pipelined, a snapshot on every node (SAVE),
// then keys/2 more. Through via; nodes are every node that must hold it.
func fillLog(ctx context.Context, nodes []*server, via *server, size string, keys int, progress io.Writer) error {
	began := time.Now()
	if size == "small" {
		c, err := dialRESP(ctx, via.addr())
		if err != nil {
			return err
		}
		defer c.Close()
		c.setDeadline(time.Now().Add(30 * time.Second))
		for i := range restartSmallLog {
			v, err := c.do(via.limiterCommand(familyCL, "bench:restart:small:"+strconv.Itoa(i), throttleArgs...)...)
			if err != nil {
				return err
			}
			if _, err := throttleReply(v); err != nil {
				return fmt.Errorf("%s: %w", via.label(), err)
			}
		}
	} else {
		// A leader that loses its lease under this load (a busy machine)
		// answers TRYAGAIN; the load then starts again once a leader is
		// ready: a key decided twice is still below its limit.
		load := func(prefix string, n int64) error {
			for attempt := 1; ; attempt++ {
				var written atomic.Int64
				err := pipelineLoad(ctx, via, familyCL, 8, 0, &written, func(i int64) (string, bool) {
					return prefix + strconv.FormatInt(i, 10), i < n
				}, throttleArgs)
				if err == nil || attempt == 5 || !isFailoverReply(err) {
					return err
				}
				fmt.Fprintf(progress, "loading the large log again after %v\n", err)
				if _, err := waitAgreedLeader(ctx, nodes, nodes); err != nil {
					return err
				}
			}
		}
		if err := load("bench:restart:a:", int64(keys)); err != nil {
			return err
		}
		for _, s := range nodes {
			if err := waitApplied(ctx, s, via); err != nil {
				return err
			}
			if err := saveNode(ctx, s); err != nil {
				return err
			}
		}
		if err := load("bench:restart:b:", int64(keys/2)); err != nil {
			return err
		}
	}
	for _, s := range nodes {
		if err := waitApplied(ctx, s, via); err != nil {
			return err
		}
	}
	fmt.Fprintf(progress, "%s log written in %.1f s\n", size, time.Since(began).Seconds())
	return nil
}

// isFailoverReply reports whether err is an error reply a leader change
// explains.
func isFailoverReply(err error) bool {
	return strings.Contains(err.Error(), "TRYAGAIN") || strings.Contains(err.Error(), "CLUSTERDOWN")
}

// waitApplied waits until s has applied via's commit index.
func waitApplied(ctx context.Context, s, via *server) error {
	li, err := raftInfo(ctx, via)
	if err != nil {
		return err
	}
	target, _ := strconv.ParseInt(li["raft_commit_index"], 10, 64)
	deadline := time.Now().Add(60 * time.Second)
	for {
		info, err := raftInfo(ctx, s)
		if err == nil {
			if applied, _ := strconv.ParseInt(info["raft_applied_index"], 10, 64); applied >= target {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not apply index %d within a minute (%v)", s.label(), target, err)
		}
		if err := sleepCtx(ctx, 20*time.Millisecond); err != nil {
			return err
		}
	}
}

// saveNode takes a snapshot of s (SAVE).
func saveNode(ctx context.Context, s *server) error {
	c, err := dialRESP(ctx, s.addr())
	if err != nil {
		return err
	}
	defer c.Close()
	c.setDeadline(time.Now().Add(60 * time.Second))
	v, err := c.do("SAVE")
	if err != nil {
		return err
	}
	if v.Kind == '-' {
		return fmt.Errorf("%s: SAVE: %s", s.label(), v)
	}
	return nil
}

// logSizes reads s's snapshot size and log bytes after it (INFO).
func logSizes(ctx context.Context, s *server) (snap, log int64) {
	c, err := dialRESP(ctx, s.addr())
	if err != nil {
		return 0, 0
	}
	defer c.Close()
	c.setDeadline(time.Now().Add(5 * time.Second))
	v, err := c.do("INFO", "persistence")
	if err != nil || v.Kind != '$' {
		return 0, 0
	}
	info := parseInfo(v.Str)
	snap, _ = strconv.ParseInt(info["last_snapshot_bytes"], 10, 64)
	log, _ = strconv.ParseInt(info["log_bytes_since_snapshot"], 10, 64)
	return snap, log
}

// waitAgreedLeader waits until every node of among names the same leader,
// which is one of them and says it is a ready leader; all is the whole
// cluster (the voters they count).
func waitAgreedLeader(ctx context.Context, among, all []*server) (*server, error) {
	deadline := time.Now().Add(failoverRecoverLimit)
	for {
		var id string
		ok := true
		var ready *server
		for _, s := range among {
			info, err := raftInfo(ctx, s)
			if err != nil || info["raft_voters"] != strconv.Itoa(len(all)) || info["raft_leader_id"] == "" || (id != "" && info["raft_leader_id"] != id) {
				ok = false
				break
			}
			id = info["raft_leader_id"]
			if s.name == id && info["raft_state"] == "leader" && info["raft_ready"] == "1" {
				ready = s
			}
		}
		if ok && ready != nil {
			return ready, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("no agreed ready leader among %d nodes within %v", len(among), failoverRecoverLimit)
		}
		if err := sleepCtx(ctx, 5*time.Millisecond); err != nil {
			return nil, err
		}
	}
}

// killServer ends s with SIGKILL and waits until it is reaped.
func killServer(s *server) error {
	if err := s.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("kill %s (pid %d): %w", s.label(), s.pid(), err)
	}
	<-s.exited
	return nil
}

// restartAndProbe starts old's node again on its data dir (its own log
// file logName) and times it: the first reply, loading:0 and the first
// decision. The returned server replaces old.
func restartAndProbe(ctx context.Context, f *fleet, old *server, logName string) (*server, restartSample, error) {
	s := &server{kind: old.kind, name: old.name, port: old.port, dataDir: old.dataDir,
		logPath: filepath.Join(old.dataDir, logName), exited: make(chan struct{})}
	args := slices.DeleteFunc(slices.Clone(old.args), func(a string) bool { return a == "--bootstrap" })
	start := time.Now()
	if err := s.launch(old.bin, args, ""); err != nil {
		return nil, restartSample{}, err
	}
	f.servers = append(f.servers, s)
	var sample restartSample
	var c *respConn
	defer func() {
		if c != nil {
			c.Close()
		}
	}()
	last := "no connection yet"
	for sample.decided == 0 || sample.loaded == 0 {
		if time.Since(start) > restartServeLimit {
			return s, sample, fmt.Errorf("%s: no decision %v after its restart (last: %s)%s", s.label(), restartServeLimit, last, logTail(s.logPath, 10))
		}
		select {
		case <-s.exited:
			return s, sample, s.exitError("after its restart")
		default:
		}
		if c == nil {
			dctx, cancel := context.WithTimeout(ctx, time.Second)
			conn, err := dialRESP(dctx, s.addr())
			cancel()
			if err != nil {
				last = err.Error()
				if err := sleepCtx(ctx, restartPollEvery); err != nil {
					return s, sample, err
				}
				continue
			}
			c = conn
		}
		c.setDeadline(time.Now().Add(5 * time.Second))
		if sample.decided == 0 {
			v, err := c.do(s.limiterCommand(familyCL, restartProbeKey, throttleArgs...)...)
			if err != nil {
				last, c = err.Error(), nil
				continue
			}
			now := time.Since(start)
			if sample.firstReply == 0 {
				sample.firstReply = now
			}
			if v.Kind == '*' {
				sample.decided = now
			} else {
				last = v.String()
			}
		}
		if sample.loaded == 0 {
			v, err := c.do("INFO", "persistence")
			if err != nil {
				last, c = err.Error(), nil
				continue
			}
			now := time.Since(start)
			if sample.firstReply == 0 {
				sample.firstReply = now
			}
			if v.Kind == '$' && parseInfo(v.Str)["loading"] == "0" {
				sample.loaded = now
			}
		}
		if sample.decided == 0 || sample.loaded == 0 {
			if err := sleepCtx(ctx, restartPollEvery); err != nil {
				return s, sample, err
			}
		}
	}
	sample.restore, sample.loadTook, sample.loadHow = loadingFromLog(s.logPath)
	return s, sample, nil
}

// The node's own account of its start (group/loading.go's log lines).
var (
	restoredLine = regexp.MustCompile(`msg="restored from snapshot".* took=(\S+)`)
	loadedLine   = regexp.MustCompile(`msg=loaded how="([^"]*)" took=(\S+)`)
)

// loadingFromLog reads how long the snapshot restore and the loading took
// from a node's log (0 and "" where it has no such line).
func loadingFromLog(path string) (restore, load time.Duration, how string) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		if m := restoredLine.FindStringSubmatch(line); m != nil {
			restore, _ = time.ParseDuration(m[1])
		}
		if m := loadedLine.FindStringSubmatch(line); m != nil {
			how = m[1]
			load, _ = time.ParseDuration(m[2])
		}
	}
	return restore, load, how
}

func (s restartSample) String() string {
	out := fmt.Sprintf("first reply %s, loading:0 %s, first decision %s", msText(s.firstReply), msText(s.loaded), msText(s.decided))
	if s.restore > 0 {
		out += fmt.Sprintf("; snapshot restored in %s", msText(s.restore))
	}
	if s.loadHow != "" {
		out += fmt.Sprintf("; loaded (%s) %s after Open", s.loadHow, msText(s.loadTook))
	}
	return out
}

// restartMarkdown is the mode's results section.
func restartMarkdown(rows []restartRow, o restartOptions) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Restarts with SIGKILL, %d per row; a cluster node stays down %s from the kill. Times from the moment before exec, median (max); the client polls one connection every %s.\n\n",
		o.rounds, o.downFor, restartPollEvery)
	fmt.Fprintf(&b, "Small log: %d decisions, one entry each. Large log: %d keys, a snapshot of them (SAVE), then %d more decisions after it.\n\n", restartSmallLog, o.largeKeys, o.largeKeys/2)
	b.WriteString("| restarted | log | snapshot | log after it | first reply | loading:0 | first decision | snapshot restore | loaded after Open (how) |\n")
	b.WriteString("|---|---|---:|---:|---:|---:|---:|---:|---|\n")
	for _, r := range rows {
		pick := func(f func(restartSample) time.Duration) string {
			ds := make([]time.Duration, len(r.samples))
			for i, s := range r.samples {
				ds[i] = f(s)
			}
			slices.Sort(ds)
			if len(ds) == 0 {
				return "—"
			}
			return fmt.Sprintf("%s (%s)", msText(nearestRank(ds, 0.5)), msText(ds[len(ds)-1]))
		}
		hows := map[string]int{}
		for _, s := range r.samples {
			hows[s.loadHow]++
		}
		restore := "—"
		if r.snapBytes > 0 {
			restore = pick(func(s restartSample) time.Duration { return s.restore })
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s %s |\n", r.scenario, r.log,
			mbText(r.snapBytes), mbText(r.logBytes),
			pick(func(s restartSample) time.Duration { return s.firstReply }),
			pick(func(s restartSample) time.Duration { return s.loaded }),
			pick(func(s restartSample) time.Duration { return s.decided }),
			restore,
			pick(func(s restartSample) time.Duration { return s.loadTook }), countsText(hows))
	}
	return b.String()
}

// mbText is a byte count in MB (or bytes below 1 MB).
func mbText(n int64) string {
	if n < 1_000_000 {
		return fmt.Sprintf("%d B", n)
	}
	return fmt.Sprintf("%.1f MB", float64(n)/1e6)
}
