package node

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redcell/redcell/group"
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
}

type memberMonitor struct {
	mu    sync.Mutex
	views map[string]memberView // by node ID
}

// pollMembers runs on every node and polls only while this node leads.
func (n *Node) pollMembers(stop <-chan struct{}) {
	t := time.NewTicker(statusEvery)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		if !n.group.IsLeader() {
			continue
		}
		ms, err := n.group.Members()
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
				st, err := n.remoteStatus(m.Addr, statusEvery/2)
				if err != nil {
					return
				}
				n.members.mu.Lock()
				n.members.views[m.ID] = memberView{applied: st.applied, lastContact: time.Now()}
				n.members.mu.Unlock()
			}()
		}
		wg.Wait()
	}
}

// peerStatus is another node's Raft indexes, as group's "status"
// administration command gives them over the forwarding connection.
type peerStatus struct{ applied, last, commit, term uint64 }

func (n *Node) remoteStatus(addr string, timeout time.Duration) (peerStatus, error) {
	text, err := n.fwd.Admin(addr, groupID, "status", nil, timeout)
	if err != nil {
		return peerStatus{}, err
	}
	var st peerStatus
	if _, err := fmt.Sscan(text, &st.applied, &st.last, &st.commit, &st.term); err != nil {
		return peerStatus{}, fmt.Errorf("status from %s: %q: %w", addr, text, err)
	}
	return st, nil
}

// nodeStatus is the server's Status: the local group's standing and
// figures, with the cluster's view added to INFO replication. Its methods
// are called from connection goroutines and return promptly.
type nodeStatus struct{ n *Node }

func (s nodeStatus) Leading() bool { return s.n.local.Leading() }
func (s nodeStatus) Loading() bool { return s.n.local.Loading() }
func (s nodeStatus) Counters() (requests, entries, fsyncs uint64) {
	return s.n.local.Counters()
}

// Info adds the cluster's view to INFO's replication section (and passes
// every other section to the local group): for a follower Redis's
// master_host/master_port/master_link_status, then on every node the
// leader, this node's standing (clusterState) and when it last heard from a
// leader, and each member with its suffrage and, on the leader, its last
// contact and lag in entries. Redis clients that read role and master_*
// keep working; members are listed as memberN lines.
func (s nodeStatus) Info(section string, field func(name string, value any)) {
	s.n.local.Info(section, field)
	if section != "replication" {
		return
	}
	n := s.n
	leaderAddr, leaderID := n.group.Leader()
	leading := n.group.IsLeader()
	if !leading {
		host, port, _ := net.SplitHostPort(leaderAddr)
		link := "down"
		if leaderAddr != "" {
			link = "up"
		}
		field("master_host", host)
		field("master_port", port)
		field("master_link_status", link)
	}
	field("cluster_leader_id", leaderID)
	field("cluster_leader_addr", leaderAddr)
	field("cluster_state", clusterState(n.group, leading, leaderAddr))
	field("cluster_leader_last_contact_ms", time.Since(n.group.LastLeaderContact()).Milliseconds())
	ms, err := n.group.Members()
	if err != nil {
		return
	}
	field("cluster_members", len(ms))
	last := n.group.Raft().LastIndex()
	now := time.Now()
	n.members.mu.Lock()
	defer n.members.mu.Unlock()
	connected := 0
	for i, m := range ms {
		var b strings.Builder
		fmt.Fprintf(&b, "id=%s,addr=%s,suffrage=%s", m.ID, m.Addr, m.Suffrage)
		switch {
		case m.ID == n.ID:
			b.WriteString(",self=1")
		case leading:
			v, ok := n.members.views[m.ID]
			if ok && !v.lastContact.IsZero() {
				lag := int64(0)
				if last > v.applied {
					lag = int64(last - v.applied)
				}
				fmt.Fprintf(&b, ",last_contact_ms=%d,lag=%d", now.Sub(v.lastContact).Milliseconds(), lag)
				if now.Sub(v.lastContact) < 3*statusEvery {
					connected++
				}
			} else {
				b.WriteString(",last_contact_ms=-1,lag=-1")
			}
		}
		field("member"+strconv.Itoa(i), b.String())
	}
	if leading {
		field("connected_slaves", connected)
	}
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
