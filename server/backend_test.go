package server

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/redcell/redcell/commands"
	"github.com/redcell/redcell/nodeinfo"
	"github.com/redcell/redcell/request"
)

// stubBackend answers every request at once without a log: what the server
// does on its own, measured and tested without Raft. Propose answers a
// CL.THROTTLE reply, Read an integer; err, when set, fails every call.
type stubBackend struct {
	err      error
	loading  atomic.Bool // Loading's answer
	proposed int
	read     int
	riding   int // reads proposed behind writes (counted in proposed too)
	clock    []string
	cluster  nodeinfo.Cluster // Cluster's answer
}

func (b *stubBackend) Propose(reqs []request.Request, res []request.Result) error {
	if b.err != nil {
		return b.err
	}
	b.proposed += len(reqs)
	for i := range reqs {
		if !reqs[i].Code.IsWrite() { // a read riding in the entry: answered as Read does
			b.riding++
			res[i].SetInt(int64(reqs[i].Code))
			continue
		}
		res[i] = request.Result{Kind: request.KindThrottle, Ints: [5]int64{0, 16, 15, -1, 2}}
	}
	return nil
}

func (b *stubBackend) Read(reqs []request.Request, res []request.Result) error {
	if b.err != nil {
		return b.err
	}
	b.read += len(reqs)
	for i := range reqs {
		res[i].SetInt(int64(reqs[i].Code))
	}
	return nil
}

func (b *stubBackend) Leading() bool                                { return true }
func (b *stubBackend) Counters() (requests, entries, fsyncs uint64) { return 0, 0, 0 }
func (b *stubBackend) Memory() nodeinfo.Memory                      { return nodeinfo.Memory{} }
func (b *stubBackend) Persistence() nodeinfo.Persistence            { return nodeinfo.Persistence{} }
func (b *stubBackend) Raft() nodeinfo.Raft                          { return nodeinfo.Raft{State: "stub"} }
func (b *stubBackend) Replication() *nodeinfo.Replication {
	return nil
}
func (b *stubBackend) Cluster() nodeinfo.Cluster { return b.cluster }
func (b *stubBackend) Keyspace() nodeinfo.Keyspace {
	return nodeinfo.Keyspace{Keys: 3, Expires: 3, AvgTTLms: 7}
}
func (b *stubBackend) Clock() int64          { return 42 }
func (b *stubBackend) SetClock(unixNS int64) { b.clock = append(b.clock, fmt.Sprint("set ", unixNS)) }
func (b *stubBackend) AdvanceClock(ns int64) { b.clock = append(b.clock, fmt.Sprint("advance ", ns)) }
func (b *stubBackend) RealClock()            { b.clock = append(b.clock, "real") }
func (b *stubBackend) Admin(op AdminOp, args []string) (string, error) {
	return "", errors.New("no cluster here")
}
func (b *stubBackend) Loading() bool { return b.loading.Load() }
func (b *stubBackend) ReadLocal(reqs []request.Request, res []request.Result) error {
	return b.Read(reqs, res)
}

// stubServer is a Server in front of backend, closed when the test ends.
func stubServer(t testing.TB, backend *stubBackend) *Server {
	s := New(Config{Backend: BackendOf(backend), EnableDebug: true, Logger: quietLogger()})
	t.Cleanup(s.Close)
	return s
}

// runPipeline feeds cmds to a connection of s as one pipeline, as serve
// does, and returns the replies it wrote.
func runPipeline(t testing.TB, s *Server, cmds ...[]string) string {
	var b strings.Builder
	for _, c := range cmds {
		b.WriteString(encodeCmd(c...))
	}
	c := s.newConn(nopConn{})
	c.rd = newReader(strings.NewReader(b.String()))
	got, err := c.rd.next()
	if err != nil || len(got) != len(cmds) {
		t.Fatalf("reading the pipeline: %d commands, %v", len(got), err)
	}
	for i := range got {
		c.exec(got[i].args)
	}
	c.answerPending()
	c.timeCommands(got) // as serve does after the answers (metrics.go; nothing without metrics)
	return string(c.w.B)
}

// TestConnPipelineDoesNotAllocate: in steady state a connection executes a
// pipeline of reads, then one of writes (with reads riding behind them),
// and writes their replies without allocating: the requests and results it
// hands its Backend are reused.
func TestConnPipelineDoesNotAllocate(t *testing.T) {
	backend := &stubBackend{}
	s := stubServer(t, backend)
	var sb strings.Builder
	for i := 0; i < 16; i++ {
		sb.WriteString(encodeCmd("EXISTS", fmt.Sprintf("user:%d", i), "other"))
	}
	for i := 0; i < 16; i++ {
		sb.WriteString(encodeCmd("CL.THROTTLE", fmt.Sprintf("user:%d", i), "15", "30", "60", "1"))
		sb.WriteString(encodeCmd("EXISTS", fmt.Sprintf("user:%d", i)))
	}
	c := s.newConn(nopConn{})
	c.rd = newReader(&loopReader{p: []byte(sb.String())})
	run := func() {
		cmds, err := c.rd.next()
		if err != nil || len(cmds) != 48 {
			t.Fatalf("next = %d commands, %v", len(cmds), err)
		}
		for i := range cmds {
			c.exec(cmds[i].args)
		}
		c.answerPending()
		c.flush()
	}
	run() // warm the buffers
	if n := testing.AllocsPerRun(100, run); n != 0 {
		t.Errorf("one pipeline allocates %v times", n)
	}
	if backend.proposed == 0 || backend.read == 0 || backend.riding == 0 {
		t.Errorf("the backend saw %d proposed, %d reads, %d of them riding with writes", backend.proposed, backend.read, backend.riding)
	}
}

// TestPipelineRunsReachTheBackendInOrder: consecutive reads go to the
// backend as one Read, consecutive writes as one Propose with the reads
// that follow them riding in it, and replies keep the order of the
// requests.
func TestPipelineRunsReachTheBackendInOrder(t *testing.T) {
	backend := &stubBackend{}
	s := stubServer(t, backend)
	got := runPipeline(t, s,
		[]string{"TYPE", "a"},
		[]string{"EXISTS", "a"},
		[]string{"CL.THROTTLE", "a", "15", "30", "60"},
		[]string{"DEL", "a", "b"},
		[]string{"EXISTS", "a"},
		[]string{"TYPE", "a"},
		[]string{"PING"},
		[]string{"FLUSHALL"},
	)
	five := "*5\r\n:0\r\n:16\r\n:15\r\n:-1\r\n:2\r\n"
	reads := fmt.Sprintf(":%d\r\n:%d\r\n", request.Type, request.Exists)
	want := reads + five + five + fmt.Sprintf(":%d\r\n:%d\r\n", request.Exists, request.Type) + "+PONG\r\n" + five
	if got != want {
		t.Errorf("replies %q, want %q", got, want)
	}
	if backend.proposed != 5 || backend.riding != 2 || backend.read != 2 {
		t.Errorf("backend saw %d proposed (%d reads riding) and %d read, want 5 (2) and 2", backend.proposed, backend.riding, backend.read)
	}
}

// TestKeysAndScanDoNotRideWithWrites: KEYS and SCAN behind writes answer
// the writes first and run as reads of their own: in the writes' entry
// they would run at apply on every replica (KEYS costs the keyspace) and
// SCAN's cursor would belong to whichever node applied it.
func TestKeysAndScanDoNotRideWithWrites(t *testing.T) {
	backend := &stubBackend{}
	s := stubServer(t, backend)
	got := runPipeline(t, s,
		[]string{"DEL", "a"},
		[]string{"KEYS", "*"},
		[]string{"DEL", "b"},
		[]string{"SCAN", "0"},
		[]string{"DEL", "c"},
		[]string{"EXISTS", "c"},
	)
	if backend.proposed != 4 || backend.riding != 1 || backend.read != 2 {
		t.Errorf("backend saw %d proposed (%d reads riding) and %d read, want 4 (1: EXISTS) and 2 (KEYS, SCAN); replies %q",
			backend.proposed, backend.riding, backend.read, got)
	}
}

// TestBackendErrorTexts: each batch failure has its reply, wrapped or not,
// once per request of the failed run; an error the server does not know is
// answered as an unknown outcome, never as "nothing happened".
func TestBackendErrorTexts(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want string
	}{
		{request.ErrNoLeader, commands.ErrClusterDown},
		{request.ErrNotReady, commands.ErrNotReady},
		{request.ErrShutdown, commands.ErrStopped},
		{request.ErrStateMachine, commands.ErrInternal},
		{request.ErrOutcomeUnknown, commands.ErrOutcomeUnknown},
		{fmt.Errorf("%w: raft said something", request.ErrOutcomeUnknown), commands.ErrOutcomeUnknown},
		{fmt.Errorf("wrapped: %w", request.ErrNoLeader), commands.ErrClusterDown},
		{request.Removed("n3"), commands.Removed("n3")},
		{request.DiskFull("/d has 1 MiB free"), commands.DiskFull("/d has 1 MiB free")},
		{request.ErrNotLeader, commands.ErrClusterDown},
		{errors.New("something else"), commands.ErrOutcomeUnknown},
	} {
		s := stubServer(t, &stubBackend{err: tt.err})
		got := runPipeline(t, s, []string{"DEL", "a"}, []string{"FLUSHALL"}, []string{"DBSIZE"})
		line := "-" + tt.want + "\r\n"
		if got != line+line+line {
			t.Errorf("%v: replies %q, want %q three times", tt.err, got, line)
		}
	}
}

// TestDebugClockReachesTheBackend: DEBUG CLOCK's subcommands are the
// backend's clock methods.
func TestDebugClockReachesTheBackend(t *testing.T) {
	backend := &stubBackend{}
	s := stubServer(t, backend)
	got := runPipeline(t, s,
		[]string{"DEBUG", "CLOCK"},
		[]string{"DEBUG", "CLOCK", "SET", "1000"},
		[]string{"DEBUG", "CLOCK", "ADVANCE", "5"},
		[]string{"DEBUG", "CLOCK", "REAL"},
	)
	if want := ":42\r\n+OK\r\n+OK\r\n+OK\r\n"; got != want {
		t.Errorf("replies %q, want %q", got, want)
	}
	if fmt.Sprint(backend.clock) != "[set 1000 advance 5 real]" {
		t.Errorf("backend clock calls %v", backend.clock)
	}
	// INFO shows the backend's fields in its sections.
	info := runPipeline(t, s, []string{"INFO", "raft", "keyspace"})
	for _, f := range []string{"raft_state:stub\r\n", "db0:keys=3,expires=3,avg_ttl=7\r\n", "raft_instantaneous_decisions_per_sec:"} {
		if !strings.Contains(info, f) {
			t.Errorf("INFO raft keyspace lacks %q:\n%s", f, info)
		}
	}
}
