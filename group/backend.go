package group

import (
	"fmt"
	"strings"
	"sync"

	"github.com/redcell/redcell/raftstore"
	"github.com/redcell/redcell/request"
)

// Local is this node's Raft group as the server's backend roles (it
// implements server.Decider, Reader, Status and TestClock, whose
// documentation gives the contract; this package does not import server):
// writes go through the group's proposer, reads through its linearizable
// read path, INFO reads the group, its state machine and the log store, and
// DEBUG CLOCK moves the group's stamping clock. ProposeAsync and ReadAsync
// serve the forwarding server (async.go).
//
// Goroutines: every method may be called from any goroutine, any number at
// once. Propose and Read block as Group.Propose and Group.Read do; the
// async forms return at once and call back (async.go); the others read
// counters and never wait on raft's log or network.
type Local struct {
	g     *Group
	store *raftstore.Store // log figures for INFO; may be nil
	// batches are the Batches Propose hands the proposer: one per call in
	// flight, reused, so a pipeline costs no allocation here.
	batches sync.Pool
}

// NewLocal makes g (with the log store it runs on, for INFO; nil in tests
// that have none) a backend for the server.
func NewLocal(g *Group, store *raftstore.Store) *Local {
	return &Local{g: g, store: store}
}

// Propose commits reqs through the log in one entry and fills res (len(res)
// >= len(reqs)); see Group.Propose. The requests and results are the
// caller's: a pooled Batch carries them to the proposer (no copy) and holds
// no reference to them once Propose returns.
func (l *Local) Propose(reqs []request.Request, res []request.Result) error {
	if len(reqs) == 0 {
		return nil
	}
	b, _ := l.batches.Get().(*Batch)
	if b == nil {
		b = NewBatch()
	}
	b.Ops, b.Results = reqs, res[:len(reqs)]
	err := l.g.Propose(b)
	// Propose has returned: the completer has answered b and no longer
	// touches it, so it may serve another caller.
	b.Ops, b.Results, b.err = nil, nil, nil
	l.batches.Put(b)
	return err
}

// ProposeAsync is Propose for a caller that must not block: done is called
// once, from the group's completer (or another group goroutine; see
// Group.ProposeAsync), when res is filled or the call failed. reqs and res
// are the caller's again once done is called.
func (l *Local) ProposeAsync(reqs []request.Request, res []request.Result, done func(error)) {
	b, _ := l.batches.Get().(*Batch)
	if b == nil {
		b = NewBatch()
	}
	b.Ops, b.Results = reqs, res[:len(reqs)]
	l.g.ProposeAsync(b, func(err error) {
		b.Ops, b.Results, b.err = nil, nil, nil
		l.batches.Put(b)
		done(err)
	})
}

// ReadAsync is Read with a completion callback; see Group.ReadAsync.
func (l *Local) ReadAsync(reqs []request.Request, res []request.Result, done func(error)) {
	l.g.ReadAsync(reqs, res, done)
}

// Read answers read requests linearizably; see Group.Read.
func (l *Local) Read(reqs []request.Request, res []request.Result) error {
	if len(reqs) == 0 {
		return nil
	}
	return l.g.Read(reqs, res)
}

// ReadLocal answers reads from this node's applied state without
// confirming leadership (READONLY connections); see Group.ReadLocal.
func (l *Local) ReadLocal(reqs []request.Request, res []request.Result) error {
	return l.g.ReadLocal(reqs, res)
}

// Leading reports whether this node is a ready leader.
func (l *Local) Leading() bool { return l.g.Ready() }

// Counters are the proposer's cumulative requests and entries, and the log
// store's fsyncs.
func (l *Local) Counters() (requests, entries, fsyncs uint64) {
	c := l.g.Counters()
	if l.store != nil {
		fsyncs = l.store.Stats().Syncs
	}
	return c.Ops, c.Entries, fsyncs
}

// Info reports the group's, the state machine's and the log store's INFO
// fields of section, in INFO's order.
func (l *Local) Info(section string, field func(name string, value any)) {
	switch section {
	case "memory":
		st := l.g.fsm.Stats().Store
		field("keyspace_index_bytes", st.IndexBytes)
		field("keyspace_entry_bytes", st.EntryBytes)
		field("keyspace_arena_bytes", st.ArenaBytes)
		field("keyspace_arena_garbage", st.ArenaGarbage)
	case "persistence":
		if l.g.Loading() {
			// As Redis while it loads: when it began, and (Redcell's own)
			// how far the state machine has got towards the log's last
			// index at start.
			field("loading_start_time", l.g.load.began.Unix())
			field("loading_applied_index", l.g.fsm.AppliedIndex())
			field("loading_target_index", l.g.load.target)
		}
		if l.store == nil {
			return
		}
		if l.g.cfg.MinFreeDisk > 0 {
			field("log_disk_free_bytes", l.g.guard.free.Load())
			field("log_disk_reserve_bytes", l.g.cfg.MinFreeDisk)
			field("log_disk_low", boolInt(l.g.guard.low.Load()))
			field("log_disk_low_events", l.g.guard.trips.Load())
		}
		ls := l.store.Stats()
		field("log_appends", ls.Appends)
		field("log_entries_appended", ls.EntriesAppended)
		field("log_fsyncs", ls.Syncs)
		walSync := "ordinary" // raftstore/walsync.go, alonemode.go
		if ls.DirectWALSyncOn {
			walSync = "direct"
		}
		field("log_wal_sync", walSync)
		field("log_wal_syncs_direct", ls.DirectWALSyncs)
		field("log_wal_syncs_ordinary", ls.OrdinaryWALSyncs)
		field("log_wal_syncs_slow", ls.SlowDirectWALSyncs)
		field("log_wal_sync_usec_total", ls.WALSyncTime.Microseconds())
		field("log_wals_zero_filled", ls.WALsZeroFilled) // raftstore/walprefill.go
		field("log_wal_zero_fills_failed", ls.WALZeroFillsFailed)
		field("log_bytes_appended", ls.BytesAppended)
		field("log_bytes_since_snapshot", ls.LogBytesSinceSnapshot)
		field("last_snapshot_bytes", ls.LastSnapshotBytes)
	case "raft":
		gs := l.g.Stats()
		fs := l.g.fsm.Stats()
		field("raft_state", strings.ToLower(gs.State))
		field("raft_ready", boolInt(gs.Ready))
		field("raft_term", gs.Term)
		field("raft_leader_id", gs.LeaderID)
		field("raft_leader_addr", gs.LeaderAddr)
		field("raft_voters", gs.Voters)
		field("raft_commit_index", gs.CommitIndex)
		field("raft_applied_index", gs.AppliedIndex)
		field("raft_last_log_index", gs.LastLogIndex)
		field("raft_last_snapshot_index", gs.LastSnapshotIndex)
		field("raft_entries_proposed", gs.EntriesProposed)
		field("raft_ops_proposed", gs.OpsProposed)
		avg := 0.0
		if gs.EntriesProposed > 0 {
			avg = float64(gs.OpsProposed) / float64(gs.EntriesProposed)
		}
		field("raft_avg_ops_per_entry", fmt.Sprintf("%.2f", avg))
		field("raft_last_entry_ops", gs.LastEntryOps)
		field("raft_max_entry_ops", gs.MaxEntryOps)
		field("raft_entry_ops_histogram", entryOpsHistogram(gs.EntryOps))
		ct := l.g.CommitTimes() // committime.go: cumulative, per batch
		field("raft_batches_timed", ct.Batches)
		field("raft_batch_queue_usec_total", ct.Queue.Microseconds())
		field("raft_batch_local_log_usec_total", ct.LocalLog.Microseconds())
		field("raft_batch_quorum_apply_usec_total", ct.QuorumApply.Microseconds())
		field("raft_reads", gs.Reads)
		field("raft_log_cache_hits", l.g.recent.hits.Load())
		field("raft_log_cache_misses", l.g.recent.misses.Load())
		field("fsm_entries_applied", fs.Entries)
		field("fsm_ops_applied", fs.Ops)
		field("fsm_clock_ns", fs.Clock)
	case "keyspace":
		// As Redis's INFO keyspace: present once the keyspace has a live
		// key; lapsed keys are not counted (even before the sweeper
		// reclaims them), every key has a lifetime (expires = keys), and
		// avg_ttl is their average remaining lifetime in ms.
		if n, avg := l.g.fsm.Keyspace(l.g.cfg.Clock.Now()); n > 0 {
			field("db0", fmt.Sprintf("keys=%d,expires=%d,avg_ttl=%d", n, n, avg))
		}
	}
}

// entryOpsHistogram formats the distribution of requests per entry as
// "1=n,2=n,4=n,...": the count of entries carrying from that many requests
// up to (not including) the next label; the last label means "or more".
// Empty buckets are left out.
func entryOpsHistogram(h [EntryOpsBuckets]uint64) string {
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

func boolInt(v bool) int {
	if v {
		return 1
	}
	return 0
}

// Loading reports whether the node is still loading its state after a
// restart: restoring its snapshot and replaying its log (Group.Loading; the
// rule is in DESIGN.md). An atomic load.
func (l *Local) Loading() bool { return l.g.Loading() }

// Clock is the replicated clock (the state machine's).
func (l *Local) Clock() int64 { return l.g.fsm.Clock() }

// SetClock freezes the stamping clock at unixNS.
func (l *Local) SetClock(unixNS int64) { l.g.cfg.Clock.Set(unixNS) }

// AdvanceClock moves the stamping clock forward by ns, frozen.
func (l *Local) AdvanceClock(ns int64) { l.g.cfg.Clock.Advance(ns) }

// RealClock lets the stamping clock follow the wall clock.
func (l *Local) RealClock() { l.g.cfg.Clock.Real() }
