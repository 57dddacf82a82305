package group

import (
	"sync"

	"github.com/redcell/redcell/request"
)

// The asynchronous entry points, for a caller that must not block per call:
// the forwarding server's connection reader, which would otherwise need one
// goroutine per forwarded call to wait in Propose. They queue exactly as
// Propose does and answer through a callback instead of waking a waiter.
//
// Goroutines: ProposeAsync may be called from any goroutine; it returns
// without waiting on raft (it may build and hand an entry to raft itself,
// as Propose's caller does when a slot is free). done is called exactly
// once: from the group's completer goroutine when the entry is applied or
// fails, from the stopping goroutine at shutdown, or, on the slow paths
// (not yet a ready leader, above maxmemory, a request above the cluster's
// feature level), from a goroutine of its own
// that runs Propose. done must not block: the completer answers every
// other batch of the entry after it.

// ProposeAsync is Propose with a completion callback: it commits b's
// requests through the log and calls done(nil) once Results are filled, or
// done with the failure (a *request.Failure). b and its requests belong to
// the group until done is called. It queues through the same enqueue as
// Propose.
func (g *Group) ProposeAsync(b *Batch, done func(error)) {
	if len(b.Ops) == 0 {
		done(nil)
		return
	}
	if g.cfg.Guard.OverMemory() || !g.ready.Load() || g.aboveLevel(b) {
		// Waiting for readiness, or reading the keyspace before the entry
		// (memoryguard.go): rare, and each may block, so off the caller.
		go func() { done(g.Propose(b)) }()
		return
	}
	if g.cfg.Guard.RefusingWrites() {
		done(g.cfg.Guard.DiskFullErr())
		return
	}
	b.onDone = done // before enqueue: the entry may be applied before it returns
	if err := g.enqueue(b); err != nil {
		b.onDone = nil
		done(err)
	}
}

// finish answers the batch: its callback when it came through ProposeAsync,
// otherwise the caller waiting in Propose.
func (b *Batch) finish() {
	if f := b.onDone; f != nil {
		b.onDone = nil
		f(b.err)
		return
	}
	b.done <- struct{}{}
}

// asyncReads queues ReadAsync's calls for the goroutine that checks
// leadership for them.
type asyncReads struct {
	mu      sync.Mutex
	queue   []asyncRead
	running bool // a runReads goroutine is draining the queue
}

type asyncRead struct {
	reqs []request.Request
	res  []request.Result
	done func(error)
}

// ReadAsync answers read requests linearizably, as Read does, and calls
// done(nil) once res is filled, or done with the failure. Calls that arrive
// while a leadership check is in flight share the next one: one goroutine
// runs per burst of reads (started by the call that finds none running,
// ending when the queue is empty), and one VerifyLeader answers every read
// queued before it began. done is called from that goroutine and must not
// block. reqs and res belong to the group until done is called.
func (g *Group) ReadAsync(reqs []request.Request, res []request.Result, done func(error)) {
	if len(reqs) == 0 {
		done(nil)
		return
	}
	g.reads.mu.Lock()
	g.reads.queue = append(g.reads.queue, asyncRead{reqs: reqs, res: res, done: done})
	if g.reads.running {
		g.reads.mu.Unlock()
		return
	}
	g.reads.running = true
	g.reads.mu.Unlock()
	go g.runReads()
}

// runReads drains ReadAsync's queue: one readiness wait and one leadership
// check per round, for every read queued before the round began (so each
// read sees every write whose Propose returned before it arrived).
func (g *Group) runReads() {
	var q []asyncRead
	for {
		g.reads.mu.Lock()
		q, g.reads.queue = g.reads.queue, q[:0]
		if len(q) == 0 {
			g.reads.running = false
			g.reads.mu.Unlock()
			return
		}
		g.reads.mu.Unlock()
		err := g.awaitReady()
		if err == nil {
			err = g.verifyLeader()
		}
		now := g.cfg.Clock.Now()
		for i := range q {
			r := &q[i]
			if err == nil {
				g.stats.reads.Add(uint64(len(r.reqs)))
				for j := range r.reqs {
					g.fsm.Read(&r.reqs[j], now, &r.res[j])
				}
			}
			r.done(err)
			*r = asyncRead{}
		}
	}
}
