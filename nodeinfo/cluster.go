package nodeinfo

import (
	"crypto/sha1"
	"encoding/hex"
)

// Cluster is this node's view of the cluster as the Redis Cluster protocol
// shows it (CLUSTER SLOTS, SHARDS, NODES, INFO, MYID): shards, each a Raft
// group with the hash slots it owns and its members. The node fills it
// (package node from its groups' configurations and leaders; group.Local
// for a lone group in tests) and the server writes it in Redis's shapes, so
// the server never learns what a Raft group is.
//
// With one group there is one shard holding every slot. A keyspace split
// over several groups is more entries in Shards, nothing else.
type Cluster struct {
	// MyID is this node's cluster ID (ClusterID of its Redcell node ID).
	MyID string
	// CurrentEpoch is Redis's cluster_current_epoch: the highest
	// ConfigEpoch this node knows.
	CurrentEpoch uint64
	// Shards, in the order CLUSTER SHARDS lists them.
	Shards []Shard
}

// Shard is one Raft group as a Redis Cluster shard: a master (its leader)
// and its replicas (the other voters).
type Shard struct {
	// Slots are the ranges the shard owns, inclusive and ascending.
	Slots []SlotRange
	// Nodes lists the master first, then the replicas.
	Nodes []ClusterNode
	// Leaderless: this node knows no leader of the group (an election is
	// on, or the node is cut off or removed). Nodes[0] is then this node, or
	// another voter if this node is none, standing in as the master: a
	// client that sends there waits for the next leader or is told it
	// cannot be served. The shard's slots count as failing in CLUSTER INFO.
	Leaderless bool
}

// SlotRange is an inclusive range of hash slots.
type SlotRange struct{ First, Last int }

// ClusterNode is one member of a shard.
type ClusterNode struct {
	ID   string // 40 hex characters: ClusterID of the member's Redcell ID
	Host string // of the member's advertised client address
	Port int
	// Master: the shard's master (Nodes[0]); the others are replicas.
	Master bool
	// Myself: this node.
	Myself bool
	// Health is CLUSTER SHARDS' health: online, fail (its leader has not
	// heard from it lately) or loading (replaying its log after a start).
	Health string
	// ReplicationOffset is how far the member has applied the group's log
	// as this node knows it (an index, not Redis's byte offset); 0 when
	// this node cannot tell.
	ReplicationOffset int64
	// ConfigEpoch is the epoch of the shard's current master (the group's
	// Raft term), which Redis shows on a replica's line too.
	ConfigEpoch uint64
}

// The health values of ClusterNode.Health, as Redis 7 spells them.
const (
	HealthOnline  = "online"
	HealthFail    = "fail"
	HealthLoading = "loading"
)

// ClusterID is the Redis Cluster node ID of a Redcell node: the hex SHA-1 of
// its Redcell ID, 40 characters as every cluster client expects (Redcell's
// own IDs are 16 hex characters or whatever the operator chose). Every node
// derives the same ID for a member from its Redcell ID alone, so no ID needs
// to be stored or exchanged.
func ClusterID(nodeID string) string {
	sum := sha1.Sum([]byte(nodeID))
	return hex.EncodeToString(sum[:])
}
