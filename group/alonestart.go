package group

import (
	"time"

	"github.com/hashicorp/raft"
)

// A node that is its cluster's only voter need not wait to find out that
// no leader speaks to it. hashicorp/raft starts every node as a follower
// and campaigns only when its heartbeat timer, drawn from one to two
// heartbeat timeouts (100–200 ms by default), finds no contact; a lone
// voter then wins its pre-vote and its vote from itself at once. So a
// single node, new or restarted, spent that whole draw answering CLUSTERDOWN
// or LOADING for nothing. Raft has no call to campaign now, but a
// ReloadConfig that lowers the heartbeat timeout fires the follower's timer
// at once (raft.go, runFollower: followerNotifyCh), and with no contact
// since start the follower campaigns. campaignIfAlone does that, leaving the
// timeouts as they were: it raises both by a nanosecond, then restores
// them.
//
// This changes only when the election starts, not what it decides: it is
// the election raft itself would start one heartbeat timeout later, under
// the same configuration, and a node with other voters is left to its
// timer (campaigning early there would only be refused by pre-vote while a
// leader lives).

// campaignIfAlone makes a node whose latest configuration has it as the only
// voter campaign at once (see above). Called by Open once raft runs; a
// failure only leaves the election to raft's timer.
func (g *Group) campaignIfAlone() {
	f := g.raft.GetConfiguration()
	if f.Error() != nil {
		return
	}
	voters, self := 0, false
	for _, s := range f.Configuration().Servers {
		if s.Suffrage == raft.Voter {
			voters++
			self = self || s.ID == raft.ServerID(g.cfg.NodeID)
		}
	}
	if voters != 1 || !self {
		return
	}
	rc := g.raft.ReloadableConfig()
	bumped := rc
	bumped.HeartbeatTimeout += time.Nanosecond
	bumped.ElectionTimeout += time.Nanosecond // raft wants election ≥ heartbeat
	if err := g.raft.ReloadConfig(bumped); err != nil {
		return
	}
	if err := g.raft.ReloadConfig(rc); err != nil {
		g.log.Warn("restoring the raft timeouts after a lone start", "err", err)
	}
}
