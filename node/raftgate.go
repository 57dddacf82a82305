package node

import (
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
)

// raftGate stands between the mux's Raft listener and raft's transport on a
// node that starts without Raft state and joins (identity.rejoin). Until
// open is called, every Raft connection is closed as soon as it arrives, so
// raft never sees a RequestVote, an AppendEntries or a snapshot.
//
// Why: a node without Raft state remembers no term, no vote and no log.
// The cluster's configuration may still name it (a member whose disk was
// lost, restarted under its old ID and address), and a peer that misses a
// leader asks it for its vote. hashicorp/raft grants a vote to any
// candidate when its own log is empty and it has no configuration, so two
// nodes — the empty one and a follower that lacks acknowledged entries —
// would elect a leader that has never seen them, and the next leader's log
// would overwrite the only copies. Closed connections are indistinguishable
// from a node that is down: that costs availability, never a decision.
//
// The node opens the gate once the leader has answered its join, which the
// leader does only after it has committed a configuration in which no
// member holds this node's ID or address as a voter from an earlier life
// (group.Rejoin): from then on this node is a new non-voter, whose votes no
// candidate asks for and whose acknowledgements no leader counts until it
// has caught up and been promoted.
//
// Goroutines: raft's transport calls Accept from its accept loop; open is
// called once by the node's join goroutine; isOpen from anywhere.
type raftGate struct {
	net.Listener
	log    *slog.Logger
	opened atomic.Bool
	warn   sync.Once
}

func newRaftGate(ln net.Listener, open bool, log *slog.Logger) *raftGate {
	g := &raftGate{Listener: ln, log: log}
	g.opened.Store(open)
	return g
}

// Accept returns the next Raft connection once the gate is open, and closes
// every one that arrives before.
func (g *raftGate) Accept() (net.Conn, error) {
	for {
		c, err := g.Listener.Accept()
		if err != nil || g.opened.Load() {
			return c, err
		}
		g.warn.Do(func() {
			g.log.Info("refusing Raft traffic until the cluster's leader has accepted this node's join (a node without Raft state must not vote)",
				"from", c.RemoteAddr().String())
		})
		_ = c.Close()
	}
}

func (g *raftGate) open() { g.opened.Store(true) }

func (g *raftGate) isOpen() bool { return g.opened.Load() }
