package group

import (
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/redcell/redcell/gcra"
)

// heldDisk is the real log store with appends of commands held until the
// test lets them through: a disk that is slow exactly when the test says,
// which no real disk can be made to be.
type heldDisk struct {
	raft.LogStore
	mu      sync.Mutex
	hold    bool
	waiting chan struct{} // buffer 1: an append of commands is held
	release chan struct{} // closed: every held append goes on
	once    sync.Once
}

// holdAppends makes the next appends of commands wait for letGo.
func (h *heldDisk) holdAppends() {
	h.mu.Lock()
	h.hold = true
	h.mu.Unlock()
}

// letGo lets every held and later append through. Idempotent.
func (h *heldDisk) letGo() {
	h.mu.Lock()
	h.hold = false
	h.mu.Unlock()
	h.once.Do(func() { close(h.release) })
}

// openOnHeldDisk opens a ready one-node group on a heldDisk (mod adjusts its
// Config) and returns it with a proposer of one CL.THROTTLE per key.
func openOnHeldDisk(t *testing.T, mod func(*Config)) (*testNode, *heldDisk, func(key string) error) {
	n := newTestNode(t, "node1")
	disk := &heldDisk{LogStore: n.store, waiting: make(chan struct{}, 1), release: make(chan struct{})}
	n.open(t, func(c *Config) {
		c.LogStore = disk
		if mod != nil {
			mod(c)
		}
	})
	// Registered after open, so it runs before the group's shutdown, which
	// would wait forever for a held append.
	t.Cleanup(disk.letGo)
	waitFor(t, 10*time.Second, "a ready leader", n.g.Ready)
	return n, disk, throttleProposer(t, n.g)
}

// throttleProposer returns a function that proposes one CL.THROTTLE k 15 30
// 60 1 on g.
func throttleProposer(t *testing.T, g *Group) func(key string) error {
	p, err := gcra.NewParams(15, 30, 60, 1)
	if err != nil {
		t.Fatal(err)
	}
	return func(key string) error {
		b := NewBatch()
		b.Ops = append(b.Ops, throttleReq([]byte(key), p))
		return g.Propose(b)
	}
}

// queueBehindHeldEntry holds the disk, proposes "first" and waits until its
// entry is on the held disk, then starts clients proposals and waits until
// every one is queued behind it. The channels carry their results.
func queueBehindHeldEntry(t *testing.T, n *testNode, disk *heldDisk, propose func(string) error, clients int) (first, rest chan error) {
	disk.holdAppends()
	first = make(chan error, 1)
	go func() { first <- propose("first") }()
	<-disk.waiting // the first entry is on the (held) disk
	rest = make(chan error, clients)
	for i := range clients {
		go func() { rest <- propose(fmt.Sprintf("k%d", i)) }()
	}
	waitFor(t, 10*time.Second, "every client queued", func() bool {
		n.g.qmu.Lock()
		defer n.g.qmu.Unlock()
		return len(n.g.queue) == clients
	})
	return first, rest
}

// awaitProposals fails the test if the first proposal or any of clients
// others failed.
func awaitProposals(t *testing.T, first, rest chan error, clients int) {
	t.Helper()
	if err := <-first; err != nil {
		t.Fatalf("first proposal: %v", err)
	}
	for range clients {
		if err := <-rest; err != nil {
			t.Fatalf("proposal: %v", err)
		}
	}
}

func (h *heldDisk) StoreLog(l *raft.Log) error { return h.StoreLogs([]*raft.Log{l}) }

func (h *heldDisk) StoreLogs(logs []*raft.Log) error {
	h.mu.Lock()
	hold := h.hold
	h.mu.Unlock()
	if hold && logs[len(logs)-1].Type == raft.LogCommand {
		select {
		case h.waiting <- struct{}{}:
		default:
		}
		<-h.release
	}
	return h.LogStore.StoreLogs(logs)
}

// While an entry is on the disk, everything that arrives meanwhile waits and
// goes to the disk as one entry the moment it is free: with 20 clients
// queued behind a held append, the next entry carries all 20, however many
// in-flight slots are free.
func Test_Batcher_RequestsWaitingForTheDiskShareOneEntry(t *testing.T) {
	const clients = 20
	n, disk, propose := openOnHeldDisk(t, func(c *Config) { c.MaxInflight = 8 })
	before := n.g.Stats()
	first, rest := queueBehindHeldEntry(t, n, disk, propose, clients)
	if got := n.g.Stats().EntriesProposed - before.EntriesProposed; got != 1 {
		t.Fatalf("%d entries proposed while the disk was busy; want only the first, the rest held for the disk", got)
	}
	before = n.g.Stats()
	disk.letGo()
	awaitProposals(t, first, rest, clients)
	after := n.g.Stats()
	if got := after.EntriesProposed - before.EntriesProposed; got != 1 {
		t.Fatalf("the %d waiting requests went out in %d entries; want 1", clients, got)
	}
	if after.LastEntryOps != clients {
		t.Fatalf("last entry carried %d requests; want %d", after.LastEntryOps, clients)
	}
	// The distribution in INFO saw it: one entry in the 16-31 bucket.
	if got := after.EntryOps[4] - before.EntryOps[4]; got != 1 {
		t.Fatalf("EntryOps[16-31] grew by %d; want 1 (%v)", got, after.EntryOps)
	}
}

// A request never waits for a notification that cannot come: entries that
// fail (here: proposed on a group that lost its leadership) open the gate
// through the completer.
func Test_Batcher_FailedEntriesOpenTheGate(t *testing.T) {
	var g batcher
	g.wake = make(chan struct{}, 1)
	g.proposed.Add(3)
	if g.logFree() {
		t.Fatal("free with three entries proposed and none stored")
	}
	g.appended(1)
	if g.logFree() {
		t.Fatal("free with one of three stored")
	}
	g.passed(3) // the completer saw the third fail (or apply)
	if !g.logFree() {
		t.Fatal("not free after every entry passed")
	}
	// A follower's appends (nothing proposed here) never run ahead.
	g.appended(100)
	if g.stored.Load() != 3 {
		t.Fatalf("stored = %d, want 3 (capped at proposed)", g.stored.Load())
	}
}

// Clients that come back one by one after their replies go to the disk
// together: with the last entry having answered five batches, the first
// four to return wait for the fifth instead of taking the free disk alone.
func Test_Batcher_StragglersJoinOneEntry(t *testing.T) {
	n := openSingle(t, nil)
	p, err := gcra.NewParams(15, 30, 60, 1)
	if err != nil {
		t.Fatal(err)
	}
	n.g.batcher.policy.maxLinger = time.Hour // only the fifth client can end the wait
	n.g.batcher.appendNanos.Store(int64(2 * time.Hour))
	n.g.batcher.expect.Store(5)
	before := n.g.Stats()
	errs := make(chan error, 5)
	for i := range 5 {
		go func() {
			b := NewBatch()
			b.Ops = append(b.Ops, throttleReq([]byte(fmt.Sprintf("s%d", i)), p))
			errs <- n.g.Propose(b)
		}()
	}
	for range 5 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if got := n.g.Stats().EntriesProposed - before.EntriesProposed; got != 1 {
		t.Fatalf("five returning clients went out in %d entries; want 1", got)
	}
}

// Goroutines that are runnable together when the disk is free go to it
// together: with one processor, twenty proposals made runnable at the same
// instant (as the netpoller wakes connections in one bunch) share one entry,
// because whoever gets to propose first yields and lets the others queue.
// Without the yield the first runs alone into an entry of its own (checked:
// 1 + 19). No straggler wait is involved: the last entry answered one batch.
func Test_Batcher_RunnableProposalsShareOneEntry(t *testing.T) {
	const clients = 20
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	n := openSingle(t, nil)
	propose := throttleProposer(t, n.g)
	if err := propose("warm"); err != nil { // expect = 1: no straggler wait
		t.Fatal(err)
	}
	if got := n.g.batcher.expect.Load(); got != 1 {
		t.Fatalf("expect = %d after one lone proposal, want 1", got)
	}
	waitFor(t, 10*time.Second, "alone mode to turn the yield on", n.g.batcher.yieldFirst.Load)
	// Let the group's own goroutines finish with the warm entry (the disk
	// gate's wake-up, the completer's look at the queue) so that the twenty
	// below are all that runs.
	waitFor(t, 10*time.Second, "the log watcher to take its wake-up", func() bool {
		runtime.Gosched()
		return len(n.g.batcher.wake) == 0
	})
	for range 2 * maxYields {
		runtime.Gosched()
	}
	before := n.g.Stats()
	start := make(chan struct{})
	errs := make(chan error, clients)
	for i := range clients {
		go func() {
			<-start
			errs <- propose(fmt.Sprintf("r%d", i))
		}()
	}
	close(start) // all twenty runnable at once, none run yet
	for range clients {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if got := n.g.Stats().EntriesProposed - before.EntriesProposed; got != 1 {
		t.Fatalf("%d proposals runnable together went out in %d entries; want 1 (requests per entry: %v)", clients, got, n.g.Stats().EntryOps)
	}
}

// yieldToRunnable returns only once the goroutines that were runnable have
// run: twenty that each queue a batch have all queued when it returns, with
// one processor.
func Test_Batcher_YieldLetsRunnableGoroutinesQueue(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	for range 50 {
		var g Group
		var wg sync.WaitGroup
		for range 20 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				g.qmu.Lock()
				g.queue = append(g.queue, NewBatch())
				g.qmu.Unlock()
			}()
		}
		g.yieldToRunnable()
		if got := g.queued(); got != 20 {
			t.Fatalf("%d of 20 runnable goroutines queued before yieldToRunnable returned", got)
		}
		wg.Wait()
	}
}

// The completer tells the batcher whether the last entry answered pipelines
// (two or more requests a batch on average) or single requests.
func Test_Batcher_AnsweredTellsPipelines(t *testing.T) {
	n := openSingle(t, nil)
	p, err := gcra.NewParams(15, 30, 60, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		ops  int
		want bool
	}{{3, true}, {1, false}, {2, true}} {
		b := NewBatch()
		for i := range c.ops {
			b.Ops = append(b.Ops, throttleReq([]byte(fmt.Sprintf("k%d", i)), p))
		}
		if err := n.g.Propose(b); err != nil {
			t.Fatal(err)
		}
		if got := n.g.batcher.pipelined.Load(); got != c.want {
			t.Errorf("after an entry of one %d-request batch: pipelined %v, want %v", c.ops, got, c.want)
		}
	}
}

// A client whose companions do not come back is not held for good: the
// linger timer proposes it.
func Test_Batcher_LoneClientIsProposedByTheTimer(t *testing.T) {
	n := openSingle(t, nil)
	p, err := gcra.NewParams(15, 30, 60, 1)
	if err != nil {
		t.Fatal(err)
	}
	n.g.batcher.policy.maxLinger = 20 * time.Millisecond
	n.g.batcher.appendNanos.Store(int64(time.Second))
	n.g.batcher.expect.Store(50)
	b := NewBatch()
	b.Ops = append(b.Ops, throttleReq([]byte("lone"), p))
	start := time.Now()
	if err := n.g.Propose(b); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < 20*time.Millisecond {
		t.Fatalf("answered after %v: it did not wait for the 49 others", took)
	}
	// The entry answered one batch: the next lone client does not wait.
	if got := n.g.batcher.expect.Load(); got != 1 {
		t.Fatalf("expect = %d after a one-batch entry; want 1", got)
	}
}
