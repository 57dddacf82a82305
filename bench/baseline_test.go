package main

import (
	"context"
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
		{[]string{"-baseline", "HEAD~1", "-mode", "cluster"}, nil, true},
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

// The baseline section gives the medians' ratio and every round's, each
// round being one pair that ran side by side.
func TestBaselineMarkdown(t *testing.T) {
	w := workload{clients: 50, pipeline: 1, keyspace: 100000}
	runs := func(rps ...float64) []benchResult {
		var rs []benchResult
		for _, r := range rps {
			rs = append(rs, benchResult{RPS: r})
		}
		return rs
	}
	ms := []measurement{
		{work: w, kind: kindRedcell, median: benchResult{RPS: 36000}, runs: runs(36000, 30000, 40000)},
		{work: w, kind: kindRedcellBaseline, median: benchResult{RPS: 32000}, runs: runs(32000, 31000, 35000)},
		{work: w, kind: kindRedisLua, median: benchResult{RPS: 46000}, runs: runs(46000, 46000, 46000)},
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

// The whole tool with -baseline HEAD: the committed tree is exported and
// built on its own, both Redcells run alternately, the results file names
// the baseline's commit and compares the two, and nothing is left behind.
// An unknown revision is an error that names the flag.
func TestBaselineRunsACommittedTree(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the server from git archive and starts two nodes")
	}
	needRedisBenchmark(t)
	if err := exec.Command("git", "rev-parse", "--verify", "HEAD").Run(); err != nil {
		t.Skipf("not in a git checkout with a commit: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	parent := t.TempDir()
	md := filepath.Join(t.TempDir(), "results.md")

	err := run(ctx, []string{"-mode", "latency", "-servers", "redcell", "-baseline", "no-such-revision-x", "-quick", "-md", md, "-tmp", parent}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "-baseline") {
		t.Fatalf("unknown revision: error %v, want one naming -baseline", err)
	}

	start := time.Now()
	var progress strings.Builder
	if err := run(ctx, []string{"-mode", "latency", "-servers", "redcell", "-baseline", "HEAD", "-quick", "-rounds", "2", "-md", md, "-tmp", parent}, &progress, io.Discard); err != nil {
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
