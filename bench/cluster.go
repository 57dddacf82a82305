package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The cluster mode: three Redcell nodes on this machine, each with its own
// data dir and its own fsyncs, against one Redis-Lua.
const clusterSize = 3

// Its rows. The leader row sends every client to the leader; the spread row
// splits them over all nodes (followers forward to the leader); the follower
// row sends its one client to a follower. With -baseline a second cluster,
// of the baseline's binary, gives the same three rows right after these.
const (
	kindClusterLeader   serverKind = "Redcell-3 leader"
	kindClusterSpread   serverKind = "Redcell-3 spread"
	kindClusterFollower serverKind = "Redcell-3 follower"

	kindClusterLeaderBaseline   serverKind = "Redcell-baseline-3 leader"
	kindClusterSpreadBaseline   serverKind = "Redcell-baseline-3 spread"
	kindClusterFollowerBaseline serverKind = "Redcell-baseline-3 follower"
)

// Its workloads: the throughput case and the single-client latency.
var (
	clusterThroughputWorkload = workload{clients: 50, pipeline: 16, keyspace: 100000}
	clusterLatencyWorkload    = workload{clients: 1, pipeline: 1, keyspace: 100000}
)

// The cluster's acceptance targets at clusterThroughputWorkload, as ratios
// to Redis-Lua measured in the same run.
const (
	clusterLeaderTarget = 1.5
	clusterSpreadTarget = 1.0
)

// cluster is a running local Redcell cluster started by startCluster.
type cluster struct {
	nodes     []*server // in start order: n1 bootstrapped, the others joined it
	leader    *server   // as found once every node counted the voters
	followers []*server
	// logStart is each node's log size once the cluster was ready: what
	// comes after was logged while bench measured.
	logStart map[*server]int64
}

// startCluster starts size Redcell nodes of kind (kindRedcell, or
// kindRedcellBaseline: the -baseline binary) on free ports, the first
// bootstrapping and the others joining it with a shared secret, and returns
// once every node reports size voters and the same leader, and every node
// has made one checked decision. Nodes are named n1, n2, … (b1, b2, … for
// the baseline). Every node belongs to f, which stops it by PID. nodeArgs,
// when not nil, gives a node's further command-line arguments from its
// name.
func startCluster(ctx context.Context, f *fleet, kind serverKind, size int, nodeArgs func(name string) []string, progress io.Writer) (*cluster, error) {
	prefix := "n"
	if kind == kindRedcellBaseline {
		prefix = "b"
	}
	return startNamedCluster(ctx, f, kind, prefix, size, nodeArgs, progress)
}

// startNamedCluster is startCluster with the nodes' name prefix given: two
// clusters of one kind side by side (the groups mode) need two.
func startNamedCluster(ctx context.Context, f *fleet, kind serverKind, prefix string, size int, nodeArgs func(name string) []string, progress io.Writer) (*cluster, error) {
	secret := make([]byte, 24)
	if _, err := rand.Read(secret); err != nil {
		return nil, fmt.Errorf("cluster secret: %w", err)
	}
	secretPath := filepath.Join(f.root, prefix+"-cluster-secret")
	if err := os.WriteFile(secretPath, []byte(hex.EncodeToString(secret)), 0o600); err != nil {
		return nil, fmt.Errorf("write cluster secret: %w", err)
	}
	c := &cluster{logStart: make(map[*server]int64)}
	for i := 1; i <= size; i++ {
		name := prefix + strconv.Itoa(i)
		args := []string{"--node-id", name, "--cluster-secret-file", secretPath}
		if i > 1 {
			args = append(args, "--join", c.nodes[0].addr())
		} else {
			args = append(args, "--bootstrap")
		}
		if nodeArgs != nil {
			args = append(args, nodeArgs(name)...)
		}
		s, err := f.startNode(ctx, kind, name, args)
		if err != nil {
			return nil, fmt.Errorf("cluster node %s: %w", name, err)
		}
		fmt.Fprintf(progress, "started %s pid %d on %s\n", s.label(), s.pid(), s.addr())
		c.nodes = append(c.nodes, s)
	}
	start := time.Now()
	leader, err := waitClusterReady(ctx, c.nodes, 60*time.Second)
	if err != nil {
		return nil, err
	}
	c.leader = leader
	for _, s := range c.nodes {
		if s != leader {
			c.followers = append(c.followers, s)
		}
	}
	fmt.Fprintf(progress, "cluster ready after %.1f s: %d voters, leader %s\n", time.Since(start).Seconds(), size, leader.name)
	// A decision through every node: the followers' forwarding works.
	for _, s := range c.nodes {
		if err := checkThrottleKey(ctx, s, "bench:check:"+s.name); err != nil {
			return nil, fmt.Errorf("%w%s", err, logTail(s.logPath, 10))
		}
	}
	for _, s := range c.nodes {
		if st, err := os.Stat(s.logPath); err == nil {
			c.logStart[s] = st.Size()
		}
	}
	return c, nil
}

// waitClusterReady polls INFO raft on every node until each reports
// len(nodes) voters and names the same leader, and that node reports itself
// leader. It returns the leader. On timeout the error holds what each node
// last reported and the end of its log.
func waitClusterReady(ctx context.Context, nodes []*server, limit time.Duration) (*server, error) {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	last := make([]string, len(nodes))
	for {
		infos := make([]map[string]string, len(nodes))
		for i, s := range nodes {
			info, err := raftInfo(ctx, s)
			if err != nil {
				last[i] = err.Error()
				continue
			}
			infos[i] = info
			last[i] = fmt.Sprintf("raft_state:%s raft_leader_id:%s raft_voters:%s", info["raft_state"], info["raft_leader_id"], info["raft_voters"])
		}
		if leader := agreedLeader(nodes, infos); leader != nil {
			return leader, nil
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			var b strings.Builder
			fmt.Fprintf(&b, "cluster not ready after %v (want %d voters and one leader on every node):", limit, len(nodes))
			for i, s := range nodes {
				fmt.Fprintf(&b, "\n  %s (%s): %s%s", s.label(), s.addr(), last[i], logTail(s.logPath, 8))
			}
			return nil, errors.New(b.String())
		}
	}
}

// agreedLeader is the node every node names as leader, provided all of
// them count len(nodes) voters and that node says it is the leader; nil
// otherwise.
func agreedLeader(nodes []*server, infos []map[string]string) *server {
	want := strconv.Itoa(len(nodes))
	var id string
	for _, info := range infos {
		if info == nil || info["raft_voters"] != want || info["raft_leader_id"] == "" {
			return nil
		}
		if id == "" {
			id = info["raft_leader_id"]
		} else if info["raft_leader_id"] != id {
			return nil
		}
	}
	for i, s := range nodes {
		if s.name == id && infos[i]["raft_state"] == "leader" {
			return s
		}
	}
	return nil
}

// raftInfo is the node's INFO raft section as field → value.
func raftInfo(ctx context.Context, s *server) (map[string]string, error) {
	c, err := dialRESP(ctx, s.addr())
	if err != nil {
		return nil, err
	}
	defer c.Close()
	c.setDeadline(time.Now().Add(2 * time.Second))
	v, err := c.do("INFO", "raft")
	if err != nil {
		return nil, err
	}
	if v.Kind != '$' || v.Null {
		return nil, fmt.Errorf("INFO raft answered %s", v)
	}
	return parseInfo(v.Str), nil
}

// parseInfo reads INFO output: "field:value" lines, "# Section" headers
// and blank lines skipped.
func parseInfo(text string) map[string]string {
	out := make(map[string]string)
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if k, v, ok := strings.Cut(line, ":"); ok {
			out[k] = v
		}
	}
	return out
}

// leaderNow is the leader every node names now, or why there is none.
func (c *cluster) leaderNow(ctx context.Context) (string, error) {
	infos := make([]map[string]string, len(c.nodes))
	for i, s := range c.nodes {
		info, err := raftInfo(ctx, s)
		if err != nil {
			return "", fmt.Errorf("%s: %w", s.label(), err)
		}
		infos[i] = info
	}
	if l := agreedLeader(c.nodes, infos); l != nil {
		return l.name, nil
	}
	var parts []string
	for i, s := range c.nodes {
		parts = append(parts, fmt.Sprintf("%s: state %s, leader %q, voters %s", s.name, infos[i]["raft_state"], infos[i]["raft_leader_id"], infos[i]["raft_voters"]))
	}
	return "", fmt.Errorf("nodes disagree: %s", strings.Join(parts, "; "))
}

// logProblems returns the WARN and ERROR lines (and panics) node s logged
// since the cluster was ready.
func (c *cluster) logProblems(s *server) []string {
	f, err := os.Open(s.logPath)
	if err != nil {
		return []string{"cannot read log: " + err.Error()}
	}
	defer f.Close()
	if _, err := f.Seek(c.logStart[s], io.SeekStart); err != nil {
		return []string{"cannot read log: " + err.Error()}
	}
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR") || strings.HasPrefix(line, "panic") {
			out = append(out, line)
		}
	}
	return out
}

// role is "leader" or "follower" as found when the cluster was ready.
func (c *cluster) role(s *server) string {
	if s == c.leader {
		return "leader"
	}
	return "follower"
}

// clusterScenarios are the cluster mode's runs, in alternation order: the
// throughput workload on the leader, spread over all nodes, and on
// Redis-Lua; the single client on the leader, on a follower and on
// Redis-Lua. Each cluster row of the baseline's cluster follows the same
// row of this commit's, so the two run side by side. c, base or redisLua
// may be nil (left out by -servers, no -baseline).
func clusterScenarios(c, base *cluster, redisLua *server) []scenario {
	var tput, lat []target
	clusters := []struct {
		c                        *cluster
		leader, spread, follower serverKind
	}{
		{c, kindClusterLeader, kindClusterSpread, kindClusterFollower},
		{base, kindClusterLeaderBaseline, kindClusterSpreadBaseline, kindClusterFollowerBaseline},
	}
	for _, k := range clusters {
		if k.c != nil {
			tput = append(tput, target{kind: k.leader, nodes: []*server{k.c.leader}, members: k.c.nodes})
			lat = append(lat, target{kind: k.leader, nodes: []*server{k.c.leader}, members: k.c.nodes})
		}
	}
	for _, k := range clusters {
		if k.c != nil {
			tput = append(tput, target{kind: k.spread, nodes: k.c.nodes, members: k.c.nodes})
			lat = append(lat, target{kind: k.follower, nodes: []*server{k.c.followers[0]}, members: k.c.nodes})
		}
	}
	if redisLua != nil {
		tput = append(tput, serverTarget(redisLua))
		lat = append(lat, serverTarget(redisLua))
	}
	return []scenario{{work: clusterThroughputWorkload, targets: tput}, {work: clusterLatencyWorkload, targets: lat}}
}

// clusterRunInfo is what the cluster mode learned besides the measurements.
type clusterRunInfo struct {
	size          int
	leaderStart   string // node ID
	leaderEnd     string // node ID, or "" when leaderErr says why
	leaderErr     error
	leaderAddr    string
	leaderCounter map[string]string // selected INFO raft fields of the leader at the end
	problems      map[string][]string
	nodeOrder     []string
	roles         map[string]string // node ID → role at the start
	// The baseline's cluster (-baseline), when it ran: its leader at the
	// start and at the end, as leaderStart and leaderEnd are this commit's.
	baselineLeaderStart, baselineLeaderEnd string
	baselineLeaderErr                      error
}

// leaderCounterFields are the leader's INFO raft fields the results quote:
// how many decisions went into each fsynced log entry.
var leaderCounterFields = []string{"raft_entries_proposed", "raft_ops_proposed", "raft_avg_ops_per_entry"}

// runClusterMode starts the cluster (if redcell is in kinds), the
// baseline's cluster (if the baseline is) and a fresh Redis-Lua (if
// redis-lua is), runs clusterScenarios alternating, stops everything it
// started (last started first), prints the table and returns the markdown
// section, with the Redcell-vs-baseline table when a baseline ran, and the
// measurements.
func runClusterMode(ctx context.Context, f *fleet, kinds []serverKind, runner benchmarkRunner, rounds int, dataFS string, progress io.Writer) (md string, ms []measurement, err error) {
	wantCluster, wantRedis := slices.Contains(kinds, kindRedcell), slices.Contains(kinds, kindRedisLua)
	wantBaseline := slices.Contains(kinds, kindRedcellBaseline)
	if !wantCluster && !wantRedis && !wantBaseline {
		return "", nil, errors.New("cluster mode needs redcell, redis-lua or -baseline")
	}
	var started []*server
	defer func() {
		// Followers first, so the leader does not see them go and campaign.
		for i := len(started) - 1; i >= 0; i-- {
			if stopErr := f.stop(started[i]); stopErr != nil {
				err = errors.Join(err, stopErr)
			}
		}
	}()
	var c, base *cluster
	var redisLua *server
	if wantRedis {
		if redisLua, err = f.start(ctx, kindRedisLua); err != nil {
			return "", nil, err
		}
		started = append(started, redisLua)
		if err := checkThrottle(ctx, redisLua); err != nil {
			return "", nil, err
		}
		fmt.Fprintf(progress, "started %s pid %d on %s\n", redisLua.kind, redisLua.pid(), redisLua.addr())
	}
	for _, k := range []struct {
		want bool
		kind serverKind
		c    **cluster
	}{{wantCluster, kindRedcell, &c}, {wantBaseline, kindRedcellBaseline, &base}} {
		if !k.want {
			continue
		}
		*k.c, err = startCluster(ctx, f, k.kind, clusterSize, nil, progress)
		// Whatever startCluster started is in f.servers; stop those too.
		for _, s := range f.servers {
			if s.kind == k.kind && s.name != "" && !slices.Contains(started, s) {
				started = append(started, s)
			}
		}
		if err != nil {
			return "", nil, err
		}
	}
	ms, err = runScenarios(ctx, runner, clusterScenarios(c, base, redisLua), rounds, progress)
	if err != nil {
		for _, cl := range []*cluster{c, base} {
			if cl == nil {
				continue
			}
			// A leader change aborts redis-benchmark (TRYAGAIN); say so.
			now, leaderErr := cl.leaderNow(ctx)
			if leaderErr != nil {
				now = leaderErr.Error()
			}
			err = fmt.Errorf("%w\n  leader at the start %s, now %s", err, cl.leader.name, now)
			for _, s := range cl.nodes {
				err = fmt.Errorf("%w\n  %s (%s):%s", err, s.label(), s.addr(), logTail(s.logPath, 8))
			}
		}
		return "", nil, err
	}
	info := clusterRunInfo{size: clusterSize, problems: make(map[string][]string), roles: make(map[string]string)}
	if c != nil {
		info.leaderStart, info.leaderAddr = c.leader.name, c.leader.addr()
		info.leaderEnd, info.leaderErr = c.leaderNow(ctx)
		if li, err := raftInfo(ctx, c.leader); err == nil {
			info.leaderCounter = make(map[string]string)
			for _, k := range leaderCounterFields {
				if v, ok := li[k]; ok {
					info.leaderCounter[k] = v
				}
			}
		}
	}
	if base != nil {
		info.baselineLeaderStart = base.leader.name
		info.baselineLeaderEnd, info.baselineLeaderErr = base.leaderNow(ctx)
	}
	for _, cl := range []*cluster{c, base} {
		if cl == nil {
			continue
		}
		for _, s := range cl.nodes {
			info.nodeOrder = append(info.nodeOrder, s.name)
			info.roles[s.name] = cl.role(s)
			info.problems[s.name] = cl.logProblems(s)
		}
	}
	fmt.Fprintln(progress)
	printMeasurements(progress, ms)
	notes := clusterNotes(ms, info)
	fmt.Fprintf(progress, "\n%s", notes)
	return withBaseline(progress, clusterMarkdown(ms, info, dataFS)+"\n"+notes, ms), ms, nil
}

// clusterMarkdown is the cluster section's description and tables.
func clusterMarkdown(ms []measurement, info clusterRunInfo, dataFS string) string {
	var b strings.Builder
	split, _ := splitClients(clusterThroughputWorkload.clients, info.size)
	splitText := make([]string, len(split))
	for i, n := range split {
		splitText[i] = strconv.Itoa(n)
	}
	fmt.Fprintf(&b, "%d Redcell nodes on this machine, alongside redis-benchmark: n1 bootstrapped, the others `--join` it "+
		"(`--cluster-secret-file`, Raft on the client port over loopback), each with its own data dir on %s and its own fsyncs, "+
		"default flags otherwise. Every decision is committed on a majority (leader + one follower fsynced) before the reply. "+
		"Redis-Lua is one fresh `redis-server` with gcra.lua, not durable.", info.size, dataFS)
	if info.leaderStart != "" {
		fmt.Fprintf(&b, " Leader: %s (%s).", info.leaderStart, info.leaderAddr)
	}
	fmt.Fprintf(&b, "\n\n*%s*: every client on the leader. *%s*: the clients split %s over the nodes, one redis-benchmark per node, all at once; "+
		"rps is their sum, p50 and p99 the worst node's. *%s*: the single client on a follower, which forwards to the leader. "+
		"For the cluster rows *busy elsewhere* leaves out all %d nodes.\n\n", kindClusterLeader, kindClusterSpread, strings.Join(splitText, "/"), kindClusterFollower, info.size)
	if info.baselineLeaderStart != "" {
		fmt.Fprintf(&b, "*%s*, *%s* and *%s*: the same rows on a second %d-node cluster of the `-baseline` commit's binary (nodes b1 to b%d, leader %s), "+
			"started alongside this commit's and idle while the other runs; each of its rows runs right after this commit's.\n\n",
			kindClusterLeaderBaseline, kindClusterSpreadBaseline, kindClusterFollowerBaseline, info.size, info.size, info.baselineLeaderStart)
	}
	b.WriteString(measurementsMarkdown(ms))
	if st := stagesMarkdown(ms); st != "" {
		b.WriteString("\n" + st)
	}
	for _, m := range ms {
		if len(m.nodeMedians) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\nPer node, %s, %s:\n\n| node | role | clients | rps | p50 ms | p99 ms |\n|---|---|---:|---:|---:|---:|\n", m.kind, m.work)
		clients, _ := splitClients(m.work.clients, len(m.nodeMedians))
		for i, r := range m.nodeMedians {
			name := m.nodes[i].name
			fmt.Fprintf(&b, "| %s | %s | %d | %s | %.3f | %.3f |\n", name, info.roles[name], clients[i], formatRPS(r.RPS), r.P50Ms, r.P99Ms)
		}
	}
	return b.String()
}

// clusterNotes states the acceptance targets against the figures, the
// leader's stability and batching, and what the nodes logged while
// measured.
func clusterNotes(ms []measurement, info clusterRunInfo) string {
	var b strings.Builder
	ratio := func(kind serverKind) float64 {
		for _, m := range ms {
			if m.work == clusterThroughputWorkload && m.kind == kind {
				return ratioToRedisLua(ms, m)
			}
		}
		return 0
	}
	verdict := func(got, want float64) string {
		switch {
		case got == 0:
			return "not measured"
		case got >= want:
			return fmt.Sprintf("**%s, met**", formatRatio(got))
		default:
			return fmt.Sprintf("**%s, not met**", formatRatio(got))
		}
	}
	fmt.Fprintf(&b, "Targets at %s (rps / Redis-Lua's in this run): leader ≥ %s: %s; spread ≥ %s: %s.\n",
		clusterThroughputWorkload, formatRatio(clusterLeaderTarget), verdict(ratio(kindClusterLeader), clusterLeaderTarget),
		formatRatio(clusterSpreadTarget), verdict(ratio(kindClusterSpread), clusterSpreadTarget))
	if info.leaderStart == "" {
		return b.String()
	}
	switch {
	case info.leaderErr != nil:
		fmt.Fprintf(&b, "\n**Leader at the end unknown** (%v); leader at the start was %s.\n", info.leaderErr, info.leaderStart)
	case info.leaderEnd != info.leaderStart:
		fmt.Fprintf(&b, "\n**WARNING: the leader changed during the run** (%s at the start, %s at the end): leader and follower rows are mislabelled; rerun.\n", info.leaderStart, info.leaderEnd)
	default:
		fmt.Fprintf(&b, "\nLeader %s at the start and at the end of the measurements.", info.leaderStart)
	}
	if len(info.leaderCounter) > 0 {
		var parts []string
		for _, k := range leaderCounterFields {
			if v, ok := info.leaderCounter[k]; ok {
				parts = append(parts, fmt.Sprintf("`%s:%s`", k, v))
			}
		}
		fmt.Fprintf(&b, " Leader's INFO raft at the end: %s.", strings.Join(parts, ", "))
	}
	if start := info.baselineLeaderStart; start != "" {
		switch {
		case info.baselineLeaderErr != nil:
			fmt.Fprintf(&b, "\n\n**The baseline cluster's leader at the end unknown** (%v); it was %s at the start.", info.baselineLeaderErr, start)
		case info.baselineLeaderEnd != start:
			fmt.Fprintf(&b, "\n\n**WARNING: the baseline cluster's leader changed during the run** (%s at the start, %s at the end): its leader and follower rows are mislabelled; rerun.", start, info.baselineLeaderEnd)
		default:
			fmt.Fprintf(&b, " The baseline cluster's leader: %s at the start and at the end.", start)
		}
	}
	counts := make([]string, len(info.nodeOrder))
	for i, name := range info.nodeOrder {
		counts[i] = fmt.Sprintf("%s %d", name, len(info.problems[name]))
	}
	fmt.Fprintf(&b, "\n\nWARN/ERROR lines the nodes logged while measured: %s.\n", strings.Join(counts, ", "))
	sep := "\n"
	for _, name := range info.nodeOrder {
		lines := info.problems[name]
		if len(lines) > 0 {
			b.WriteString(sep) // a blank line before the indented (code) block
			sep = ""
		}
		for i, l := range lines {
			if i == 5 {
				fmt.Fprintf(&b, "    (%s: %d more)\n", name, len(lines)-5)
				break
			}
			fmt.Fprintf(&b, "    %s: %s\n", name, l)
		}
	}
	return b.String()
}
