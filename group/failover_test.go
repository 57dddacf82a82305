package group

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/redcell/redcell/gcra"
	"github.com/redcell/redcell/request"
)

// failoverParams: one hour per token and a burst of 10, so a key written
// once lives far longer than the test and CL.PEEK tells how many times it
// was written: 9 remaining if never, 8 if once, 7 if twice.
var failoverParams = gcra.Params{Interval: int64(time.Hour), Limit: 10, Quantity: 1}

// attempt is one Propose call of the failover test and what it answered.
type attempt struct {
	keys [][]byte
	err  error
}

// Test_Failover_InFlightWritesNeverFalselyFailed partitions the leader of a
// three-node cluster while sixteen connections keep writing to it, heals,
// and does it again (three rounds: whether an in-flight entry reached a
// follower before the cut is luck, so several rounds make each kind of
// answer likely). Every answer must be truthful once the cluster has
// healed: a write answered OK is applied exactly once; a write answered
// ErrNoLeader or ErrNotReady (told "not done", e.g. CLUSTERDOWN) is not
// applied at all; ErrOutcomeUnknown may go either way but never twice. Each
// round's leader runs its clock a minute ahead of the previous one's, and
// the leader that follows must not stamp entries earlier than the
// replicated clock.
func Test_Failover_InFlightWritesNeverFalselyFailed(t *testing.T) {
	const rounds = 3
	nodes := newCluster(t, 3, func(c *Config) { c.WaitForLeader = 200 * time.Millisecond })
	for _, n := range nodes {
		n.clock.Set(frozenAt)
	}
	var attempts []attempt
	var old *testNode
	for round := 0; round < rounds; round++ {
		old = readyLeader(t, nodes, 5*time.Second)
		old.clock.Set(frozenAt + int64(round+1)*int64(time.Minute))
		attempts = append(attempts, failoverRound(t, nodes, old, round)...)
		connectAll(nodes)
	}
	ahead := frozenAt + rounds*int64(time.Minute)

	final := readyLeader(t, nodes, 5*time.Second)
	if final == old {
		t.Logf("the last cut-off leader %s was elected again after healing", old.id)
	}
	// One more write on the final leader, so that its log ends with an entry
	// of its own term: everything before it is then committed, and its stamp
	// shows where the new leader's clock started.
	b := NewBatch()
	b.Ops = append(b.Ops, throttleReq([]byte("after-heal"), failoverParams))
	if err := final.g.Propose(b); err != nil {
		t.Fatalf("Propose on the healed cluster's leader %s: %v", final.id, err)
	}

	counts := map[string]int{}
	for _, a := range attempts {
		applied := timesApplied(t, final.g, a.keys)
		var verdict string
		switch {
		case a.err == nil:
			verdict = "ok"
			if applied != 1 {
				t.Errorf("write of %s answered OK but applied %d times", a.keys[0], applied)
			}
		case errors.Is(a.err, ErrNoLeader), errors.Is(a.err, ErrNotReady):
			verdict = "refused"
			if applied != 0 {
				t.Errorf("write of %s answered %v (not done) but applied %d times", a.keys[0], a.err, applied)
			}
		case errors.Is(a.err, ErrOutcomeUnknown):
			verdict = "unknown"
			if applied > 1 {
				t.Errorf("write of %s (outcome unknown) applied %d times", a.keys[0], applied)
			}
			if applied == 1 {
				verdict = "unknown, applied"
			}
		default:
			t.Errorf("write of %s answered %v: not an answer a partition should produce", a.keys[0], a.err)
		}
		counts[verdict]++
	}
	t.Logf("answers: %v", counts)

	entries := committedEntries(t, final.store)
	var last int64
	for _, e := range entries {
		if e.stamp < last {
			t.Errorf("entry %d stamped %d, before the previous entry's %d", e.log.Index, e.stamp, last)
		}
		last = e.stamp
	}
	if final != old && last != ahead {
		t.Errorf("the new leader (clock %d) stamped its entry %d, want the replicated clock %d", frozenAt, last, ahead)
	}
}

// timesApplied reads, on the leader g, how many times the one-op writes of
// keys were applied: the same number for all of them, since they were one
// entry's (or an error is reported).
func timesApplied(t *testing.T, g *Group, keys [][]byte) int {
	t.Helper()
	reads := make([]request.Request, len(keys))
	for i, k := range keys {
		reads[i] = peekReq(k, failoverParams)
	}
	res := make([]request.Result, len(keys))
	if err := g.Read(reads, res); err != nil {
		t.Fatalf("Read on the leader: %v", err)
	}
	n := -1
	for i, r := range res {
		if r.Kind != request.KindThrottle {
			t.Fatalf("CL.PEEK %s answered %+v", keys[i], r)
		}
		times := int(9 - r.Ints[2])
		if n >= 0 && times != n {
			t.Errorf("keys of one batch applied a different number of times: %s %d, %s %d", keys[0], n, keys[i], times)
		}
		n = times
	}
	return n
}

// failoverRound has sixteen connections write to leader until 100 writes
// succeeded, cuts leader off from the others, waits for the majority to
// elect a leader and for the old one to refuse writes, and returns every
// attempt. The caller heals the network.
func failoverRound(t *testing.T, nodes []*testNode, leader *testNode, round int) []attempt {
	t.Helper()
	var (
		mu       sync.Mutex
		attempts []attempt
		okCount  atomic.Int64
		refused  atomic.Int64 // ErrNoLeader or ErrNotReady
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
				a := attempt{}
				for i := 0; i <= seq%3; i++ {
					a.keys = append(a.keys, []byte(fmt.Sprintf("r%d:w%d:%d:%d", round, w, seq, i)))
				}
				b.Reset()
				for _, k := range a.keys {
					b.Ops = append(b.Ops, throttleReq(k, failoverParams))
				}
				a.err = leader.g.Propose(b)
				switch {
				case a.err == nil:
					okCount.Add(1)
				case errors.Is(a.err, ErrNoLeader), errors.Is(a.err, ErrNotReady):
					refused.Add(1)
				}
				mu.Lock()
				attempts = append(attempts, a)
				mu.Unlock()
			}
		}()
	}

	waitFor(t, 5*time.Second, "writes to succeed before the partition", func() bool { return okCount.Load() >= 100 })
	isolate(leader, nodes)
	var rest []*testNode
	for _, n := range nodes {
		if n != leader {
			rest = append(rest, n)
		}
	}
	readyLeader(t, rest, 5*time.Second)
	waitFor(t, 5*time.Second, "the old leader to refuse writes", func() bool { return refused.Load() >= 16 })
	close(stop)
	wg.Wait()
	return attempts
}

// Test_Failover_RaftConfigHasPreVoteAndCheckQuorum: the short default
// timeouts rely on pre-vote (a follower that merely missed heartbeats must
// not raise the term) and on the lease (check quorum) being as long as raft
// allows; and raft accepts the configuration.
func Test_Failover_RaftConfigHasPreVoteAndCheckQuorum(t *testing.T) {
	rc := raftConfig(Config{NodeID: "n1"}, make(chan bool, 1))
	if rc.PreVoteDisabled {
		t.Error("pre-vote is disabled")
	}
	if rc.LeaderLeaseTimeout != rc.HeartbeatTimeout || rc.ElectionTimeout != rc.HeartbeatTimeout {
		t.Errorf("heartbeat %v, election %v, lease %v: want all three equal", rc.HeartbeatTimeout, rc.ElectionTimeout, rc.LeaderLeaseTimeout)
	}
	if err := raft.ValidateConfig(rc); err != nil {
		t.Errorf("raft refuses the default configuration: %v", err)
	}
}
