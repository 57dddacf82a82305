package request

import "errors"

// Why a batch of requests got no results. These are failures of the path to
// the state machine, not of a request in it (those are ErrCodes in a
// Result): whatever carries requests to the log and back — the local Raft
// group, a follower forwarding to its leader — returns one *Failure for the
// whole batch. Every layer passes it on as it is: the group makes it, the
// forward frame carries its code byte and detail, the node's router decides
// on its code whether to try again, and the server turns it into the Redis
// error clients retry on (commands.FailureReply, the one place where a code
// becomes a reply). They live here, in the leaf every layer imports, so that
// no layer has to import another to recognise them.
//
// FailCode values are a wire format (the forward protocol carries them as
// one byte): a code keeps its number for ever, and a new one takes a new
// number.
type FailCode byte

const (
	// FailNotLeader: the request reached a node that does not lead while
	// another node is known to (Detail, when set, is the leader's address).
	// Nothing happened; the sender looks up the leader and tries there. It
	// counts as FailNoLeader for errors.Is(err, ErrNoLeader).
	FailNotLeader FailCode = 1
	// FailNoLeader: no leader is known, so nothing can be decided now.
	// Nothing happened.
	FailNoLeader FailCode = 2
	// FailNotReady: this node leads but has not yet applied its
	// predecessors' entries. Nothing happened.
	FailNotReady FailCode = 3
	// FailOutcomeUnknown: leadership was lost after the entry was proposed;
	// it may still commit. Never report such a write as failed.
	FailOutcomeUnknown FailCode = 4
	// FailShutdown: the node is stopping. Nothing happened.
	FailShutdown FailCode = 5
	// FailStateMachine: the state machine stopped (an entry it cannot
	// decode; see the node's log).
	FailStateMachine FailCode = 6
	// FailRefused: an administration command was refused; Detail says why
	// and is what the client sees (after "ERR "). Only administration
	// commands end with it, never Propose or Read.
	FailRefused FailCode = 7
	// FailDiskFull: the leader's log disk is below its free-space reserve,
	// so it proposes nothing until space returns. Nothing happened. Detail
	// says which disk, how much is free and what the reserve is.
	FailDiskFull FailCode = 8
	// FailRemoved: this node was taken out of the cluster's configuration
	// (RAFT REMOVE), so no leader will ever decide anything for it again
	// until it is added back. Nothing happened. Detail is the node's ID.
	FailRemoved FailCode = 9
	// FailUnknownGroup: the call named a Raft group the receiver does not
	// run. Nothing happened.
	FailUnknownGroup FailCode = 10
)

// Failure is a batch failure: a code that says what the caller may assume,
// and a detail for the codes that carry one (see each FailCode).
type Failure struct {
	Code   FailCode
	Detail string
}

// The failures as sentinels, for errors.Is: a *Failure is one of these when
// its code is (FailNotLeader also counts as ErrNoLeader).
var (
	ErrNoLeader       error = &Failure{Code: FailNoLeader}
	ErrNotLeader      error = &Failure{Code: FailNotLeader}
	ErrNotReady       error = &Failure{Code: FailNotReady}
	ErrOutcomeUnknown error = &Failure{Code: FailOutcomeUnknown}
	ErrShutdown       error = &Failure{Code: FailShutdown}
	ErrStateMachine   error = &Failure{Code: FailStateMachine}
	ErrDiskFull       error = &Failure{Code: FailDiskFull}
	ErrRemoved        error = &Failure{Code: FailRemoved}
	ErrUnknownGroup   error = &Failure{Code: FailUnknownGroup}
)

// DiskFull is FailDiskFull with what an operator needs to act: which disk,
// how much is free, what the reserve is.
func DiskFull(detail string) *Failure { return &Failure{Code: FailDiskFull, Detail: detail} }

// Removed is FailRemoved naming the node that was removed, so that the
// reply can name it.
func Removed(nodeID string) *Failure { return &Failure{Code: FailRemoved, Detail: nodeID} }

// NotLeaderAt is FailNotLeader naming where the leader is ("" if unknown).
func NotLeaderAt(addr string) *Failure { return &Failure{Code: FailNotLeader, Detail: addr} }

// Refused is FailRefused with the reason an administration command was
// refused.
func Refused(reason string) *Failure { return &Failure{Code: FailRefused, Detail: reason} }

func (f *Failure) Error() string {
	switch f.Code {
	case FailNotLeader:
		if f.Detail != "" {
			return "not the leader; the leader is " + f.Detail
		}
		return "not the leader"
	case FailNoLeader:
		return "no leader"
	case FailNotReady:
		return "leader not ready"
	case FailOutcomeUnknown:
		return "outcome unknown"
	case FailShutdown:
		return "shut down"
	case FailStateMachine:
		return "state machine stopped"
	case FailRefused:
		return f.Detail
	case FailDiskFull:
		if f.Detail != "" {
			return f.Detail
		}
		return "log disk full"
	case FailRemoved:
		if f.Detail != "" {
			return "node " + f.Detail + " was removed from the cluster"
		}
		return "removed from the cluster"
	case FailUnknownGroup:
		return "unknown raft group " + f.Detail
	}
	return "batch failure " + f.Detail
}

// Is makes errors.Is(err, ErrX) hold for every *Failure of code X, whatever
// its detail, and errors.Is(err, ErrNoLeader) also for FailNotLeader (the
// sender looks for the leader in both cases).
func (f *Failure) Is(target error) bool {
	t, ok := target.(*Failure)
	if !ok || t.Detail != "" {
		return false
	}
	return t.Code == f.Code || (t.Code == FailNoLeader && f.Code == FailNotLeader)
}

// Partial is a call's failure that hit only some of its requests: a
// pipeline the node split over Raft groups (request/routing.go), where one
// group's part failed and another's was decided. Errs[i] is request i's
// failure, nil where the result holds its answer; the caller answers each
// request by its own entry, in order.
type Partial struct {
	Errs []error
}

func (p *Partial) Error() string {
	for _, e := range p.Errs {
		if e != nil {
			return "part of the batch failed: " + e.Error()
		}
	}
	return "part of the batch failed"
}

// AsFailure returns err's *Failure, or for any other error a
// FailOutcomeUnknown carrying its text: a caller that cannot tell whether a
// write happened must not say that nothing did. nil for nil.
func AsFailure(err error) *Failure {
	if err == nil {
		return nil
	}
	var f *Failure
	if errors.As(err, &f) {
		return f
	}
	return &Failure{Code: FailOutcomeUnknown, Detail: err.Error()}
}
