package group

import (
	"slices"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// What a node can tell alone about its place in the cluster, so that it
// answers at once instead of waiting out the write timeout for a leader that
// will not come (package node's router asks before it waits):
//
// Removed. RAFT REMOVE takes a node out of the configuration. hashicorp/raft
// gives the removed node no notice of its own, but its leader replicates up
// to the configuration entry that removes it before it stops replicating to
// it (replication.go, startStopReplication), so a removed follower finds its
// own ID missing from its latest configuration; a leader that removes itself
// shuts its raft down once the entry commits (ShutdownOnRemove, raft's
// default, which Redcell keeps: its removed leader then keeps serving INFO
// and answers the removed error like a removed follower). A node that was
// partitioned when it was removed never learns it and answers as a node
// without a leader (below).
//
// Missing from its latest configuration is not enough: a joiner catching up
// walks through the cluster's older configurations, none of which names it,
// until it reaches the entry that added it. So a node is removed only if it
// has been a member before (wasMember: its ID was in its latest
// configuration at some point, kept in the stable store so that a restarted
// removed node still knows), and the configuration that leaves it out is
// not one a leader is still walking it through: either raft here stopped
// (the removed leader), or the entry is the last thing this node has and it
// never heard that it committed (the removed follower: the leader stops
// replicating to it right after that entry, before the commit), or no leader
// has contacted it for a heartbeat timeout (a leader replicating to a
// catching-up joiner contacts it every HeartbeatTimeout/10).
//
// No leader. A follower whose leader went quiet becomes a candidate after
// HeartbeatTimeout (randomised up to twice that), and a candidate that wins
// no election tries again after ElectionTimeout (up to twice that). Once no
// leader has contacted this node for 2×HeartbeatTimeout + 2×ElectionTimeout,
// every voter that can hear this node has timed out on the old leader and a
// whole election round has failed: the node knows there is no leader, and a
// request that waits longer only holds its client. Before that, a leader
// change may be under way (a failover elects within about one
// HeartbeatTimeout), and requests wait for it.

// wasMemberKey marks, in the stable store, that this node's ID has been in
// its latest configuration.
var wasMemberKey = []byte("redcell/was-member")

// standingEvery is how often runStanding looks for this node's ID in its
// configuration until it finds it.
const standingEvery = 50 * time.Millisecond

type standing struct {
	// opened is when the group started: a node that has not heard from any
	// leader since counts its time without one from there.
	opened time.Time
	// wasMember: this node's ID has been in its latest configuration.
	wasMember atomic.Bool
}

// loadStanding reads whether this node has been a member before; Open calls
// it before it returns, so that a restarted removed node says so from its
// first request.
func (g *Group) loadStanding() {
	if v, err := g.cfg.Stable.GetUint64(wasMemberKey); err == nil && v == 1 {
		g.standing.wasMember.Store(true)
	}
}

// runStanding records that this node is a member once it finds its ID in
// its latest configuration, looking every standingEvery until then (raft
// tells a follower nothing when its configuration changes), and then ends:
// a member stays one for this purpose. One goroutine, started by Open; it
// ends at the latest when the group stops.
func (g *Group) runStanding() {
	defer g.wg.Done()
	if g.standing.wasMember.Load() {
		return
	}
	tick := time.NewTicker(standingEvery)
	defer tick.Stop()
	for !g.inLatestConfiguration() {
		select {
		case <-g.stopCh:
			return
		case <-tick.C:
		}
	}
	g.standing.wasMember.Store(true)
	if err := g.cfg.Stable.SetUint64(wasMemberKey, 1); err != nil {
		// Only a restart while removed is affected: that node would then
		// answer "no leader" instead of "removed".
		g.log.Warn("could not record that this node is a member", "err", err)
	}
}

// inLatestConfiguration reports whether this node's ID is in raft's latest
// configuration (committed or not).
func (g *Group) inLatestConfiguration() bool {
	return g.isIn(g.raft.GetConfiguration().Configuration().Servers)
}

func (g *Group) isIn(servers []raft.Server) bool {
	return slices.ContainsFunc(servers, func(s raft.Server) bool { return s.ID == raft.ServerID(g.cfg.NodeID) })
}

// Removed reports whether this node was taken out of the cluster's
// configuration (see the top of this file): it will decide nothing again,
// and its state is no longer updated, until it is added back. Cheap while
// the node is a member in contact with its leader (no configuration is read
// then). Any goroutine.
func (g *Group) Removed() bool {
	if !g.standing.wasMember.Load() {
		return false // never a member: new, or joining
	}
	state := g.raft.State()
	if state == raft.Leader {
		return false
	}
	stopped := state == raft.Shutdown && !g.stopping.Load() // raft stopped itself: ShutdownOnRemove
	uncommittedTail := g.raft.LastIndex() > g.raft.CommitIndex()
	quiet := time.Since(g.raft.LastContact()) > g.raft.ReloadableConfig().HeartbeatTimeout
	if !stopped && !uncommittedTail && !quiet {
		return false // a leader is replicating to this node and everything it has is committed
	}
	servers := g.raft.GetConfiguration().Configuration().Servers
	return len(servers) > 0 && !g.isIn(servers)
}

// LeaderlessAfter is how long a node goes without contact from a leader
// before it knows there is none: 2×HeartbeatTimeout + 2×ElectionTimeout, the
// longest a follower takes to time out on its leader plus one whole
// election round (see the top of this file).
func (g *Group) LeaderlessAfter() time.Duration {
	rc := g.raft.ReloadableConfig()
	return 2*rc.HeartbeatTimeout + 2*rc.ElectionTimeout
}

// LastLeaderContact is when this node last knew of a leader: now while it
// leads or hands its leadership over (handover.go: raft records the step
// down as a contact only after it reports the node a follower, and a
// request that looked in between would take the cluster for leaderless);
// otherwise when a leader last contacted it (raft's LastContact, which raft
// also sets when this node grants a vote or stops leading), or when the
// group started if no leader has since.
func (g *Group) LastLeaderContact() time.Time {
	if g.raft.State() == raft.Leader || g.handover.on.Load() {
		return time.Now()
	}
	last := g.raft.LastContact()
	if last.Before(g.standing.opened) {
		return g.standing.opened
	}
	return last
}

// NoLeaderKnownAt is when this node will know there is no leader if none
// contacts it before: LastLeaderContact + LeaderlessAfter. A time not after
// now means it knows already. Any goroutine.
func (g *Group) NoLeaderKnownAt() time.Time {
	return g.LastLeaderContact().Add(g.LeaderlessAfter())
}

// NodeID is this node's ID, as raft knows it.
func (g *Group) NodeID() string { return g.cfg.NodeID }
