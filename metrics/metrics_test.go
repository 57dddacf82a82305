package metrics

import (
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/redcell/redcell/nodeinfo"
	"github.com/redcell/redcell/request"
)

func TestReadiness(t *testing.T) {
	follower := nodeinfo.Raft{State: "follower", LeaderID: "n1", CommitIndex: 400, AppliedIndex: 400}
	leader := nodeinfo.Raft{State: "leader", Ready: true, LeaderID: "n2", CommitIndex: 10, AppliedIndex: 9}
	for _, tc := range []struct {
		name    string
		loading bool
		r       nodeinfo.Raft
		ok      bool
		why     string
	}{
		{"a caught-up follower", false, follower, true, "ok"},
		{"a ready leader", false, leader, true, "ok"},
		{"loading", true, follower, false, "loading"},
		{"no leader", false, nodeinfo.Raft{State: "candidate", CommitIndex: 5, AppliedIndex: 5}, false, "no leader known"},
		{"a leader before its barrier", false, nodeinfo.Raft{State: "leader", LeaderID: "n2"}, false, "leader not ready: applying what earlier terms committed"},
		{"catching up", false, nodeinfo.Raft{State: "follower", LeaderID: "n1", CommitIndex: 400, AppliedIndex: 120}, false, "catching up: applied 120 of 400"},
		{"within the bound", false, nodeinfo.Raft{State: "follower", LeaderID: "n1", CommitIndex: 400, AppliedIndex: 400 - DefaultReadyLag}, true, "ok"},
		{"shutting down", false, nodeinfo.Raft{State: "shutdown", LeaderID: "n1"}, false, "shutting down"},
	} {
		ok, why := Readiness(tc.loading, tc.r, DefaultReadyLag)
		if ok != tc.ok || why != tc.why {
			t.Errorf("%s: %v %q, want %v %q", tc.name, ok, why, tc.ok, tc.why)
		}
	}
}

// fakeStatus is a Status whose answers the test sets.
type fakeStatus struct {
	loading bool
	raft    nodeinfo.Raft
}

func (f *fakeStatus) Loading() bool                      { return f.loading }
func (f *fakeStatus) Raft() nodeinfo.Raft                { return f.raft }
func (f *fakeStatus) Memory() nodeinfo.Memory            { return nodeinfo.Memory{} }
func (f *fakeStatus) Persistence() nodeinfo.Persistence  { return nodeinfo.Persistence{} }
func (f *fakeStatus) Keyspace() nodeinfo.Keyspace        { return nodeinfo.Keyspace{} }
func (f *fakeStatus) Replication() *nodeinfo.Replication { return nil }

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// The endpoints on a real listener: /readyz follows the status (503 and
// the reason, then 200), /healthz is 200 throughout, /metrics serves the
// registry.
func TestEndpoints(t *testing.T) {
	st := &fakeStatus{loading: true, raft: nodeinfo.Raft{State: "follower", LeaderID: "n1", CommitIndex: 7, AppliedIndex: 7}}
	m := New(Config{Status: st}, NewCommands())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := m.Serve(ln, slog.New(slog.NewTextHandler(io.Discard, nil)))
	defer srv.Close()
	base := "http://" + srv.Addr().String()
	if code, body := get(t, base+"/readyz"); code != http.StatusServiceUnavailable || body != "loading\n" {
		t.Errorf("/readyz while loading: %d %q", code, body)
	}
	if code, body := get(t, base+"/healthz"); code != http.StatusOK || body != "ok\n" {
		t.Errorf("/healthz: %d %q", code, body)
	}
	st.loading = false
	if code, body := get(t, base+"/readyz"); code != http.StatusOK || body != "ok\n" {
		t.Errorf("/readyz once loaded: %d %q", code, body)
	}
	code, body := get(t, base+"/metrics")
	if code != http.StatusOK || !strings.Contains(body, "\nredcell_ready 1\n") || !strings.Contains(body, `redcell_raft_role{group="0",role="follower"} 1`) {
		t.Errorf("/metrics: %d\n%s", code, body)
	}
}

func TestCountDecisions(t *testing.T) {
	c := NewCommands()
	throttle := func(limited int64) request.Result {
		return request.Result{Kind: request.KindThrottle, Ints: [5]int64{limited, 10, 9, -1, 1}}
	}
	ints := func(a, b int64) request.Result {
		return request.Result{Kind: request.KindInts, Data: request.AppendIntItem(request.AppendIntItem(nil, a), b)}
	}
	doubles := func(a, b string) request.Result {
		return request.Result{Kind: request.KindDoubles, Data: request.AppendItem(request.AppendItem(nil, []byte(a)), []byte(b))}
	}
	incr := request.Request{Code: request.IncrEx}
	incr.SetArgs(0, 5)
	errRes := request.Result{}
	errRes.SetErr(request.ErrWrongType)
	aborted := request.Result{}
	aborted.SetErr(request.ErrWatchAborted)
	reqs := []request.Request{
		{Code: request.Throttle}, {Code: request.Throttle}, {Code: request.Throttle}, {Code: request.Throttle},
		{Code: request.TBTake}, {Code: request.SLHit}, {Code: request.Peek},
		incr, incr, incr,
		{Code: request.Eval}, {Code: request.EvalSha},
	}
	res := []request.Result{
		throttle(0), throttle(1), errRes, aborted,
		throttle(1), throttle(0), throttle(1),
		ints(5, 5), ints(3, 0), doubles("2", "0"),
		{Kind: request.KindReply}, errRes,
	}
	c.CountDecisions(reqs, res, nil)
	c.CountDecisions(reqs[:2], res[:2], request.ErrNoLeader)
	want := map[[2]int]uint64{
		{familyCL, outcomeAllowed}: 1, {familyCL, outcomeLimited}: 1, {familyCL, outcomeError}: 3,
		{familyTB, outcomeLimited}: 1, {familySL, outcomeAllowed}: 1,
		{familyIncrEx, outcomeAllowed}: 1, {familyIncrEx, outcomeLimited}: 2,
		{familyScript, outcomeAllowed}: 1, {familyScript, outcomeError}: 1,
	}
	for f := familyCL; f < numFamilies; f++ {
		for o := range numOutcomes {
			if got := c.decisions[f][o].Load(); got != want[[2]int{f, o}] {
				t.Errorf("%s %s = %d, want %d", familyNames[f], outcomeNames[o], got, want[[2]int{f, o}])
			}
		}
	}
	if n := testing.AllocsPerRun(100, func() { c.CountDecisions(reqs, res, nil) }); n != 0 {
		t.Errorf("CountDecisions allocates %v times", n)
	}
}

func TestLatencyHistogram(t *testing.T) {
	var h latencyHistogram
	h.observeN(30*time.Microsecond, 16) // second bucket
	h.observeN(20*time.Second, 1)       // above every bound
	h.observeN(-time.Second, 1)         // a stepped clock: the first bucket
	if h.count() != 18 || h.buckets[0].Load() != 1 || h.buckets[1].Load() != 16 || h.buckets[len(latencyBounds)].Load() != 1 {
		t.Errorf("buckets %v", &h.buckets)
	}
	if got, want := time.Duration(h.sumNanos.Load()), 16*30*time.Microsecond+20*time.Second; got != want {
		t.Errorf("sum %v, want %v", got, want)
	}
	c := NewCommands()
	if n := testing.AllocsPerRun(100, func() { c.ObserveN(c.Label(nil), time.Millisecond, 16) }); n != 0 {
		t.Errorf("ObserveN allocates %v times", n)
	}
	if c.names[c.Label(nil)] != UnknownCommand {
		t.Errorf("the label of an unknown command is %q", c.names[c.Label(nil)])
	}
}

// batchHistogram turns INFO's power-of-two buckets into cumulative ones.
func TestBatchHistogram(t *testing.T) {
	r := nodeinfo.Raft{EntryOps: []uint64{2, 0, 3, 1}, OpsProposed: 2*1 + 3*5 + 1*9}
	m := batchHistogram(r)
	pb := new(dto.Metric)
	if err := m.Write(pb); err != nil {
		t.Fatal(err)
	}
	h := pb.GetHistogram()
	if h.GetSampleCount() != 6 || h.GetSampleSum() != 26 {
		t.Errorf("count %d sum %v", h.GetSampleCount(), h.GetSampleSum())
	}
	want := map[float64]uint64{1: 2, 3: 2, 7: 5}
	for _, b := range h.GetBucket() {
		if want[b.GetUpperBound()] != b.GetCumulativeCount() {
			t.Errorf("bucket le=%v: %d, want %d", b.GetUpperBound(), b.GetCumulativeCount(), want[b.GetUpperBound()])
		}
	}
	if len(h.GetBucket()) != len(want) {
		t.Errorf("%d buckets, want %d", len(h.GetBucket()), len(want))
	}
}

// With several groups a node is ready only when every group is.
func TestReadinessOfGroups(t *testing.T) {
	r := nodeinfo.Raft{State: "follower", LeaderID: "n1", CommitIndex: 10, AppliedIndex: 10, Groups: []nodeinfo.GroupRaft{
		{ID: 0, State: "follower", LeaderID: "n1", CommitIndex: 10, AppliedIndex: 10},
		{ID: 1, State: "leader", Ready: true, LeaderID: "n2", CommitIndex: 5, AppliedIndex: 5},
	}}
	if ok, why := Readiness(false, r, 256); !ok {
		t.Fatalf("every group ready: %s", why)
	}
	r.Groups[1].LeaderID = ""
	if ok, why := Readiness(false, r, 256); ok || why != "group 1: no leader known" {
		t.Fatalf("group 1 without a leader: %v %q", ok, why)
	}
}

// A first EVALSHA answered NOSCRIPT is not a decision, and a pipeline split
// over groups that failed in part counts each request by its own outcome.
func TestCountDecisionsNoScriptAndPartial(t *testing.T) {
	c := NewCommands()
	noscript := request.Result{}
	noscript.SetErr(request.ErrNoScript)
	c.CountDecisions([]request.Request{{Code: request.EvalSha}}, []request.Result{noscript}, nil)
	if n := c.decisions[familyScript][outcomeError].Load(); n != 0 {
		t.Fatalf("NOSCRIPT counted as %d script errors", n)
	}
	reqs := []request.Request{{Code: request.Throttle}, {Code: request.Throttle}}
	res := []request.Result{{Kind: request.KindThrottle, Ints: [5]int64{1, 10, 0, 1, 1}}, {}}
	c.CountDecisions(reqs, res, &request.Partial{Errs: []error{nil, request.ErrNoLeader}})
	if l, e := c.decisions[familyCL][outcomeLimited].Load(), c.decisions[familyCL][outcomeError].Load(); l != 1 || e != 1 {
		t.Fatalf("a partly failed pipeline: limited %d, error %d; want 1 and 1", l, e)
	}
}
