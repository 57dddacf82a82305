package node

import (
	"cmp"
	"slices"
	"time"

	"github.com/hashicorp/raft"

	"github.com/redcell/redcell/group"
)

// Spreading the leaders of a node's groups over the nodes.
//
// Every node is a member of every group, and a group's leader does its
// writes' work (proposing, replicating, applying first, answering): a node
// that led every group would have the throughput of one node. So each
// group has a preferred leader, the same on every node: its voters sorted
// by ID, the one at the group's ID modulo their number. With G groups on N
// nodes each node is preferred for about G/N of them. A node that leads a
// group whose preferred leader is another voter hands the leadership over
// (group.Transfer: gracefully, as a stopping leader does, so no client sees
// an error) once that voter has every committed entry and answers at
// once; so after a failover, a restart or a join, each node leads its share
// again within seconds.
//
// Only with more than one group: one group keeps whatever leader its
// elections gave it, as before groups.
//
// Goroutines: balanceLeaders runs in one goroutine of its own (background,
// node.go) until stop closes; it hands over one group at a time.

// balanceEvery is how often a node looks at the groups it leads.
const balanceEvery = time.Second

// balanceSettle is how long a node leads a group before it hands it to the
// preferred leader: an election's winner first serves what waited for it,
// and a preferred node that has just come back has a moment to catch up.
const balanceSettle = 2 * time.Second

// balanceBackoff is how long a node waits after a handover that failed
// before it tries that group again.
const balanceBackoff = 10 * time.Second

// balanceAskTimeout bounds the status call to the preferred leader: a node
// that does not answer at once is not one to hand leadership to.
const balanceAskTimeout = 500 * time.Millisecond

// balanceLeaders hands every group this node leads to its preferred leader
// when that is another healthy, caught-up voter.
func (n *Node) balanceLeaders(stop <-chan struct{}) {
	t := time.NewTicker(balanceEvery)
	defer t.Stop()
	leadingSince := make([]time.Time, len(n.groups)) // zero: not leading at the last look
	failedAt := make([]time.Time, len(n.groups))
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		now := time.Now()
		for i, lg := range n.groups {
			if !lg.group.IsLeader() {
				leadingSince[i] = time.Time{}
				continue
			}
			if leadingSince[i].IsZero() {
				leadingSince[i] = now
			}
			if now.Sub(leadingSince[i]) < balanceSettle || now.Sub(failedAt[i]) < balanceBackoff {
				continue
			}
			id, addr, ok := preferredLeader(lg)
			// Never to a member that cannot be reached, nor straight back
			// to one after it could not (reach.go).
			if !ok || id == n.ID || n.reachAvoid(addr) || !n.caughtUp(lg, addr) {
				continue
			}
			if err := lg.group.Transfer(id); err != nil {
				failedAt[i] = now
				n.log.Info("leadership not handed to the group's preferred leader; trying again later", "group", lg.id, "to", id, "err", err)
				continue
			}
			leadingSince[i] = time.Time{}
			n.log.Info("handed leadership to the group's preferred leader", "group", lg.id, "to", id)
		}
	}
}

// preferredLeader is the voter that should lead lg: its voters sorted by
// ID, the one at the group's ID modulo their number.
func preferredLeader(lg *localGroup) (id, addr string, ok bool) {
	ms, err := lg.group.Members()
	if err != nil {
		return "", "", false
	}
	voters := slices.DeleteFunc(ms, func(m group.Member) bool { return m.Suffrage != group.Voter })
	if len(voters) == 0 {
		return "", "", false
	}
	slices.SortFunc(voters, func(a, b group.Member) int { return cmp.Compare(a.ID, b.ID) })
	p := voters[int(lg.id)%len(voters)]
	return p.ID, p.Addr, true
}

// caughtUp reports whether the node at addr answers at once and holds
// every entry lg has committed: a handover to it then costs no wait.
func (n *Node) caughtUp(lg *localGroup, addr string) bool {
	st, err := n.remoteStatus(addr, lg.id, balanceAskTimeout)
	if err != nil {
		return false
	}
	r := lg.group.Raft()
	return r.State() == raft.Leader && st.last >= r.CommitIndex()
}
