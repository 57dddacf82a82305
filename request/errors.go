package request

import "errors"

// Why a batch of requests got no results. These are failures of the path to
// the state machine, not of a request in it (those are ErrCodes in a
// Result): whatever carries requests to the log and back — the local Raft
// group today, a follower forwarding to its leader next — returns one of
// these for the whole batch, and the server turns each into the Redis error
// clients retry on (commands/errors.go). They live here, in the leaf every
// layer imports, so that no layer has to import another to recognise them.
var (
	// ErrNoLeader: no leader is known, so nothing can be decided now.
	// Nothing happened.
	ErrNoLeader = errors.New("no leader")
	// ErrNotReady: this node leads but has not yet applied its
	// predecessors' entries. Nothing happened.
	ErrNotReady = errors.New("leader not ready")
	// ErrOutcomeUnknown: leadership was lost after the entry was proposed;
	// it may still commit. Never report such a write as failed.
	ErrOutcomeUnknown = errors.New("outcome unknown")
	// ErrShutdown: the node is stopping. Nothing happened.
	ErrShutdown = errors.New("shut down")
	// ErrStateMachine: the state machine stopped (an entry it cannot
	// decode; see the node's log).
	ErrStateMachine = errors.New("state machine stopped")
	// ErrDiskFull: the leader's log disk is below its free-space reserve,
	// so it proposes nothing until space returns. Nothing happened. Returned
	// wrapped in a *DiskFullError that says where and how much.
	ErrDiskFull = errors.New("log disk full")
	// ErrRemoved: this node was taken out of the cluster's configuration
	// (RAFT REMOVE), so no leader will ever decide anything for it again
	// until it is added back. Nothing happened. Returned wrapped in a
	// *RemovedError that names the node.
	ErrRemoved = errors.New("removed from the cluster")
)

// DiskFullError is ErrDiskFull with what an operator needs to act: which
// disk, how much is free, what the reserve is.
type DiskFullError struct{ Detail string }

func (e *DiskFullError) Error() string { return e.Detail }

// Unwrap makes errors.Is(err, ErrDiskFull) hold.
func (e *DiskFullError) Unwrap() error { return ErrDiskFull }

// RemovedError is ErrRemoved with the ID of the node that was removed, so
// that the reply can name it.
type RemovedError struct{ NodeID string }

func (e *RemovedError) Error() string { return "node " + e.NodeID + " was removed from the cluster" }

// Unwrap makes errors.Is(err, ErrRemoved) hold.
func (e *RemovedError) Unwrap() error { return ErrRemoved }
