// Package nodeinfo holds what a node reports in INFO, one struct per
// section, as typed values: the node fills them (package group for its
// Raft group, state machine and log store; package node for the cluster's
// view), and the server prints them. Each type's Fields writes its fields in
// the order INFO prints them, under the names INFO has always used, so that
// the names live next to the values they name and the server never sees a
// field name it could misspell.
//
// A leaf: it imports nothing of Redcell, so the server and the node's
// packages share these types without importing each other.
package nodeinfo

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// Field is how a section's fields are written: once per field, in INFO's
// order ("name:value"). The server's INFO writer is one.
type Field func(name string, value any)

// Memory is INFO memory's node fields: the keyspace's footprint.
type Memory struct {
	KeyspaceIndexBytes, KeyspaceEntryBytes, KeyspaceArenaBytes, KeyspaceArenaGarbage int64
}

// Fields writes m in INFO's order.
func (m Memory) Fields(f Field) {
	f("keyspace_index_bytes", m.KeyspaceIndexBytes)
	f("keyspace_entry_bytes", m.KeyspaceEntryBytes)
	f("keyspace_arena_bytes", m.KeyspaceArenaBytes)
	f("keyspace_arena_garbage", m.KeyspaceArenaGarbage)
}

// Persistence is INFO persistence's node fields; each part is nil when it
// does not apply (and then shows no field).
type Persistence struct {
	Loading *Loading   // while the node loads its state after a restart
	Disk    *DiskSpace // when the log disk's free-space guard is on
	Log     *LogStore  // when the node has a log store of its own
}

// Loading is how far a restarting node has got (Redis's loading_start_time
// and Redcell's indexes).
type Loading struct {
	StartTime                 int64 // Unix seconds
	AppliedIndex, TargetIndex uint64
}

// DiskSpace is the log disk's free-space guard.
type DiskSpace struct {
	FreeBytes, ReserveBytes int64
	Low                     bool
	LowEvents               uint64
}

// LogStore is the log store's counters.
type LogStore struct {
	Appends, EntriesAppended, Fsyncs                     uint64
	WALSyncDirect                                        bool // the next WAL sync may be direct
	WALSyncsDirect, WALSyncsOrdinary, WALSyncsSlow       uint64
	WALSyncUsecTotal                                     int64
	WALsZeroFilled, WALZeroFillsFailed                   uint64
	BytesAppended, BytesSinceSnapshot, LastSnapshotBytes uint64
}

// Fields writes p in INFO's order.
func (p Persistence) Fields(f Field) {
	if l := p.Loading; l != nil {
		f("loading_start_time", l.StartTime)
		f("loading_applied_index", l.AppliedIndex)
		f("loading_target_index", l.TargetIndex)
	}
	if p.Log == nil {
		return
	}
	if d := p.Disk; d != nil {
		f("log_disk_free_bytes", d.FreeBytes)
		f("log_disk_reserve_bytes", d.ReserveBytes)
		f("log_disk_low", boolInt(d.Low))
		f("log_disk_low_events", d.LowEvents)
	}
	ls := p.Log
	f("log_appends", ls.Appends)
	f("log_entries_appended", ls.EntriesAppended)
	f("log_fsyncs", ls.Fsyncs)
	walSync := "ordinary"
	if ls.WALSyncDirect {
		walSync = "direct"
	}
	f("log_wal_sync", walSync)
	f("log_wal_syncs_direct", ls.WALSyncsDirect)
	f("log_wal_syncs_ordinary", ls.WALSyncsOrdinary)
	f("log_wal_syncs_slow", ls.WALSyncsSlow)
	f("log_wal_sync_usec_total", ls.WALSyncUsecTotal)
	f("log_wals_zero_filled", ls.WALsZeroFilled)
	f("log_wal_zero_fills_failed", ls.WALZeroFillsFailed)
	f("log_bytes_appended", ls.BytesAppended)
	f("log_bytes_since_snapshot", ls.BytesSinceSnapshot)
	f("last_snapshot_bytes", ls.LastSnapshotBytes)
}

// Raft is INFO raft's node fields: the Raft group, its proposer and the
// state machine.
type Raft struct {
	State                           string // raft's, lower case
	Ready                           bool
	Term                            uint64
	LeaderID, LeaderAddr            string
	Voters                          int
	CommitIndex, AppliedIndex       uint64
	LastLogIndex, LastSnapshotIndex uint64
	EntriesProposed, OpsProposed    uint64
	LastEntryOps, MaxEntryOps       uint64
	// EntryOps[i] counts entries of 2^i to 2^(i+1)-1 requests (the last:
	// 2^i or more).
	EntryOps                                                []uint64
	BatchesTimed                                            uint64
	BatchQueueUsec, BatchLocalLogUsec, BatchQuorumApplyUsec int64
	// The batcher's merge of cohorts (group/batcher.go, rule 4): on or
	// off, cuts made while merging, times merging lost a trial (or an
	// unmerged trial beat it), and the clients in play it waits for.
	BatchMerging                     bool
	BatchMergedCuts, BatchMergeEnds  uint64
	ClientsInPlay                    int64
	Reads                            uint64
	LogCacheHits, LogCacheMisses     uint64
	FSMEntriesApplied, FSMOpsApplied uint64
	FSMApplyUsec                     int64 // time the state machine spent applying entries
	FSMClockNS                       int64
	// FeatureLevel is the cluster's active feature level (replicated);
	// FeatureLevelSupported the highest this build can apply
	// (request/featurelevel.go).
	FeatureLevel, FeatureLevelSupported uint32
	// Groups, with more than one group, is each group's line (every field
	// above is group 0's); nil with one.
	Groups []GroupRaft
}

// GroupRaft is one group's standing and counters, INFO raft's
// raft_group<N> line.
type GroupRaft struct {
	ID                           uint32
	State                        string
	Ready                        bool
	Term                         uint64
	LeaderID                     string
	CommitIndex, AppliedIndex    uint64
	EntriesProposed, OpsProposed uint64
	FSMOpsApplied                uint64
	FSMApplyUsec                 int64
}

// Fields writes r in INFO's order.
func (r Raft) Fields(f Field) {
	f("raft_state", r.State)
	f("raft_ready", boolInt(r.Ready))
	f("raft_term", r.Term)
	f("raft_leader_id", r.LeaderID)
	f("raft_leader_addr", r.LeaderAddr)
	f("raft_voters", r.Voters)
	f("raft_commit_index", r.CommitIndex)
	f("raft_applied_index", r.AppliedIndex)
	f("raft_last_log_index", r.LastLogIndex)
	f("raft_last_snapshot_index", r.LastSnapshotIndex)
	f("raft_entries_proposed", r.EntriesProposed)
	f("raft_ops_proposed", r.OpsProposed)
	avg := 0.0
	if r.EntriesProposed > 0 {
		avg = float64(r.OpsProposed) / float64(r.EntriesProposed)
	}
	f("raft_avg_ops_per_entry", fmt.Sprintf("%.2f", avg))
	f("raft_last_entry_ops", r.LastEntryOps)
	f("raft_max_entry_ops", r.MaxEntryOps)
	f("raft_entry_ops_histogram", entryOpsHistogram(r.EntryOps))
	f("raft_batches_timed", r.BatchesTimed)
	f("raft_batch_queue_usec_total", r.BatchQueueUsec)
	f("raft_batch_local_log_usec_total", r.BatchLocalLogUsec)
	f("raft_batch_quorum_apply_usec_total", r.BatchQuorumApplyUsec)
	f("raft_batch_merging", boolInt(r.BatchMerging))
	f("raft_batch_merged_cuts", r.BatchMergedCuts)
	f("raft_batch_merge_ends", r.BatchMergeEnds)
	f("raft_clients_in_play", r.ClientsInPlay)
	f("raft_reads", r.Reads)
	f("raft_log_cache_hits", r.LogCacheHits)
	f("raft_log_cache_misses", r.LogCacheMisses)
	f("fsm_entries_applied", r.FSMEntriesApplied)
	f("fsm_ops_applied", r.FSMOpsApplied)
	f("fsm_apply_usec_total", r.FSMApplyUsec)
	f("fsm_clock_ns", r.FSMClockNS)
	f("feature_level", r.FeatureLevel)
	f("feature_level_supported", r.FeatureLevelSupported)
	if len(r.Groups) > 1 {
		leading := 0
		for _, g := range r.Groups {
			if g.State == "leader" {
				leading++
			}
		}
		f("raft_groups", len(r.Groups))
		f("raft_groups_leading", leading)
		for _, g := range r.Groups {
			f(fmt.Sprintf("raft_group%d", g.ID), fmt.Sprintf("state=%s,ready=%d,term=%d,leader_id=%s,commit_index=%d,applied_index=%d,entries_proposed=%d,ops_proposed=%d,fsm_ops_applied=%d,fsm_apply_usec=%d",
				g.State, boolInt(g.Ready), g.Term, g.LeaderID, g.CommitIndex, g.AppliedIndex, g.EntriesProposed, g.OpsProposed, g.FSMOpsApplied, g.FSMApplyUsec))
		}
	}
}

// entryOpsHistogram formats the distribution of requests per entry as
// "1=n,2=n,4=n,...": the count of entries carrying from that many requests
// up to (not including) the next label; the last label means "or more".
// Empty buckets are left out.
func entryOpsHistogram(h []uint64) string {
	var b strings.Builder
	for i, n := range h {
		if n == 0 {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%d=%d", uint64(1)<<i, n)
	}
	return b.String()
}

// Keyspace is INFO keyspace's db0 line, as Redis's: present once the
// keyspace has a live key; Expires counts the keys with an expiry, and
// AvgTTLms is their average remaining lifetime (0 when none has one).
type Keyspace struct {
	Keys, Expires, AvgTTLms int64
}

// Fields writes k in INFO's order (nothing for an empty keyspace).
func (k Keyspace) Fields(f Field) {
	if k.Keys > 0 {
		f("db0", fmt.Sprintf("keys=%d,expires=%d,avg_ttl=%d", k.Keys, k.Expires, k.AvgTTLms))
	}
}

// Replication is the cluster's view in INFO replication, after the
// server's role line: for a follower Redis's master_* fields, then the
// leader, this node's standing and each member.
type Replication struct {
	Leading              bool
	LeaderID, LeaderAddr string
	// State is this node's standing: ok, electing, no_leader or removed.
	State               string
	LeaderLastContactMS int64
	// Members is the configuration, nil when it could not be read (then no
	// member fields are shown).
	Members []Member
	// ConnectedSlaves counts the members the leader heard from recently.
	ConnectedSlaves int
}

// Member is one member of the configuration as INFO shows it.
type Member struct {
	ID, Addr, Suffrage string
	Self               bool
	// Contact is the leader's view of a peer (nil on a follower, and for
	// this node).
	Contact *MemberContact
}

// MemberContact is when the leader last heard from a member and how many
// entries it lags; both -1 when it has not heard from it yet.
type MemberContact struct {
	LastContactMS, Lag int64
}

// Fields writes r in INFO's order.
func (r Replication) Fields(f Field) {
	if !r.Leading {
		host, port, _ := net.SplitHostPort(r.LeaderAddr)
		link := "down"
		if r.LeaderAddr != "" {
			link = "up"
		}
		f("master_host", host)
		f("master_port", port)
		f("master_link_status", link)
	}
	f("cluster_leader_id", r.LeaderID)
	f("cluster_leader_addr", r.LeaderAddr)
	f("cluster_state", r.State)
	f("cluster_leader_last_contact_ms", r.LeaderLastContactMS)
	if r.Members == nil {
		return
	}
	f("cluster_members", len(r.Members))
	for i, m := range r.Members {
		var b strings.Builder
		fmt.Fprintf(&b, "id=%s,addr=%s,suffrage=%s", m.ID, m.Addr, m.Suffrage)
		switch {
		case m.Self:
			b.WriteString(",self=1")
		case m.Contact != nil:
			fmt.Fprintf(&b, ",last_contact_ms=%d,lag=%d", m.Contact.LastContactMS, m.Contact.Lag)
		}
		f("member"+strconv.Itoa(i), b.String())
	}
	if r.Leading {
		f("connected_slaves", r.ConnectedSlaves)
	}
}

func boolInt(v bool) int {
	if v {
		return 1
	}
	return 0
}
