package main

import (
	"context"
	"io"
	"slices"
	"strings"
	"testing"
)

// -variants adds one server kind per variant, right after Redcell and
// Redcell-baseline and before the Redis servers, and refuses what it could
// not run or would run wrongly.
func TestVariantsFlag(t *testing.T) {
	direct, poll := serverKind("Redcell[direct]"), serverKind("Redcell[direct+poll]")
	for _, c := range []struct {
		args    []string
		want    []serverKind
		wantErr string
	}{
		{[]string{"-variants", "direct=--direct-wal-sync;direct+poll=--direct-wal-sync --busy-poll-usec 50"},
			[]serverKind{kindRedcell, direct, poll, kindRedisLua, kindRedisLuaFsync}, ""},
		{[]string{"-variants", "direct=--direct-wal-sync", "-baseline", "HEAD~1"},
			[]serverKind{kindRedcell, kindRedcellBaseline, direct, kindRedisLua, kindRedisLuaFsync}, ""},
		{[]string{"-variants", " direct = --direct-wal-sync ; ", "-servers", "redcell"}, []serverKind{kindRedcell, direct}, ""},
		{[]string{"-variants", "direct=--direct-wal-sync", "-servers", "redis"}, nil, "needs redcell"},
		{[]string{"-variants", "direct=--direct-wal-sync", "-mode", "pgo"}, nil, "not in -mode pgo"},
		{[]string{"-variants", "direct"}, nil, "not name=flags"},
		{[]string{"-variants", "=--procs 2"}, nil, "not name=flags"},
		{[]string{"-variants", "a b=--procs 2"}, nil, "letters, digits"},
		{[]string{"-variants", "none="}, nil, "has no flags"},
		{[]string{"-variants", "p=2 --procs"}, nil, "is not a flag"},
		{[]string{"-variants", "p=--procs 2;p=--procs 1"}, nil, "named twice"},
		{[]string{"-variants", "port=--port 7000"}, nil, "--port is bench's"},
		{[]string{"-variants", "dir=--data-dir=/tmp/x"}, nil, "--data-dir is bench's"},
		{[]string{"-variants", ";"}, nil, "no variant"},
	} {
		o, err := parseFlags(c.args, io.Discard)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%q: error %v, want one saying %q", c.args, err, c.wantErr)
			}
			continue
		}
		if err != nil || !slices.Equal(o.servers, c.want) {
			t.Errorf("%q: servers %v, %v; want %v", c.args, o.servers, err, c.want)
		}
	}
	o, err := parseFlags([]string{"-variants", "dp=--direct-wal-sync --busy-poll-usec 50"}, io.Discard)
	if err != nil || len(o.variants) != 1 || !slices.Equal(o.variants[0].flags, []string{"--direct-wal-sync", "--busy-poll-usec", "50"}) {
		t.Fatalf("variant flags %+v, %v", o.variants, err)
	}
	if note := variantsNote(o.variants); !strings.Contains(note, "Redcell[dp]: `--direct-wal-sync --busy-poll-usec 50`") {
		t.Errorf("results header note %q", note)
	}
}

// A variant is Redcell to everything that treats Redcell specially (native
// commands, INFO raft, no Redis ready line), and starts from this commit's
// binary with bench's own flags first and its flags after them; a
// slow-disk kind starts from the tagged build with its environment.
func TestVariantsStartAsRedcell(t *testing.T) {
	direct := variant{name: "direct", flags: []string{"--direct-wal-sync"}}.kind()
	slow := slowDiskServer{base: direct, delay: 1e6}.kind()
	for _, k := range []serverKind{kindRedcell, kindRedcellBaseline, direct, slow} {
		if !k.isRedcell() {
			t.Errorf("%s: not Redcell", k)
		}
	}
	for _, k := range []serverKind{kindRedisLua, kindRedisLuaFsync} {
		if k.isRedcell() {
			t.Errorf("%s: Redcell", k)
		}
	}
	s := &server{kind: direct, shas: map[family]string{familyRR: "sha"}}
	if got := s.limiterCommand(familyTB, "k", "1"); !slices.Equal(got, []string{"TB.TAKE", "k", "1"}) {
		t.Errorf("a variant's TB decision: %q, want the native command", got)
	}

	f := &fleet{redcellBin: "/bin/redcell", slowDiskBin: "/bin/redcell-slowdisk"}
	f.addRedcell(direct, redcellSpec{flags: []string{"--direct-wal-sync"}})
	f.addRedcell(slow, redcellSpec{slowDisk: true, flags: []string{"--direct-wal-sync"}, env: []string{slowDiskEnv + "=1ms"}})
	ctx := context.Background()
	for _, c := range []struct {
		kind serverKind
		bin  string
		tail []string
		env  []string
	}{
		{kindRedcell, "/bin/redcell", nil, nil},
		{direct, "/bin/redcell", []string{"--direct-wal-sync"}, nil},
		{slow, "/bin/redcell-slowdisk", []string{"--direct-wal-sync"}, []string{"REDCELL_SLOWDISK_FSYNC=1ms"}},
	} {
		bin, args, env, err := f.command(ctx, c.kind, 7000, "/d", []string{"--procs", "1"})
		want := append(append([]string{"--bind", "127.0.0.1", "--port", "7000", "--data-dir", "/d/data"}, c.tail...), "--procs", "1")
		if err != nil || bin != c.bin || !slices.Equal(args, want) || !slices.Equal(env, c.env) {
			t.Errorf("%s: %s %q env %q (%v); want %s %q env %q", c.kind, bin, args, env, err, c.bin, want, c.env)
		}
	}
	if _, _, _, err := f.command(ctx, "Redcell[unknown]", 7000, "/d", nil); err == nil {
		t.Error("an unregistered kind started")
	}
	if got := dirName(string(slow)); got != "redcell-direct---fsync--1-ms-" {
		t.Errorf("data dir name %q", got)
	}
}

// The table beside the default: each variant's rate and its ratio to the
// default's, CPU µs/req of each, and whether the default is within 5 % of
// the best; bytes per key (fewer is better) in a table of their own.
func TestVariantsMarkdown(t *testing.T) {
	direct, procs := serverKind("Redcell[direct]"), serverKind("Redcell[procs2]")
	variants := []serverKind{direct, procs}
	rows := []summaryRow{
		{mode: "compare", scenario: "P1", kind: kindRedcell, rate: 40000, cpuUs: 20},
		{mode: "compare", scenario: "P1", kind: kindRedcellBaseline, rate: 90000, cpuUs: 1},
		{mode: "compare", scenario: "P1", kind: direct, rate: 48000, cpuUs: 15.5},
		{mode: "compare", scenario: "P1", kind: procs, rate: 39000, cpuUs: 21},
		{mode: "compare", scenario: "P1", kind: kindRedisLua, rate: 30000, cpuUs: 10},
		{mode: "compare", scenario: "P16", kind: kindRedcell, rate: 300000, cpuUs: 3},
		{mode: "compare", scenario: "P16", kind: direct, rate: 306000, cpuUs: 2.9},
		{mode: "compare", scenario: "P16", kind: procs, rate: 250000, cpuUs: 4},
		{mode: "compare", scenario: "hot", kind: kindRedcell, rate: 50000, cpuUs: 10},
		{mode: "compare", scenario: "hot", kind: direct, rate: 45000, cpuUs: 11},
	}
	md := variantsMarkdown(rows, variants)
	for _, want := range []string{
		"| scenario | Redcell rps | Redcell[direct] rps | ÷ Redcell | Redcell[procs2] rps | ÷ Redcell | Redcell CPU µs/req | Redcell[direct] CPU µs/req | Redcell[procs2] CPU µs/req | default within 5 % of the best |",
		"| P1 | 40,000 | 48,000 | 1.20x | 39,000 | 0.97x | 20.0 | 15.5 | 21.0 | **no**: Redcell[direct] 1.20x |",
		"| P16 | 300,000 | 306,000 | 1.02x | 250,000 | 0.83x | 3.0 | 2.9 | 4.0 | yes (best: Redcell[direct], 1.02x) |",
		"| hot | 50,000 | 45,000 | 0.90x | - | - | 10.0 | 11.0 | - | yes |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("variants table without\n%s\n%s", want, md)
		}
	}
	if strings.Contains(md, "90,000") || strings.Contains(md, "30,000") {
		t.Errorf("the baseline or Redis in the variants table:\n%s", md)
	}
	if variantsMarkdown(rows, nil) != "" || variantsMarkdown(rows[4:5], variants) != "" {
		t.Error("a variants table without variants")
	}

	mem := []summaryRow{
		{mode: "memory", scenario: "CL.THROTTLE keys", kind: kindRedcell, bytesPerKey: 100},
		{mode: "memory", scenario: "CL.THROTTLE keys", kind: direct, bytesPerKey: 90},
		{mode: "memory", scenario: "TB.TAKE keys", kind: kindRedcell, bytesPerKey: 100},
		{mode: "memory", scenario: "TB.TAKE keys", kind: direct, bytesPerKey: 102},
	}
	md = variantsMarkdown(mem, []serverKind{direct})
	for _, want := range []string{
		"| keys | Redcell bytes/key | Redcell[direct] bytes/key | ÷ Redcell | default within 5 % of the best |",
		"| CL.THROTTLE keys | 100 | 90 | 0.90x | **no**: Redcell[direct] 0.90x |",
		"| TB.TAKE keys | 100 | 102 | 1.02x | yes |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("memory variants table without\n%s\n%s", want, md)
		}
	}
	var printed strings.Builder
	if got := withVariants(&printed, "mode\n", mem, []serverKind{direct}); !strings.HasPrefix(got, "mode\n\n**Redcell (default flags) beside each variant**") ||
		!strings.Contains(printed.String(), "Redcell (default flags) beside each variant:") {
		t.Errorf("withVariants: %q, printed %q", got, printed.String())
	}
}
