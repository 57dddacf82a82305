package main

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

func Test_SplitClients(t *testing.T) {
	tests := []struct {
		clients, nodes int
		want           []int
	}{
		{50, 3, []int{17, 17, 16}},
		{50, 1, []int{50}},
		{3, 3, []int{1, 1, 1}},
		{7, 2, []int{4, 3}},
	}
	for _, tc := range tests {
		got, err := splitClients(tc.clients, tc.nodes)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("splitClients(%d, %d) = %v, %v; want %v", tc.clients, tc.nodes, got, err, tc.want)
		}
	}
	for _, bad := range [][2]int{{1, 3}, {5, 0}} {
		if got, err := splitClients(bad[0], bad[1]); err == nil {
			t.Errorf("splitClients(%d, %d) = %v, want an error", bad[0], bad[1], got)
		}
	}
}

func Test_CombineResults(t *testing.T) {
	parts := []benchResult{
		{Requests: 3000, RPS: 30000, AvgMs: 2, P50Ms: 1.5, P99Ms: 4, MaxMs: 9},
		{Requests: 1000, RPS: 20000, AvgMs: 6, P50Ms: 5, P99Ms: 3, MaxMs: 7},
	}
	got := combineResults(parts, 2*time.Second)
	want := benchResult{Requests: 4000, Elapsed: 2 * time.Second, RPS: 50000, AvgMs: 3, P50Ms: 5, P99Ms: 4, MaxMs: 9}
	if got != want {
		t.Errorf("combined %+v, want %+v", got, want)
	}
	// One process is passed through.
	one := combineResults(parts[:1], time.Second)
	if want := (benchResult{Requests: 3000, Elapsed: time.Second, RPS: 30000, AvgMs: 2, P50Ms: 1.5, P99Ms: 4, MaxMs: 9}); one != want {
		t.Errorf("one part: %+v, want %+v", one, want)
	}
}

func Test_ParseInfoAndAgreedLeader(t *testing.T) {
	info := parseInfo("# Raft\r\nraft_state:leader\r\nraft_leader_id:n1\r\nraft_leader_addr:127.0.0.1:7001\r\nraft_voters:3\r\n\r\n")
	if info["raft_state"] != "leader" || info["raft_leader_addr"] != "127.0.0.1:7001" || info["raft_voters"] != "3" || len(info) != 4 {
		t.Errorf("parseInfo: %v", info)
	}
	nodes := []*server{{name: "n1"}, {name: "n2"}, {name: "n3"}}
	node := func(state, leader, voters string) map[string]string {
		return map[string]string{"raft_state": state, "raft_leader_id": leader, "raft_voters": voters}
	}
	tests := []struct {
		name  string
		infos []map[string]string
		want  *server
	}{
		{"ready", []map[string]string{node("follower", "n2", "3"), node("leader", "n2", "3"), node("follower", "n2", "3")}, nodes[1]},
		{"a joiner not yet promoted", []map[string]string{node("leader", "n1", "3"), node("follower", "n1", "3"), node("follower", "n1", "2")}, nil},
		{"a node did not answer", []map[string]string{node("leader", "n1", "3"), nil, node("follower", "n1", "3")}, nil},
		{"disagreement", []map[string]string{node("leader", "n1", "3"), node("follower", "n1", "3"), node("follower", "n3", "3")}, nil},
		{"named leader does not know yet", []map[string]string{node("candidate", "n1", "3"), node("follower", "n1", "3"), node("follower", "n1", "3")}, nil},
		{"no leader", []map[string]string{node("candidate", "", "3"), node("candidate", "", "3"), node("follower", "", "3")}, nil},
	}
	for _, tc := range tests {
		if got := agreedLeader(nodes, tc.infos); got != tc.want {
			t.Errorf("%s: agreedLeader = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func Test_ClusterReport(t *testing.T) {
	n1, n2, n3 := &server{name: "n1"}, &server{name: "n2"}, &server{name: "n3"}
	tput, lat := clusterThroughputWorkload, clusterLatencyWorkload
	ms := []measurement{
		{work: tput, kind: kindClusterLeader, median: benchResult{RPS: 160000}},
		{work: tput, kind: kindClusterSpread, median: benchResult{RPS: 90000, P50Ms: 9, P99Ms: 20}, nodes: []*server{n1, n2, n3},
			nodeMedians: []benchResult{{RPS: 40000, P50Ms: 7, P99Ms: 12}, {RPS: 25000, P50Ms: 9, P99Ms: 20}, {RPS: 25000, P50Ms: 8.5, P99Ms: 19}}},
		{work: tput, kind: kindRedisLua, median: benchResult{RPS: 100000}},
		{work: lat, kind: kindClusterLeader, median: benchResult{RPS: 2000, P50Ms: 0.4, P99Ms: 1}},
		{work: lat, kind: kindClusterFollower, median: benchResult{RPS: 1500, P50Ms: 0.6, P99Ms: 1.5}},
		{work: lat, kind: kindRedisLua, median: benchResult{RPS: 10000, P50Ms: 0.08, P99Ms: 0.2}},
	}
	info := clusterRunInfo{
		size: 3, leaderStart: "n1", leaderEnd: "n1", leaderAddr: "127.0.0.1:7001",
		leaderCounter: map[string]string{"raft_avg_ops_per_entry": "14.20"},
		problems:      map[string][]string{"n2": {"time=x level=WARN msg=slow"}},
		nodeOrder:     []string{"n1", "n2", "n3"},
		roles:         map[string]string{"n1": "leader", "n2": "follower", "n3": "follower"},
	}
	md := clusterMarkdown(ms, info, "ext4")
	for _, want := range []string{
		"split 17/17/16",
		"| 100000 random keys, -c 50 -P 16 | Redcell-3 leader | 160,000 | 0.000 | 0.000 | 1.60x |",
		"| 100000 random keys, -c 50 -P 16 | Redcell-3 spread | 90,000 | 9.000 | 20.000 | 0.90x |",
		"| 100000 random keys, -c 1 -P 1 | Redcell-3 follower | 1,500 | 0.600 | 1.500 | 0.15x |",
		"| n1 | leader | 17 | 40,000 | 7.000 | 12.000 |",
		"| n3 | follower | 16 | 25,000 | 8.500 | 19.000 |",
		"Leader: n1 (127.0.0.1:7001).",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	notes := clusterNotes(ms, info)
	for _, want := range []string{
		"leader ≥ 1.50x: **1.60x, met**; spread ≥ 1.00x: **0.90x, not met**",
		"Leader n1 at the start and at the end",
		"`raft_avg_ops_per_entry:14.20`",
		"logged while measured: n1 0, n2 1, n3 0.",
		"    n2: time=x level=WARN msg=slow",
	} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}
	info.leaderEnd = "n2"
	if notes := clusterNotes(ms, info); !strings.Contains(notes, "the leader changed during the run") {
		t.Errorf("leader change not flagged:\n%s", notes)
	}
	info.leaderEnd, info.leaderErr = "", errors.New("nodes disagree")
	if notes := clusterNotes(ms, info); !strings.Contains(notes, "Leader at the end unknown") {
		t.Errorf("unknown leader not flagged:\n%s", notes)
	}
	// Without the cluster (-servers redis-lua) the targets are not measured.
	if notes := clusterNotes(ms[2:3], clusterRunInfo{size: 3}); !strings.Contains(notes, "leader ≥ 1.50x: not measured") {
		t.Errorf("missing cluster rows:\n%s", notes)
	}
}
