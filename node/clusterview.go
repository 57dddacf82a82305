package node

import (
	"time"

	"github.com/redcell/redcell/group"
	"github.com/redcell/redcell/nodeinfo"
)

// Cluster is the node's view for the Redis Cluster protocol (the server's
// CLUSTER SLOTS, SHARDS, NODES, INFO; docs/cluster.md): one shard per Raft
// group, with the slot ranges the slot map gives it, its leader the master
// and its other voters the replicas. With one group that is one shard
// holding every slot.
//
// Member health and applied indexes come from what group 0's leader already
// polls once a second for INFO replication (members.go): there, a member it
// heard from within three polls is online, one it has not is fail. Other
// groups' shards, and a follower's view, show members online at an offset
// this node cannot tell. Called from connection goroutines; it reads raft's
// configurations and the member views under their mutex, never waiting on
// a log or the network.
func (s nodeStatus) Cluster() nodeinfo.Cluster {
	n := s.n
	v := nodeinfo.Cluster{MyID: nodeinfo.ClusterID(n.ID)}
	for _, lg := range n.groups {
		var ranges []nodeinfo.SlotRange
		for _, r := range n.router.slots.ranges(lg.id) {
			ranges = append(ranges, nodeinfo.SlotRange{First: int(r.first), Last: int(r.last)})
		}
		var view group.MemberView
		if lg == n.base && lg.group.IsLeader() {
			view = n.polledMember
		}
		v.Shards = append(v.Shards, lg.group.ClusterShard(ranges, view))
		v.CurrentEpoch = max(v.CurrentEpoch, lg.group.Raft().CurrentTerm())
	}
	return v
}

// polledMember is group 0's leader's view of member id (a group.MemberView):
// its applied index as last polled, and whether it answered within three
// polls; ok false before it ever answered.
func (n *Node) polledMember(id string) (applied uint64, health string, ok bool) {
	n.members.mu.Lock()
	v, ok := n.members.views[id]
	n.members.mu.Unlock()
	if !ok || v.lastContact.IsZero() {
		return 0, "", false
	}
	health = nodeinfo.HealthOnline
	if time.Since(v.lastContact) >= 3*statusEvery {
		health = nodeinfo.HealthFail
	}
	return v.applied, health, true
}
