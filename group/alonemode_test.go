package group

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redcell/redcell/gcra"
	"github.com/redcell/redcell/request"
)

// addNonvoter starts a node with the given id, connects it with n and adds
// it to n's cluster as a non-voter.
func addNonvoter(t *testing.T, n *testNode, id string) *testNode {
	t.Helper()
	m := newTestNode(t, id)
	n.trans.Connect(m.addr, m.trans)
	m.trans.Connect(n.addr, n.trans)
	m.open(t, func(c *Config) { c.Bootstrap = false })
	if err := n.g.AddNonvoter(m.id, string(m.addr)); err != nil {
		t.Fatalf("AddNonvoter: %v", err)
	}
	return m
}

// decideOnce proposes one CL.THROTTLE on n's group.
func decideOnce(t *testing.T, n *testNode, key string) {
	t.Helper()
	p, err := gcra.NewParams(15, 30, 60, 1)
	if err != nil {
		t.Fatal(err)
	}
	b := NewBatch()
	b.Ops = append(b.Ops, throttleReq([]byte(key), p))
	if err := n.g.Propose(b); err != nil {
		t.Fatalf("propose on %s: %v", n.id, err)
	}
	if b.Results[0].Kind == request.KindError {
		t.Fatalf("decision on %s: %+v", n.id, b.Results[0])
	}
}

// A node alone with DirectWALSync syncs its log directly; once it has a
// member it does not.
func TestAloneMode_DirectWhileAlone(t *testing.T) {
	n := openSingle(t, func(c *Config) { c.DirectWALSync = true })
	waitFor(t, 10*time.Second, "direct WAL syncs on the node alone", func() bool {
		return n.store.WALStats().DirectWALSyncOn
	})
	decideOnce(t, n, "k")
	if n.store.WALStats().DirectWALSyncs == 0 {
		t.Fatalf("no direct WAL sync after a decision: %+v", n.store.Stats())
	}

	// A second node joins as a non-voter: the leader is alone no more.
	m := addNonvoter(t, n, "node2")
	waitFor(t, 10*time.Second, "direct WAL syncs off with a member", func() bool {
		return !n.store.WALStats().DirectWALSyncOn
	})
	before := n.store.WALStats().DirectWALSyncs
	decideOnce(t, n, "k")
	if got := n.store.WALStats().DirectWALSyncs; got != before {
		t.Fatalf("direct WAL syncs went %d -> %d with a member", before, got)
	}

	// Removed again, it is alone again.
	if err := n.g.Remove(m.id); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	waitFor(t, 10*time.Second, "direct WAL syncs back on, alone again", func() bool {
		return n.store.WALStats().DirectWALSyncOn
	})
}

// Nodes of a cluster never sync directly, even with DirectWALSync, and a
// node alone does not without it (the default).
func TestAloneMode_NeverWithPeersOrWhenOff(t *testing.T) {
	nodes := newCluster(t, 3, func(c *Config) { c.DirectWALSync = true })
	leader := readyLeader(t, nodes, 10*time.Second)
	for i := range 20 {
		decideOnce(t, leader, string(rune('a'+i)))
	}
	for _, n := range nodes {
		if st := n.store.WALStats(); st.DirectWALSyncOn || st.DirectWALSyncs != 0 {
			t.Errorf("%s in a 3-node cluster: direct on %v, %d direct syncs", n.id, st.DirectWALSyncOn, st.DirectWALSyncs)
		}
	}

	n := openSingle(t, nil)
	decideOnce(t, n, "k")
	if st := n.store.WALStats(); st.DirectWALSyncOn || st.DirectWALSyncs != 0 {
		t.Fatalf("alone by default: direct on %v, %d direct syncs", st.DirectWALSyncOn, st.DirectWALSyncs)
	}
}

// The in-flight limit, the yield before an entry and Quiet follow the
// membership: every slot and the yield alone, one slot and no yield with a
// member, both back once it is removed.
func TestAloneMode_InflightLimitFollowsMembership(t *testing.T) {
	n := openSingle(t, nil)
	mode := func(limit int32, yield bool) func() bool {
		return func() bool {
			return n.g.batcher.inflightLimit.Load() == limit && n.g.batcher.yieldFirst.Load() == yield
		}
	}
	waitFor(t, 10*time.Second, "every slot and the yield alone", mode(DefaultMaxInflight, true))
	// Quiet (the client server's busy poll): alone and idle, and not with
	// an entry in raft or a batch queued for one.
	waitFor(t, 10*time.Second, "quiet alone after the bootstrap's entries", n.g.Quiet)
	n.g.batcher.inflight.Add(1)
	if n.g.Quiet() {
		t.Error("quiet with an entry in flight")
	}
	n.g.batcher.inflight.Add(-1)
	n.g.qmu.Lock()
	n.g.queue = append(n.g.queue, NewBatch())
	n.g.qmu.Unlock()
	if n.g.Quiet() {
		t.Error("quiet with a batch queued")
	}
	n.g.qmu.Lock()
	n.g.queue = n.g.queue[:0]
	n.g.qmu.Unlock()
	m := addNonvoter(t, n, "node2")
	waitFor(t, 10*time.Second, "one slot and no yield with a member", mode(DefaultMaxInflightWithPeers, false))
	if n.g.Quiet() {
		t.Error("quiet with a member")
	}
	if err := n.g.Remove(m.id); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	waitFor(t, 10*time.Second, "every slot and the yield alone again", mode(DefaultMaxInflight, true))
}

// With peers the proposer keeps one entry in raft: while the first waits for
// its quorum (both followers' appends held, the leader's own disk free), the
// batches that queue behind it are not proposed, and they go as one entry
// once it commits. With MaxInflightWithPeers 4 they do not wait for it.
func TestAloneMode_OneEntryInFlightWithPeers(t *testing.T) {
	for _, peers := range []int{0, 4} { // 0: the default, 1
		t.Run(fmt.Sprintf("MaxInflightWithPeers=%d", peers), func(t *testing.T) {
			const clients = 20
			var mu sync.Mutex
			disks := map[string]*heldDisk{}
			nodes := newCluster(t, 3, func(c *Config) {
				d := &heldDisk{LogStore: c.LogStore, waiting: make(chan struct{}, 1), release: make(chan struct{})}
				mu.Lock()
				disks[c.NodeID] = d
				mu.Unlock()
				c.LogStore = d
				c.MaxInflightWithPeers = peers
			})
			for _, d := range disks {
				t.Cleanup(d.letGo) // before the groups' shutdown
			}
			leader := readyLeader(t, nodes, 10*time.Second)
			want := int32(max(peers, DefaultMaxInflightWithPeers))
			waitFor(t, 10*time.Second, "the limit with peers", func() bool { return leader.g.batcher.inflightLimit.Load() == want })
			propose := throttleProposer(t, leader.g)
			var followers []*heldDisk
			for _, n := range nodes {
				if n != leader {
					followers = append(followers, disks[n.id])
					disks[n.id].holdAppends()
				}
			}
			first := make(chan error, 1)
			go func() { first <- propose("first") }()
			for _, d := range followers {
				<-d.waiting // the first entry waits on both followers' disks
			}
			waitFor(t, 10*time.Second, "the leader's log free", leader.g.batcher.logFree)
			before := leader.g.Stats()
			rest := make(chan error, clients)
			for i := range clients {
				go func() { rest <- propose(fmt.Sprintf("k%d", i)) }()
			}
			if peers == 0 {
				waitFor(t, 10*time.Second, "every client queued", func() bool {
					leader.g.qmu.Lock()
					defer leader.g.qmu.Unlock()
					return len(leader.g.queue) == clients
				})
				if got := leader.g.Stats().EntriesProposed - before.EntriesProposed; got != 0 {
					t.Fatalf("%d entries proposed while one waited for its quorum; want none", got)
				}
			} else {
				waitFor(t, 10*time.Second, "an entry proposed while the first waits", func() bool {
					return leader.g.Stats().EntriesProposed > before.EntriesProposed
				})
			}
			for _, d := range followers {
				d.letGo()
			}
			awaitProposals(t, first, rest, clients)
			if got := leader.g.Stats().EntriesProposed - before.EntriesProposed; peers == 0 && got != 1 {
				t.Fatalf("the %d queued requests went in %d entries; want 1", clients, got)
			}
		})
	}
}

// Alone, nothing is cached (the leader applies from its own futures); with
// peers, raft's reads of new entries — the leader's replication, a
// follower's apply — are served by the cache of recent entries, and every
// node ends with the same state.
func TestAloneMode_RecentEntriesServeRaftWithPeers(t *testing.T) {
	n := openSingle(t, nil)
	for i := 0; i < 20; i++ {
		decideOnce(t, n, fmt.Sprintf("alone%d", i))
	}
	n.g.recent.mu.RLock()
	cached := n.g.recent.count
	n.g.recent.mu.RUnlock()
	if h := n.g.recent.hits.Load(); h != 0 || cached != 0 {
		t.Fatalf("alone: %d cache hits, %d entries cached; want none", h, cached)
	}

	m := addNonvoter(t, n, "node2")
	waitFor(t, 10*time.Second, "the cache on with a member", n.g.recent.enabled.Load)
	waitFor(t, 10*time.Second, "the member to catch up", func() bool {
		return m.fsm.AppliedIndex() >= n.fsm.AppliedIndex()
	})
	waitFor(t, 10*time.Second, "the member's cache on", m.g.recent.enabled.Load)
	leaderHits, memberHits := n.g.recent.hits.Load(), m.g.recent.hits.Load()
	for i := 0; i < 50; i++ {
		decideOnce(t, n, fmt.Sprintf("peers%d", i))
	}
	waitFor(t, 10*time.Second, "the member to apply everything", func() bool {
		return m.fsm.AppliedIndex() >= n.fsm.AppliedIndex()
	})
	if got := n.g.recent.hits.Load() - leaderHits; got < 50 {
		t.Errorf("leader: %d cache hits for 50 replicated entries", got)
	}
	if got := m.g.recent.hits.Load() - memberHits; got < 50 {
		t.Errorf("member: %d cache hits for 50 applied entries", got)
	}
	_, a, err := n.fsm.Digest()
	if err != nil {
		t.Fatal(err)
	}
	_, b, err := m.fsm.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Fatal("leader and member disagree after entries served from the cache")
	}
}
