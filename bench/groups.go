package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The groups mode: what spreading the keyspace over Raft groups buys a
// cluster. Two local 3-node clusters of this commit run side by side, one
// started with --groups 1 and one with --groups 3 (each node leading one
// group once the leaders are spread), and the same loads alternate between
// them, round by round:
//
//   - cluster-mode clients (redis-benchmark --cluster): they read the slot
//     map and go straight to each group's leader, so with one group all of
//     them talk to the one leader, with three a third to each node;
//   - plain clients spread over the three nodes (a node forwards what it
//     does not lead).
//
// Two cores cannot show what three machines would: every node shares them
// with the others and with the load generator. So the mode runs once on
// the bare machine and once with each node held to a fraction of a core by
// a cgroup CPU quota (cgroup v1, as root: -groups-quota), which makes each
// node a small machine of its own and the work of one leader, spread over
// three, visible. Beside requests a second, it reads each node's CPU and
// WAL syncs around every run: the cost model (bench/README.md) is built
// from a group's leader's and a follower's CPU per decision.

// groupsCounts are the two clusters' --groups.
var groupsCounts = []int{1, 3}

// groupsWorkloads are the mode's loads: the throughput case of the cluster
// mode and one client's request at a time, each both ways.
var groupsWorkloads = []workload{
	{clients: 50, pipeline: 16, keyspace: 100000, cluster: true},
	{clients: 50, pipeline: 16, keyspace: 100000},
	{clients: 50, pipeline: 1, keyspace: 100000, cluster: true},
	{clients: 50, pipeline: 1, keyspace: 100000},
}

// groupsRun is one measured run on one cluster: the combined result and,
// per node, its CPU in cores and its WAL syncs a second, with each node's
// groups led at the start.
type groupsRun struct {
	res      benchResult
	cores    []float64
	syncsSec []float64
	leading  []int
}

// groupsCluster is one of the two clusters.
type groupsCluster struct {
	groups int
	c      *cluster
	kind   serverKind // the rows' label
}

// runGroupsMode runs the loads on both clusters with each quota in turn (0:
// the bare machine), alternating clusters every round, and returns the
// markdown section.
func runGroupsMode(ctx context.Context, f *fleet, runner benchmarkRunner, rounds int, quotas []float64, progress io.Writer) (string, error) {
	var md strings.Builder
	md.WriteString(groupsIntro)
	var bare map[string][]groupsRun
	for _, q := range quotas {
		runs, err := runGroupsQuota(ctx, f, runner, rounds, q, progress)
		if err != nil {
			return "", err
		}
		md.WriteString(groupsTable(runs, q))
		if q == 0 {
			bare = runs
		}
	}
	if bare != nil {
		md.WriteString(costModel(bare))
	}
	return md.String(), nil
}

// groupsIntro heads the section.
const groupsIntro = "Two local 3-node clusters of this commit, `--groups 1` and `--groups 3` (one group led by each node), " +
	"the same loads alternating between them. *--cluster*: redis-benchmark as a cluster-mode client, straight to each group's leader; " +
	"otherwise plain clients split over the three nodes, which forward what they do not lead. " +
	"CPU is each node's, in µs per decision of the whole cluster; syncs are WAL fsyncs a second per node.\n\n"

// runGroupsQuota starts both clusters, holds every node to quota cores
// (none when 0), measures, and stops them.
func runGroupsQuota(ctx context.Context, f *fleet, runner benchmarkRunner, rounds int, quota float64, progress io.Writer) (runs map[string][]groupsRun, err error) {
	var clusters []*groupsCluster
	var cgroups []string
	defer func() {
		for _, gc := range clusters {
			for i := len(gc.c.nodes) - 1; i >= 0; i-- {
				err = errors.Join(err, f.stop(gc.c.nodes[i]))
			}
		}
		for _, cg := range cgroups {
			err = errors.Join(err, os.Remove(cg))
		}
	}()
	for _, g := range groupsCounts {
		prefix := "g" + strconv.Itoa(g) + "n"
		args := func(string) []string { return []string{"--groups", strconv.Itoa(g)} }
		c, err := startNamedCluster(ctx, f, kindRedcell, prefix, clusterSize, args, progress)
		if c != nil {
			clusters = append(clusters, &groupsCluster{groups: g, c: c, kind: groupsKind(g)})
		} else {
			// Stop what a failed start left running.
			for _, s := range f.servers {
				if strings.HasPrefix(s.name, prefix) {
					err = errors.Join(err, f.stop(s))
				}
			}
		}
		if err != nil {
			return nil, err
		}
	}
	for _, gc := range clusters {
		if err := waitLeadersSpread(ctx, gc, 60*time.Second); err != nil {
			return nil, err
		}
		if quota > 0 {
			for _, s := range gc.c.nodes {
				cg, err := limitCPU(s, quota)
				if cg != "" {
					cgroups = append(cgroups, cg)
				}
				if err != nil {
					return nil, err
				}
			}
		}
	}
	label := "bare machine"
	if quota > 0 {
		label = fmt.Sprintf("each node held to %.2f of a core", quota)
	}
	fmt.Fprintf(progress, "\n-- groups: %s\n", label)
	runs = make(map[string][]groupsRun)
	for round := 1; round <= rounds; round++ {
		for _, w := range groupsWorkloads {
			for _, gc := range clusters {
				r, err := measureGroups(ctx, runner, gc, w)
				if err != nil {
					return nil, fmt.Errorf("%s on %s (%s): %w", w, gc.kind, label, err)
				}
				key := w.String() + "|" + string(gc.kind)
				runs[key] = append(runs[key], r)
				fmt.Fprintf(progress, "  round %d/%d  %-48s %-20s %10.0f rps  p50 %.3f ms  cores %s  syncs/s %s  leading %v\n",
					round, rounds, w, gc.kind, r.res.RPS, r.res.P50Ms, joinFloats(r.cores, "%.2f"), joinFloats(r.syncsSec, "%.0f"), r.leading)
			}
		}
	}
	return runs, nil
}

// waitLeadersSpread waits until each node leads groups/size groups (at
// least one when there are as many groups as nodes): the balancer hands
// leadership over within seconds of the cluster forming.
func waitLeadersSpread(ctx context.Context, gc *groupsCluster, limit time.Duration) error {
	want := gc.groups / len(gc.c.nodes)
	deadline := time.Now().Add(limit)
	for {
		leading, err := groupsLeading(ctx, gc.c.nodes)
		if err == nil && want > 0 {
			ok := true
			for _, n := range leading {
				ok = ok && n == want
			}
			if ok {
				return nil
			}
		} else if err == nil {
			return nil // fewer groups than nodes: nothing to spread
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: leaders not spread after %v (groups led per node %v, %v)", gc.kind, limit, leading, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond): // polling the nodes' INFO
		}
	}
}

// groupsLeading is how many groups each node leads (INFO raft_groups_leading).
func groupsLeading(ctx context.Context, nodes []*server) ([]int, error) {
	out := make([]int, len(nodes))
	for i, s := range nodes {
		info, err := serverInfo(ctx, s)
		if err != nil {
			return nil, err
		}
		v, ok := info["raft_groups_leading"]
		if !ok {
			// One group: INFO has no per-group lines.
			v = "0"
			if info["raft_state"] == "leader" {
				v = "1"
			}
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			return nil, fmt.Errorf("%s: raft_groups_leading %q", s.label(), info["raft_groups_leading"])
		}
		out[i] = n
	}
	return out, nil
}

// measureGroups runs w on gc and reads every node's CPU and WAL syncs
// around it.
func measureGroups(ctx context.Context, runner benchmarkRunner, gc *groupsCluster, w workload) (groupsRun, error) {
	nodes := gc.c.nodes
	t := target{kind: gc.kind, nodes: nodes, members: nodes}
	leading, err := groupsLeading(ctx, nodes)
	if err != nil {
		return groupsRun{}, err
	}
	if w.cluster {
		// One redis-benchmark, seeded with the first node: it spreads its
		// clients over the masters itself. It refuses a cluster of one
		// master, where a cluster-mode client sends everything to it: so
		// with one group, every client goes to the leader.
		t.nodes = nodes[:1]
		if gc.groups == 1 {
			w.cluster = false
			for i, n := range leading {
				if n > 0 {
					t.nodes = nodes[i : i+1]
				}
			}
		}
	}
	pids := t.memberPIDs()
	syncsBefore, err := walSyncs(ctx, nodes)
	if err != nil {
		return groupsRun{}, err
	}
	before, err := takeCPUSnapshot(pids)
	if err != nil {
		return groupsRun{}, err
	}
	start := time.Now()
	res, _, err := runner.measure(ctx, t, w)
	if err != nil {
		return groupsRun{}, err
	}
	elapsed := time.Since(start).Seconds()
	after, err := takeCPUSnapshot(pids)
	if err != nil {
		return groupsRun{}, err
	}
	syncsAfter, err := walSyncs(ctx, nodes)
	if err != nil {
		return groupsRun{}, err
	}
	// The snapshots span the probe and warm-up runs too: CPU and syncs are
	// rates over the whole span, the same load throughout.
	r := groupsRun{res: res, leading: leading}
	for i, pid := range pids {
		r.cores = append(r.cores, float64(after.procs[pid]-before.procs[pid])/userHZ/elapsed)
		r.syncsSec = append(r.syncsSec, float64(syncsAfter[i]-syncsBefore[i])/elapsed)
	}
	return r, nil
}

// walSyncs is each node's WAL syncs so far (direct and ordinary).
func walSyncs(ctx context.Context, nodes []*server) ([]uint64, error) {
	out := make([]uint64, len(nodes))
	for i, s := range nodes {
		info, err := serverInfo(ctx, s)
		if err != nil {
			return nil, err
		}
		out[i] = parseUintField(info["log_wal_syncs_direct"]) + parseUintField(info["log_wal_syncs_ordinary"])
	}
	return out, nil
}

// serverInfo is a server's whole INFO.
func serverInfo(ctx context.Context, s *server) (map[string]string, error) {
	c, err := dialRESP(ctx, s.addr())
	if err != nil {
		return nil, err
	}
	defer c.Close()
	c.setDeadline(time.Now().Add(2 * time.Second))
	v, err := c.do("INFO")
	if err != nil {
		return nil, err
	}
	if v.Kind != '$' || v.Null {
		return nil, fmt.Errorf("INFO answered %s", v)
	}
	return parseInfo(v.Str), nil
}

// limitCPU puts s's process, every thread of it, in a cgroup of its own
// holding it to quota cores (cgroup v1's cpu controller; root only), and
// returns the cgroup's directory for removal once s has stopped.
func limitCPU(s *server, quota float64) (string, error) {
	const root = "/sys/fs/cgroup/cpu"
	if _, err := os.Stat(filepath.Join(root, "tasks")); err != nil {
		return "", fmt.Errorf("-groups-quota needs cgroup v1's cpu controller at %s (as root): %w", root, err)
	}
	dir := filepath.Join(root, fmt.Sprintf("redcell-bench-%d-%s", os.Getpid(), s.name))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return "", fmt.Errorf("cgroup for %s: %w", s.label(), err)
	}
	const period = 100000
	for _, w := range []struct{ file, value string }{
		{"cpu.cfs_period_us", strconv.Itoa(period)},
		{"cpu.cfs_quota_us", strconv.Itoa(int(quota * period))},
		// cgroup.procs moves every thread of the process; tasks only the
		// one thread it names.
		{"cgroup.procs", strconv.Itoa(s.pid())},
	} {
		if err := os.WriteFile(filepath.Join(dir, w.file), []byte(w.value), 0o644); err != nil {
			return dir, fmt.Errorf("cgroup %s: write %s: %w", dir, w.file, err)
		}
	}
	return dir, nil
}

// joinFloats formats each value with format, space-separated.
func joinFloats(vs []float64, format string) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = fmt.Sprintf(format, v)
	}
	return strings.Join(parts, " ")
}
