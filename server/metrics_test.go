package server

import (
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/redcell/redcell/metrics"
	"github.com/redcell/redcell/request"
)

// gatherCommands scrapes cmds: each series' value (a counter's, or a
// histogram's count) by name and labels ("name{k=v,...}").
func gatherCommands(t testing.TB, cmds *metrics.Commands) map[string]uint64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(cmds)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]uint64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			out[seriesKey(mf.GetName(), m)] = seriesValue(m)
		}
	}
	return out
}

func seriesKey(name string, m *dto.Metric) string {
	var ls []string
	for _, l := range m.GetLabel() {
		ls = append(ls, l.GetName()+"="+l.GetValue())
	}
	return name + "{" + strings.Join(ls, ",") + "}"
}

func seriesValue(m *dto.Metric) uint64 {
	if h := m.GetHistogram(); h != nil {
		return h.GetSampleCount()
	}
	return uint64(m.GetCounter().GetValue())
}

// metricsServer is a stub server that records metrics.
func metricsServer(t testing.TB, backend *stubBackend) (*Server, *metrics.Commands) {
	cmds := metrics.NewCommands()
	s := New(Config{Backend: BackendOf(backend), Logger: quietLogger(), Metrics: cmds})
	t.Cleanup(s.Close)
	return s, cmds
}

// TestMetricsPipelineDoesNotAllocate: with metrics on, a pipeline of
// decisions and reads still allocates nothing in the server, and every
// command's latency and every decision is recorded.
func TestMetricsPipelineDoesNotAllocate(t *testing.T) {
	backend := &stubBackend{}
	s, cmds := metricsServer(t, backend)
	var sb strings.Builder
	for i := 0; i < 16; i++ {
		sb.WriteString(encodeCmd("CL.THROTTLE", fmt.Sprintf("user:%d", i), "15", "30", "60", "1"))
		sb.WriteString(encodeCmd("exists", fmt.Sprintf("user:%d", i)))
	}
	c := s.newConn(nopConn{})
	c.rd = newReader(&loopReader{p: []byte(sb.String())})
	run := func() {
		cmds, err := c.rd.next()
		if err != nil || len(cmds) != 32 {
			t.Fatalf("next = %d commands, %v", len(cmds), err)
		}
		c.lastActive.Store(monoNow()) // as serve does on a read
		for i := range cmds {
			c.exec(cmds[i].args)
		}
		c.answerPending()
		c.timeCommands(cmds)
		c.flush()
	}
	run() // warm the buffers
	const runs = 100
	if n := testing.AllocsPerRun(runs, run); n != 0 {
		t.Errorf("one pipeline allocates %v times with metrics on", n)
	}
	got := gatherCommands(t, cmds)
	calls := uint64(16 * (runs + 2)) // AllocsPerRun runs once more to warm up
	for series, want := range map[string]uint64{
		"redcell_decisions_total{family=cl,outcome=allowed}":    calls,
		"redcell_decisions_total{family=cl,outcome=limited}":    0,
		"redcell_command_duration_seconds{command=cl.throttle}": calls,
		"redcell_command_duration_seconds{command=exists}":      calls,
	} {
		if got[series] != want {
			t.Errorf("%s = %d, want %d", series, got[series], want)
		}
	}
}

// TestMetricsDecisionOutcomes: a batch failure counts every decision of the
// run as an error; reads, PEEKs and keyspace commands are no decisions.
func TestMetricsDecisionOutcomes(t *testing.T) {
	backend := &stubBackend{}
	s, cmds := metricsServer(t, backend)
	runPipeline(t, s,
		[]string{"CL.THROTTLE", "a", "15", "30", "60"},
		[]string{"TB.TAKE", "b", "10", "1", "1"},
		[]string{"CL.PEEK", "a", "15", "30", "60"},
		[]string{"DEL", "a"})
	runPipeline(t, s, []string{"NOSUCHCOMMAND", "a"}, []string{"nosuchcommand"}, []string{"PING"})
	backend.err = request.ErrNoLeader
	runPipeline(t, s, []string{"CL.THROTTLE", "a", "15", "30", "60"}, []string{"CL.THROTTLE", "b", "15", "30", "60"})
	got := gatherCommands(t, cmds)
	for series, want := range map[string]uint64{
		"redcell_decisions_total{family=cl,outcome=allowed}": 1,
		"redcell_decisions_total{family=cl,outcome=error}":   2,
		"redcell_decisions_total{family=tb,outcome=allowed}": 1,
		"redcell_decisions_total{family=sl,outcome=allowed}": 0,
		// Client input never becomes a label: any unknown name is one.
		"redcell_command_duration_seconds{command=unknown}": 2,
		"redcell_command_duration_seconds{command=ping}":    1,
	} {
		if got[series] != want {
			t.Errorf("%s = %d, want %d", series, got[series], want)
		}
	}
}

// BenchmarkConnPipelineMetrics is BenchmarkConnPipelineStub (16
// CL.THROTTLEs against a backend that answers at once: the server's own
// cost) with metrics off and on: the difference is what recording costs a
// pipeline.
func BenchmarkConnPipelineMetrics(b *testing.B) {
	b.Run("off", func(b *testing.B) {
		benchPipeline(b, stubServer(b, &stubBackend{}), "CL.THROTTLE", "15", "30", "60", "1")
	})
	b.Run("on", func(b *testing.B) {
		s, _ := metricsServer(b, &stubBackend{})
		benchPipeline(b, s, "CL.THROTTLE", "15", "30", "60", "1")
	})
}
