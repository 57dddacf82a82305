package main

import (
	"io"
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
	if md := r.markdown(); !strings.Contains(md, "| runs | each measured run ~5 s, after a probe and 3.0 s of the same load unmeasured") {
		t.Errorf("results file without the runs row:\n%s", md)
	}
}
