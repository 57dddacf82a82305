package node

import (
	"cmp"
	"errors"
	"net"
	"time"

	"github.com/hashicorp/raft"

	"github.com/redcell/redcell/fsm"
	"github.com/redcell/redcell/group"
	"github.com/redcell/redcell/mux"
	"github.com/redcell/redcell/raftstore"
	"github.com/redcell/redcell/scripting"
	"github.com/redcell/redcell/slots"
)

// localGroup is one Raft group as this node runs it: the group's Raft state
// in the node's Pebble (its own key span, raftstore.DB.Group), its raft
// transport behind the shared port (raftstreams.go), its state machine with
// its own replicated clock, the group itself (proposer, batcher, apply
// goroutine) and the group as a server backend. A node runs one localGroup
// per group it is a member of (Node.groups, indexed by GroupID). What they
// share is the node's: the Pebble database and its WAL, the port, the guard,
// the identity and the forwarding client.
//
// Goroutines: fixed once Open returns; its parts have their own contracts.
type localGroup struct {
	id        slots.GroupID
	store     *raftstore.Store
	transport *raft.NetworkTransport
	fsm       *fsm.FSM
	group     *group.Group
	local     *group.Local
}

// groupStart is what openGroup needs of the node's start.
type groupStart struct {
	bootstrap bool
	unnamed   net.Listener // the mux's HeaderRaft listener: group 0's streams
	streams   *raftStreams
	gate      *raftGate
	slots     *slotMap // the groups' slots; the state machine checks them at apply
}

// Direct WAL syncs (raftstore/walsync.go) hold the processor for the whole
// fsync, so no other group can queue its append meanwhile, and every
// group's append then costs an fsync of its own; ordinary syncs let the
// groups' appends that arrive during one fsync share the next (measured on
// one node, four groups, CL.THROTTLE -c 50 -P 1: 1,134 fsyncs a second for
// 1,139 appends with direct syncs, 858 for 1,237 and 1.37x the decisions
// without). So only a node of one group syncs directly.

// openGroup opens group id: its store, transport, state machine and Raft
// group, bootstrapping it with this node as its only voter when gs says so.
// On error nothing of it is left running.
func (n *Node) openGroup(id slots.GroupID, cfg Config, gs groupStart) (lg *localGroup, err error) {
	lg = &localGroup{id: id}
	if lg.store, err = n.db.Group(id); err != nil {
		return nil, err
	}
	// With several groups every line of the group's raft, transport, state
	// machine and group logic names it (group=N): elections, snapshots,
	// installs and handovers happen per group, and a line that does not
	// say whose cannot be read. One group logs as before groups.
	log := n.log
	if gs.slots.groups > 1 {
		log = log.With("group", id)
	}
	lg.transport = raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream: &group.StreamLayer{
			Listener:  gs.gate.wrap(gs.streams.listener(id, gs.unnamed)),
			Advertise: n.Advertise,
			DialPeer: func(addr string, timeout time.Duration) (net.Conn, error) {
				return gs.streams.dial(id, addr, timeout)
			},
			Stop: n.stop, // Close closes it before the group's Shutdown
			// A peer that refuses, or accepts and then says nothing, may be
			// restarting: Raft's dials wait for it (group/peerredial.go).
			Unreachable: func(err error) bool { return errors.Is(err, mux.ErrUnreachable) },
		},
		MaxPool: 3,
		Timeout: 10 * time.Second,
		Logger:  group.NewRaftLogger(log),
	})
	defer func() {
		if err != nil {
			lg.transport.Close()
		}
	}()
	scripts := scripting.Config{MaxInstructions: cfg.ScriptMaxInstructions, MaxMemory: cfg.ScriptMaxMemory}
	var owns func(slots.Slot) bool
	if gs.slots.groups > 1 {
		owns = func(s slots.Slot) bool { return gs.slots.group(s) == id }
	}
	lg.fsm = fsm.New(fsm.Config{Stripes: cfg.Stripes, Logger: log, Scripts: scripts, ObserveApply: n.metrics.applyHook(), Owns: owns, OnFatal: func(err error) {
		select {
		case n.fatal <- err:
		default:
		}
	}})
	lg.group, err = group.Open(group.Config{
		WaitForElectionTimer: cfg.waitForElectionTimer,
		NodeID:               n.ID,
		Addr:                 raft.ServerAddress(n.Advertise.String()),
		Bootstrap:            gs.bootstrap,
		LogStore:             lg.store,
		Stable:               lg.store,
		Snapshots:            lg.store.SnapshotStore(2),
		Transport:            lg.transport,
		FSM:                  lg.fsm,
		Clock:                &group.Clock{},
		Logger:               log,
		MaxInflight:          cfg.MaxInflight,
		MaxInflightWithPeers: cfg.MaxInflightWithPeers,
		DirectWALSync:        cfg.DirectWALSync && gs.slots.groups == 1, // see groupStart
		Tune:                 cfg.tuneRaft,
		SnapshotLogBytes:     cmp.Or(cfg.SnapshotLogBytes, group.DefaultSnapshotLogBytes),
		Guard:                n.guard,
	})
	if err != nil {
		return nil, err
	}
	lg.local = group.NewLocal(lg.group, lg.store)
	return lg, nil
}

// tuneRaft applies the Config's Raft settings (flags, tests) to every group.
func (cfg Config) tuneRaft(rc *raft.Config) {
	if cfg.HeartbeatTimeout > 0 {
		rc.HeartbeatTimeout = cfg.HeartbeatTimeout
	}
	if cfg.ElectionTimeout > 0 {
		rc.ElectionTimeout = cfg.ElectionTimeout
	}
	if cfg.LeaderLeaseTimeout > 0 {
		rc.LeaderLeaseTimeout = cfg.LeaderLeaseTimeout
	}
	if cfg.MaxAppend > 0 {
		rc.MaxAppendEntries = cfg.MaxAppend
	}
	if cfg.SnapThresh > 0 {
		rc.SnapshotThreshold = cfg.SnapThresh
	}
	if cfg.SnapEvery > 0 {
		rc.SnapshotInterval = cfg.SnapEvery
	}
}

// shutdown stops the group's raft (after which nothing is applied) and its
// transport.
func (lg *localGroup) shutdown() error {
	err := lg.group.Shutdown()
	lg.transport.Close()
	return err
}
