package group

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/redcell/redcell/fsm"
	"github.com/redcell/redcell/gcra"
	"github.com/redcell/redcell/request"
)

var shutdownParams = gcra.Params{Interval: int64(time.Second), Limit: 100, Quantity: 1}

// answer is what one blocked caller got, and when.
type answer struct {
	what string
	err  error
	at   time.Time
}

// callPropose proposes one op on key in a new goroutine and delivers the
// answer on out.
func callPropose(g *Group, key string, out chan<- answer) {
	go func() {
		b := NewBatch()
		b.Ops = append(b.Ops, throttleReq([]byte(key), shutdownParams))
		err := g.Propose(b)
		out <- answer{what: "Propose " + key, err: err, at: time.Now()}
	}()
}

// callRead reads DBSIZE in a new goroutine and delivers the answer on out.
func callRead(g *Group, out chan<- answer) {
	go func() {
		err := g.Read([]request.Request{{Code: request.DBSize}}, make([]request.Result, 1))
		out <- answer{what: "Read", err: err, at: time.Now()}
	}()
}

// stopNode shuts n's group down and closes its transport and store, as the
// binary does, and returns how long Shutdown took.
func stopNode(t *testing.T, n *testNode) time.Duration {
	t.Helper()
	start := time.Now()
	if err := n.g.Shutdown(); err != nil {
		t.Errorf("Shutdown of %s: %v", n.id, err)
	}
	took := time.Since(start)
	_ = n.trans.Close()
	if err := n.store.Close(); err != nil {
		t.Errorf("closing the store of %s: %v", n.id, err)
	}
	return took
}

// checkNoGoroutineLeak waits (bounded) for the goroutine count to fall back
// to what it was before the test built anything, and dumps the goroutines
// if it does not.
func checkNoGoroutineLeak(t *testing.T, before int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			t.Fatalf("%d goroutines after shutdown, %d before the test:\n%s", runtime.NumGoroutine(), before, buf)
		}
		<-tick.C
	}
}

// Test_Shutdown_AnswersCallersWaitingForALeader: a node that can never lead
// (its two peers do not exist) holds Propose and Read callers in
// awaitReady for up to WaitForLeader (a minute here). Shutdown must answer
// all of them ErrShutdown at once, and leave no goroutine behind.
func Test_Shutdown_AnswersCallersWaitingForALeader(t *testing.T) {
	before := runtime.NumGoroutine()
	n := newTestNode(t, "node1")
	ghosts := []*testNode{n, {id: "ghost2", addr: "ghost2"}, {id: "ghost3", addr: "ghost3"}}
	bootstrapMembers(t, ghosts, []*testNode{n})
	n.open(t, func(c *Config) { c.WaitForLeader = time.Minute })

	const proposers, readers = 6, 4
	out := make(chan answer, proposers+readers)
	for i := 0; i < proposers; i++ {
		callPropose(n.g, fmt.Sprintf("k%d", i), out)
	}
	for i := 0; i < readers; i++ {
		callRead(n.g, out)
	}
	waitFor(t, 5*time.Second, "every caller to wait for a leader", func() bool {
		return goroutinesIn("group.(*Group).awaitReady") == proposers+readers
	})

	start := time.Now()
	if took := stopNode(t, n); took > time.Second {
		t.Errorf("Shutdown took %v with callers waiting for a leader", took)
	}
	for i := 0; i < proposers+readers; i++ {
		a := <-out
		if !errors.Is(a.err, ErrShutdown) {
			t.Errorf("%s waiting for a leader answered %v at shutdown, want ErrShutdown", a.what, a.err)
		}
		if d := a.at.Sub(start); d > time.Second {
			t.Errorf("%s answered %v after Shutdown began", a.what, d)
		}
	}
	checkNoGoroutineLeak(t, before)
}

// Test_Shutdown_AnswersQueuedBatches: a leader cut off from its followers
// (with a one-second lease, so it stays leader for the test) has both
// in-flight slots taken by entries that cannot commit, and ten batches
// queued behind them. Shutdown answers the queued batches ErrShutdown at
// once (they never reached raft); the two in flight may have been
// replicated, so they must be answered ErrOutcomeUnknown, never ErrShutdown
// or success. No goroutine is left behind.
func Test_Shutdown_AnswersQueuedBatches(t *testing.T) {
	before := runtime.NumGoroutine()
	nodes := newCluster(t, 3, func(c *Config) {
		c.Tune = slowTimeouts
		c.MaxInflight = 2
		c.MaxInflightWithPeers = 2 // both slots, though the leader has peers
	})
	leader := readyLeader(t, nodes, 10*time.Second)
	isolate(leader, nodes)

	out := make(chan answer, 12)
	inflight := map[string]bool{"inflight0": true, "inflight1": true}
	callPropose(leader.g, "inflight0", out)
	waitFor(t, time.Second, "the first entry", func() bool { return leader.g.Counters().Entries == 1 })
	callPropose(leader.g, "inflight1", out)
	waitFor(t, time.Second, "the second entry", func() bool { return leader.g.Counters().Entries == 2 })
	for i := 0; i < 10; i++ {
		callPropose(leader.g, fmt.Sprintf("queued%d", i), out)
	}
	waitFor(t, time.Second, "ten batches queued behind two entries in flight", func() bool {
		leader.g.qmu.Lock()
		defer leader.g.qmu.Unlock()
		return len(leader.g.queue) == 10
	})
	if !leader.g.Ready() {
		t.Fatal("the leader stepped down before Shutdown: the test proves nothing (lease too short for this machine?)")
	}

	start := time.Now()
	done := make(chan time.Duration, 1)
	go func() { done <- stopNode(t, leader) }()
	for i := 0; i < 12; i++ {
		a := <-out
		key := a.what[len("Propose "):]
		switch {
		case inflight[key]:
			if !errors.Is(a.err, ErrOutcomeUnknown) {
				t.Errorf("%s, in raft when its leader shut down, answered %v; want ErrOutcomeUnknown", a.what, a.err)
			}
		default:
			if !errors.Is(a.err, ErrShutdown) {
				t.Errorf("%s, queued at shutdown, answered %v; want ErrShutdown", a.what, a.err)
			}
			if d := a.at.Sub(start); d > 200*time.Millisecond {
				t.Errorf("%s, queued at shutdown, answered %v after Shutdown began", a.what, d)
			}
		}
	}
	if took := <-done; took > 5*time.Second {
		t.Errorf("Shutdown took %v", took)
	}
	for _, n := range nodes {
		if n != leader {
			stopNode(t, n)
		}
	}
	checkNoGoroutineLeak(t, before)
}

// Test_Shutdown_CallsAfterShutdown: once Shutdown has returned, the node no
// longer says it is ready, and Propose and Read answer ErrShutdown at once,
// although it was a ready leader when it stopped; a second Shutdown is
// harmless. Calls are made in goroutines and waited for with a deadline so
// that a hang fails the test instead of stalling the package.
func Test_Shutdown_CallsAfterShutdown(t *testing.T) {
	n := openSingle(t, nil)
	b := NewBatch()
	b.Ops = append(b.Ops, throttleReq([]byte("k"), shutdownParams))
	if err := n.g.Propose(b); err != nil {
		t.Fatalf("Propose: %v", err)
	}
	if err := n.g.Shutdown(); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if err := n.g.Shutdown(); err != nil {
		t.Errorf("second Shutdown: %v", err)
	}
	if n.g.Ready() || n.g.Stats().Ready {
		t.Errorf("Ready() = %v, Stats().Ready = %v after Shutdown; want false (INFO would report a ready leader)", n.g.Ready(), n.g.Stats().Ready)
	}

	// Raft's VerifyLeader can hand out a future that never completes once
	// raft is shut down (its request channel is buffered), so a single Read
	// may pass by luck: sixteen make a hang near certain if it can happen.
	const calls = 16
	out := make(chan answer, 2*calls)
	for i := 0; i < calls; i++ {
		callPropose(n.g, "k", out)
		callRead(n.g, out)
	}
	deadline := time.After(2 * time.Second)
	got := map[string]int{}
	for i := 0; i < 2*calls; i++ {
		select {
		case a := <-out:
			what := a.what[:4]
			got[what]++
			if !errors.Is(a.err, ErrShutdown) {
				t.Errorf("%s after Shutdown answered %v, want ErrShutdown", a.what, a.err)
			}
		case <-deadline:
			t.Fatalf("after Shutdown, %d of %d Propose and %d of %d Read calls answered within 2 s; the rest hang",
				got["Prop"], calls, got["Read"], calls)
		}
	}
}

// Test_Shutdown_UnderLoadThenRestart: sixteen connections write until the
// node is shut down under them. An ErrShutdown answer must mean "not done":
// after the node restarts on the same store (Open resumes, without
// bootstrapping), no op answered ErrShutdown is in the log, and every op
// answered OK is, exactly once, and applied again by the new state machine.
func Test_Shutdown_UnderLoadThenRestart(t *testing.T) {
	n := newTestNode(t, "node1")
	n.clock.Set(frozenAt)
	n.open(t, nil)
	waitFor(t, 10*time.Second, "a ready leader", n.g.Ready)

	type try struct {
		ids []int
		err error
	}
	const workers = 16
	var (
		mu     sync.Mutex
		tries  []try
		nextID int
		okN    atomic.Int64
		wg     sync.WaitGroup
	)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 3))
			b := NewBatch()
			for {
				b.Reset()
				var tr try
				mu.Lock()
				for i := 0; i < 1+rng.IntN(4); i++ {
					tr.ids = append(tr.ids, nextID)
					b.Ops = append(b.Ops, taggedOp(rng, []byte(fmt.Sprintf("k%d", rng.IntN(8))), nextID))
					nextID++
				}
				mu.Unlock()
				tr.err = n.g.Propose(b)
				mu.Lock()
				tries = append(tries, tr)
				mu.Unlock()
				if tr.err != nil {
					return
				}
				okN.Add(1)
			}
		}()
	}
	waitFor(t, 10*time.Second, "writes to succeed", func() bool { return okN.Load() >= 500 })
	if err := n.g.Shutdown(); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	wg.Wait()

	// Restart on the same store with a fresh state machine and transport.
	n.fsm = fsm.New(fsm.Config{Stripes: 8, Logger: testLogger()})
	n.addr, n.trans = raft.NewInmemTransport(n.addr)
	t.Cleanup(func() { _ = n.trans.Close() })
	n.open(t, nil)
	waitFor(t, 10*time.Second, "the restarted node to be a ready leader", n.g.Ready)
	entries := committedEntries(t, n.store)
	if len(entries) == 0 {
		t.Fatal("no command entry in the log after the restart")
	}
	// Ready means every earlier command entry is applied (raft does not hand
	// its own no-op and barrier entries to the state machine).
	if applied, last := n.fsm.AppliedIndex(), entries[len(entries)-1].log.Index; applied < last {
		t.Errorf("restarted and ready with entries up to %d applied, but the last command entry is %d", applied, last)
	}

	// The restarted state is the log replayed: compare with the model.
	model := newGCRAModel()
	for _, e := range entries {
		for i := range e.ops {
			model.throttle(&e.ops[i], e.stamp)
		}
	}
	for k := 0; k < 8; k++ {
		key := []byte(fmt.Sprintf("k%d", k))
		res := make([]request.Result, 1)
		if err := n.g.Read([]request.Request{{Code: request.Exists, Keys: [][]byte{key}}}, res); err != nil {
			t.Fatalf("Read after restart: %v", err)
		}
		if want := model.tat[string(key)] > frozenAt; (res[0].Ints[0] == 1) != want {
			t.Errorf("after restart EXISTS %s = %d, the replayed log says %v", key, res[0].Ints[0], want)
		}
	}

	inLog := map[int]int{}
	for _, e := range entries {
		for i := range e.ops {
			inLog[opTag(&e.ops[i])]++
		}
	}
	shutdownAnswers := 0
	for _, tr := range tries {
		for _, id := range tr.ids {
			switch {
			case tr.err == nil && inLog[id] != 1:
				t.Errorf("op %d answered OK is %d times in the log", id, inLog[id])
			case errors.Is(tr.err, ErrShutdown):
				if inLog[id] != 0 {
					t.Errorf("op %d answered ErrShutdown (not done) is in the log", id)
				}
			case tr.err != nil:
				t.Errorf("op %d answered %v during an orderly shutdown", id, tr.err)
			}
		}
		if errors.Is(tr.err, ErrShutdown) {
			shutdownAnswers++
		}
	}
	if shutdownAnswers != workers {
		t.Errorf("%d writers were answered ErrShutdown, want all %d", shutdownAnswers, workers)
	}
}
