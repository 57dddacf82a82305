// Package group runs one Raft group: it owns the hashicorp/raft instance, the
// proposer that batches requests into log entries, leadership readiness, and
// linearizable reads. The server talks to a Group; the Group talks to the
// state machine (package fsm). See DESIGN.md.
package group

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/redcell/redcell/fsm"
	"github.com/redcell/redcell/guard"
	"github.com/redcell/redcell/raftstore"
	"github.com/redcell/redcell/request"
)

// Errors a request can meet on its way through the group. They are the
// values of package request (the leaf every layer imports), so the server
// recognises them without importing group, and turns them into Redis errors
// (CLUSTERDOWN, TRYAGAIN).
var (
	// ErrNoLeader: no leader is known, so nothing can be decided now.
	ErrNoLeader = request.ErrNoLeader
	// ErrNotReady: this node leads but has not yet applied its predecessors' entries.
	ErrNotReady = request.ErrNotReady
	// ErrOutcomeUnknown: leadership was lost after the entry was proposed; it
	// may still commit. Never report such a write as failed.
	ErrOutcomeUnknown = request.ErrOutcomeUnknown
	// ErrShutdown: the group is stopping.
	ErrShutdown = request.ErrShutdown
	// ErrStateMachine: the state machine refused the entry (see the log).
	ErrStateMachine = request.ErrStateMachine
)

// Config wires a Group. Store, Snapshots, Transport and FSM are owned by the
// caller, which closes them after Shutdown.
type Config struct {
	// WaitForElectionTimer leaves a lone voter's first election to raft's
	// heartbeat timer instead of starting it at once (alonestart.go): for
	// tests that must reach a restarted node before it has elected itself.
	WaitForElectionTimer bool

	NodeID    string
	Addr      raft.ServerAddress // this node's advertised Raft address
	LogStore  raft.LogStore
	Stable    raft.StableStore
	Snapshots raft.SnapshotStore
	Transport raft.Transport
	FSM       *fsm.FSM
	// Bootstrap starts a new one-node cluster with this node as its only
	// voter when the stores hold no Raft state. The caller decides (package
	// node does, from the data dir): a node whose state was lost must not
	// bootstrap, and a node joining a cluster waits for its leader instead.
	Bootstrap bool
	Clock     *Clock
	Logger    *slog.Logger

	// MaxInflight is how many entries the proposer keeps in raft at once
	// (DefaultMaxInflight when 0). The batcher (batcher.go) keeps at most
	// one of them waiting for the local disk, so more slots no longer make
	// batches smaller: they let the next entry go to the disk while earlier
	// ones wait for a follower's fsync and for apply.
	MaxInflight int
	// MaxInflightWithPeers is the in-flight limit while this node has peers
	// (DefaultMaxInflightWithPeers when 0; at most MaxInflight): each entry
	// then costs a round of RPCs and an fsync on every node, and fewer,
	// larger entries measured faster (alonemode.go).
	MaxInflightWithPeers int
	// MaxEntryBytes bounds one log entry; the proposer starts a new entry
	// when the next batch would not fit.
	MaxEntryBytes int
	// WaitForLeader is how long a request waits for a ready leader before it
	// is answered CLUSTERDOWN or TRYAGAIN.
	WaitForLeader time.Duration
	// SnapshotLogBytes: snapshot whenever the log written since the newest
	// snapshot reaches this many bytes, or twice the newest snapshot's
	// size if that is larger (see snapshots.go; DefaultSnapshotLogBytes). 0 leaves
	// snapshots to raft's entry count. Needs LogStore to be a
	// *raftstore.Store, which counts the bytes.
	SnapshotLogBytes uint64
	// Tune, when set, adjusts the raft configuration before use (tests, flags).
	Tune func(*raft.Config)

	// Guard is the node's memory, disk and storage verdicts (package
	// guard), shared by every group of the node: while it refuses writes
	// the group proposes nothing (ErrDiskFull) and a leader hands its
	// leadership away (diskhandover.go); above maxmemory new keys are
	// refused (memoryguard.go). nil: no guard.
	Guard *guard.Guard
	// DirectWALSync lets the log's fsyncs bypass Go's scheduler while this
	// node is alone (alonemode.go, raftstore/walsync.go); unset, they are
	// ordinary blocking system calls. Only with a *raftstore.Store
	// LogStore.
	DirectWALSync bool
}

// appendAnnouncer is a log store told that an entry is on its way to it.
type appendAnnouncer interface{ AppendComing() }

// Group is one Raft group on this node.
//
// Goroutines: Propose and Read are called by connection goroutines, any
// number at once; each blocks until its requests are answered. Entries are
// built by whichever goroutine finds an in-flight slot free (a connection when
// idle, the completer under load); one completer goroutine waits for entries
// in order, and one watcher goroutine follows leadership.
type Group struct {
	cfg  Config
	log  *slog.Logger
	raft *raft.Raft
	fsm  *fsm.FSM

	// Leadership readiness: ready is true while this node leads and has
	// applied everything committed before its term began. readyCh is closed
	// when ready becomes true; it is replaced when leadership is lost.
	ready   atomic.Bool
	readyMu sync.Mutex
	readyCh chan struct{}

	// Batching (see proposer.go): the queue of waiting batches, what
	// decides when it is cut (batcher.go), and the entries in the order
	// raft applies them.
	qmu       sync.Mutex
	queue     []*Batch
	proposeMu sync.Mutex // held while building and proposing one entry
	batcher   batcher
	inflight  chan *inflightEntry
	encoders  chan *fsm.Encoder
	stamp     int64       // last stamp; guarded by proposeMu
	times     commitTimes // where batches' time goes (committime.go)
	// appendHint is the log store's announcement of an entry on its way
	// (raftstore.Store.AppendComing), when it has one: the groups of a
	// node that share fsyncs wait for each other's appends.
	appendHint appendAnnouncer

	stopping atomic.Bool
	stopCh   chan struct{}
	// completerDone is closed when runCompleter returns (it is not in wg:
	// see awaitCompleter); waiting is the entry it waits on.
	completerDone chan struct{}
	waiting       atomic.Pointer[inflightEntry]
	// readGate keeps VerifyLeader calls and raft.Shutdown apart: a
	// VerifyLeader sent after shutdown can be accepted by raft's buffered
	// channel and never answered (hashicorp/raft#498).
	readGate sync.RWMutex
	wg       sync.WaitGroup
	notifyCh chan bool
	// leaderSig wakes requests waiting for a leader (see leadership.go).
	leaderSig *leaderSignal
	// alonePoke asks runAloneMode to read the configuration now.
	alonePoke chan struct{}
	// recent keeps copies of the newest entries for raft's reads while the
	// node has peers (recentlogs.go).
	recent *recentLogs
	// origin is put in the Extensions of every entry this node proposes
	// (fsm.SetOrigin).
	origin []byte

	stats groupStats

	// load is the loading status after a restart (loading.go).
	load loadState
	// standing: removed from the cluster, or without a leader (standing.go).
	standing standing
	// maxTrailingLogs is the configured TrailingLogs, the most the byte
	// trigger lets raft keep behind a snapshot (snapshots.go).
	maxTrailingLogs uint64
	// reads is ReadAsync's queue (async.go).
	reads asyncReads
	// handover is the state of a graceful leadership handover (handover.go).
	handover handover
}

type groupStats struct {
	entries     atomic.Uint64 // entries proposed
	ops         atomic.Uint64 // requests proposed
	maxEntryOps atomic.Uint64
	lastEntry   atomic.Uint64 // ops in the last entry
	// entryOps counts entries by the requests they carry: bucket i holds
	// entries of 2^i to 2^(i+1)-1 requests (the last bucket: more).
	entryOps [EntryOpsBuckets]atomic.Uint64
	reads    atomic.Uint64
}

// Open starts the group. With Raft state in the stores it resumes; without,
// it bootstraps a one-node cluster if cfg.Bootstrap is set, and otherwise
// waits as a member with no configuration until a leader contacts it.
func Open(cfg Config) (*Group, error) {
	if cfg.MaxInflight <= 0 {
		cfg.MaxInflight = DefaultMaxInflight
	}
	if cfg.MaxInflightWithPeers <= 0 {
		cfg.MaxInflightWithPeers = DefaultMaxInflightWithPeers
	}
	// Every limit stays within the slots the completer's queue has room for.
	cfg.MaxInflightWithPeers = min(cfg.MaxInflightWithPeers, cfg.MaxInflight)
	if cfg.MaxEntryBytes <= 0 {
		cfg.MaxEntryBytes = 4 << 20
	}
	if cfg.WaitForLeader <= 0 {
		cfg.WaitForLeader = 5 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Clock == nil {
		cfg.Clock = &Clock{}
	}
	g := &Group{
		cfg:       cfg,
		log:       cfg.Logger,
		fsm:       cfg.FSM,
		readyCh:   make(chan struct{}),
		inflight:  make(chan *inflightEntry, cfg.MaxInflight),
		encoders:  make(chan *fsm.Encoder, cfg.MaxInflight+1),
		stopCh:    make(chan struct{}),
		notifyCh:  make(chan bool, 16),
		leaderSig: newLeaderSignal(),
		alonePoke: make(chan struct{}, 1),
		recent:    newRecentLogs(),
		standing:  standing{opened: time.Now()},
	}
	for i := 0; i < cfg.MaxInflight+1; i++ {
		g.encoders <- &fsm.Encoder{}
	}
	g.batcher.init(cfg.MaxInflight, g.lingerOver) // the limit until runAloneMode has looked
	if st, ok := cfg.LogStore.(*raftstore.Store); ok {
		g.batcher.syncHoldsP = st.DirectWALSyncActive
	}

	rc := raftConfig(cfg, g.notifyCh)
	g.maxTrailingLogs = rc.TrailingLogs
	g.handover.electionTimeout = rc.ElectionTimeout
	existing, err := raft.HasExistingState(cfg.LogStore, cfg.Stable, cfg.Snapshots)
	if err != nil {
		return nil, fmt.Errorf("group: reading raft state: %w", err)
	}
	// With Raft state the node is loading until its state machine holds
	// what the log held at start (loading.go). Raft does not restore the
	// newest snapshot itself (NoSnapshotRestoreOnStart, which would block
	// NewRaft and so the whole node for as long as it takes): the group
	// restores that same snapshot, the first List returns, in the
	// background, and the state machine holds raft's calls until it is done.
	var startSnap *raft.SnapshotMeta
	if existing {
		snaps, err := cfg.Snapshots.List()
		if err != nil {
			return nil, fmt.Errorf("group: listing snapshots: %w", err)
		}
		if len(snaps) > 0 {
			startSnap = snaps[0]
		}
		if g.load.target, err = cfg.LogStore.LastIndex(); err != nil {
			return nil, fmt.Errorf("group: reading the log: %w", err)
		}
		g.load.began = time.Now()
		g.load.restores = cfg.FSM.Restores()
		g.load.active.Store(true)
	}
	g.load.done = make(chan struct{})
	if !existing {
		close(g.load.done)
	}
	if startSnap != nil {
		cfg.FSM.HoldForStartupRestore()
	}
	// The tag that tells this node's own entries from the others
	// (fsm.SetOrigin): random per process, so that no other node and no
	// earlier run of this one tags its entries alike (a collision would only
	// allocate results nobody reads).
	g.origin = binary.LittleEndian.AppendUint64(nil, rand.Uint64())
	cfg.FSM.SetOrigin(g.origin)
	g.appendHint, _ = cfg.LogStore.(appendAnnouncer)
	logs := &watchedLogStore{LogStore: cfg.LogStore, batcher: &g.batcher, times: &g.times, recent: g.recent, own: g.origin}
	r, err := raft.NewRaft(rc, cfg.FSM, logs, cfg.Stable, cfg.Snapshots, cfg.Transport)
	if err != nil {
		if startSnap != nil {
			cfg.FSM.AbortStartup(nil)
		}
		return nil, fmt.Errorf("group: starting raft: %w", err)
	}
	g.raft = r
	g.loadStanding()
	if !existing && cfg.Bootstrap {
		boot := raft.Configuration{Servers: []raft.Server{{ID: rc.LocalID, Address: cfg.Addr, Suffrage: raft.Voter}}}
		if err := r.BootstrapCluster(boot).Error(); err != nil {
			_ = r.Shutdown().Error()
			return nil, fmt.Errorf("group: bootstrapping a one-node cluster: %w", err)
		}
		g.log.Info("bootstrapped a new one-node cluster", "node_id", cfg.NodeID, "addr", cfg.Addr)
	}
	if !cfg.WaitForElectionTimer {
		g.campaignIfAlone()
	}
	if startSnap != nil {
		g.wg.Add(1)
		go g.restoreAtStart(startSnap)
	}
	if existing {
		// Nothing to load (no snapshot, no command in the log): say so
		// before anyone asks.
		if why := g.loaded(); why != "" {
			g.endLoading(why)
		} else {
			g.wg.Add(1)
			go g.runLoading()
		}
	}
	if cfg.Guard != nil {
		g.wg.Add(1)
		go g.runDiskHandover()
	}
	if st, ok := cfg.LogStore.(*raftstore.Store); ok && cfg.SnapshotLogBytes > 0 {
		g.wg.Add(1)
		go g.runSnapshotTrigger(st)
	}
	st, _ := cfg.LogStore.(*raftstore.Store) // nil: no direct WAL syncs to switch
	g.wg.Add(1)
	go g.runAloneMode(st)
	g.wg.Add(1)
	go g.runStanding()
	r.RegisterObserver(g.leaderSig.observer)
	g.wg.Add(3)
	go g.runLeaderSignal()
	go g.runWatcher()
	g.completerDone = make(chan struct{})
	go g.runCompleter()
	go g.runLogWatcher()
	return g, nil
}

// Raft timeouts for a LAN (flags in cmd/redcell override them; DESIGN.md,
// "Failover and the Raft timeouts", says how to set them for a WAN).
//
// How they become the time to a new leader, in hashicorp/raft v1.8.0
// (raft.go runFollower, runCandidate, requestPreVote): a follower checks
// every random HeartbeatTimeout to 2x whether it has heard from the leader
// within HeartbeatTimeout, so it notices a dead leader 1 to 3 heartbeat
// timeouts after the last heartbeat. Its pre-vote is refused by a follower
// that still knows a leader, so the election succeeds once the second
// follower has noticed too (in a 3-node cluster the later of two such
// draws: 2.2x at the median), or, when the first candidate holds the
// longer log, at its next try, ElectionTimeout to 2x later. The new
// leader's barrier (runWatcher), the follower learning of it from its first
// heartbeat (the router wakes on raft's observation) and the forwarding hop
// add a few ms. So the timeouts are the failover: after kill -9 of the
// leader with clients on every node, the longest gap without a decision was
// 0.38-1.02 s at 300 ms and is 0.14-0.33 s at 100 ms (two runs of 20 kills
// each, bench -mode failover; 0.15-0.29 s beside two busy loops).
//
// What keeps them from electing when nothing failed: pre-vote (a follower
// that merely missed heartbeats asks first and is refused by the others,
// who still hear the leader, so it never raises the term), and heartbeats
// every HeartbeatTimeout/10, answered by the follower's transport goroutine
// off its disk path. What remains is the leader's own process stalling
// longer than LeaderLeaseTimeout: it then steps down (check quorum, which
// also makes a leader cut off by a partition stop deciding within the
// lease). On the 2-core machine, with the three nodes, their clients and
// two or four busy loops: no election in minutes; only while other login
// sessions' builds took most of the CPUs (load average 8-16) did stalls
// past 100 ms depose a leader now and then. Such hosts should raise the
// timeouts.
const (
	// DefaultMaxInflight: one entry on the leader's disk, one waiting for a
	// follower's fsync, one being applied, and one spare.
	DefaultMaxInflight = 4
	// DefaultMaxInflightWithPeers: with peers, one entry at a time, which
	// carries everything that queued while the previous one was committed
	// (alonemode.go).
	DefaultMaxInflightWithPeers = 1

	DefaultHeartbeatTimeout   = 100 * time.Millisecond
	DefaultElectionTimeout    = 100 * time.Millisecond
	DefaultLeaderLeaseTimeout = 100 * time.Millisecond
)

func raftConfig(cfg Config, notify chan bool) *raft.Config {
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(cfg.NodeID)
	rc.Logger = NewRaftLogger(cfg.Logger)
	rc.NotifyCh = notify
	// The proposer already packs thousands of requests into one entry; raft
	// batches the few entries in flight into one disk write as well.
	rc.BatchApplyCh = true
	rc.MaxAppendEntries = 64
	// Snapshots copy the live keyspace; every 16k entries (tens of seconds
	// of full load) keeps the log short without snapshotting constantly.
	rc.SnapshotThreshold = 16384
	rc.SnapshotInterval = 30 * time.Second
	rc.TrailingLogs = 10240
	// The group restores the startup snapshot itself, in the background
	// (loading.go); raft only takes its metadata.
	rc.NoSnapshotRestoreOnStart = true
	rc.HeartbeatTimeout = DefaultHeartbeatTimeout
	rc.ElectionTimeout = DefaultElectionTimeout
	// Check quorum: a leader that has heard from no quorum for this long
	// steps down (at most HeartbeatTimeout, raft insists).
	rc.LeaderLeaseTimeout = DefaultLeaderLeaseTimeout
	// Pre-vote (raft's default, stated here because the short timeouts
	// above rely on it): a follower that times out first asks whether it
	// could win, and only then raises the term, so a follower that was
	// merely slow to hear heartbeats cannot depose a healthy leader.
	rc.PreVoteDisabled = false
	if cfg.Tune != nil {
		cfg.Tune(rc)
	}
	return rc
}

// runWatcher follows leadership. On becoming leader it waits on a barrier
// (everything committed before this term is applied), restarts the stamp
// clock from the replicated clock, and only then opens for requests.
func (g *Group) runWatcher() {
	defer g.wg.Done()
	for {
		select {
		case <-g.stopCh:
			return
		case leader := <-g.notifyCh:
			if !leader {
				g.setReady(false)
				continue
			}
			if err := g.raft.Barrier(0).Error(); err != nil {
				g.log.Warn("barrier after election failed; staying not ready", "err", err)
				continue
			}
			// The barrier does not wait for the startup snapshot when no
			// command follows it (raft applies a barrier without calling
			// the state machine): wait for it here, or a read could see
			// the state before the restore.
			select {
			case <-g.fsm.Started():
			case <-g.stopCh:
				return
			}
			if g.raft.State() != raft.Leader {
				continue
			}
			g.setReady(true)
			g.log.Info("leader ready", "term", g.raft.CurrentTerm(), "applied_index", g.fsm.AppliedIndex())
		}
	}
}

func (g *Group) setReady(v bool) {
	g.readyMu.Lock()
	defer g.readyMu.Unlock()
	if g.ready.Load() == v {
		return
	}
	if v {
		g.endLoading("ready leader")
	}
	g.ready.Store(v)
	if v {
		close(g.readyCh)
	} else {
		g.readyCh = make(chan struct{})
	}
}

// awaitReady returns nil once this node is a ready leader, or the reason it
// cannot serve: ErrNotLeader at once when another node is known to lead (the
// caller forwards), otherwise ErrNotReady or ErrNoLeader after waiting up to
// WaitForLeader for this node to become a ready leader. Every change of
// leadership wakes it to look again.
func (g *Group) awaitReady() error {
	if g.handover.on.Load() {
		return ErrNotLeader // handing over (handover.go): retry at the next leader
	}
	if g.ready.Load() {
		return nil
	}
	t := time.NewTimer(g.cfg.WaitForLeader)
	defer t.Stop()
	for {
		if g.stopping.Load() {
			return ErrShutdown
		}
		changed := g.LeaderChanged() // before reading the state it signals
		g.readyMu.Lock()
		ch := g.readyCh
		g.readyMu.Unlock()
		if g.ready.Load() {
			return nil
		}
		if addr, _ := g.raft.LeaderWithID(); addr != "" && addr != g.cfg.Addr && g.raft.State() != raft.Leader {
			return ErrNotLeader // a leader elsewhere decides; the caller forwards
		}
		select {
		case <-ch:
			return nil
		case <-g.stopCh:
			return ErrShutdown
		case <-changed:
			continue
		case <-t.C:
		}
		if g.raft.State() == raft.Leader {
			return ErrNotReady
		}
		return ErrNoLeader
	}
}

// Read answers a run of read requests (read codes; a write code answers
// request.ErrInvalidOp) linearizably, filling res (len(res) >= len(reads)):
// after confirming that this node still leads (so no other leader can have
// acknowledged a write this node lacks; and every write acknowledged here is
// already applied, since replies leave only after apply), it reads the local
// state. One leadership check serves the whole run.
func (g *Group) Read(reads []request.Request, res []request.Result) error {
	if err := g.awaitReady(); err != nil {
		return err
	}
	if err := g.verifyLeader(); err != nil {
		return err
	}
	g.stats.reads.Add(uint64(len(reads)))
	now := g.cfg.Clock.Now()
	for i := range reads {
		g.fsm.Read(&reads[i], now, &res[i])
	}
	return nil
}

// ReadLocal answers reads from the local state at once, leader or not: what
// this node has applied, judged at max(its clock, the replicated clock).
// Stale by the replication lag on a follower, never ahead of the log.
func (g *Group) ReadLocal(reads []request.Request, res []request.Result) error {
	if g.stopping.Load() {
		return ErrShutdown
	}
	g.stats.reads.Add(uint64(len(reads)))
	now := g.cfg.Clock.Now()
	for i := range reads {
		g.fsm.Read(&reads[i], now, &res[i])
	}
	return nil
}

func (g *Group) verifyLeader() error {
	g.readGate.RLock()
	defer g.readGate.RUnlock()
	if g.stopping.Load() {
		return ErrShutdown
	}
	if err := g.raft.VerifyLeader().Error(); err != nil {
		if errors.Is(err, raft.ErrRaftShutdown) {
			return ErrShutdown
		}
		// A read has no effect: whatever raft says (not the leader,
		// leadership lost on the way), it may be asked again at the
		// leader (handover.go).
		return ErrNoLeader
	}
	return nil
}

// mapRaftErr turns raft's answer to an Apply (or a configuration change)
// into the request failure it amounts to. ErrNotLeader and
// ErrLeadershipTransferInProgress are answered before the entry reaches
// the log: nothing happened, retry (ErrNoLeader). ErrLeadershipLost is
// answered for an entry already in this leader's log, which a later leader
// may commit: the outcome is unknown (handover.go has the rule).
func mapRaftErr(err error) error {
	switch {
	case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrLeadershipTransferInProgress):
		return ErrNoLeader
	case errors.Is(err, raft.ErrLeadershipLost):
		return ErrOutcomeUnknown
	case errors.Is(err, raft.ErrRaftShutdown):
		return ErrShutdown
	}
	return fmt.Errorf("%w: %v", ErrOutcomeUnknown, err)
}

// Raft exposes the raft instance for INFO and administration.
func (g *Group) Raft() *raft.Raft { return g.raft }

// Ready reports whether this node is a ready leader.
func (g *Group) Ready() bool { return g.ready.Load() }

// Shutdown stops the proposer (queued requests are answered ErrShutdown) and
// raft. It does not close the stores or the transport.
func (g *Group) Shutdown() error {
	if !g.stopping.CompareAndSwap(false, true) {
		return nil
	}
	close(g.stopCh)
	g.stopProposing()
	g.wg.Wait()
	g.awaitCompleter()
	g.setReady(false)
	g.readGate.Lock()
	defer g.readGate.Unlock()
	return g.raft.Shutdown().Error()
}

// Stats is what INFO shows about the group.
type Stats struct {
	State                           string
	Term                            uint64
	LeaderID, LeaderAddr            string
	CommitIndex, AppliedIndex       uint64
	LastLogIndex, LastSnapshotIndex uint64
	Ready                           bool
	EntriesProposed                 uint64 // log entries built by the proposer
	OpsProposed                     uint64 // requests carried by them
	LastEntryOps, MaxEntryOps       uint64
	// EntryOps is the distribution of requests per entry: EntryOps[i]
	// counts entries of 2^i to 2^(i+1)-1 requests (the last: 2^i or more).
	EntryOps [EntryOpsBuckets]uint64
	Reads    uint64 // linearizable reads served
	Voters   int
	// The batcher's merge of cohorts (batcher.go, rule 4): whether it is
	// on, the cuts made while it was, the times it lost to cutting without
	// it (a trial of it that lost, or a trial without it that won), and
	// the clients in play.
	Merging               bool
	MergedCuts, MergeEnds uint64
	ClientsInPlay         int64
}

// EntryOpsBuckets is the number of power-of-two buckets of Stats.EntryOps:
// up to 2^16 requests and more, which covers a 4 MiB entry.
const EntryOpsBuckets = 17

// Counters are the proposer's cumulative counters, cheap to read often.
type Counters struct{ Entries, Ops uint64 }

// Counters reads the proposer's counters without touching raft.
func (g *Group) Counters() Counters {
	return Counters{Entries: g.stats.entries.Load(), Ops: g.stats.ops.Load()}
}

// Stats samples the group's counters and raft's view of itself.
func (g *Group) Stats() Stats {
	addr, id := g.raft.LeaderWithID()
	st := Stats{
		State:           g.raft.State().String(),
		Term:            g.raft.CurrentTerm(),
		LeaderID:        string(id),
		LeaderAddr:      string(addr),
		CommitIndex:     g.raft.CommitIndex(),
		AppliedIndex:    g.raft.AppliedIndex(),
		LastLogIndex:    g.raft.LastIndex(),
		Ready:           g.ready.Load(),
		EntriesProposed: g.stats.entries.Load(),
		OpsProposed:     g.stats.ops.Load(),
		LastEntryOps:    g.stats.lastEntry.Load(),
		MaxEntryOps:     g.stats.maxEntryOps.Load(),
		Reads:           g.stats.reads.Load(),
		Merging:         g.batcher.merging.Load(),
		MergedCuts:      g.batcher.mergedCuts.Load(),
		MergeEnds:       g.batcher.mergeEnds.Load(),
		ClientsInPlay:   g.batcher.inPlay.Load(),
	}
	for i := range st.EntryOps {
		st.EntryOps[i] = g.stats.entryOps[i].Load()
	}
	if v, err := strconv.ParseUint(g.raft.Stats()["last_snapshot_index"], 10, 64); err == nil {
		st.LastSnapshotIndex = v
	}
	if f := g.raft.GetConfiguration(); f.Error() == nil {
		for _, s := range f.Configuration().Servers {
			if s.Suffrage == raft.Voter {
				st.Voters++
			}
		}
	}
	return st
}
