package group

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/redcell/redcell/fsm"
	"github.com/redcell/redcell/gcra"
	"github.com/redcell/redcell/raftstore"
	"github.com/redcell/redcell/request"
)

// The in-process harness: every node is a real group on a real Pebble store
// (raftstore, fsync on) in t.TempDir(), with a real fsm, joined to its peers
// by raft's InmemTransport so that tests can partition and heal the network.
//
// Clusters of more than one node are bootstrapped the way hashicorp/raft
// documents for fixed clusters: every member's storage is initialised with
// the same configuration (raft.BootstrapCluster, the package function) before
// group.Open runs, so Open finds existing state and resumes instead of
// bootstrapping a one-node cluster of its own (Config.Bootstrap only acts on
// empty stores).

// testLogger discards everything unless REDCELL_TEST_LOG is set, so that a
// failing test can be rerun with raft's and the group's logs on stderr.
func testLogger() *slog.Logger {
	if os.Getenv("REDCELL_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// fastTimeouts makes elections and step-downs take tens of milliseconds.
func fastTimeouts(rc *raft.Config) {
	rc.HeartbeatTimeout = 50 * time.Millisecond
	rc.ElectionTimeout = 50 * time.Millisecond
	rc.LeaderLeaseTimeout = 50 * time.Millisecond
	rc.CommitTimeout = 5 * time.Millisecond
}

// slowTimeouts keeps a leader that lost its followers in office for about a
// second, long enough for a test to observe what is stuck behind it.
func slowTimeouts(rc *raft.Config) {
	rc.HeartbeatTimeout = time.Second
	rc.ElectionTimeout = time.Second
	rc.LeaderLeaseTimeout = time.Second
	rc.CommitTimeout = 5 * time.Millisecond
}

// testNode is one member: its stores, transport, state machine and clock,
// and the group once opened. The stores and the transport are closed by
// t.Cleanup after the group is shut down.
type testNode struct {
	id    string
	addr  raft.ServerAddress
	store *raftstore.Store
	trans *raft.InmemTransport
	fsm   *fsm.FSM
	clock *Clock
	g     *Group
}

// newTestNode creates a node's parts, without opening its group.
func newTestNode(t testing.TB, id string) *testNode {
	t.Helper()
	st, err := raftstore.Open(t.TempDir(), raftstore.Options{Logger: testLogger()})
	if err != nil {
		t.Fatalf("opening the raft store of %s: %v", id, err)
	}
	t.Cleanup(func() {
		if err := st.Close(); err != nil {
			t.Errorf("closing the raft store of %s: %v", id, err)
		}
	})
	addr, trans := raft.NewInmemTransport(raft.ServerAddress(id))
	t.Cleanup(func() { _ = trans.Close() })
	return &testNode{
		id:    id,
		addr:  addr,
		store: st,
		trans: trans,
		fsm:   fsm.New(fsm.Config{Stripes: 8, Logger: testLogger()}),
		clock: &Clock{},
	}
}

// config is the group configuration of n with fast timeouts; tests adjust
// it through mod.
func (n *testNode) config(mod func(*Config)) Config {
	cfg := Config{
		NodeID:        n.id,
		Addr:          n.addr,
		Bootstrap:     true, // a no-op where bootstrapMembers wrote state
		LogStore:      n.store,
		Stable:        n.store,
		Snapshots:     n.store.SnapshotStore(2),
		Transport:     n.trans,
		FSM:           n.fsm,
		Clock:         n.clock,
		Logger:        testLogger(),
		WaitForLeader: 5 * time.Second,
		Tune:          fastTimeouts,
	}
	if mod != nil {
		mod(&cfg)
	}
	return cfg
}

// open opens n's group; t.Cleanup shuts it down (before the stores close,
// because cleanups run last-registered first).
func (n *testNode) open(t testing.TB, mod func(*Config)) {
	t.Helper()
	g, err := Open(n.config(mod))
	if err != nil {
		t.Fatalf("opening the group of %s: %v", n.id, err)
	}
	n.g = g
	t.Cleanup(func() {
		if err := g.Shutdown(); err != nil {
			t.Errorf("shutting down %s: %v", n.id, err)
		}
	})
}

// openSingle opens a one-node group (group.Open bootstraps it) and waits
// until it is a ready leader.
func openSingle(t testing.TB, mod func(*Config)) *testNode {
	t.Helper()
	n := newTestNode(t, "node1")
	n.open(t, mod)
	waitFor(t, 10*time.Second, "the single node to be a ready leader", n.g.Ready)
	return n
}

// bootstrapMembers writes the same voter configuration into the storage of
// every node (raft's documented way to start a fixed cluster), so that
// group.Open resumes instead of bootstrapping itself alone.
func bootstrapMembers(t testing.TB, members []*testNode, storageOf []*testNode) {
	t.Helper()
	var conf raft.Configuration
	for _, m := range members {
		conf.Servers = append(conf.Servers, raft.Server{ID: raft.ServerID(m.id), Address: m.addr, Suffrage: raft.Voter})
	}
	for _, n := range storageOf {
		rc := raft.DefaultConfig()
		rc.LocalID = raft.ServerID(n.id)
		fastTimeouts(rc)
		if err := raft.BootstrapCluster(rc, n.store, n.store, n.store.SnapshotStore(2), n.trans, conf); err != nil {
			t.Fatalf("bootstrapping the storage of %s: %v", n.id, err)
		}
	}
}

// newCluster starts size nodes that know each other, fully connected, and
// waits for one of them to be a ready leader.
func newCluster(t testing.TB, size int, mod func(*Config)) []*testNode {
	t.Helper()
	nodes := make([]*testNode, size)
	for i := range nodes {
		nodes[i] = newTestNode(t, fmt.Sprintf("node%d", i+1))
	}
	for _, a := range nodes {
		for _, b := range nodes {
			if a != b {
				a.trans.Connect(b.addr, b.trans)
			}
		}
	}
	bootstrapMembers(t, nodes, nodes)
	for _, n := range nodes {
		n.open(t, mod)
	}
	readyLeader(t, nodes, 10*time.Second)
	return nodes
}

// readyLeader waits until exactly one node is a ready leader and returns it.
func readyLeader(t testing.TB, nodes []*testNode, timeout time.Duration) *testNode {
	t.Helper()
	var leader *testNode
	waitFor(t, timeout, "one ready leader", func() bool {
		leader = nil
		for _, n := range nodes {
			if n.g.Ready() {
				if leader != nil {
					return false
				}
				leader = n
			}
		}
		return leader != nil
	})
	return leader
}

// isolate cuts every link between n and the others, in both directions.
func isolate(n *testNode, others []*testNode) {
	for _, o := range others {
		if o == n {
			continue
		}
		n.trans.Disconnect(o.addr)
		o.trans.Disconnect(n.addr)
	}
}

// connectAll restores every link.
func connectAll(nodes []*testNode) {
	for _, a := range nodes {
		for _, b := range nodes {
			if a != b {
				a.trans.Connect(b.addr, b.trans)
			}
		}
	}
}

// waitFor polls cond until it holds or timeout passes. Polling with a
// deadline is how the tests wait for raft (elections, step-downs); nothing
// relies on a fixed sleep.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		<-tick.C
	}
}

// goroutinesIn counts the goroutines whose stack passes through fn (a
// function name as runtime prints it, e.g. "group.(*Group).awaitReady").
// Tests use it to know that callers are really blocked where they mean
// them to be before acting.
func goroutinesIn(fn string) int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, fn+"(") {
			count++
		}
	}
	return count
}

// throttleReq is CL.THROTTLE on key with p, as commands builds it: the
// parameters travel as Args.
func throttleReq(key []byte, p gcra.Params) request.Request {
	r := request.Request{Code: request.Throttle, Key: key}
	r.SetArgs(p.Interval, p.Limit, p.Quantity)
	return r
}

// peekReq is CL.PEEK on key with p.
func peekReq(key []byte, p gcra.Params) request.Request {
	r := throttleReq(key, p)
	r.Code = request.Peek
	return r
}

// gcraOf is the parameters a Throttle or Peek request carries.
func gcraOf(r *request.Request) gcra.Params {
	return gcra.Params{Interval: r.Args[0], Limit: r.Args[1], Quantity: r.Args[2]}
}

// loggedEntry is one LogCommand entry read back from a node's log, decoded.
type loggedEntry struct {
	log   raft.Log // Data is the stored copy
	stamp int64
	ops   []request.Request // keys copied
}

// committedEntries reads every command entry in n's log, in log order, and
// decodes it. Call it when every entry in the log is known to be committed
// (all proposals answered).
func committedEntries(t testing.TB, st *raftstore.Store) []loggedEntry {
	t.Helper()
	first, err := st.FirstIndex()
	if err != nil {
		t.Fatalf("FirstIndex: %v", err)
	}
	last, err := st.LastIndex()
	if err != nil {
		t.Fatalf("LastIndex: %v", err)
	}
	var out []loggedEntry
	for i := max(first, 1); i <= last && last > 0; i++ {
		var l raft.Log
		if err := st.GetLog(i, &l); err != nil {
			t.Fatalf("GetLog(%d): %v", i, err)
		}
		if l.Type != raft.LogCommand {
			continue
		}
		var d fsm.Decoder
		if err := d.Reset(l.Data); err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
		e := loggedEntry{log: l, stamp: d.Stamp}
		for {
			var op request.Request
			ok, err := d.Next(&op)
			if err != nil {
				t.Fatalf("entry %d: %v", i, err)
			}
			if !ok {
				break
			}
			op.Key = append([]byte(nil), op.Key...)
			op.Keys = nil
			e.ops = append(e.ops, op)
		}
		if len(e.ops) != d.Count {
			t.Fatalf("entry %d: decoded %d ops, header says %d", i, len(e.ops), d.Count)
		}
		out = append(out, e)
	}
	return out
}
