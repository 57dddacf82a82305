package node

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// httpGet fetches url and returns the status code and body.
func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return resp.StatusCode, string(body)
}

// scrape is one /metrics text: each sample's value by its line's name and
// labels as written ("redcell_keys", `redcell_raft_role{group="0",role="leader"}`),
// and every name a query may use (a histogram's _bucket, _sum and _count).
type scrape struct {
	samples map[string]float64
	names   map[string]bool
}

func scrapeMetrics(t *testing.T, n *Node) scrape {
	t.Helper()
	code, body := httpGet(t, "http://"+n.MetricsAddr().String()+"/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d %s", code, body)
	}
	s := scrape{samples: map[string]float64{}, names: map[string]bool{}}
	for _, line := range strings.Split(body, "\n") {
		if f := strings.Fields(line); len(f) == 4 && f[0] == "#" && f[1] == "TYPE" {
			s.names[f[2]] = true
			switch f[3] {
			case "histogram":
				s.names[f[2]+"_bucket"], s.names[f[2]+"_sum"], s.names[f[2]+"_count"] = true, true, true
			case "summary":
				s.names[f[2]+"_sum"], s.names[f[2]+"_count"] = true, true
			}
			continue
		}
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("/metrics line %q: %v", line, err)
		}
		s.samples[line[:i]] = v
	}
	return s
}

// value is a sample that must be present.
func (s scrape) value(t *testing.T, series string) float64 {
	t.Helper()
	v, ok := s.samples[series]
	if !ok {
		t.Fatalf("/metrics has no %s", series)
	}
	return v
}

// One node with --metrics-addr: /healthz answers at once, /readyz once it
// leads, and /metrics counts what its clients did: an allowed and a
// limited CL.THROTTLE, their latency, the fsyncs, applies and snapshot they
// caused, the key and the client.
func TestMetricsEndpointsOnANode(t *testing.T) {
	n := mustOpen(t, t.TempDir(), func(c *Config) { c.MetricsAddr = "127.0.0.1:0" })
	defer mustClose(t, n)
	base := "http://" + n.MetricsAddr().String()
	if code, body := httpGet(t, base+"/healthz"); code != http.StatusOK || body != "ok\n" {
		t.Errorf("/healthz: %d %q", code, body)
	}
	waitCond(t, 10*time.Second, "/readyz 200", func() bool {
		code, _ := httpGet(t, base+"/readyz")
		return code == http.StatusOK
	})
	cl := dial(t, n)
	if got := cl.do(t, "CL.THROTTLE", "m", "0", "1", "86400"); !strings.HasPrefix(got, ":0 ") {
		t.Fatalf("first call: %q, want allowed", got)
	}
	if got := cl.do(t, "CL.THROTTLE", "m", "0", "1", "86400"); !strings.HasPrefix(got, ":1 ") {
		t.Fatalf("second call: %q, want limited", got)
	}
	if got := cl.do(t, "RAFT", "SNAPSHOT"); !strings.HasPrefix(got, ":") {
		t.Fatalf("RAFT SNAPSHOT: %q", got)
	}
	s := scrapeMetrics(t, n)
	for series, want := range map[string]float64{
		`redcell_decisions_total{family="cl",outcome="allowed"}`:                   1,
		`redcell_decisions_total{family="cl",outcome="limited"}`:                   1,
		`redcell_decisions_total{family="cl",outcome="error"}`:                     0,
		`redcell_command_duration_seconds_count{command="cl.throttle"}`:            2,
		`redcell_command_duration_seconds_bucket{command="cl.throttle",le="+Inf"}`: 2,
		`redcell_raft_role{group="0",role="leader"}`:                               1,
		`redcell_raft_role{group="0",role="follower"}`:                             0,
		`redcell_raft_leader_known{group="0"}`:                                     1,
		`redcell_raft_voters`:                                                      1,
		`redcell_keys`:                                                             1,
		`redcell_connected_clients`:                                                1,
		`redcell_loading`:                                                          0,
		`redcell_ready`:                                                            1,
		`redcell_snapshot_duration_seconds_count`:                                  1,
	} {
		if got := s.value(t, series); got != want {
			t.Errorf("%s = %v, want %v", series, got, want)
		}
	}
	for _, series := range []string{`redcell_raft_term{group="0"}`, `redcell_raft_commit_index{group="0"}`, `redcell_raft_applied_index{group="0"}`,
		"redcell_fsync_duration_seconds_count", "redcell_apply_duration_seconds_count", "redcell_batch_requests_count",
		"redcell_snapshot_last_bytes", "redcell_memory_used_bytes", "process_resident_memory_bytes", "go_goroutines"} {
		if s.value(t, series) <= 0 {
			t.Errorf("%s = %v, want > 0", series, s.value(t, series))
		}
	}
	if c, a := s.value(t, `redcell_raft_commit_index{group="0"}`), s.value(t, `redcell_raft_applied_index{group="0"}`); a != c {
		t.Errorf("a lone idle leader: applied %v, commit %v", a, c)
	}
	for series := range s.samples {
		if strings.Contains(series, `"m"`) {
			t.Errorf("a label carries the key: %s", series)
		}
	}
}

// A taken --metrics-addr fails the start before anything is written: the
// data dir is left as it was.
func TestMetricsAddrTakenFailsTheStart(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dir := t.TempDir()
	_, err = openNode(t, dir, func(c *Config) { c.MetricsAddr = ln.Addr().String() })
	if err == nil || !strings.Contains(err.Error(), "--metrics-addr") {
		t.Fatalf("Open with a taken metrics address: %v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("the failed start left %d entries in the data dir", len(ents))
	}
}

// dashboardPath is the Grafana dashboard built from the series the node
// exports.
const dashboardPath = "../deploy/grafana/redcell-dashboard.json"

// metricNameRE finds the series names in a PromQL expression: ours and
// the process and Go collectors'.
var metricNameRE = regexp.MustCompile(`\b(?:redcell|process|go)_[a-zA-Z0-9_]+`)

// dashboardSeries is every series name the dashboard's queries use.
func dashboardSeries(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Definition string `json:"definition"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("%s: %v", dashboardPath, err)
	}
	seen := map[string]bool{}
	exprs := 0
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			exprs++
			for _, name := range metricNameRE.FindAllString(tg.Expr, -1) {
				seen[name] = true
			}
		}
	}
	for _, v := range d.Templating.List {
		for _, name := range metricNameRE.FindAllString(v.Definition, -1) {
			seen[name] = true
		}
	}
	if exprs < 10 || len(seen) < 10 {
		t.Fatalf("%s: %d queries naming %d series: not the dashboard", dashboardPath, exprs, len(seen))
	}
	out := make([]string, 0, len(seen))
	for name := range seen {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// A real three-node cluster with --metrics-addr on each: the leader
// reports itself leader and each follower's lag, followers report a leader
// known and are ready, every node's term agrees, and every series the
// Grafana dashboard queries is one the nodes export (the leader's and a
// follower's scrapes together), so the dashboard cannot drift from the
// code.
func TestDashboardUsesOnlyExportedSeries(t *testing.T) {
	dirs := []string{t.TempDir(), t.TempDir(), t.TempDir()}
	withMetrics := func(c *Config) { fastRaft(c); c.MetricsAddr = "127.0.0.1:0" }
	first := mustOpen(t, dirs[0], func(c *Config) { withMetrics(c); c.NodeID = "n1"; c.Bootstrap = true })
	nodes := []*Node{first}
	t.Cleanup(func() {
		for _, nd := range nodes {
			nd.Close()
		}
	})
	for i := 2; i <= 3; i++ {
		nodes = append(nodes, mustOpen(t, dirs[i-1], func(c *Config) {
			withMetrics(c)
			c.NodeID = fmt.Sprintf("n%d", i)
			c.Join = first.Addr.String()
		}))
	}
	var leader, follower *Node
	waitCond(t, 30*time.Second, "a leader reporting both followers' lag, and a ready follower", func() bool {
		i := leaderOf(nodes)
		if i < 0 {
			return false
		}
		leader, follower = nodes[i], nodes[(i+1)%3]
		s := scrapeMetrics(t, leader)
		lags := 0
		for series := range s.samples {
			if strings.HasPrefix(series, "redcell_raft_peer_lag_entries{") {
				lags++
			}
		}
		code, _ := httpGet(t, "http://"+follower.MetricsAddr().String()+"/readyz")
		return lags == 2 && code == http.StatusOK
	})
	// Decisions are counted where their client is: a follower's are
	// forwarded to the leader and counted on the follower.
	cl := dial(t, follower)
	for i, want := range []string{":0 ", ":1 "} {
		if got := cl.do(t, "CL.THROTTLE", "d", "0", "1", "86400"); !strings.HasPrefix(got, want) {
			t.Fatalf("call %d through the follower: %q, want %q...", i+1, got, want)
		}
	}
	ls, fs := scrapeMetrics(t, leader), scrapeMetrics(t, follower)
	for _, o := range []string{"allowed", "limited"} {
		series := `redcell_decisions_total{family="cl",outcome="` + o + `"}`
		if f, l := fs.value(t, series), ls.value(t, series); f != 1 || l != 0 {
			t.Errorf("%s: follower %v (want 1), leader %v (want 0)", series, f, l)
		}
	}
	if ls.value(t, `redcell_raft_role{group="0",role="leader"}`) != 1 || fs.value(t, `redcell_raft_role{group="0",role="follower"}`) != 1 {
		t.Errorf("roles: leader scrape %v, follower scrape %v", ls.value(t, `redcell_raft_role{group="0",role="leader"}`), fs.value(t, `redcell_raft_role{group="0",role="follower"}`))
	}
	if lt, ft := ls.value(t, `redcell_raft_term{group="0"}`), fs.value(t, `redcell_raft_term{group="0"}`); lt != ft || lt < 1 {
		t.Errorf("terms: leader %v, follower %v", lt, ft)
	}
	for series := range fs.samples {
		if strings.HasPrefix(series, "redcell_raft_peer_lag_entries") {
			t.Errorf("a follower reports peer lag: %s", series)
		}
	}
	for _, id := range []string{"n1", "n2", "n3"} {
		series := `redcell_raft_peer_lag_entries{peer="` + id + `"}`
		if _, ok := ls.samples[series]; !ok && id != leader.ID {
			t.Errorf("the leader has no %s", series)
		}
	}
	var missing []string
	for _, name := range dashboardSeries(t) {
		if !ls.names[name] && !fs.names[name] {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		t.Errorf("the dashboard queries series no node exports: %v", missing)
	}
}
