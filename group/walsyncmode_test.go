package group

import (
	"testing"
	"time"

	"github.com/redcell/redcell/gcra"
	"github.com/redcell/redcell/request"
)

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

// A node alone syncs its log directly; once it has a member it does not.
func TestWALSyncMode_DirectWhileAlone(t *testing.T) {
	n := openSingle(t, nil)
	waitFor(t, 10*time.Second, "direct WAL syncs on the node alone", func() bool {
		return n.store.Stats().DirectWALSyncOn
	})
	decideOnce(t, n, "k")
	if n.store.Stats().DirectWALSyncs == 0 {
		t.Fatalf("no direct WAL sync after a decision: %+v", n.store.Stats())
	}

	// A second node joins as a non-voter: the leader is alone no more.
	m := newTestNode(t, "node2")
	n.trans.Connect(m.addr, m.trans)
	m.trans.Connect(n.addr, n.trans)
	m.open(t, func(c *Config) { c.Bootstrap = false })
	if err := n.g.AddNonvoter(m.id, string(m.addr)); err != nil {
		t.Fatalf("AddNonvoter: %v", err)
	}
	waitFor(t, 10*time.Second, "direct WAL syncs off with a member", func() bool {
		return !n.store.Stats().DirectWALSyncOn
	})
	before := n.store.Stats().DirectWALSyncs
	decideOnce(t, n, "k")
	if got := n.store.Stats().DirectWALSyncs; got != before {
		t.Fatalf("direct WAL syncs went %d -> %d with a member", before, got)
	}

	// Removed again, it is alone again.
	if err := n.g.Remove(m.id); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	waitFor(t, 10*time.Second, "direct WAL syncs back on, alone again", func() bool {
		return n.store.Stats().DirectWALSyncOn
	})
}

// Nodes of a cluster never sync directly, and OrdinaryWALSync keeps a node
// alone from doing it.
func TestWALSyncMode_NeverWithPeersOrWhenOff(t *testing.T) {
	nodes := newCluster(t, 3, nil)
	leader := readyLeader(t, nodes, 10*time.Second)
	for i := range 20 {
		decideOnce(t, leader, string(rune('a'+i)))
	}
	for _, n := range nodes {
		if st := n.store.Stats(); st.DirectWALSyncOn || st.DirectWALSyncs != 0 {
			t.Errorf("%s in a 3-node cluster: direct on %v, %d direct syncs", n.id, st.DirectWALSyncOn, st.DirectWALSyncs)
		}
	}

	n := openSingle(t, func(c *Config) { c.OrdinaryWALSync = true })
	decideOnce(t, n, "k")
	if st := n.store.Stats(); st.DirectWALSyncOn || st.DirectWALSyncs != 0 {
		t.Fatalf("alone with OrdinaryWALSync: direct on %v, %d direct syncs", st.DirectWALSyncOn, st.DirectWALSyncs)
	}
}
