package node

import (
	"github.com/redcell/redcell/nodeinfo"
)

// nodeStatus is the server's Status: the standing and figures of the node's
// groups, added up where INFO shows one figure for the node, with the
// cluster's view added to INFO replication (members.go) and the Redis
// Cluster view (clusterview.go). With one group every figure is group 0's,
// as before groups. Its methods are called from connection goroutines and
// return promptly.
//
// What is the node's and what each group's: the role (master while this
// node leads group 0, the membership's group) and the WAL's fsyncs are the
// node's (the database counts them once); requests, entries, keys, memory
// and log appends are added up over the groups; INFO raft shows group 0's
// fields as before and, with several groups, a line per group.
type nodeStatus struct{ n *Node }

func (s nodeStatus) Leading() bool { return s.n.base.local.Leading() }

// Loading reports whether any group is still loading its state.
func (s nodeStatus) Loading() bool {
	for _, lg := range s.n.groups {
		if lg.local.Loading() {
			return true
		}
	}
	return false
}

// Counters add up the groups' requests and entries; fsyncs are the
// database's, counted once.
func (s nodeStatus) Counters() (requests, entries, fsyncs uint64) {
	for _, lg := range s.n.groups {
		r, e, _ := lg.local.Counters()
		requests += r
		entries += e
	}
	return requests, entries, s.n.db.WALStats().Syncs
}

func (s nodeStatus) Memory() nodeinfo.Memory {
	var m nodeinfo.Memory
	for _, lg := range s.n.groups {
		g := lg.local.Memory()
		m.KeyspaceIndexBytes += g.KeyspaceIndexBytes
		m.KeyspaceEntryBytes += g.KeyspaceEntryBytes
		m.KeyspaceArenaBytes += g.KeyspaceArenaBytes
		m.KeyspaceArenaGarbage += g.KeyspaceArenaGarbage
	}
	return m
}

// Persistence is group 0's (loading, the guard, the WAL's figures) with the
// other groups' log appends added.
func (s nodeStatus) Persistence() nodeinfo.Persistence {
	p := s.n.base.local.Persistence()
	for _, lg := range s.n.groups[1:] {
		g := lg.local.Persistence()
		if p.Loading == nil {
			p.Loading = g.Loading
		}
		if p.Log != nil && g.Log != nil {
			p.Log.Appends += g.Log.Appends
			p.Log.EntriesAppended += g.Log.EntriesAppended
			p.Log.BytesAppended += g.Log.BytesAppended
			p.Log.BytesSinceSnapshot += g.Log.BytesSinceSnapshot
			p.Log.LastSnapshotBytes += g.Log.LastSnapshotBytes
		}
	}
	return p
}

// Raft is group 0's, with a line per group when there are several.
func (s nodeStatus) Raft() nodeinfo.Raft {
	r := s.n.base.local.Raft()
	if len(s.n.groups) == 1 {
		return r
	}
	for _, lg := range s.n.groups {
		g := r
		if lg != s.n.base {
			g = lg.local.Raft()
		}
		r.Groups = append(r.Groups, nodeinfo.GroupRaft{
			ID: uint32(lg.id), State: g.State, Ready: g.Ready, Term: g.Term, LeaderID: g.LeaderID,
			CommitIndex: g.CommitIndex, AppliedIndex: g.AppliedIndex,
			OpsProposed: g.OpsProposed, EntriesProposed: g.EntriesProposed,
			FSMOpsApplied: g.FSMOpsApplied, FSMApplyUsec: g.FSMApplyUsec,
		})
	}
	return r
}

// Keyspace adds up the groups' keys; the average TTL is weighted by each
// group's keys with an expiry.
func (s nodeStatus) Keyspace() nodeinfo.Keyspace {
	var k nodeinfo.Keyspace
	var ttlSum int64
	for _, lg := range s.n.groups {
		g := lg.local.Keyspace()
		k.Keys += g.Keys
		k.Expires += g.Expires
		ttlSum += g.AvgTTLms * g.Expires
	}
	if k.Expires > 0 {
		k.AvgTTLms = ttlSum / k.Expires
	}
	return k
}

// nodeClock is DEBUG CLOCK's view of the node: every group stamps its
// entries with its own clock, so a test's frozen or advanced time is set on
// each; the replicated clock shown is the latest of the groups'.
type nodeClock struct{ n *Node }

func (c nodeClock) Clock() int64 {
	var latest int64
	for _, lg := range c.n.groups {
		latest = max(latest, lg.local.Clock())
	}
	return latest
}

func (c nodeClock) SetClock(unixNS int64) {
	for _, lg := range c.n.groups {
		lg.local.SetClock(unixNS)
	}
}

func (c nodeClock) AdvanceClock(ns int64) {
	for _, lg := range c.n.groups {
		lg.local.AdvanceClock(ns)
	}
}

func (c nodeClock) RealClock() {
	for _, lg := range c.n.groups {
		lg.local.RealClock()
	}
}
