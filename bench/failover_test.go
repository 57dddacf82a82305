package main

import (
	"io"
	"slices"
	"testing"
	"time"
)

// The gap of a kill is measured from the last decision at or before it, and
// a stretch with no decision up to the window's end counts too.
func TestLongestGapAcross(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	ts := []time.Time{at(0), at(10), at(20), at(300), at(310), at(320)}
	for _, c := range []struct {
		name      string
		from, end time.Time
		want      time.Duration
	}{
		{"kill between decisions: from the one before", at(25), at(400), 280 * time.Millisecond},
		{"kill on a decision: from that one", at(20), at(400), 280 * time.Millisecond},
		{"nothing after the kill: up to the end", at(330), at(500), 180 * time.Millisecond},
		{"kill before any decision: from the kill", at(-50), at(25), 50 * time.Millisecond},
		{"a later, longer stretch counts", at(305), at(1000), 680 * time.Millisecond},
	} {
		if got := longestGapAcross(ts, c.from, c.end); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	if got := longestGapAcross(nil, at(0), at(70)); got != 70*time.Millisecond {
		t.Errorf("no decisions at all: %v, want the whole window", got)
	}
}

// gaps takes, per kill, the worst single client and the cluster as a whole.
func TestFailoverGapsWorstClientAndAnyone(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	l := &failoverLoad{clients: []*failoverClient{
		{ok: []time.Time{at(0), at(100), at(400)}}, // 300 ms without, across the kill
		{ok: []time.Time{at(5), at(150), at(200)}}, // 220 ms: none from 200 to the end
	}}
	worst, anyone := l.gaps(at(110), at(420))
	if worst != 300*time.Millisecond || anyone != 200*time.Millisecond {
		t.Errorf("worst %v, anyone %v; want 300ms and 200ms", worst, anyone)
	}
}

func TestNearestRank(t *testing.T) {
	var ds []time.Duration
	for i := 1; i <= 20; i++ {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	s := slices.Sorted(slices.Values(ds))
	if p50, p90 := nearestRank(s, 0.5), nearestRank(s, 0.9); p50 != 10*time.Millisecond || p90 != 18*time.Millisecond {
		t.Errorf("p50 %v p90 %v of 1..20 ms, want 10ms and 18ms", p50, p90)
	}
	if got := distribution(nil); got != "-" {
		t.Errorf("distribution of nothing: %q", got)
	}
}

// The failover mode runs alone or beside others, not in "all"; its flags
// are checked.
func TestFailoverFlags(t *testing.T) {
	o, err := parseFlags([]string{"-mode", "failover", "-node-flags", "--raft-heartbeat-timeout 200ms"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(o.modes, []string{"failover"}) || o.failover.kills != 20 || !slices.Equal(o.failover.nodeFlags, []string{"--raft-heartbeat-timeout", "200ms"}) {
		t.Errorf("parsed %+v", o)
	}
	if o, _ := parseFlags([]string{"-mode", "failover", "-quick"}, io.Discard); o.failover.kills != 3 {
		t.Errorf("-quick: %d kills, want 3", o.failover.kills)
	}
	if o, _ := parseFlags([]string{"-mode", "all"}, io.Discard); slices.Contains(o.modes, "failover") {
		t.Error("-mode all includes failover")
	}
	for _, bad := range [][]string{{"-kills", "-1"}, {"-failover-clients", "0"}, {"-quiet", "0s"}, {"-cpu-hogs", "-2"}} {
		if _, err := parseFlags(bad, io.Discard); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}
