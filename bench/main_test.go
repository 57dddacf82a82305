package main

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Every measured run is warmed up for -warmup seconds (3 by default, 0.5
// with -quick unless given), and the results file says so.
func TestWarmupFlagAndReport(t *testing.T) {
	for _, c := range []struct {
		args          []string
		seconds, warm float64
		wantErr       bool
	}{
		{nil, 5, 3, false},
		{[]string{"-quick"}, 1, 0.5, false},
		{[]string{"-quick", "-warmup", "2"}, 1, 2, false},
		{[]string{"-warmup", "0"}, 5, 0, false},
		{[]string{"-warmup", "-1"}, 0, 0, true},
	} {
		o, err := parseFlags(c.args, io.Discard)
		if c.wantErr {
			if err == nil {
				t.Errorf("%v: no error", c.args)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%v: %v", c.args, err)
		}
		if o.seconds != c.seconds || o.warmup != c.warm {
			t.Errorf("%v: seconds %v warmup %v, want %v and %v", c.args, o.seconds, o.warmup, c.seconds, c.warm)
		}
	}
	r := &resultsReport{seconds: 5, warmup: 3}
	if md := r.markdown("Latency", "body", "0.5 0.5 0.5"); !strings.Contains(md, "| runs | each measured run ~5 s, after a probe and 3.0 s of the same load unmeasured") {
		t.Errorf("results file without the runs row:\n%s", md)
	}
}

// Each mode replaces its own file, bench/results/<mode>.md, and no other:
// a run of the cluster mode leaves compare.md as the last compare run wrote it.
func TestEachModeWritesItsOwnResultsFile(t *testing.T) {
	dir := t.TempDir()
	r := &resultsReport{command: "go run ./bench -mode compare,cluster", seconds: 5, warmup: 3}
	for _, m := range []struct{ mode, title, body string }{
		{"compare", "Comparison", "compare table\n"},
		{"cluster", "Cluster: 3 local nodes", "cluster table\n"},
		{"compare", "Comparison", "second compare table\n"},
	} {
		path, err := r.write(dir, m.mode, m.title, m.body)
		if err != nil {
			t.Fatal(err)
		}
		if path != filepath.Join(dir, m.mode+".md") {
			t.Errorf("%s written to %s", m.mode, path)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{"cluster.md", "compare.md"}) {
		t.Errorf("results files %v, want cluster.md and compare.md", names)
	}
	compare, _ := os.ReadFile(filepath.Join(dir, "compare.md"))
	if !strings.Contains(string(compare), "## Comparison\n\nsecond compare table") || strings.Contains(string(compare), "cluster table") {
		t.Errorf("compare.md is not the last compare run's alone:\n%s", compare)
	}
}

// -md puts every mode's section in one file, leaving the per-mode files alone.
func TestMDFlagWritesOneFile(t *testing.T) {
	o, err := parseFlags([]string{"-mode", "compare,latency", "-md", "/tmp/x.md"}, io.Discard)
	if err != nil || o.mdPath != "/tmp/x.md" {
		t.Fatalf("-md parsed as %q, %v", o.mdPath, err)
	}
	path := filepath.Join(t.TempDir(), "sub", "run.md")
	r := &resultsReport{command: "go run ./bench -md run.md", seconds: 5, warmup: 3}
	if err := r.writeFile(path, "## Comparison\n\nA\n\n## Latency\n\nB\n"); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	md := string(b)
	if !strings.HasPrefix(md, "# Redcell benchmark results") || strings.Count(md, "\n## ") != 2 ||
		!strings.Contains(md, "## Comparison\n\nA") || !strings.Contains(md, "## Latency\n\nB") {
		t.Errorf("one file with both sections expected:\n%s", md)
	}
}

// The results file says how the machine idles its CPUs, and the probe reads
// it from sysfs where there is one.
func TestReportGivesCPUIdle(t *testing.T) {
	r := &resultsReport{info: machineInfo{CPUIdle: "haltpoll/haltpoll, guest_halt_poll_ns 0"}}
	want := "| CPU idle | haltpoll/haltpoll, guest_halt_poll_ns 0 ("
	if md := r.markdown("t", "b", ""); !strings.Contains(md, want) {
		t.Errorf("results file without the CPU idle row %q:\n%s", want, md)
	}
	got := cpuIdle()
	if _, err := os.Stat("/sys/devices/system/cpu/cpuidle/current_driver"); err == nil {
		if got == "unknown" || !strings.Contains(got, "/") {
			t.Errorf("cpuIdle() = %q with a cpuidle driver in sysfs", got)
		}
	} else if got != "unknown" {
		t.Errorf("cpuIdle() = %q without a cpuidle driver", got)
	}
}
