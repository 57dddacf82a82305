package main

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The pgo mode runs alone, profiles for 10 s per load unless told, and
// its loads cover every limiter family, a lone node and both cluster shapes
// under distinct file names.
func TestPGOFlagsAndLoads(t *testing.T) {
	if _, err := parseModes("pgo,compare"); err == nil {
		t.Error("-mode pgo,compare accepted; pgo must run alone")
	}
	for _, c := range []struct {
		args    []string
		seconds float64
	}{
		{[]string{"-mode", "pgo"}, 10},
		{[]string{"-mode", "pgo", "-seconds", "3"}, 3},
		{[]string{"-mode", "pgo", "-quick"}, 1},
		{[]string{"-mode", "compare"}, 5},
	} {
		o, err := parseFlags(c.args, io.Discard)
		if err != nil {
			t.Fatalf("%v: %v", c.args, err)
		}
		if o.seconds != c.seconds {
			t.Errorf("%v: seconds %v, want %v", c.args, o.seconds, c.seconds)
		}
	}
	names := make(map[string]bool)
	fams := make(map[family]bool)
	var single, leader, spread bool
	for _, l := range pgoLoads {
		if names[l.name] {
			t.Errorf("two loads named %q", l.name)
		}
		names[l.name] = true
		fams[l.work.family] = true
		switch {
		case !l.cluster:
			single = true
		case l.spread:
			spread = true
		default:
			leader = true
		}
	}
	for _, f := range allFamilies {
		if !fams[f] {
			t.Errorf("no load of %s", f.name())
		}
	}
	if !single || !leader || !spread {
		t.Errorf("loads: lone node %v, cluster leader %v, cluster spread %v; want all", single, leader, spread)
	}
}

// The whole mode against real servers, briefly: it writes one merged
// profile whose samples include every part the loads exercise — the lone
// node's limiters, a follower taking the leader's entries, and a follower forwarding its
// clients' commands — and leaves no process or directory behind.
//
// It runs only with REDCELL_BENCH_E2E=1, not in `go test ./...`: it
// drives a 3-node cluster at full load on the machine that also runs the
// nodes, where a starved leader may lose its lease and a new one be
// elected. That is correct behaviour, but redis-benchmark ends at the first
// error reply (TRYAGAIN), and a profile taken without load would not show
// what this test checks, so the mode cannot tolerate it.
func TestPGOModeWritesMergedProfile(t *testing.T) {
	needBenchE2E(t, "starts a node and a 3-node cluster under load, which may change leaders on a busy machine")
	needRedisBenchmark(t)
	out := filepath.Join(t.TempDir(), "default.pgo")
	parent := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var progress strings.Builder
	// 3 s a profile: at 100 samples a second, a follower that uses a fifth
	// of a core leaves about 60 samples in each of its two profiles, enough
	// that the part checked below (a seventh of its CPU) is never missed.
	if err := run(ctx, []string{"-mode", "pgo", "-seconds", "3", "-pgo-out", out, "-tmp", parent}, &progress, io.Discard); err != nil {
		t.Fatalf("%v\n%s", err, progress.String())
	}
	st, err := os.Stat(out)
	if err != nil || st.Size() == 0 {
		t.Fatalf("profile %s: %v (size %d)", out, err, st.Size())
	}
	traces, err := exec.Command("go", "tool", "pprof", "-traces", out).CombinedOutput()
	if err != nil {
		t.Fatalf("go tool pprof -traces: %v: %.500s", err, traces)
	}
	for _, fn := range []string{
		"redcell/server.(*conn).serve",
		"redcell/gcra.",
		"redcell/tokenbucket.",
		"redcell/slidinglog.",
		"raft.(*NetworkTransport).handleConn", // a follower taking the leader's entries
		"redcell/forward.",
	} {
		if !strings.Contains(string(traces), fn) {
			t.Errorf("merged profile has no sample in %s", fn)
		}
	}
	if left, _ := os.ReadDir(parent); len(left) != 0 {
		t.Errorf("left behind in %s: %v", parent, left)
	}
	if out, _ := exec.Command("pgrep", "-f", parent).Output(); len(out) != 0 {
		t.Errorf("processes still running from %s: %s", parent, out)
	}
}

// The results file says whether the measured binary was built with a
// profile, and which: buildNote reads it from the binary's build info.
func TestBuildNoteTellsProfileFromNone(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module x\n\ngo 1.26\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	profile, err := filepath.Abs(filepath.Join("..", "cmd", "redcell", "default.pgo"))
	if err != nil {
		t.Fatal(err)
	}
	build := func(name, pgo string) string {
		cmd := exec.Command("go", "build", "-pgo="+pgo, "-o", name, ".")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build -pgo=%s: %v: %s", pgo, err, out)
		}
		return filepath.Join(dir, name)
	}
	if got := buildNote(build("plain", "off")); got != "without a profile (-pgo=off)" {
		t.Errorf("binary built -pgo=off: %q", got)
	}
	got := buildNote(build("guided", profile))
	if !strings.HasPrefix(got, "profile-guided, default.pgo (sha256 ") {
		t.Errorf("binary built with %s: %q", profile, got)
	}
	if got := buildNote(filepath.Join(dir, "main.go")); !strings.HasPrefix(got, "unknown") {
		t.Errorf("a source file: %q", got)
	}
}

// benchE2EEnv enables the bench tests that run whole deployments: the pgo
// mode's 3-node cluster under load (see TestPGOModeWritesMergedProfile) and
// -baseline's build of a second tree from scratch. They are off in
// `go test ./...`, where a busy machine makes them slow or flaky without
// saying anything about the product.
const benchE2EEnv = "REDCELL_BENCH_E2E"

// needBenchE2E skips t, saying why (what), unless REDCELL_BENCH_E2E=1.
func needBenchE2E(t *testing.T, what string) {
	t.Helper()
	if testing.Short() {
		t.Skip(what)
	}
	if os.Getenv(benchE2EEnv) != "1" {
		t.Skipf("%s; set %s=1 to run it", what, benchE2EEnv)
	}
}
