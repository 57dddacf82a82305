package group

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Test_HandOver_WritesAreCommittedOrRefusedForARetry: sixteen writers keep
// proposing to the leader of a three-node cluster while it hands its
// leadership over. Every write is answered either with its result or with
// ErrNotLeader (nothing appended: the router retries it at the next
// leader) — never ErrOutcomeUnknown, which a transfer with entries in
// flight would answer (raft.ErrLeadershipLost), nor a plain failure — and
// each refused write was indeed not applied. When HandOver returns another
// node leads, and the old leader knows it.
func Test_HandOver_WritesAreCommittedOrRefusedForARetry(t *testing.T) {
	nodes := newCluster(t, 3, nil)
	for _, n := range nodes {
		n.clock.Set(frozenAt)
	}
	old := readyLeader(t, nodes, 5*time.Second)

	var (
		mu       sync.Mutex
		attempts []attempt
		okCount  atomic.Int64
		stop     = make(chan struct{})
		wg       sync.WaitGroup
	)
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b := NewBatch()
			for seq := 0; ; seq++ {
				select {
				case <-stop:
					return
				default:
				}
				a := attempt{keys: [][]byte{[]byte(fmt.Sprintf("h:w%d:%d", w, seq))}}
				b.Reset()
				b.Ops = append(b.Ops, throttleReq(a.keys[0], failoverParams))
				a.err = old.g.Propose(b)
				if a.err == nil {
					okCount.Add(1)
				}
				mu.Lock()
				attempts = append(attempts, a)
				mu.Unlock()
				if errors.Is(a.err, ErrNotLeader) {
					return // the router would go to the next leader now
				}
			}
		}()
	}
	waitFor(t, 5*time.Second, "writes to succeed before the handover", func() bool { return okCount.Load() >= 200 })
	began := time.Now()
	if err := old.g.HandOver(); err != nil {
		t.Fatalf("HandOver: %v", err)
	}
	took := time.Since(began)
	close(stop)
	wg.Wait()
	if old.g.IsLeader() {
		t.Fatal("still the leader after HandOver returned")
	}
	if _, id := old.g.Leader(); id == "" || id == old.id {
		t.Fatalf("after HandOver the old leader knows the leader %q", id)
	}
	// The old leader's ready flag follows raft's notification, which may
	// still be on its way: look for the new leader among the others.
	var rest []*testNode
	for _, n := range nodes {
		if n != old {
			rest = append(rest, n)
		}
	}
	final := readyLeader(t, rest, 5*time.Second)
	counts := map[string]int{}
	for _, a := range attempts {
		applied := timesApplied(t, final.g, a.keys)
		switch {
		case a.err == nil:
			counts["ok"]++
			if applied != 1 {
				t.Errorf("write of %s answered OK but applied %d times", a.keys[0], applied)
			}
		case errors.Is(a.err, ErrNotLeader):
			counts["refused for a retry"]++
			if applied != 0 {
				t.Errorf("write of %s refused (%v) but applied %d times", a.keys[0], a.err, applied)
			}
		default:
			t.Errorf("write of %s answered %v during a handover", a.keys[0], a.err)
		}
	}
	t.Logf("handover from %s to %s took %v; answers: %v", old.id, final.id, took.Round(time.Microsecond), counts)
}

// Test_HandOver_NothingToHandOver: a follower, and a leader without another
// voter, hand nothing over.
func Test_HandOver_NothingToHandOver(t *testing.T) {
	single := openSingle(t, nil)
	readyLeader(t, []*testNode{single}, 5*time.Second)
	if err := single.g.HandOver(); !IsNoVoterToHandTo(err) {
		t.Errorf("HandOver on a lone leader: %v, want the no-voter error", err)
	}
	if !single.g.IsLeader() {
		t.Error("a lone leader stepped down")
	}
	nodes := newCluster(t, 3, nil)
	leader := readyLeader(t, nodes, 5*time.Second)
	for _, n := range nodes {
		if n != leader {
			if err := n.g.HandOver(); !errors.Is(err, ErrNotLeader) {
				t.Errorf("HandOver on the follower %s: %v, want ErrNotLeader", n.id, err)
			}
		}
	}
	// RAFT TRANSFER to the leader itself or to an unknown node is refused
	// before any request is: no busy loop of refused transfers that holds
	// every write refused until its bound.
	for _, id := range []string{leader.id, "nobody"} {
		began := time.Now()
		if err := leader.g.Transfer(id); err == nil {
			t.Errorf("Transfer to %s: no error", id)
		}
		// Refused before the handover starts, not after its retries ran
		// out (which take the whole bound).
		if took := time.Since(began); took >= leader.g.handoverBound() {
			t.Errorf("Transfer to %s took %v, the handover's whole bound", id, took)
		}
		if leader.g.handover.running.Load() || leader.g.handover.on.Load() {
			t.Errorf("Transfer to %s left a handover running", id)
		}
		b := NewBatch()
		b.Ops = append(b.Ops, throttleReq([]byte("h:after-"+id), failoverParams))
		if err := leader.g.Propose(b); err != nil {
			t.Errorf("a write after the refused Transfer to %s: %v", id, err)
		}
	}
}
