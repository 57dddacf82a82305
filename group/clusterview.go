package group

import (
	"net"
	"strconv"

	"github.com/redcell/redcell/nodeinfo"
	"github.com/redcell/redcell/slots"
)

// The group as a shard of the Redis Cluster protocol (server's
// handlers_cluster.go, docs/cluster.md): its leader is the master, its other
// voters the replicas. Non-voters (members still catching up) are not
// listed, so no client routes to them.

// MemberView is what the caller knows of another member beyond the
// configuration: how far it has applied the log and its health
// (nodeinfo.Health*); ok false when it knows nothing (then the member is
// taken as online, at an offset this node cannot tell).
type MemberView func(id string) (applied uint64, health string, ok bool)

// ClusterShard describes the group as a shard owning ranges, from what this
// node knows now: the latest configuration, the leader it knows and raft's
// term (every member's config epoch: it grows with each election, as
// Redis's grows with each failover). With no leader known, or on a node
// removed from the group, the shard is Leaderless and this node (if it is a
// voter; else the first voter) stands first as its master. view may be nil.
// It never waits on raft's log or the network.
func (g *Group) ClusterShard(ranges []nodeinfo.SlotRange, view MemberView) nodeinfo.Shard {
	sh := nodeinfo.Shard{Slots: ranges}
	self := g.cfg.NodeID
	ms, err := g.Members()
	if err != nil {
		// raft is shutting down: this node alone, serving nothing.
		ms = []Member{{ID: self, Addr: string(g.cfg.Addr), Suffrage: Voter}}
	}
	_, leader := g.Leader()
	if g.Removed() {
		leader = ""
	}
	master := ""
	for _, m := range ms {
		if m.Suffrage == Voter && m.ID == leader {
			master = leader
		}
	}
	if master == "" {
		sh.Leaderless = true
		for _, m := range ms {
			if m.Suffrage == Voter && (master == "" || m.ID == self) {
				master = m.ID
			}
		}
	}
	voters := masterFirst(ms, master)
	term := g.raft.CurrentTerm()
	for i, m := range voters {
		host, port := splitAddr(m.Addr)
		n := nodeinfo.ClusterNode{
			ID: nodeinfo.ClusterID(m.ID), Host: host, Port: port,
			Master: i == 0, Myself: m.ID == self,
			Health: nodeinfo.HealthOnline, ConfigEpoch: term,
		}
		switch applied, health, ok := viewOf(view, m.ID); {
		case n.Myself:
			n.ReplicationOffset = int64(g.raft.AppliedIndex())
			if g.Loading() {
				n.Health = nodeinfo.HealthLoading
			}
		case ok:
			n.ReplicationOffset, n.Health = int64(applied), health
		case n.Master:
			// A follower's lower bound of what its leader has applied.
			n.ReplicationOffset = int64(g.raft.CommitIndex())
		}
		sh.Nodes = append(sh.Nodes, n)
	}
	return sh
}

// masterFirst is the voters of ms with master first, the others in ms's
// order.
func masterFirst(ms []Member, master string) []Member {
	out := make([]Member, 0, len(ms))
	for _, m := range ms {
		if m.Suffrage == Voter && m.ID == master {
			out = append(out, m)
		}
	}
	for _, m := range ms {
		if m.Suffrage == Voter && m.ID != master {
			out = append(out, m)
		}
	}
	return out
}

func viewOf(view MemberView, id string) (uint64, string, bool) {
	if view == nil {
		return 0, "", false
	}
	return view(id)
}

// splitAddr is an advertised address's host and port (0 if it has none).
func splitAddr(addr string) (string, int) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return addr, 0
	}
	port, _ := strconv.Atoi(p)
	return host, port
}

// Cluster is the bare group's view for the server (group.Local as a
// backend, in tests): one shard holding every slot, no member views.
func (l *Local) Cluster() nodeinfo.Cluster {
	sh := l.g.ClusterShard([]nodeinfo.SlotRange{{First: 0, Last: slots.Count - 1}}, nil)
	return nodeinfo.Cluster{
		MyID:         nodeinfo.ClusterID(l.g.cfg.NodeID),
		CurrentEpoch: l.g.raft.CurrentTerm(),
		Shards:       []nodeinfo.Shard{sh},
	}
}
