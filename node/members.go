package node

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redcell/redcell/group"
	"github.com/redcell/redcell/nodeinfo"
	"github.com/redcell/redcell/request"
	"github.com/redcell/redcell/slots"
)

// The leader's view of its members for INFO replication: raft does not
// expose its per-follower replication state, so the leader asks every other
// member for its status (applied index) once a second over the forwarding
// connections and remembers when each last answered. That gives, per
// member, when the leader last heard from it and how many entries it is
// behind, the two figures an operator needs to see a member falling away.

// statusEvery is how often the leader polls its members.
const statusEvery = time.Second

type memberView struct {
	applied     uint64
	lastContact time.Time // zero: never answered
	// level is the feature level its build supports (featurelevel.go).
	level request.FeatureLevel
	// reports: its answer carried its verdicts on the members it cannot
	// reach (unreachable, by address, with how long; reach.go).
	reports     bool
	unreachable map[string]time.Duration
}

type memberMonitor struct {
	mu    sync.Mutex
	views map[string]memberView // by node ID
	// levelBlockedBy is the member that last held the feature level
	// back (featurelevel.go), so that it is logged once.
	levelBlockedBy string
}

// pollMembers runs on every node and polls only while this node leads a
// group: group 0's leader for INFO and the feature level, any leader for
// what its members say about reaching it (reach.go).
func (n *Node) pollMembers(stop <-chan struct{}) {
	t := time.NewTicker(statusEvery)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		if !n.leadsAny() {
			continue
		}
		ms, err := n.base.group.Members()
		if err != nil {
			continue
		}
		var wg sync.WaitGroup
		for _, m := range ms {
			if m.ID == n.ID {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				st, err := n.remoteStatus(m.Addr, dataGroup, statusEvery/2)
				if err != nil {
					return
				}
				n.members.mu.Lock()
				n.members.views[m.ID] = memberView{applied: st.applied, lastContact: time.Now(), level: st.level, reports: st.reports, unreachable: st.unreachable}
				n.members.mu.Unlock()
			}()
		}
		wg.Wait()
		if n.base.group.IsLeader() {
			n.raiseFeatureLevel(ms) // featurelevel.go
		}
		n.leaveIfUnreachable(ms) // reach.go
	}
}

// peerStatus is another node's Raft indexes, as group's "status"
// administration command gives them over the forwarding connection, the
// feature level its build supports (a fifth field; a build before feature
// levels gives four, and is at the base level) and the members it cannot
// reach (a sixth, which the node adds to a forwarded status call:
// reach.go; a build before it gives five, and reports nothing).
type peerStatus struct {
	applied, last, commit, term uint64
	level                       request.FeatureLevel
	reports                     bool
	unreachable                 map[string]time.Duration
}

func (n *Node) remoteStatus(addr string, id slots.GroupID, timeout time.Duration) (peerStatus, error) {
	text, err := n.fwd.Admin(addr, id, "status", nil, timeout)
	if err != nil {
		return peerStatus{}, err
	}
	st := peerStatus{level: request.BaseFeatureLevel}
	if _, err := fmt.Sscan(text, &st.applied, &st.last, &st.commit, &st.term); err != nil {
		return peerStatus{}, fmt.Errorf("status from %s: %q: %w", addr, text, err)
	}
	if f := strings.Fields(text); len(f) > 4 {
		l, err := strconv.ParseUint(f[4], 10, 32)
		if err != nil || l < uint64(request.BaseFeatureLevel) {
			return peerStatus{}, fmt.Errorf("status from %s: %q: not a feature level", addr, text)
		}
		st.level = request.FeatureLevel(l)
		if len(f) > 5 {
			if st.unreachable, err = parseReach(f[5]); err != nil {
				return peerStatus{}, fmt.Errorf("status from %s: %q: %w", addr, text, err)
			}
			st.reports = true
		}
	}
	return st, nil
}

// Replication is the cluster's view for INFO replication: for a follower
// Redis's master_host/master_port/master_link_status, then on every node the
// leader, this node's standing (clusterState) and when it last heard from a
// leader, and each member with its suffrage and, on the leader, its last
// contact and lag in entries. Redis clients that read role and master_*
// keep working; members are listed as memberN lines.
func (s nodeStatus) Replication() *nodeinfo.Replication {
	n := s.n
	leaderAddr, leaderID := n.base.group.Leader()
	leading := n.base.group.IsLeader()
	r := &nodeinfo.Replication{
		Leading:             leading,
		LeaderID:            string(leaderID),
		LeaderAddr:          string(leaderAddr),
		State:               clusterState(n.base.group, leading, string(leaderAddr)),
		LeaderLastContactMS: time.Since(n.base.group.LastLeaderContact()).Milliseconds(),
	}
	ms, err := n.base.group.Members()
	if err != nil {
		return r
	}
	last := n.base.group.Raft().LastIndex()
	now := time.Now()
	n.members.mu.Lock()
	defer n.members.mu.Unlock()
	r.Members = make([]nodeinfo.Member, 0, len(ms))
	for _, m := range ms {
		im := nodeinfo.Member{ID: string(m.ID), Addr: string(m.Addr), Suffrage: fmt.Sprint(m.Suffrage)}
		switch {
		case m.ID == n.ID:
			im.Self = true
		case leading:
			im.Contact = &nodeinfo.MemberContact{LastContactMS: -1, Lag: -1}
			v, ok := n.members.views[m.ID]
			if ok && !v.lastContact.IsZero() {
				lag := int64(0)
				if last > v.applied {
					lag = int64(last - v.applied)
				}
				im.Contact = &nodeinfo.MemberContact{LastContactMS: now.Sub(v.lastContact).Milliseconds(), Lag: lag}
				if now.Sub(v.lastContact) < 3*statusEvery {
					r.ConnectedSlaves++
				}
			}
		}
		r.Members = append(r.Members, im)
	}
	return r
}

// clusterState is INFO's cluster_state, what a request that needs the
// cluster meets on this node now:
//
//	ok         this node leads, or knows a leader (requests go there)
//	electing   no leader known, but one was heard from recently: requests
//	           wait for the next (until no_leader at the latest)
//	no_leader  no leader for longer than an election takes: CLUSTERDOWN at once
//	removed    this node was removed from the cluster: the removed error at once
func clusterState(g *group.Group, leading bool, leaderAddr string) string {
	switch {
	case !leading && g.Removed():
		return "removed"
	case leading || leaderAddr != "":
		return "ok"
	case time.Now().Before(g.NoLeaderKnownAt()):
		return "electing"
	}
	return "no_leader"
}
