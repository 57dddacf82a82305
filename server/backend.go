package server

import (
	"github.com/redcell/redcell/request"
)

// Backend is everything the server needs from the node behind it: a way to
// commit writes and to answer reads, the figures INFO shows, and the clock
// DEBUG CLOCK moves. The server knows nothing else of the node — not Raft,
// the state machine, the keyspace or the log store — so the same server runs
// in front of the local Raft group (group.Local), and later in front of a
// follower that forwards to its leader, or a test double.
//
// Every type in these signatures is the server's, package request's or the
// language's, so an implementation need not import this package, and this
// package imports no implementation.
//
// Goroutines: the server calls every method from its connection goroutines,
// any number at once, and Counters also from its once-a-second rate sampler.
// Implementations must be safe for that concurrent use. Propose and Read block
// until their requests are answered; every other method must return promptly
// (no waiting on the log, the network or a lock held across either), because
// INFO runs on every connect for some clients.
//
// Errors: Propose and Read fail a whole call with one of package request's
// batch failures — request.ErrNoLeader, ErrNotReady, ErrOutcomeUnknown,
// ErrShutdown, ErrStateMachine, ErrDiskFull, ErrRemoved — possibly wrapped (the server tests them with
// errors.Is). Each tells the client what it may assume (see commands/errors.go
// and DESIGN.md); any other error is answered as ErrOutcomeUnknown, because
// the server cannot promise that nothing happened. A request that reached the
// state machine and failed there is not an error of the call: it is a
// request.Result of kind KindError in res.
type Backend interface {
	// Propose commits reqs, in order, through the replicated log and fills
	// res[i] with the answer to reqs[i]; len(res) must be at least
	// len(reqs). The requests are of write codes, except for a transaction
	// (EXEC), whose read requests travel with its writes and are answered by
	// the state machine inside the same entry. It blocks until every request has been
	// committed on a quorum and applied (a reply must never leave before its
	// decision is durable), or until the call fails, in which case no
	// element of res is valid. The requests of one call are decided in one
	// log entry, in order, so a pipeline's writes stay in its order.
	//
	// Ownership: reqs, their keys and res belong to the caller. The keys may
	// alias the caller's read buffer, which it leaves untouched until
	// Propose returns; the backend copies what it keeps (by encoding it into
	// the log entry) and holds no reference to reqs or res after it returns.
	// reqs and res are the caller's reusable buffers, so that the server
	// allocates nothing per pipeline; an implementation keeps its own
	// per-call state pooled likewise (group.Local does).
	Propose(reqs []request.Request, res []request.Result) error

	// Read answers reqs, all of read codes, linearizably — each sees every
	// write whose Propose has returned anywhere in the cluster — and fills
	// res as Propose does. It blocks for one leadership check per call, not
	// per request. Same ownership rules as Propose.
	Read(reqs []request.Request, res []request.Result) error

	// ReadLocal answers reads from this node's own applied state, without
	// confirming leadership (a connection that sent READONLY). On a
	// follower the answer may be stale by the replication lag; it never
	// reflects a write that has not been committed. A node that was
	// removed from the cluster answers request.ErrRemoved instead: its
	// state is no longer updated at all, so its lag only grows. Same
	// contract as Read otherwise; it does not wait on the network.
	ReadLocal(reqs []request.Request, res []request.Result) error

	// Leading reports whether this node is a leader ready to decide now
	// (INFO's role: master when true, slave otherwise).
	Leading() bool

	// Counters are cumulative counts since the node started: requests and
	// log entries this node proposed, and fsyncs of its log (0 when it has no
	// log of its own). The server samples them once a second for INFO's
	// instantaneous rates (decisions, entries and fsyncs per second).
	Counters() (requests, entries, fsyncs uint64)

	// Info reports the backend's own fields of one INFO section by calling
	// field once per field, in the order INFO prints them ("name:value").
	// The server asks for "memory", "persistence", "raft" and "keyspace"
	// after writing its own fields of the section; a backend may report
	// nothing for a section. field must not be kept after Info returns.
	Info(section string, field func(name string, value any))

	// Clock is the replicated clock: the time of the last applied log entry,
	// Unix ns (0 on a fresh node). Bare DEBUG CLOCK answers it.
	Clock() int64
	// SetClock freezes the clock this node stamps log entries with at
	// unixNS; AdvanceClock moves it forward by ns and leaves it frozen there
	// (starting from the wall clock if it was running); RealClock lets it
	// follow the wall clock again. They are DEBUG CLOCK's testing hooks: the
	// stamps they produce still never go back (the group stamps with at
	// least the replicated clock).
	SetClock(unixNS int64)
	AdvanceClock(ns int64)
	RealClock()

	// Admin runs a cluster administration command, RAFT's subcommands:
	// "join" id addr, "remove" id, "transfer" [id] (these change the
	// configuration and run on the leader wherever they are sent), "snapshot"
	// (this node; answers the snapshot's index; also SAVE, BGSAVE and
	// SHUTDOWN), "digest" (this node; answers "<applied index> <hex
	// digest>") and "lastsave" (this node: Unix seconds of its newest
	// snapshot, "0" if none; LASTSAVE). It returns a text answer
	// ("OK" for the configuration changes) or an error whose text the
	// client sees; request's batch failures keep their usual replies. It may
	// block for as long as a write.
	Admin(cmd string, args []string) (string, error)

	// Loading reports whether the node is still replaying its log or a
	// snapshot at startup; commands then get -LOADING, as Redis answers
	// while it loads its dataset. Must return promptly.
	Loading() bool
}
