package systemtest

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// metricsGet fetches path from a node's --metrics-addr: the status code
// and body, or an error (the node is not serving yet, or is gone).
func metricsGet(n *clusterNode, path string) (int, string, error) {
	c := http.Client{Timeout: probeTimeout}
	resp, err := c.Get("http://" + n.metricsAddr + path)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// metricsSamples is one scrape of /metrics: each sample's value by its
// name and labels as written.
func metricsSamples(t *testing.T, n *clusterNode) map[string]float64 {
	t.Helper()
	code, body, err := metricsGet(n, "/metrics")
	if err != nil || code != http.StatusOK {
		t.Fatalf("%s /metrics: %d %v", n.id, code, err)
	}
	out := map[string]float64{}
	for _, line := range strings.Split(body, "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("%s /metrics line %q: %v", n.id, line, err)
		}
		out[line[:i]] = v
	}
	return out
}

// sample is a series that must be in a scrape.
func sample(t *testing.T, n *clusterNode, s map[string]float64, series string) float64 {
	t.Helper()
	v, ok := s[series]
	if !ok {
		t.Fatalf("%s /metrics has no %s", n.id, series)
	}
	return v
}

// TestClusterMetrics scrapes a real 3-node cluster (each node with
// --metrics-addr): roles, terms and indexes agree with the cluster, the
// leader reports each follower's lag and it drains to 0, decisions are
// counted by outcome on the node their client used (a follower's included,
// though the leader decided them), and a follower cut off from its peers
// answers /readyz 503 "no leader known" until the partition heals, then
// 200 again.
func TestClusterMetrics(t *testing.T) {
	c := startCluster(t, 3)
	leader := c.waitLeader()
	f := (leader + 1) % 3
	ln, fn := c.nodes[leader], c.nodes[f]

	// A limit of one call a day: allowed, then limited.
	fc, lc := mustDial(t, fn.addr()), mustDial(t, ln.addr())
	for i, want := range []int64{0, 1, 1} {
		r := mustDo(t, fc, "CL.THROTTLE", "metrics:f", "0", "1", "86400")
		if ints, ok := r.ints(); !ok || ints[0] != want {
			t.Fatalf("call %d through the follower: %v, want limited %d", i+1, r, want)
		}
	}
	if r := mustDo(t, lc, "CL.THROTTLE", "metrics:l", "0", "1", "86400"); r.kind != '*' {
		t.Fatalf("call through the leader: %v", r)
	}
	if r := mustDo(t, fc, "TB.TAKE", "metrics:tb", "10", "1", "1000"); r.isErr() {
		t.Fatalf("TB.TAKE: %v", r)
	}

	// The leader's view of its followers: both present, lag drained.
	c.waitFor(convergeTimeout, "the leader's lag of both followers at 0", func() (bool, string) {
		s := metricsSamples(t, ln)
		var desc []string
		drained := 0
		for _, m := range c.nodes {
			if m == ln {
				continue
			}
			v, ok := s[`redcell_raft_peer_lag_entries{peer="`+m.id+`"}`]
			desc = append(desc, fmt.Sprintf("%s: %v %v", m.id, v, ok))
			if ok && v == 0 {
				drained++
			}
		}
		return drained == 2, strings.Join(desc, ", ")
	})
	ls := metricsSamples(t, ln)
	term := sample(t, ln, ls, `redcell_raft_term{group="0"}`)
	if sample(t, ln, ls, `redcell_raft_role{group="0",role="leader"}`) != 1 || term < 1 {
		t.Errorf("%s (the leader): role leader %v, term %v", ln.id, ls[`redcell_raft_role{group="0",role="leader"}`], term)
	}
	commit := sample(t, ln, ls, `redcell_raft_commit_index{group="0"}`)
	for _, m := range c.nodes {
		if m == ln {
			continue
		}
		c.waitFor(convergeTimeout, m.id+" applied the leader's commit index", func() (bool, string) {
			s := metricsSamples(t, m)
			a := s[`redcell_raft_applied_index{group="0"}`]
			return a >= commit, fmt.Sprintf("applied %v, leader's commit %v", a, commit)
		})
		s := metricsSamples(t, m)
		if sample(t, m, s, `redcell_raft_role{group="0",role="follower"}`) != 1 || sample(t, m, s, `redcell_raft_leader_known{group="0"}`) != 1 ||
			sample(t, m, s, `redcell_raft_term{group="0"}`) != term {
			t.Errorf("%s: follower %v, leader known %v, term %v (leader's %v)", m.id,
				s[`redcell_raft_role{group="0",role="follower"}`], s[`redcell_raft_leader_known{group="0"}`], s[`redcell_raft_term{group="0"}`], term)
		}
		for series := range s {
			if strings.HasPrefix(series, "redcell_raft_peer_lag_entries") {
				t.Errorf("%s, a follower, reports %s", m.id, series)
			}
		}
	}

	// Decisions where their clients were.
	fs := metricsSamples(t, fn)
	for series, want := range map[string]float64{
		`redcell_decisions_total{family="cl",outcome="allowed"}`: 1,
		`redcell_decisions_total{family="cl",outcome="limited"}`: 2,
		`redcell_decisions_total{family="cl",outcome="error"}`:   0,
		`redcell_decisions_total{family="tb",outcome="allowed"}`: 1,
	} {
		if got := sample(t, fn, fs, series); got != want {
			t.Errorf("%s (follower) %s = %v, want %v", fn.id, series, got, want)
		}
	}
	if got := sample(t, ln, ls, `redcell_decisions_total{family="cl",outcome="allowed"}`); got != 1 {
		t.Errorf("%s (leader) cl allowed = %v, want 1", ln.id, got)
	}
	if got := sample(t, fn, fs, `redcell_command_duration_seconds_count{command="cl.throttle"}`); got != 3 {
		t.Errorf("%s (follower) cl.throttle latency count = %v, want 3", fn.id, got)
	}

	// /readyz: 200 everywhere; a follower cut off from both peers loses
	// its leader (503), and has it back once healed (200).
	readyz := func(n *clusterNode, wantCode int, wantBody string) {
		t.Helper()
		c.waitFor(leaderTimeout, fmt.Sprintf("%s /readyz %d %q", n.id, wantCode, wantBody), func() (bool, string) {
			code, body, err := metricsGet(n, "/readyz")
			return err == nil && code == wantCode && (wantBody == "" || body == wantBody), fmt.Sprintf("%d %q %v", code, body, err)
		})
	}
	for _, m := range c.nodes {
		readyz(m, http.StatusOK, "ok\n")
	}
	c.net.partition(fn.id)
	readyz(fn, http.StatusServiceUnavailable, "no leader known\n")
	if code, body, err := metricsGet(fn, "/healthz"); err != nil || code != http.StatusOK || body != "ok\n" {
		t.Errorf("%s /healthz while cut off: %d %q %v", fn.id, code, body, err)
	}
	if s := metricsSamples(t, fn); s["redcell_ready"] != 0 || s[`redcell_raft_leader_known{group="0"}`] != 0 {
		t.Errorf("%s while cut off: ready %v, leader known %v", fn.id, s["redcell_ready"], s[`redcell_raft_leader_known{group="0"}`])
	}
	c.net.heal()
	readyz(fn, http.StatusOK, "ok\n")
}
