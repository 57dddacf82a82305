package group

import (
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/raft"
)

// Membership changes go through raft's configuration log entries, which only
// the leader can append. Every method here must run on the leader; a
// follower gets ErrNotLeader and the caller forwards the request (package
// node routes it to the leader over an authenticated peer connection).

// Suffrage names a member's role in the configuration as RAFT INFO shows it.
type Suffrage string

const (
	Voter    Suffrage = "voter"
	Nonvoter Suffrage = "nonvoter"
)

// Member is one server in the current configuration.
type Member struct {
	ID       string
	Addr     string
	Suffrage Suffrage
}

// membershipTimeout bounds one configuration change: it needs a quorum, so
// it waits about as long as a write does.
const membershipTimeout = 10 * time.Second

// Members returns the latest configuration (committed or not, as raft keeps
// it), in raft's order.
func (g *Group) Members() ([]Member, error) {
	f := g.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return nil, mapRaftErr(err)
	}
	var out []Member
	for _, s := range f.Configuration().Servers {
		m := Member{ID: string(s.ID), Addr: string(s.Address), Suffrage: Nonvoter}
		if s.Suffrage == raft.Voter {
			m.Suffrage = Voter
		}
		out = append(out, m)
	}
	return out, nil
}

// member returns the configuration entry for id, if any.
func (g *Group) member(id string) (Member, bool, error) {
	ms, err := g.Members()
	if err != nil {
		return Member{}, false, err
	}
	for _, m := range ms {
		if m.ID == id {
			return m, true, nil
		}
	}
	return Member{}, false, nil
}

// AddNonvoter adds a server that receives the log but does not vote, the
// first step of a join: it catches up without weakening the quorum, and is
// promoted with Promote once it has. Adding a member that is already present
// with the same address is a no-op (a retried or repeated join); the same
// ID at another address, or another ID at the same address, is an error.
func (g *Group) AddNonvoter(id, addr string) error {
	if err := g.leaderOnly(); err != nil {
		return err
	}
	ms, err := g.Members()
	if err != nil {
		return err
	}
	for _, m := range ms {
		switch {
		case m.ID == id && m.Addr == addr:
			return nil
		case m.ID == id:
			return fmt.Errorf("group: node %s is already a member at %s; remove it before it joins from %s", id, m.Addr, addr)
		case m.Addr == addr:
			return fmt.Errorf("group: address %s already belongs to member %s", addr, m.ID)
		}
	}
	f := g.raft.AddNonvoter(raft.ServerID(id), raft.ServerAddress(addr), 0, membershipTimeout)
	if err := f.Error(); err != nil {
		return mapRaftErr(err)
	}
	g.pokeAloneMode() // no longer alone (alonemode.go)
	g.log.Info("added a non-voting member", "node_id", id, "addr", addr)
	return nil
}

// Rejoin adds a node that has no Raft state as a non-voter, first removing
// any member that holds its ID or its address: that member is the same
// node (or the same slot) from before its state was lost, and its votes
// and acknowledgements belong to a log the node no longer has. The
// joining node sends this itself, and refuses all Raft traffic until it
// gets the answer (node's raftGate), so by then no configuration this
// leader commits counts it as a voter under its old life:
//
//   - the removal is committed under the configuration without the old
//     member, so a majority of the remaining voters holds it before the
//     node is added back; a candidate that lacks it cannot win (it would
//     need votes from that majority, whose logs are ahead of its own);
//   - the node comes back as a non-voter: no candidate asks for its vote
//     and no leader counts its acknowledgements until it has caught up
//     and been promoted (Promote), as any new member.
//
// A member at the same ID and address is replaced too, whatever its
// suffrage: AddNonvoter would keep a voter as it is (raft only updates its
// address), and then count the empty node's acknowledgements as if it still
// held its old log. Replacing the leader itself is refused: a node
// that claims the leader's ID or address is a misconfiguration, not a lost
// disk.
func (g *Group) Rejoin(id, addr string) error {
	if err := g.leaderOnly(); err != nil {
		return err
	}
	ms, err := g.Members()
	if err != nil {
		return err
	}
	self := g.cfg.NodeID
	for _, m := range ms {
		if m.ID != id && m.Addr != addr {
			continue
		}
		if m.ID == self || m.Addr == string(g.cfg.Addr) {
			return fmt.Errorf("group: node %s at %s cannot join in place of %s at %s, the leader itself", id, addr, m.ID, m.Addr)
		}
		if err := g.raft.RemoveServer(raft.ServerID(m.ID), 0, membershipTimeout).Error(); err != nil {
			return fmt.Errorf("group: removing %s (%s at %s) before %s at %s joins in its place: %w", m.ID, m.Suffrage, m.Addr, id, addr, mapRaftErr(err))
		}
		g.log.Warn("removed a member that a node without Raft state replaces (a lost or replaced disk)",
			"removed_id", m.ID, "removed_addr", m.Addr, "removed_suffrage", string(m.Suffrage), "node_id", id, "addr", addr)
	}
	return g.AddNonvoter(id, addr)
}

// Promote makes a member a voter; a no-op if it already is one.
func (g *Group) Promote(id string) error {
	if err := g.leaderOnly(); err != nil {
		return err
	}
	m, ok, err := g.member(id)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("group: node %s is not a member", id)
	}
	if m.Suffrage == Voter {
		return nil
	}
	if err := g.raft.AddVoter(raft.ServerID(id), raft.ServerAddress(m.Addr), 0, membershipTimeout).Error(); err != nil {
		return mapRaftErr(err)
	}
	g.log.Info("promoted a member to voter", "node_id", id, "addr", m.Addr)
	return nil
}

// Remove takes a member out of the configuration. Removing the leader
// itself is allowed: raft commits the change and the leader steps down.
func (g *Group) Remove(id string) error {
	if err := g.leaderOnly(); err != nil {
		return err
	}
	if _, ok, err := g.member(id); err != nil {
		return err
	} else if !ok {
		return fmt.Errorf("group: node %s is not a member", id)
	}
	if err := g.raft.RemoveServer(raft.ServerID(id), 0, membershipTimeout).Error(); err != nil {
		return mapRaftErr(err)
	}
	g.pokeAloneMode() // perhaps alone now
	g.log.Info("removed a member", "node_id", id)
	return nil
}

// Transfer hands leadership to the voter id, or to the most up-to-date
// voter when id is empty, and waits for the handover: gracefully, as a
// stopping leader does (handover.go), so no client sees an error.
func (g *Group) Transfer(id string) error {
	if err := g.leaderOnly(); err != nil {
		return err
	}
	if err := g.handOver(id); err != nil {
		if IsNoVoterToHandTo(err) {
			return fmt.Errorf("group: leadership transfer: %w", err)
		}
		return err
	}
	return nil
}

// Snapshot takes a snapshot now and compacts the log behind it. Any node
// may snapshot its own state; it returns the snapshot's index.
func (g *Group) Snapshot() (uint64, error) {
	f := g.raft.Snapshot()
	if err := f.Error(); err != nil {
		if errors.Is(err, raft.ErrNothingNewToSnapshot) {
			return g.Stats().LastSnapshotIndex, nil
		}
		return 0, fmt.Errorf("group: snapshot: %w", err)
	}
	meta, rc, err := f.Open()
	if err != nil {
		return 0, fmt.Errorf("group: snapshot: %w", err)
	}
	rc.Close()
	return meta.Index, nil
}

func (g *Group) leaderOnly() error {
	if g.stopping.Load() {
		return ErrShutdown
	}
	if g.raft.State() != raft.Leader {
		return ErrNotLeader
	}
	return nil
}
