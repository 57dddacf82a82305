package node

import (
	"reflect"
	"testing"
	"time"
)

func TestJudgeReach(t *testing.T) {
	const after = 3 * time.Second
	const self, a1 = "n1", "h1:1"
	long, short := 4*time.Second, time.Second
	peer := func(id string, down map[string]time.Duration) peerReach {
		return peerReach{id: id, addr: "h" + id[1:] + ":1", voter: true, fresh: true, reports: true, unreachable: down}
	}
	cutOff := map[string]time.Duration{a1: long}
	for _, c := range []struct {
		name  string
		peers []peerReach
		want  reachVerdict
	}{
		{"everyone reaches the leader", []peerReach{peer("n2", nil), peer("n3", nil)},
			reachVerdict{targets: []string{"n2", "n3"}}},
		{"both followers cannot reach it for long enough: leave", []peerReach{peer("n2", cutOff), peer("n3", cutOff)},
			reachVerdict{leave: true, cut: []string{"n2", "n3"}, targets: []string{"n2", "n3"}}},
		{"not for long enough yet", []peerReach{peer("n2", cutOff), peer("n3", map[string]time.Duration{a1: short})},
			reachVerdict{cut: []string{"n2"}, targets: []string{"n2", "n3"}}},
		{"one of two is not a majority", []peerReach{peer("n2", cutOff), peer("n3", nil)},
			reachVerdict{cut: []string{"n2"}, targets: []string{"n2", "n3"}}},
		{"a follower that did not answer counts against leaving", []peerReach{peer("n2", cutOff), func() peerReach { p := peer("n3", cutOff); p.fresh = false; return p }()},
			reachVerdict{cut: []string{"n2"}, targets: []string{"n2"}}},
		{"a build without verdicts reaches everyone", []peerReach{peer("n2", cutOff), func() peerReach { p := peer("n3", nil); p.reports = false; return p }()},
			reachVerdict{cut: []string{"n2"}, targets: []string{"n2", "n3"}}},
		{"a non-voter's verdict does not count", []peerReach{peer("n2", cutOff), peer("n3", nil), func() peerReach { p := peer("n4", cutOff); p.voter = false; return p }()},
			reachVerdict{cut: []string{"n2"}, targets: []string{"n2", "n3"}}},
		{"no target another member cannot reach", []peerReach{peer("n2", cutOff), peer("n3", map[string]time.Duration{a1: long, "h2:1": long})},
			reachVerdict{leave: true, cut: []string{"n2", "n3"}, targets: nil}},
		{"five voters: three of four leave", []peerReach{peer("n2", cutOff), peer("n3", cutOff), peer("n4", cutOff), peer("n5", nil)},
			reachVerdict{leave: true, cut: []string{"n2", "n3", "n4"}, targets: []string{"n2", "n3", "n4", "n5"}}},
		{"five voters: two of four stay", []peerReach{peer("n2", cutOff), peer("n3", cutOff), peer("n4", nil), peer("n5", nil)},
			reachVerdict{cut: []string{"n2", "n3"}, targets: []string{"n2", "n3", "n4", "n5"}}},
		{"alone", nil, reachVerdict{}},
	} {
		if got := judgeReach(self, a1, c.peers, after); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: judgeReach = %+v, want %+v", c.name, got, c.want)
		}
	}
}

func TestReachField(t *testing.T) {
	for _, down := range []map[string]time.Duration{
		nil,
		{"127.0.0.1:7001": 3200 * time.Millisecond},
		{"[::1]:7001": 0, "h2:7002": time.Minute},
	} {
		s := formatReach(down)
		got, err := parseReach(s)
		if err != nil {
			t.Fatalf("parseReach(%q): %v", s, err)
		}
		if len(got) != len(down) {
			t.Fatalf("parseReach(formatReach(%v)) = %v", down, got)
		}
		for addr, d := range down {
			if got[addr] != d {
				t.Errorf("parseReach(%q)[%s] = %v, want %v", s, addr, got[addr], d)
			}
		}
	}
	for _, bad := range []string{"", "x", "=5", "h:1=-1", "h:1=x"} {
		if _, err := parseReach(bad); err == nil {
			t.Errorf("parseReach(%q) accepted", bad)
		}
	}
}
