package group

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/redcell/redcell/gcra"
	"github.com/redcell/redcell/request"
)

// Test_Readiness_RequestsBeforeElectionWaitThenSucceed: requests that
// arrive before the node has won its first election wait for it (within
// WaitForLeader) instead of failing, and are then answered.
func Test_Readiness_RequestsBeforeElectionWaitThenSucceed(t *testing.T) {
	n := newTestNode(t, "node1")
	n.clock.Set(frozenAt)
	// A lone voter campaigns at once (alonestart.go): holding its vote's
	// term on the way to the disk keeps it a candidate until every request
	// below has arrived.
	held := &heldTerm{StableStore: n.store, release: make(chan struct{})}
	n.open(t, func(c *Config) { c.Stable = held })
	t.Cleanup(held.open) // before the group's Shutdown, if the test ends early
	if n.g.Ready() {
		t.Fatal("Ready() right after Open, before any election")
	}

	const callers = 8
	p := gcra.Params{Interval: int64(time.Second), Limit: 10, Quantity: 1}
	var wg sync.WaitGroup
	errs := make(chan error, 2*callers)
	for i := 0; i < callers; i++ {
		wg.Add(2)
		key := []byte(fmt.Sprintf("early:%d", i))
		go func() {
			defer wg.Done()
			b := NewBatch()
			b.Ops = append(b.Ops, throttleReq(key, p))
			if err := n.g.Propose(b); err != nil {
				errs <- fmt.Errorf("Propose before the election: %w", err)
				return
			}
			if r := b.Results[0]; r.Kind != request.KindThrottle || r.Ints[0] != 0 || r.Ints[2] != 9 {
				errs <- fmt.Errorf("first CL.THROTTLE on %s answered %+v, want allowed with 9 remaining", key, r)
			}
		}()
		go func() {
			defer wg.Done()
			res := make([]request.Result, 1)
			if err := n.g.Read([]request.Request{{Code: request.DBSize}}, res); err != nil {
				errs <- fmt.Errorf("Read before the election: %w", err)
			}
		}()
	}
	// Both kinds of callers are parked in awaitReady before the node leads.
	waitFor(t, 5*time.Second, "the callers to wait for readiness", func() bool {
		return goroutinesIn("group.(*Group).awaitReady") == 2*callers || n.g.Ready()
	})
	if n.g.Ready() {
		t.Fatal("the node became ready before the callers were waiting: the test proves nothing")
	}
	held.open()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if !n.g.Ready() {
		t.Error("requests succeeded but Ready() is false")
	}
}

// heldTerm is a stable store that holds every write of a term after the
// first (the bootstrap's) until release is closed: raft cannot win an
// election before it has stored the election's term.
type heldTerm struct {
	raft.StableStore
	release chan struct{}
	once    sync.Once
}

func (h *heldTerm) open() { h.once.Do(func() { close(h.release) }) }

func (h *heldTerm) SetUint64(key []byte, val uint64) error {
	if string(key) == "CurrentTerm" && val > 1 {
		<-h.release
	}
	return h.StableStore.SetUint64(key, val)
}

// Test_Readiness_LostQuorumAnswersPromptly: a leader cut off from both
// followers steps down; from then on its Propose and Read calls are answered
// ErrNoLeader or ErrNotReady after about WaitForLeader, never held forever.
func Test_Readiness_LostQuorumAnswersPromptly(t *testing.T) {
	const wait = 150 * time.Millisecond
	nodes := newCluster(t, 3, func(c *Config) { c.WaitForLeader = wait })
	leader := readyLeader(t, nodes, 5*time.Second)

	isolated := time.Now()
	isolate(leader, nodes)
	// While it still believes it leads, the cut-off leader must not answer
	// reads from its local state once the majority may have elected a leader
	// that acknowledges writes it will never see. VerifyLeader may still be
	// satisfied by a heartbeat reply that was in flight at the cut; that read
	// is linearizable, because hashicorp/raft followers refuse to vote while
	// they have heard from their leader within HeartbeatTimeout, so no other
	// leader can exist yet. So a successful read must return within that
	// window after the cut; any later success is a stale read.
	const noOtherLeaderBefore = 50 * time.Millisecond // the harness's HeartbeatTimeout
	var rwg sync.WaitGroup
	for c := 0; c < 4; c++ {
		rwg.Add(1)
		go func() {
			defer rwg.Done()
			res := make([]request.Result, 1)
			if err := leader.g.Read([]request.Request{{Code: request.DBSize}}, res); err == nil {
				if since := time.Since(isolated); since >= noOtherLeaderBefore {
					t.Errorf("Read on a leader cut off from its quorum for %v answered %+v without error", since, res[0])
				}
			}
		}()
	}
	rwg.Wait()
	waitFor(t, 5*time.Second, "the cut-off leader to step down", func() bool {
		return leader.g.raft.State() != raft.Leader && !leader.g.Ready()
	})

	p := gcra.Params{Interval: int64(time.Second), Limit: 10, Quantity: 1}
	// Several rounds, so that the node is seen both as follower and as
	// candidate, from several callers at once.
	for round := 0; round < 3; round++ {
		var wg sync.WaitGroup
		for c := 0; c < 4; c++ {
			wg.Add(2)
			go func() {
				defer wg.Done()
				b := NewBatch()
				b.Ops = append(b.Ops, throttleReq([]byte("k"), p))
				start := time.Now()
				err := leader.g.Propose(b)
				checkUnavailable(t, "Propose", err, time.Since(start), wait)
			}()
			go func() {
				defer wg.Done()
				start := time.Now()
				err := leader.g.Read([]request.Request{{Code: request.DBSize}}, make([]request.Result, 1))
				checkUnavailable(t, "Read", err, time.Since(start), wait)
			}()
		}
		wg.Wait()
	}

	// The majority side elected a leader that serves.
	var rest []*testNode
	for _, n := range nodes {
		if n != leader {
			rest = append(rest, n)
		}
	}
	newLeader := readyLeader(t, rest, 5*time.Second)
	b := NewBatch()
	b.Ops = append(b.Ops, throttleReq([]byte("k"), p))
	if err := newLeader.g.Propose(b); err != nil {
		t.Errorf("Propose on the new leader %s: %v", newLeader.id, err)
	}
}

// checkUnavailable requires err to be one of the "no ready leader" answers,
// given after waiting about WaitForLeader (and far less than a hang).
func checkUnavailable(t *testing.T, what string, err error, took, wait time.Duration) {
	t.Helper()
	if !errors.Is(err, ErrNoLeader) && !errors.Is(err, ErrNotReady) {
		t.Errorf("%s on a leader without quorum: %v, want ErrNoLeader or ErrNotReady", what, err)
	}
	if took > wait+2*time.Second {
		t.Errorf("%s took %v to fail with WaitForLeader %v", what, took, wait)
	}
}

// Test_Readiness_StatsShowLeadership: INFO's view of a three-node cluster.
// The leader reports itself ready, leading, with three voters; a follower
// reports not ready and names the same leader once it has heard from it.
func Test_Readiness_StatsShowLeadership(t *testing.T) {
	nodes := newCluster(t, 3, nil)
	leader := readyLeader(t, nodes, 5*time.Second)
	st := leader.g.Stats()
	if st.State != raft.Leader.String() || !st.Ready || st.Voters != 3 || st.LeaderID != leader.id || st.LeaderAddr != string(leader.addr) {
		t.Errorf("leader %s Stats = %+v; want state Leader, ready, 3 voters, itself as leader", leader.id, st)
	}
	for _, n := range nodes {
		if n == leader {
			continue
		}
		waitFor(t, 5*time.Second, n.id+" to know the leader", func() bool { return n.g.Stats().LeaderID == leader.id })
		st := n.g.Stats()
		if st.State != raft.Follower.String() || st.Ready || st.Voters != 3 || st.LeaderAddr != string(leader.addr) {
			t.Errorf("follower %s Stats = %+v; want state Follower, not ready, 3 voters, leader %s", n.id, st, leader.id)
		}
	}
}
