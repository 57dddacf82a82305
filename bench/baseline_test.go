package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// -baseline adds Redcell-baseline right after Redcell in the alternation
// order, whatever else runs, and is refused where it would not run.
func TestBaselineFlag(t *testing.T) {
	for _, c := range []struct {
		args    []string
		want    []serverKind
		wantErr bool
	}{
		{[]string{"-baseline", "HEAD~1"}, []serverKind{kindRedcell, kindRedcellBaseline, kindRedisLua, kindRedisLuaFsync}, false},
		{[]string{"-baseline", "v1", "-servers", "redcell"}, []serverKind{kindRedcell, kindRedcellBaseline}, false},
		{[]string{"-baseline", "abc123", "-servers", "redis-lua"}, []serverKind{kindRedcellBaseline, kindRedisLua}, false},
		{[]string{"-servers", "redcell"}, []serverKind{kindRedcell}, false},
		{[]string{"-baseline", "HEAD~1", "-mode", "cluster", "-servers", "redcell,redis-lua"}, []serverKind{kindRedcell, kindRedcellBaseline, kindRedisLua}, false},
		{[]string{"-baseline", "HEAD~1", "-mode", "pgo"}, nil, true},
	} {
		o, err := parseFlags(c.args, io.Discard)
		if c.wantErr {
			if err == nil {
				t.Errorf("%v: no error", c.args)
			}
			continue
		}
		if err != nil || !slices.Equal(o.servers, c.want) {
			t.Errorf("%v: servers %v, %v; want %v", c.args, o.servers, err, c.want)
		}
	}
}

// runsAt makes one measured run per rate.
func runsAt(rps ...float64) []benchResult {
	var rs []benchResult
	for _, r := range rps {
		rs = append(rs, benchResult{RPS: r})
	}
	return rs
}

// The baseline section gives the medians' ratio and every round's, each
// round being one pair that ran side by side.
func TestBaselineMarkdown(t *testing.T) {
	w := workload{clients: 50, pipeline: 1, keyspace: 100000}
	ms := []measurement{
		{work: w, kind: kindRedcell, median: benchResult{RPS: 36000}, runs: runsAt(36000, 30000, 40000)},
		{work: w, kind: kindRedcellBaseline, median: benchResult{RPS: 32000}, runs: runsAt(32000, 31000, 35000)},
		{work: w, kind: kindRedisLua, median: benchResult{RPS: 46000}, runs: runsAt(46000, 46000, 46000)},
	}
	md := baselineMarkdown(ms)
	for _, want := range []string{"| 36,000 | 32,000 | 1.12x | 1.125 / 0.968 / 1.143 | 2 of 3 |"} {
		if !strings.Contains(md, want) {
			t.Errorf("baseline section without %q:\n%s", want, md)
		}
	}
	if got := baselineMarkdown(ms[2:]); got != "" {
		t.Errorf("a section without a baseline: %q", got)
	}
}

// In the cluster mode each row of this commit's cluster is paired with the
// same row of the baseline's, and runs right before it.
func TestBaselineCluster(t *testing.T) {
	cl := func(prefix string) *cluster {
		var c cluster
		for i := 1; i <= 3; i++ {
			c.nodes = append(c.nodes, &server{name: fmt.Sprintf("%s%d", prefix, i)})
		}
		c.leader, c.followers = c.nodes[0], c.nodes[1:]
		return &c
	}
	head, base, redis := cl("n"), cl("b"), &server{kind: kindRedisLua}
	var got []string
	for _, sc := range clusterScenarios(head, base, redis) {
		for _, tg := range sc.targets {
			var names []string
			for _, n := range tg.nodes {
				names = append(names, n.name)
			}
			got = append(got, fmt.Sprintf("%s %s", tg.kind, strings.Join(names, ",")))
		}
	}
	want := []string{
		"Redcell-3 leader n1", "Redcell-baseline-3 leader b1", "Redcell-3 spread n1,n2,n3", "Redcell-baseline-3 spread b1,b2,b3", "Redis-Lua ",
		"Redcell-3 leader n1", "Redcell-baseline-3 leader b1", "Redcell-3 follower n2", "Redcell-baseline-3 follower b2", "Redis-Lua ",
	}
	if !slices.Equal(got, want) {
		t.Errorf("targets in order:\n%q\nwant\n%q", got, want)
	}
	if sc := clusterScenarios(head, nil, redis); len(sc[0].targets) != 3 || len(sc[1].targets) != 3 {
		t.Errorf("without a baseline: %d and %d targets, want 3 and 3", len(sc[0].targets), len(sc[1].targets))
	}

	tput, lat := clusterThroughputWorkload, clusterLatencyWorkload
	ms := []measurement{
		{work: tput, kind: kindClusterLeader, median: benchResult{RPS: 165000}, runs: runsAt(165000, 170000)},
		{work: tput, kind: kindClusterLeaderBaseline, median: benchResult{RPS: 150000}, runs: runsAt(150000, 175000)},
		{work: tput, kind: kindRedisLua, median: benchResult{RPS: 100000}, runs: runsAt(100000, 100000)},
		{work: lat, kind: kindClusterFollower, median: benchResult{RPS: 1000}, runs: runsAt(1000, 1000)},
		{work: lat, kind: kindClusterFollowerBaseline, median: benchResult{RPS: 800}, runs: runsAt(800, 800)},
	}
	md := baselineMarkdown(ms)
	for _, w := range []string{
		"| 100000 random keys, -c 50 -P 16, Redcell-3 leader | 165,000 | 150,000 | 1.10x | 1.100 / 0.971 | 1 of 2 |",
		"| 100000 random keys, -c 1 -P 1, Redcell-3 follower | 1,000 | 800 | 1.25x | 1.250 / 1.250 | 2 of 2 |",
	} {
		if !strings.Contains(md, w) {
			t.Errorf("baseline section without %q:\n%s", w, md)
		}
	}
	// The targets are this commit's rows; the baseline's leader is watched too.
	info := clusterRunInfo{size: 3, leaderStart: "n1", leaderEnd: "n1", baselineLeaderStart: "b1", baselineLeaderEnd: "b1"}
	notes := clusterNotes(ms, info)
	for _, w := range []string{"leader ≥ 1.50x: **1.65x, met**", "The baseline cluster's leader: b1 at the start and at the end."} {
		if !strings.Contains(notes, w) {
			t.Errorf("notes without %q:\n%s", w, notes)
		}
	}
	info.baselineLeaderEnd = "b3"
	if notes := clusterNotes(ms, info); !strings.Contains(notes, "the baseline cluster's leader changed during the run") {
		t.Errorf("the baseline's leader change not flagged:\n%s", notes)
	}
	if md := clusterMarkdown(ms, info, "ext4"); !strings.Contains(md, "second 3-node cluster of the `-baseline` commit's binary (nodes b1 to b3, leader b1)") {
		t.Errorf("cluster section does not describe the baseline's rows:\n%s", md)
	}
}

// The whole tool with -baseline HEAD: the committed tree is exported and
// built on its own, both Redcells run alternately, the results file names
// the baseline's commit and compares the two, and nothing is left behind.
// An unknown revision is an error that names the flag.
//
// It runs only with REDCELL_BENCH_E2E=1: building a second tree with an
// empty build cache takes minutes of CPU, more than its 5-minute bound on a
// loaded 2-core machine.
func TestBaselineRunsACommittedTree(t *testing.T) {
	needBenchE2E(t, "builds the server from git archive and starts two nodes")
	needRedisBenchmark(t)
	if err := exec.Command("git", "rev-parse", "--verify", "HEAD").Run(); err != nil {
		t.Skipf("not in a git checkout with a commit: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	parent := t.TempDir()
	resultsDir := t.TempDir()
	md := filepath.Join(resultsDir, "latency.md")

	err := run(ctx, []string{"-mode", "latency", "-servers", "redcell", "-baseline", "no-such-revision-x", "-quick", "-results", resultsDir, "-tmp", parent}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "-baseline") {
		t.Fatalf("unknown revision: error %v, want one naming -baseline", err)
	}

	start := time.Now()
	var progress strings.Builder
	if err := run(ctx, []string{"-mode", "latency", "-servers", "redcell", "-baseline", "HEAD", "-quick", "-rounds", "2", "-results", resultsDir, "-tmp", parent}, &progress, io.Discard); err != nil {
		t.Fatalf("%v\n%s", err, progress.String())
	}
	t.Logf("run took %v:\n%s", time.Since(start), progress.String())
	b, err := os.ReadFile(md)
	if err != nil {
		t.Fatal(err)
	}
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| Redcell-baseline | " + string(head[:7]) + " (-baseline HEAD), ",
		"| 100000 random keys, -c 1 -P 1 | Redcell-baseline |",
		"| scenario | Redcell rps | Redcell-baseline rps |",
		" of 2 |",
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("results file without %q:\n%s", want, b)
		}
	}
	if left, _ := os.ReadDir(parent); len(left) != 0 {
		t.Errorf("left behind in %s: %v", parent, left)
	}
	if out, _ := exec.Command("pgrep", "-f", parent).Output(); len(out) != 0 {
		t.Errorf("processes still running from %s: %s", parent, out)
	}
}
