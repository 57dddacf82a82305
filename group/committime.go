package group

import (
	"sync/atomic"
	"time"
)

// Where a batch's time goes on the proposer.
//
// A connection's batch waits through three stages between Propose and its
// answer, and the figures of a load test depend on which one dominates:
//
//	queue        queued → its entry proposed: waiting for the log, a
//	             free slot or stragglers (batcher.go)
//	local log    proposed → durable in this node's log: raft's goroutine
//	             picking the entry up, and the append with its fsync
//	quorum+apply durable here → answered: a follower's append in a cluster
//	             (nothing alone), the commit, the apply and the completer
//
// What is left of a client's round trip (the reply's write, the network,
// the client itself and reading its next request) is the client's view
// minus these; bench computes it from clients × pipeline ÷ throughput.
//
// The sums are per batch (an entry's stage times count once for every batch
// it carries), so sum ÷ batches is what an average batch saw, and the
// stages add up. They are cumulative, as Redis's INFO counters are: a
// reader takes the difference of two samples for a window. Only entries
// that were applied are counted, on the node that proposed them (the
// leader).

// commitTimes holds the proposer's cumulative stage times.
type commitTimes struct {
	batches  atomic.Uint64 // batches timed
	queue    atomic.Uint64 // nanoseconds, summed per batch
	localLog atomic.Uint64
	quorum   atomic.Uint64

	// durable[seq % len] is when the entry with the batcher's sequence
	// number seq became durable in the local log. Written by raft's
	// goroutine (the log store wrapper), read by the completer; the ring is
	// longer than the most entries in flight (64), so a slot is never
	// rewritten while its entry waits.
	durable [128]durableStamp
}

type durableStamp struct {
	seq atomic.Uint64
	at  atomic.Int64 // monoNanos
}

// CommitTimes are commitTimes' sums at one instant.
type CommitTimes struct {
	Batches                      uint64
	Queue, LocalLog, QuorumApply time.Duration
}

// monoEpoch anchors monoNanos: time.Since reads the monotonic clock, so
// stamps survive wall-clock steps.
var monoEpoch = time.Now()

// monoNanos is a monotonic timestamp, cheap to store in an atomic.
func monoNanos() int64 { return int64(time.Since(monoEpoch)) }

// stampDurable records that the entries with sequence numbers in (from, to]
// are durable now. Raft's goroutine, after an append.
func (c *commitTimes) stampDurable(from, to uint64) {
	if to <= from {
		return
	}
	now := monoNanos()
	first := from + 1
	if n := uint64(len(c.durable)); to-from > n {
		first = to - n + 1 // only the newest fit the ring
	}
	for s := first; s <= to; s++ {
		d := &c.durable[s%uint64(len(c.durable))]
		d.at.Store(now)
		d.seq.Store(s)
	}
}

// durableAt is when entry seq became durable here, if that was recorded.
func (c *commitTimes) durableAt(seq uint64) (int64, bool) {
	d := &c.durable[seq%uint64(len(c.durable))]
	if d.seq.Load() != seq {
		return 0, false
	}
	at := d.at.Load()
	return at, d.seq.Load() == seq
}

// noteAnswered adds an applied entry's stages: proposed and answered are
// monoNanos stamps, queued the sum of its batches' waits before proposed.
// The completer, once per entry.
func (c *commitTimes) noteAnswered(e *inflightEntry, answered int64) {
	durable, ok := c.durableAt(e.seq)
	if !ok || durable < e.proposed || answered < durable {
		return // a stamp from another leadership term, or lost: skip
	}
	n := uint64(len(e.batches))
	c.queue.Add(uint64(e.queued))
	c.localLog.Add(uint64(durable-e.proposed) * n)
	c.quorum.Add(uint64(answered-durable) * n)
	c.batches.Add(n)
}

// CommitTimes samples the proposer's stage sums.
func (g *Group) CommitTimes() CommitTimes {
	c := &g.times
	return CommitTimes{
		Batches:     c.batches.Load(),
		Queue:       time.Duration(c.queue.Load()),
		LocalLog:    time.Duration(c.localLog.Load()),
		QuorumApply: time.Duration(c.quorum.Load()),
	}
}
