package server

import (
	"github.com/redcell/redcell/nodeinfo"
	"github.com/redcell/redcell/request"
)

// Backend is the node behind the server, as the roles the server needs from
// it: deciding writes (Decider), answering reads (Reader), cluster
// administration (Administrator), the node's standing and INFO figures (Status), and
// DEBUG CLOCK's hooks (TestClock). The server knows nothing else of the node
// — not Raft, the state machine, the keyspace or the log store — so the same
// server runs in front of a node's router (package node: decides locally or
// forwards to the leader), the bare local Raft group (group.Local, in tests),
// or a test double; each role may be a different value.
//
// Every type in these signatures is the server's, package request's,
// package nodeinfo's (a leaf of INFO's section types) or the language's, so
// an implementation need not import this package (except for AdminOp), and
// this package imports no implementation.
//
// Errors: Propose, Read, ReadLocal and Admin fail a whole call with a
// *request.Failure (request/errors.go), possibly wrapped; the server answers
// it with commands.FailureReply, the one mapping from a failure code to a
// Redis error. Each code tells the client what it may assume; any other error
// of a data call is answered as an unknown outcome, because the server
// cannot promise that nothing happened. A request that reached the state
// machine and failed there is not an error of the call: it is a
// request.Result of kind KindError in res.
type Backend struct {
	Decider
	Reader
	Administrator
	Status
	TestClock
}

// BackendOf makes a Backend whose every role is x.
func BackendOf(x interface {
	Decider
	Reader
	Administrator
	Status
	TestClock
}) Backend {
	return Backend{Decider: x, Reader: x, Administrator: x, Status: x, TestClock: x}
}

// Decider commits writes through the replicated log.
//
// Goroutines: the server calls Propose from its connection goroutines (one
// per client connection; the MULTI/EXEC path too), any number at once. Each
// call blocks its connection until answered; the implementation must be
// safe for concurrent use and never call back into the server.
type Decider interface {
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
	//
	// The requests of one call are independent (a pipeline): with the
	// keyspace split over several Raft groups the backend may carry them
	// in one entry per group, each request whole and in its group's entry
	// in order, and split a multi-key request that its code lets split
	// (request/routing.go). Then a failure may hit some of the requests
	// only: the call returns a *request.Partial saying which.
	Propose(reqs []request.Request, res []request.Result) error

	// Transact commits reqs as one atomic unit (EXEC: a WatchGuard, the
	// transaction's writes and its reads): one log entry of one group,
	// never split. With several groups the server has already refused a
	// unit whose keys lie in more than one slot (CROSSSLOT), so the
	// backend routes it by its keys' slot (keyless: to any group). Same
	// contract as Propose otherwise, except that a failure is always the
	// whole call's.
	Transact(reqs []request.Request, res []request.Result) error
}

// Reader answers reads.
//
// Goroutines: the server calls Read and ReadLocal from its connection
// goroutines, any number at once; each blocks its connection until
// answered.
type Reader interface {
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
}

// Status is the node's standing and the figures INFO shows.
//
// Goroutines: the server calls every method from its connection goroutines
// (INFO, and Loading before each command), and Counters also from its
// once-a-second rate sampler; any number at once. Each must return promptly
// (no waiting on the log, the network or a lock held across either),
// because INFO runs on every connect for some clients and Loading on every
// command.
type Status interface {
	// Leading reports whether this node is a leader ready to decide now
	// (INFO's role: master when true, slave otherwise).
	Leading() bool

	// Counters are cumulative counts since the node started: requests and
	// log entries this node proposed, and fsyncs of its log (0 when it has no
	// log of its own). The server samples them once a second for INFO's
	// instantaneous rates (decisions, entries and fsyncs per second).
	Counters() (requests, entries, fsyncs uint64)

	// The node's figures for INFO, one typed value per section
	// (package nodeinfo, which also names the fields). The server prints
	// each after its own fields of the section (Replication after the role
	// line; nil: this backend has no cluster view to add).
	Memory() nodeinfo.Memory
	Persistence() nodeinfo.Persistence
	Raft() nodeinfo.Raft
	Replication() *nodeinfo.Replication
	Keyspace() nodeinfo.Keyspace

	// Loading reports whether the node is still replaying its log or a
	// snapshot at startup; commands then get -LOADING, as Redis answers
	// while it loads its dataset.
	Loading() bool

	// Cluster is this node's view of the cluster for the Redis Cluster
	// protocol (CLUSTER SLOTS, SHARDS, NODES, INFO, MYID; handlers_cluster.go):
	// its shards, each a Raft group with its slot ranges and its members,
	// master (the leader) first. Called once per such command; a fresh
	// value the server may keep and the backend no longer touches. It reads
	// what the node already knows (configuration, leader, the leader's
	// last contact with each member) and never asks another node.
	Cluster() nodeinfo.Cluster
}

// TestClock is DEBUG CLOCK's view of the node's clock (a testing hook; the
// server offers it only with EnableDebug).
//
// Goroutines: called from connection goroutines, any number at once; every
// method returns promptly.
type TestClock interface {
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
}

// AdminOp names a cluster administration operation. The values are RAFT's
// subcommands (and the persistence commands' "snapshot" and "lastsave") as
// they travel to the leader; the server passes only these.
type AdminOp string

const (
	// AdminJoin adds a node (args: id, address); AdminRemove removes one
	// (id); AdminTransfer hands leadership over ([id]). They change the
	// configuration and run on the leader wherever they are sent; they
	// answer "OK" once committed.
	AdminJoin     AdminOp = "join"
	AdminRemove   AdminOp = "remove"
	AdminTransfer AdminOp = "transfer"
	// AdminSnapshot snapshots this node now (SAVE, BGSAVE, SHUTDOWN, RAFT
	// SNAPSHOT); it answers the snapshot's index.
	AdminSnapshot AdminOp = "snapshot"
	// AdminDigest answers "<applied index> <hex digest>" of this node's
	// state in one group (args: [group], group 0 when none).
	AdminDigest AdminOp = "digest"
	// AdminLastSave answers the Unix seconds of this node's newest
	// snapshot, "0" if none (LASTSAVE).
	AdminLastSave AdminOp = "lastsave"
)

// Administrator runs cluster administration operations.
//
// Goroutines: the server calls Admin from connection goroutines (RAFT,
// SAVE, LASTSAVE, INFO persistence, SHUTDOWN) and from BGSAVE's background
// goroutine, any number at once. It may block for as long as a write.
type Administrator interface {
	// Admin runs op with its arguments and returns its text answer, or an
	// error whose text the client sees (after "ERR "); a
	// *request.Failure keeps its usual reply.
	Admin(op AdminOp, args []string) (string, error)
}
