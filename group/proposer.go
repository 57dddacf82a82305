package group

import (
	"fmt"
	"math/bits"
	"runtime"

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
	seq     uint64 // the disk gate's sequence number of this entry
	// proposed is monoNanos when the entry went to raft; queued the sum of
	// its batches' waits in the queue before that (committime.go).
	proposed, queued int64
	err              error
}

// Propose commits the batch's requests through the log and fills Results. It
// returns only after the entry holding them is committed on a quorum and
// applied: a reply never leaves before its decision is durable. On error no
// result is valid (see the Err* values for what the client may assume).
//
// Batching: the batch joins a queue. At most MaxInflight entries are in raft
// at once; whoever finds a slot free builds the next entry from everything
// queued — the caller itself when the group is idle, otherwise the completer
// when an entry finishes. While the slots are busy the queue fills, so
// entries grow under load and shrink to one request when idle, and no
// goroutine sits between a connection and raft.
func (g *Group) Propose(b *Batch) error {
	if len(b.Ops) == 0 {
		return nil
	}
	if g.mem.over.Load() {
		return g.proposeWithinMemory(b) // memoryguard.go
	}
	return g.propose(b)
}

// propose is Propose without the maxmemory check.
func (g *Group) propose(b *Batch) error {
	if err := g.awaitReady(); err != nil {
		return err
	}
	if g.refusingWrites() {
		return g.diskFullErr() // diskguard.go: refuse before the disk does
	}
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
	b.queued = monoNanos()
	g.queue = append(g.queue, b)
	g.qmu.Unlock()
	g.proposeQueued()
	<-b.done
	return b.err
}

// proposeQueued builds and proposes entries while a slot is free and the
// queue holds batches. Any goroutine may call it; proposeMu keeps entries'
// stamps and their order in raft and in the completer's queue identical.
//
// While the node is alone, before it builds an entry for a free disk it
// yields the processor (yieldToRunnable), so that every goroutine already
// runnable — connections the netpoller woke in one bunch, clients the
// completer just answered — reads its requests and queues them first: the
// entry then takes them all. Without it, whoever runs first (often the
// goroutine just woken, which Go runs next) proposes alone, and with
// GOMAXPROCS 1 and direct WAL syncs the processor sleeps through that small
// entry's fsync while the others wait behind it. With peers it is off
// (alonemode.go). See DESIGN.md, "Yield before building an entry".
func (g *Group) proposeQueued() {
	yielded := !g.yieldFirst.Load() // only while alone (alonemode.go)
	for {
		if !g.disk.free() {
			return // the disk gate proposes once the entry on the disk is durable
		}
		if !yielded {
			yielded = true
			g.yieldToRunnable()
			continue // someone else may have proposed meanwhile
		}
		if g.disk.expect.Load() > 1 { // only then can stragglers be worth a wait
			if g.disk.holdForStragglers(g.queued()) {
				return // the linger timer proposes if they do not come
			}
		}
		if !g.takeSlot() {
			return // every slot is busy: the completer proposes when one frees
		}
		if g.proposeOne() {
			continue
		}
		g.freeSlot()
		// A batch queued while we held the slot may have seen no free slot
		// and left it to us: look again now that the slot is free.
		g.qmu.Lock()
		empty := len(g.queue) == 0 || g.stopping.Load()
		g.qmu.Unlock()
		if empty {
			return
		}
	}
}

// maxYields bounds the yields of one yieldToRunnable.
const maxYields = 8

// yieldToRunnable lets the goroutines that are runnable now run before the
// caller goes on, for as long as they keep queueing batches: it yields the
// processor (runtime.Gosched, which puts the caller behind every runnable
// goroutine) until two yields in a row saw the queue unchanged, at most
// maxYields times. One yield is not always enough: Go's scheduler takes a
// yielded goroutine back ahead of the runnable ones every 61st pass, for
// fairness. It never sleeps; with nothing else runnable each yield returns
// at once (a lone client pays two: 83-172 ns each, measured in a loop).
func (g *Group) yieldToRunnable() {
	queued, still := g.queued(), 0
	for range maxYields {
		runtime.Gosched()
		now := g.queued()
		if now != queued {
			queued, still = now, 0
			continue
		}
		if still++; still == 2 {
			return
		}
	}
}

// queued is the number of batches waiting in the queue.
func (g *Group) queued() int {
	g.qmu.Lock()
	defer g.qmu.Unlock()
	return len(g.queue)
}

// takeSlot takes one of the in-flight slots if fewer than the limit are
// taken (alonemode.go sets the limit); false when none is free.
func (g *Group) takeSlot() bool {
	for {
		n := g.inflightN.Load()
		if n >= g.inflightLimit.Load() { // never above MaxInflight (Open)
			return false
		}
		if g.inflightN.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// freeSlot gives back a slot taken by takeSlot.
func (g *Group) freeSlot() { g.inflightN.Add(-1) }

// proposeOne turns the queue into one entry and hands it to raft and the
// completer; false when there was nothing to propose. The caller holds a slot.
func (g *Group) proposeOne() bool {
	g.proposeMu.Lock()
	defer g.proposeMu.Unlock()
	if g.stopping.Load() {
		return false
	}
	g.disk.proposing()
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
	seq := g.disk.proposed.Add(1)
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

// runCompleter waits for entries in the order they were proposed (raft
// applies them in that order), hands each batch its results, frees the slot
// and proposes what queued up meanwhile.
func (g *Group) runCompleter() {
	defer g.wg.Done()
	for e := range g.inflight {
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
			// Their clients are likely to come back: the disk may wait
			// for them (diskgate.go). Set before they are woken.
			g.disk.expect.Store(int64(len(e.batches)))
			g.disk.pipelined.Store(e.enc.Count() >= 2*len(e.batches))
			g.times.noteAnswered(e, monoNanos())
		}
		i := 0
		for _, b := range e.batches {
			if e.err != nil {
				b.err = e.err
			} else {
				i += copy(b.Results, res.R[i:i+len(b.Ops)])
			}
			b.finish()
		}
		g.fsm.Release(res)
		g.disk.passed(e.seq) // applied or failed: it holds the disk no more

		// Free the slot, then propose what queued meanwhile. Waking the
		// batches first measured better: their clients' next requests get
		// a chance to join the entry.
		g.encoders <- e.enc
		g.freeSlot()
		g.proposeQueued()
	}
}
