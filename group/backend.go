package group

import (
	"strings"
	"sync"

	"github.com/redcell/redcell/nodeinfo"
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

// Transact commits an atomic unit (EXEC): for one group exactly Propose,
// whose call is one entry.
func (l *Local) Transact(reqs []request.Request, res []request.Result) error {
	return l.Propose(reqs, res)
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
	markUndeferrable(reqs) // deferred.go
	b.Ops, b.Results = reqs, res[:len(reqs)]
	err := l.g.Propose(b)
	// Propose has returned: the completer has answered b and no longer
	// touches it, so it may serve another caller.
	b.Ops, b.Results, b.err = nil, nil, nil
	l.batches.Put(b)
	if err == nil {
		l.g.resolveDeferred(reqs, res)
	}
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
	markUndeferrable(reqs) // deferred.go
	b.Ops, b.Results = reqs, res[:len(reqs)]
	l.g.ProposeAsync(b, func(err error) {
		b.Ops, b.Results, b.err = nil, nil, nil
		l.batches.Put(b)
		if err == nil && hasDeferred(res[:len(reqs)]) {
			// Running the script blocks: not on the group's completer.
			go func() {
				l.g.resolveDeferred(reqs, res)
				done(nil)
			}()
			return
		}
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
		fsyncs = l.store.WALStats().Syncs // the database's: a node with several groups counts them once
	}
	return c.Ops, c.Entries, fsyncs
}

// Memory is INFO memory's keyspace footprint.
func (l *Local) Memory() nodeinfo.Memory {
	st := l.g.fsm.Stats().Store
	return nodeinfo.Memory{
		KeyspaceIndexBytes:   int64(st.IndexBytes),
		KeyspaceEntryBytes:   int64(st.EntryBytes),
		KeyspaceArenaBytes:   int64(st.ArenaBytes),
		KeyspaceArenaGarbage: int64(st.ArenaGarbage),
	}
}

// Persistence is INFO persistence's loading progress, disk guard and log
// store figures.
func (l *Local) Persistence() nodeinfo.Persistence {
	var p nodeinfo.Persistence
	if l.g.Loading() {
		// As Redis while it loads: when it began, and (Redcell's own)
		// how far the state machine has got towards the log's last
		// index at start.
		p.Loading = &nodeinfo.Loading{
			StartTime:    l.g.load.began.Unix(),
			AppliedIndex: l.g.fsm.AppliedIndex(),
			TargetIndex:  l.g.load.target,
		}
	}
	if l.store == nil {
		return p
	}
	p.Disk = l.g.cfg.Guard.Disk()                 // the node's, shared by its groups
	ls, ws := l.store.Stats(), l.store.WALStats() // the group's log; the node's WAL
	p.Log = &nodeinfo.LogStore{
		Appends:            ls.Appends,
		EntriesAppended:    ls.EntriesAppended,
		Fsyncs:             ws.Syncs,
		WALSyncDirect:      ws.DirectWALSyncOn, // raftstore/walsync.go, alonemode.go
		WALSyncsDirect:     ws.DirectWALSyncs,
		WALSyncsOrdinary:   ws.OrdinaryWALSyncs,
		WALSyncsSlow:       ws.SlowDirectWALSyncs,
		WALSyncUsecTotal:   ws.WALSyncTime.Microseconds(),
		WALsZeroFilled:     uint64(ws.WALsZeroFilled), // raftstore/walprefill.go
		WALZeroFillsFailed: uint64(ws.WALZeroFillsFailed),
		BytesAppended:      ls.BytesAppended,
		BytesSinceSnapshot: ls.LogBytesSinceSnapshot,
		LastSnapshotBytes:  uint64(ls.LastSnapshotBytes),
	}
	return p
}

// Raft is INFO raft's group, proposer and state machine figures.
func (l *Local) Raft() nodeinfo.Raft {
	gs := l.g.Stats()
	fs := l.g.fsm.Stats()
	ct := l.g.CommitTimes() // committime.go: cumulative, per batch
	return nodeinfo.Raft{
		State:                strings.ToLower(gs.State),
		Ready:                gs.Ready,
		Term:                 gs.Term,
		LeaderID:             gs.LeaderID,
		LeaderAddr:           gs.LeaderAddr,
		Voters:               gs.Voters,
		CommitIndex:          gs.CommitIndex,
		AppliedIndex:         gs.AppliedIndex,
		LastLogIndex:         gs.LastLogIndex,
		LastSnapshotIndex:    gs.LastSnapshotIndex,
		EntriesProposed:      gs.EntriesProposed,
		OpsProposed:          gs.OpsProposed,
		LastEntryOps:         gs.LastEntryOps,
		MaxEntryOps:          gs.MaxEntryOps,
		EntryOps:             gs.EntryOps[:],
		BatchesTimed:         ct.Batches,
		BatchQueueUsec:       ct.Queue.Microseconds(),
		BatchLocalLogUsec:    ct.LocalLog.Microseconds(),
		BatchQuorumApplyUsec: ct.QuorumApply.Microseconds(),
		BatchMerging:         gs.Merging,
		BatchMergedCuts:      gs.MergedCuts,
		BatchMergeEnds:       gs.MergeEnds,
		ClientsInPlay:        gs.ClientsInPlay,
		Reads:                gs.Reads,
		LogCacheHits:         l.g.recent.hits.Load(),
		LogCacheMisses:       l.g.recent.misses.Load(),
		FSMEntriesApplied:    fs.Entries,
		FSMOpsApplied:        fs.Ops,
		FSMApplyUsec:         fs.ApplyNanos / 1000,
		FSMClockNS:           fs.Clock,

		FeatureLevel:          uint32(fs.FeatureLevel),
		FeatureLevelSupported: uint32(request.SupportedFeatureLevel),
	}
}

// Keyspace is INFO keyspace's db0 figures: live keys (lapsed ones are not
// counted, even before the sweeper reclaims them), those with an expiry,
// and their average remaining lifetime in ms.
func (l *Local) Keyspace() nodeinfo.Keyspace {
	n, expires, avg := l.g.fsm.Keyspace(l.g.cfg.Clock.Now())
	return nodeinfo.Keyspace{Keys: int64(n), Expires: int64(expires), AvgTTLms: avg}
}

// Replication is nil: the bare group has no cluster view to add (package
// node's status does).
func (l *Local) Replication() *nodeinfo.Replication { return nil }

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
