package group

import (
	"fmt"
	"math/bits"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/redcell/redcell/fsm"
	"github.com/redcell/redcell/request"
)

// Batch is the unit a connection hands to the group: every state-changing
// request of one pipeline read, in order. A caller owns a Batch and reuses it
// (Local.Propose keeps a pool of them); the keys of Ops may alias the
// caller's read buffer, which it leaves untouched until Propose returns (the
// requests are copied into the entry).
type Batch struct {
	Ops     []request.Request
	Results []request.Result // filled by Propose, one per request
	err     error
	done    chan struct{}
	queued  int64 // monoNanos when it joined the queue (committime.go)
	// onDone, when set, replaces done: ProposeAsync's completion callback
	// (async.go), called once from whichever goroutine answers the batch.
	onDone func(error)
}

// NewBatch makes a reusable batch.
func NewBatch() *Batch { return &Batch{done: make(chan struct{}, 1)} }

// Reset empties the batch for reuse.
func (b *Batch) Reset() { b.Ops, b.Results, b.err = b.Ops[:0], b.Results[:0], nil }

// inflightEntry is one entry handed to raft, with the batches whose results
// it will carry.
type inflightEntry struct {
	future  raft.ApplyFuture
	batches []*Batch
	enc     *fsm.Encoder
	seq     uint64 // the batcher's sequence number of this entry (batcher.go)
	// proposed is monoNanos when the entry went to raft; queued the sum of
	// its batches' waits in the queue before that (committime.go).
	proposed, queued int64
	err              error
	// answered is set by whoever answers the entry's batches: the
	// completer, or a Shutdown that finds raft stopped (awaitCompleter).
	answered atomic.Bool
}

// Propose commits the batch's requests through the log and fills Results. It
// returns only after the entry holding them is committed on a quorum and
// applied: a reply never leaves before its decision is durable. On error no
// result is valid (see the Err* values for what the client may assume).
//
// Batching: the batch joins a queue, and the batcher (batcher.go) decides
// when the queue is cut into an entry. Whoever asks it when a cut is due
// cuts: the caller itself when the group is idle, otherwise the completer
// when an entry finishes or the log watcher when an append is durable. While
// entries are in flight the queue fills, so entries grow under load and
// shrink to one request when idle, and no goroutine sits between a
// connection and raft.
func (g *Group) Propose(b *Batch) error {
	if len(b.Ops) == 0 {
		return nil
	}
	if g.aboveLevel(b) {
		// A new leader may not have applied an earlier term's raise of
		// the level yet: judge by the level it holds once ready.
		if err := g.awaitReady(); err != nil {
			return err
		}
		if g.aboveLevel(b) {
			return g.proposeAtLevel(b) // featurelevel.go
		}
	}
	if g.cfg.Guard.OverMemory() {
		return g.proposeWithinMemory(b) // memoryguard.go
	}
	return g.propose(b)
}

// propose is Propose without the maxmemory check.
func (g *Group) propose(b *Batch) error {
	if err := g.awaitReady(); err != nil {
		return err
	}
	if g.cfg.Guard.RefusingWrites() {
		return g.cfg.Guard.DiskFullErr() // package guard: refuse before the disk does
	}
	if err := g.enqueue(b); err != nil {
		return err
	}
	<-b.done
	return b.err
}

// enqueue readies b's results, queues it for the next entry and lets the
// batcher decide whether to cut now. Once it returns nil, b is answered
// through b.finish (its callback, or b.done) by whoever applies or fails
// its entry; it fails only when the group is stopping or handing its
// leadership over, and then b was not queued.
func (g *Group) enqueue(b *Batch) error {
	if cap(b.Results) < len(b.Ops) {
		b.Results = make([]request.Result, len(b.Ops))
	}
	b.Results = b.Results[:len(b.Ops)]
	b.err = nil
	g.qmu.Lock()
	if g.stopping.Load() {
		g.qmu.Unlock()
		return ErrShutdown
	}
	if g.handover.on.Load() {
		g.qmu.Unlock()
		return ErrNotLeader // handing over (handover.go): nothing queued, retry at the next leader
	}
	b.queued = monoNanos()
	g.queue = append(g.queue, b)
	g.qmu.Unlock()
	g.batcher.queuedOne()
	g.proposeQueued()
	return nil
}

// queued is the number of batches waiting in the queue.
func (g *Group) queued() int {
	g.qmu.Lock()
	defer g.qmu.Unlock()
	return len(g.queue)
}

// proposeOne turns the queue into one entry and hands it to raft and the
// completer; false when there was nothing to propose. The caller holds a slot.
func (g *Group) proposeOne() bool {
	g.proposeMu.Lock()
	defer g.proposeMu.Unlock()
	if g.stopping.Load() {
		return false
	}
	g.batcher.cutting(g.queued())
	enc := <-g.encoders
	batches := g.take(enc)
	if len(batches) == 0 {
		g.encoders <- enc
		return false
	}
	data := enc.Finish()
	proposed := monoNanos()
	var queued int64
	for _, b := range batches {
		queued += proposed - b.queued
	}
	g.stats.entries.Add(1)
	g.stats.ops.Add(uint64(enc.Count()))
	g.stats.lastEntry.Store(uint64(enc.Count()))
	if n := uint64(enc.Count()); n > g.stats.maxEntryOps.Load() {
		g.stats.maxEntryOps.Store(n)
	}
	g.stats.entryOps[min(bits.Len(uint(enc.Count()))-1, EntryOpsBuckets-1)].Add(1)
	// Both sends keep the order raft applies in: the completer waits for
	// entries in exactly this order. inflight has room for every slot.
	seq := g.batcher.proposed.Add(1)
	if g.appendHint != nil {
		g.appendHint.AppendComing()
	}
	g.inflight <- &inflightEntry{future: g.raft.ApplyLog(raft.Log{Data: data, Extensions: g.origin}, 0), batches: batches, enc: enc, seq: seq, proposed: proposed, queued: queued}
	return true
}

// take moves queued batches into a new entry in enc while it stays within
// MaxEntryBytes (an entry holds at least one batch whatever its size; a batch
// is never split across entries). Caller holds proposeMu.
func (g *Group) take(enc *fsm.Encoder) []*Batch {
	stamp := max(g.cfg.Clock.Now(), g.stamp, g.fsm.Clock())
	g.stamp = stamp
	enc.Reset(stamp)
	g.qmu.Lock()
	defer g.qmu.Unlock()
	n := 0
	for _, b := range g.queue {
		m := enc.Mark()
		for i := range b.Ops {
			enc.Add(&b.Ops[i])
		}
		if n > 0 && enc.Len() > g.cfg.MaxEntryBytes {
			enc.Rewind(m) // this batch opens the next entry
			break
		}
		n++
	}
	if n == 0 {
		return nil
	}
	taken := append([]*Batch(nil), g.queue[:n]...)
	rest := copy(g.queue, g.queue[n:])
	clear(g.queue[rest:])
	g.queue = g.queue[:rest]
	return taken
}

// stopProposing answers every queued batch ErrShutdown and closes the
// completer's queue once no entry can be proposed any more.
func (g *Group) stopProposing() {
	g.qmu.Lock()
	q := g.queue
	g.queue = nil
	g.qmu.Unlock()
	for _, b := range q {
		b.err = ErrShutdown
		b.finish()
	}
	g.proposeMu.Lock() // no proposal is half-way: stopping is set
	close(g.inflight)
	g.proposeMu.Unlock()
}

// awaitCompleter waits for runCompleter to answer every entry in flight and
// return, which it does once raft has answered their futures — unless raft
// stopped itself (ShutdownOnRemove: this node was removed from the cluster)
// while some of them were still in its apply queue: raft never answers a
// future it had queued (BatchApplyCh), so the completer would wait forever
// and so would Shutdown. Once raft is seen stopped, Shutdown answers the
// batches of those entries itself, with ErrOutcomeUnknown (raft may have
// committed them before it stopped), and goes on without the completer:
// every batch is answered once, so a forwarded call waiting for its answer
// (forward.Server.Close waits for them) ends too. Called by Shutdown after
// stopProposing.
func (g *Group) awaitCompleter() {
	if g.completerDone == nil {
		return // never started
	}
	t := time.NewTicker(completerPoll)
	defer t.Stop()
	for {
		select {
		case <-g.completerDone:
			return
		case <-t.C:
			if g.raft.State() == raft.Shutdown {
				g.log.Warn("raft stopped itself with entries in its queue that it will never answer; answering them as of unknown outcome")
				g.answerUnknown(g.waiting.Load())
				for e := range g.inflight { // closed by stopProposing
					g.answerUnknown(e)
				}
				return
			}
		}
	}
}

// answerUnknown answers e's batches with ErrOutcomeUnknown, unless the
// completer answered them.
func (g *Group) answerUnknown(e *inflightEntry) {
	if e == nil || !e.answered.CompareAndSwap(false, true) {
		return
	}
	for _, b := range e.batches {
		b.err = ErrOutcomeUnknown
		b.finish()
	}
}

// completerPoll is how often a Shutdown waiting for the completer checks
// whether raft stopped itself (awaitCompleter).
const completerPoll = 100 * time.Millisecond

// runCompleter waits for entries in the order they were proposed (raft
// applies them in that order), hands each batch its results, frees the slot
// and proposes what queued up meanwhile.
func (g *Group) runCompleter() {
	defer close(g.completerDone)
	for e := range g.inflight {
		g.waiting.Store(e)
		e.err = e.future.Error()
		var res *fsm.Results
		if e.err == nil {
			switch r := e.future.Response().(type) {
			case *fsm.Results:
				res = r
			case error:
				g.log.Error("entry refused by the state machine", "err", r)
				e.err = ErrStateMachine
			default: // nil: the FSM did not take the entry for ours (SetOrigin)
				g.log.Error("no results for an entry this node proposed", "response", fmt.Sprintf("%T", r))
				e.err = ErrStateMachine
			}
		} else {
			e.err = mapRaftErr(e.err)
		}
		if e.err == nil {
			// Their clients are likely to come back: the next cut may
			// wait for them (batcher.go). Set before they are woken.
			g.batcher.answered(len(e.batches), e.enc.Count())
			g.times.noteAnswered(e, monoNanos())
		}
		// Counted before they are woken, so that their next batches never
		// look like more clients in play (batcher.queuedOne).
		g.batcher.done(len(e.batches))
		// A Shutdown that found raft stopped may have answered them
		// (answerUnknown): each batch is answered once.
		if e.answered.CompareAndSwap(false, true) {
			i := 0
			for _, b := range e.batches {
				if e.err != nil {
					b.err = e.err
				} else {
					i += copy(b.Results, res.R[i:i+len(b.Ops)])
				}
				b.finish()
			}
		}
		g.fsm.Release(res)
		g.batcher.passed(e.seq) // applied or failed: it holds the log no more

		// Free the slot, then propose what queued meanwhile. Waking the
		// batches first measured better: their clients' next requests get
		// a chance to join the entry.
		g.encoders <- e.enc
		g.batcher.freeSlot()
		g.proposeQueued()
	}
}
