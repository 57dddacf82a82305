package node

import (
	"fmt"
	"time"

	"github.com/redcell/redcell/group"
	"github.com/redcell/redcell/request"
)

// Raising the cluster's feature level (request/featurelevel.go). The active
// level is replicated state; the leader raises it with a SetFeatureLevel
// entry once every member of the configuration reports a build that
// supports the new level. Members report it in the fifth field of the
// status the leader already polls them for once a second (members.go): no
// new call, and a build before feature levels, which answers four fields,
// counts as the base level, as does a member that has not answered lately.
// The check runs after every poll while this node leads and the cluster is
// below this build's level, so it follows leadership changes, membership
// changes and members restarted with a newer build within a second or two,
// and costs nothing once the cluster has caught up.
//
// Every member, not only the voters: a non-voter applies the log too, and
// would stop at a code it does not know. For the same reason a node whose
// build supports less than the active level is not let in: a join (or
// rejoin) or a promotion of it is refused with an error that says so
// (checkLevel, from checkJoin). A member restarted with an older build after
// the level was raised stops at the entry, or the snapshot, that raised it,
// with request.UnsupportedLevelError's words: the level never goes down.

// levelReportAge is how recent a member's report must be to count: two
// polls, so one slow answer does not hold a raise back, and a member that
// stopped answering is not counted on.
const levelReportAge = 2 * statusEvery

// raiseFeatureLevel proposes the highest level every member of ms supports,
// if that is above the active one, in every group below it (each group's
// state machine holds its own level; every node is a member of every group,
// so group 0's members are every group's). Called by pollMembers after each
// poll, on group 0's leader; it blocks for one write a group at most, each
// through the group's route (forwarded to its leader).
func (n *Node) raiseFeatureLevel(ms []group.Member) {
	active := n.lowestFeatureLevel()
	if active >= request.SupportedFeatureLevel || !n.base.group.IsLeader() {
		return
	}
	// The configuration as it is now, not as the poll began (up to a
	// second ago): a node that joined meanwhile has no report yet and so
	// counts as the base level, holding the raise back until it answers.
	if fresh, err := n.base.group.Members(); err == nil {
		ms = fresh
	}
	target, lowest := request.SupportedFeatureLevel, ""
	now := time.Now()
	n.members.mu.Lock()
	for _, m := range ms {
		if m.ID == n.ID {
			continue
		}
		level := request.BaseFeatureLevel // not heard from lately
		if v, ok := n.members.views[m.ID]; ok && now.Sub(v.lastContact) <= levelReportAge {
			level = v.level
		}
		if level < target {
			target, lowest = level, m.ID
		}
	}
	blocked := n.members.levelBlockedBy
	n.members.levelBlockedBy = lowest
	n.members.mu.Unlock()
	if target <= active {
		if lowest != blocked { // once per cause, not once a second
			n.log.Info("cluster feature level stays below this build's until every member supports it",
				"feature_level", active, "feature_level_supported", request.SupportedFeatureLevel, "member", lowest, "member_supports", target)
		}
		return
	}
	for _, lg := range n.groups {
		if lg.group.FeatureLevel() >= target {
			continue
		}
		reqs := []request.Request{request.NewSetFeatureLevel(target)}
		res := make([]request.Result, 1)
		if err := n.router.routes[lg.id].Propose(reqs, res); err != nil {
			n.log.Warn("raising the cluster feature level failed; retrying after the next poll", "group", lg.id, "to", target, "err", err)
			return
		}
	}
	n.log.Info("raised the cluster feature level: every member supports it", "from", active, "to", target)
}

// lowestFeatureLevel is the lowest active level of this node's groups.
func (n *Node) lowestFeatureLevel() request.FeatureLevel {
	lowest := n.base.group.FeatureLevel()
	for _, lg := range n.groups[1:] {
		lowest = min(lowest, lg.group.FeatureLevel())
	}
	return lowest
}

// checkLevel refuses to add, or promote, node id at addr when the cluster's
// active feature level is above the base and its build supports less (or
// does not say: a build before feature levels, or no answer). At the base
// level every build can follow the log, so nothing is asked.
func (n *Node) checkLevel(id, addr string) error {
	active := n.base.group.FeatureLevel()
	if active <= request.BaseFeatureLevel {
		return nil
	}
	level := request.BaseFeatureLevel
	if st, err := n.remoteStatus(addr, dataGroup, joinCheckTimeout); err == nil {
		level = st.level
	}
	if level >= active {
		return nil
	}
	return fmt.Errorf("node %s not added: it runs a build that supports cluster feature level %d, "+
		"and the cluster is at level %d (a cluster's level never goes down): run a build that supports level %d on it",
		id, level, active, active)
}

// memberAddr is the address of member id in the configuration, "" if none.
func (n *Node) memberAddr(id string) string {
	ms, err := n.base.group.Members()
	if err != nil {
		return ""
	}
	for _, m := range ms {
		if m.ID == id {
			return m.Addr
		}
	}
	return ""
}
