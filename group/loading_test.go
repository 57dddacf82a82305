package group

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/redcell/redcell/fsm"
	"github.com/redcell/redcell/gcra"
	"github.com/redcell/redcell/raftstore"
	"github.com/redcell/redcell/request"
)

// Test hooks for restarts: the stores a restarted group is given hold its
// snapshot restore and its log replay until the test lets them go, so the
// test sees the node loading for as long as it wants, without sleeping.

// gatedLog is the raft store with the replay held. raft.NewRaft (v1.8.0,
// api.go) reads the last entry, then every entry after the snapshot once to
// find configurations; those reads pass. Any later read of an entry after
// index from (raft's replay to the state machine, the loading watcher's
// look for commands) waits for release.
type gatedLog struct {
	*raftstore.Store
	from, last uint64
	release    chan struct{}
	mu         sync.Mutex
	reads      map[uint64]int
	blocked    atomic.Int64 // reads that have waited
}

func newGatedLog(st *raftstore.Store, from uint64) *gatedLog {
	last, _ := st.LastIndex()
	return &gatedLog{Store: st, from: from, last: last, release: make(chan struct{}), reads: map[uint64]int{}}
}

func (l *gatedLog) GetLog(i uint64, out *raft.Log) error {
	if i > l.from {
		free := 1 // NewRaft's scan
		if i == l.last {
			free = 2 // and its read of the last entry
		}
		l.mu.Lock()
		l.reads[i]++
		again := l.reads[i] > free
		l.mu.Unlock()
		if again {
			select {
			case <-l.release:
			default:
				l.blocked.Add(1)
				<-l.release
			}
		}
	}
	return l.Store.GetLog(i, out)
}

// gatedSnaps holds every snapshot reader's first Read until release.
type gatedSnaps struct {
	raft.SnapshotStore
	release chan struct{}
	opened  atomic.Int64
}

func (s *gatedSnaps) Open(id string) (*raft.SnapshotMeta, io.ReadCloser, error) {
	m, rc, err := s.SnapshotStore.Open(id)
	if err != nil {
		return nil, nil, err
	}
	s.opened.Add(1)
	return m, &gatedReader{rc: rc, release: s.release}, nil
}

type gatedReader struct {
	rc      io.ReadCloser
	release chan struct{}
}

func (r *gatedReader) Read(p []byte) (int, error) { <-r.release; return r.rc.Read(p) }
func (r *gatedReader) Close() error               { return r.rc.Close() }

// longLived throttles that keep their key for an hour of the frozen clock.
var longLived = gcra.Params{Interval: int64(time.Hour), Limit: 10, Quantity: 1}

// writeKeys proposes entries of perEntry new keys each, named prefix:i.
func writeKeys(t *testing.T, g *Group, prefix string, entries, perEntry int) {
	t.Helper()
	b := NewBatch()
	for e := 0; e < entries; e++ {
		b.Reset()
		for i := 0; i < perEntry; i++ {
			b.Ops = append(b.Ops, throttleReq([]byte(fmt.Sprintf("%s:%d", prefix, e*perEntry+i)), longLived))
		}
		if err := g.Propose(b); err != nil {
			t.Fatalf("Propose: %v", err)
		}
	}
}

func dbsize(t *testing.T, g *Group) int64 {
	t.Helper()
	res := make([]request.Result, 1)
	if err := g.Read([]request.Request{{Code: request.DBSize}}, res); err != nil {
		t.Fatalf("DBSIZE: %v", err)
	}
	return res[0].Ints[0]
}

// lastCommand is the index of the last command entry in the store's log.
func lastCommand(t *testing.T, st *raftstore.Store) uint64 {
	t.Helper()
	entries := committedEntries(t, st)
	if len(entries) == 0 {
		t.Fatal("no command in the log")
	}
	return entries[len(entries)-1].log.Index
}

// restart shuts n's group down and opens it again on the same store with a
// fresh state machine and transport; mod adjusts the configuration.
func (n *testNode) restart(t *testing.T, mod func(*Config)) {
	t.Helper()
	if err := n.g.Shutdown(); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	n.fsm = fsm.New(fsm.Config{Stripes: 8, Logger: testLogger()})
	n.addr, n.trans = raft.NewInmemTransport(n.addr)
	t.Cleanup(func() { _ = n.trans.Close() })
	n.open(t, mod)
}

func infoFields(l *Local, section string) string {
	var b strings.Builder
	f := func(name string, v any) { fmt.Fprintf(&b, "%s:%v\n", name, v) }
	switch section {
	case "memory":
		l.Memory().Fields(f)
	case "persistence":
		l.Persistence().Fields(f)
	case "raft":
		l.Raft().Fields(f)
	case "keyspace":
		l.Keyspace().Fields(f)
	}
	return b.String()
}

// A restarted node is loading while it restores its snapshot and while it
// replays the log after it, and only then: when Loaded fires, every command
// of the log it started with is applied and readable.
func Test_Loading_RestoreAndReplayAfterRestart(t *testing.T) {
	n := newTestNode(t, "node1")
	n.clock.Set(frozenAt)
	n.open(t, nil)
	waitFor(t, 10*time.Second, "a ready leader", n.g.Ready)
	select {
	case <-n.g.Loaded():
	default:
		t.Fatal("a new node is loading")
	}
	if n.g.Loading() {
		t.Fatal("a new node reports Loading")
	}
	writeKeys(t, n.g, "a", 40, 25)
	snapIdx, err := n.g.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	writeKeys(t, n.g, "b", 40, 25)
	last := lastCommand(t, n.store)
	if last <= snapIdx {
		t.Fatalf("last command %d is not after the snapshot at %d", last, snapIdx)
	}

	target, _ := n.store.LastIndex()
	logGate := newGatedLog(n.store, snapIdx)
	snapGate := &gatedSnaps{SnapshotStore: n.store.SnapshotStore(2), release: make(chan struct{})}
	var once1, once2 sync.Once
	releaseSnap := func() { once1.Do(func() { close(snapGate.release) }) }
	releaseLog := func() { once2.Do(func() { close(logGate.release) }) }
	n.restart(t, func(c *Config) { c.LogStore, c.Snapshots = logGate, snapGate })
	t.Cleanup(releaseLog) // before the group's shutdown (cleanups run last first)
	t.Cleanup(releaseSnap)
	local := NewLocal(n.g, n.store)

	// Restoring the snapshot: Open has returned, the state is not there.
	if !n.g.Loading() || !local.Loading() {
		t.Fatal("not loading right after a restart with a snapshot and a log")
	}
	if !n.fsm.StartupPending() {
		t.Fatal("the state machine is not waiting for the startup restore")
	}
	info := infoFields(local, "persistence")
	if !strings.Contains(info, fmt.Sprintf("loading_target_index:%d\n", target)) {
		t.Errorf("INFO persistence while loading:\n%s", info)
	}

	// The snapshot is restored; the log after it is not replayed yet.
	releaseSnap()
	waitFor(t, 10*time.Second, "the snapshot to be restored", func() bool { return !n.fsm.StartupPending() })
	if got := n.fsm.AppliedIndex(); got != snapIdx {
		t.Fatalf("restored state machine at index %d, want the snapshot's %d", got, snapIdx)
	}
	waitFor(t, 10*time.Second, "raft to try to replay the log", func() bool { return logGate.blocked.Load() > 0 })
	if !n.g.Loading() {
		t.Fatal("not loading with the log after the snapshot still to replay")
	}
	select {
	case <-n.g.Loaded():
		t.Fatal("Loaded closed with the log still to replay")
	default:
	}

	releaseLog()
	select {
	case <-n.g.Loaded():
	case <-time.After(10 * time.Second):
		t.Fatal("still loading 10s after the replay was let go")
	}
	if n.g.Loading() {
		t.Fatal("Loaded closed but Loading() is true")
	}
	if applied := n.fsm.AppliedIndex(); applied < last {
		t.Fatalf("loaded at applied index %d, before the last command %d of the log", applied, last)
	}
	if strings.Contains(infoFields(local, "persistence"), "loading_") {
		t.Error("INFO persistence still has loading_* fields")
	}
	waitFor(t, 10*time.Second, "a ready leader", n.g.Ready)
	if got := dbsize(t, n.g); got != 2000 {
		t.Fatalf("DBSIZE after loading = %d, want 2000", got)
	}
}

// A restart whose log after the snapshot holds no command (only raft's
// no-ops and barriers of earlier restarts) is loading only while the
// snapshot is restored; one with neither snapshot nor command never is.
func Test_Loading_NothingToReplay(t *testing.T) {
	n := newTestNode(t, "node1")
	n.clock.Set(frozenAt)
	n.open(t, nil)
	waitFor(t, 10*time.Second, "a ready leader", n.g.Ready)

	// No command at all: restarting twice leaves configuration, no-op and
	// barrier entries only.
	for i := 0; i < 2; i++ {
		n.restart(t, nil)
		if n.g.Loading() {
			t.Fatalf("restart %d: loading with no command in the log", i+1)
		}
		waitFor(t, 10*time.Second, "a ready leader", n.g.Ready)
	}

	writeKeys(t, n.g, "a", 5, 10)
	if _, err := n.g.Snapshot(); err != nil {
		t.Fatal(err)
	}
	n.restart(t, nil) // adds a no-op and a barrier after the snapshot
	waitFor(t, 10*time.Second, "a ready leader", n.g.Ready)
	snapGate := &gatedSnaps{SnapshotStore: n.store.SnapshotStore(2), release: make(chan struct{})}
	var once sync.Once
	release := func() { once.Do(func() { close(snapGate.release) }) }
	n.restart(t, func(c *Config) {
		c.Snapshots = snapGate
		c.Tune = func(rc *raft.Config) { // stay a follower: only the restore may end loading
			fastTimeouts(rc)
			rc.HeartbeatTimeout, rc.ElectionTimeout = time.Hour, time.Hour
			rc.LeaderLeaseTimeout = time.Hour
		}
	})
	t.Cleanup(release)
	if !n.g.Loading() {
		t.Fatal("not loading while the snapshot is restored")
	}
	release()
	select {
	case <-n.g.Loaded():
	case <-time.After(10 * time.Second):
		t.Fatal("still loading after the snapshot was restored, with no command after it")
	}
	if n.g.Ready() {
		t.Fatal("the node leads: the test meant loading to end without an election")
	}
}

// A node whose log ends with entries that were never committed (it led, was
// cut off, and appended writes no one else received) must not stay loading
// after a restart waiting for entries that will never come: it is loaded
// once it has applied what its new leader says is committed, with no new
// writes needed.
func Test_Loading_EndsWithAnUncommittedTail(t *testing.T) {
	nodes := newCluster(t, 3, nil)
	leader := readyLeader(t, nodes, 10*time.Second)
	for i := range nodes {
		nodes[i].clock.Set(frozenAt)
	}
	writeKeys(t, leader.g, "committed", 10, 5)

	// Cut the leader off and have it append writes that cannot commit: more
	// entries than a new leader writes on taking over (a no-op and a
	// barrier), so the old leader's log ends past the new leader's.
	isolate(leader, nodes)
	var futures []raft.ApplyFuture
	for e := 0; e < 10; e++ {
		var enc fsm.Encoder
		enc.Reset(frozenAt)
		for k := 0; k < 20; k++ {
			r := throttleReq([]byte(fmt.Sprintf("lost:%d:%d", e, k)), longLived)
			enc.Add(&r)
		}
		futures = append(futures, leader.g.raft.Apply(append([]byte(nil), enc.Finish()...), 0))
	}
	for _, f := range futures {
		if err := f.Error(); err == nil {
			t.Fatal("a write of the isolated leader committed")
		}
	}
	tailEnd, _ := leader.store.LastIndex()
	lastCmd := lastCommand(t, leader.store)
	t.Logf("old leader: log ends at %d, last command %d", tailEnd, lastCmd)
	var others []*testNode
	for _, n := range nodes {
		if n != leader {
			others = append(others, n)
		}
	}
	newLeader := readyLeader(t, others, 10*time.Second)
	if got, _ := newLeader.store.LastIndex(); got >= lastCmd {
		t.Fatalf("the new leader's log reaches %d, as far as the old leader's uncommitted tail (%d): the test proves nothing", got, lastCmd)
	}

	// Restart the old leader on its store; it rejoins and is told the
	// commit index, which lies before its tail.
	leader.restart(t, nil)
	if !leader.g.Loading() {
		t.Fatal("the restarted node is not loading")
	}
	connectAll(nodes)
	select {
	case <-leader.g.Loaded():
	case <-time.After(10 * time.Second):
		t.Fatalf("still loading 10s after rejoining (log tail %d, last command %d, commit %d, applied %d)",
			tailEnd, lastCmd, leader.g.raft.CommitIndex(), leader.fsm.AppliedIndex())
	}
	if why := leader.g.load.why; why != "replayed the log up to the commit index" {
		t.Fatalf("loading ended by %q, want the commit index rule", why)
	}
	if last, _ := leader.store.LastIndex(); last >= tailEnd {
		t.Errorf("the uncommitted tail is still there: log ends at %d", last)
	}
	if got := dbsize(t, newLeader.g); got != 50 {
		t.Fatalf("DBSIZE on the new leader = %d, want the 50 committed keys", got)
	}
}

// A restarted single node whose log after the snapshot holds no command
// wins its election and commits its barrier while the snapshot is still
// being restored (raft answers a barrier without the state machine when no
// command precedes it). It must not become ready, or reads would see the
// state before the restore.
func Test_Loading_LeaderNotReadyBeforeTheRestore(t *testing.T) {
	n := newTestNode(t, "node1")
	n.clock.Set(frozenAt)
	n.open(t, nil)
	waitFor(t, 10*time.Second, "a ready leader", n.g.Ready)
	writeKeys(t, n.g, "a", 10, 10)
	if _, err := n.g.Snapshot(); err != nil {
		t.Fatal(err)
	}
	snapGate := &gatedSnaps{SnapshotStore: n.store.SnapshotStore(2), release: make(chan struct{})}
	var once sync.Once
	release := func() { once.Do(func() { close(snapGate.release) }) }
	n.restart(t, func(c *Config) { c.Snapshots = snapGate })
	t.Cleanup(release)

	// Leader, with its no-op and barrier committed and handed to the
	// state machine goroutine, which did not need the state machine.
	waitFor(t, 10*time.Second, "the barrier of the new term to be applied", func() bool {
		last, _ := n.store.LastIndex()
		return n.g.IsLeader() && n.g.raft.AppliedIndex() == last && n.g.raft.AppliedIndex() > n.fsm.AppliedIndex()
	})
	if n.g.Ready() {
		t.Fatal("ready before the snapshot is restored")
	}
	if !n.g.Loading() {
		t.Fatal("not loading before the snapshot is restored")
	}
	release()
	waitFor(t, 10*time.Second, "a ready leader", n.g.Ready)
	if n.g.Loading() {
		t.Fatal("ready but loading")
	}
	if got := dbsize(t, n.g); got != 100 {
		t.Fatalf("DBSIZE = %d, want 100", got)
	}
}

// The look for commands after the last applied entry crosses any number of
// no-ops, a bounded number of reads at a time, remembering only what is
// committed; compacted entries count as applied, unreadable ones as not.
func Test_Loading_CommandsAppliedScan(t *testing.T) {
	n := newTestNode(t, "node1")
	g := &Group{cfg: Config{LogStore: n.store}}
	var logs []*raft.Log
	for i := uint64(1); i <= 3000; i++ {
		typ := raft.LogNoop
		if i <= 5 || i == 2990 {
			typ = raft.LogCommand
		}
		logs = append(logs, &raft.Log{Index: i, Term: 1, Type: typ})
	}
	if err := n.store.StoreLogs(logs); err != nil {
		t.Fatal(err)
	}
	if g.commandsApplied(0, 10, 10) {
		t.Fatal("commands 1..5 not applied, yet reported applied")
	}
	// Not committed: nothing remembered, so never more than one bounded
	// look (the node is loading until it learns the commit index).
	for i := 0; i < 5; i++ {
		if g.commandsApplied(5, 2980, 0) {
			t.Fatal("2975 no-ops crossed in one bounded look")
		}
	}
	if g.load.scanned != 0 {
		t.Fatalf("remembered %d with nothing committed", g.load.scanned)
	}
	// Committed: crossed in three looks of at most 1024.
	calls := 1
	for ; !g.commandsApplied(5, 2980, 3000); calls++ {
		if calls > 3 {
			t.Fatalf("not done after %d looks (scanned to %d)", calls, g.load.scanned)
		}
	}
	if calls != 3 {
		t.Errorf("crossed 2975 no-ops in %d looks, want 3", calls)
	}
	if g.commandsApplied(5, 3000, 3000) {
		t.Fatal("the command at 2990 is not applied, yet reported applied")
	}
	if !g.commandsApplied(2990, 3000, 3000) {
		t.Fatal("only no-ops after 2990, yet reported a command")
	}
	// Compacted behind a snapshot: covered.
	g.load.scanned = 0
	if err := n.store.DeleteRange(1, 2995); err != nil {
		t.Fatal(err)
	}
	if !g.commandsApplied(0, 3000, 3000) {
		t.Fatal("compacted entries and no-ops, yet reported a command")
	}
}
