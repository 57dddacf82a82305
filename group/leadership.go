package group

import (
	"sync"

	"github.com/hashicorp/raft"

	"github.com/redcell/redcell/request"
)

// ErrNotLeader: the request reached a node that does not lead while another
// node is known to; the caller forwards it (package node's router does).
// Nothing happened. It is request's FailNotLeader, which errors.Is also
// takes for request.ErrNoLeader, so a layer that does not forward answers it
// as CLUSTERDOWN.
var ErrNotLeader = request.ErrNotLeader

// leaderSignal wakes waiters whenever raft observes a change of leader (a
// new one, or none) or of this node's role: the channel LeaderChanged
// returns is closed at the next change and then replaced.
//
// Goroutines: one goroutine (started by Open) receives raft's observations
// and calls fire; LeaderChanged may be called from any goroutine.
type leaderSignal struct {
	mu       sync.Mutex
	ch       chan struct{}
	obs      chan raft.Observation
	observer *raft.Observer
}

func newLeaderSignal() *leaderSignal {
	s := &leaderSignal{ch: make(chan struct{}), obs: make(chan raft.Observation, 16)}
	// Non-blocking: if observations pile up, one pending wake-up is as good
	// as many, because waiters re-read raft's state after waking.
	s.observer = raft.NewObserver(s.obs, false, func(o *raft.Observation) bool {
		switch o.Data.(type) {
		case raft.LeaderObservation, raft.RaftState:
			return true
		}
		return false
	})
	return s
}

func (s *leaderSignal) fire() {
	s.mu.Lock()
	close(s.ch)
	s.ch = make(chan struct{})
	s.mu.Unlock()
}

func (s *leaderSignal) wait() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ch
}

// runLeaderSignal relays raft's observations until the group stops.
func (g *Group) runLeaderSignal() {
	defer g.wg.Done()
	for {
		select {
		case <-g.stopCh:
			g.raft.DeregisterObserver(g.leaderSig.observer)
			return
		case <-g.leaderSig.obs:
			g.leaderSig.fire()
		}
	}
}

// LeaderChanged returns a channel that is closed at the next change of
// leader or of this node's role. Take it before reading the state it is
// about, so that no change between the read and the wait is missed.
func (g *Group) LeaderChanged() <-chan struct{} { return g.leaderSig.wait() }

// Leader returns the current leader's Raft address and ID as this node
// knows them; empty when none is known.
func (g *Group) Leader() (addr, id string) {
	a, i := g.raft.LeaderWithID()
	return string(a), string(i)
}

// IsLeader reports whether raft considers this node the leader (ready or
// not yet).
func (g *Group) IsLeader() bool { return g.raft.State() == raft.Leader }
