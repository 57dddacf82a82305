package group

import (
	"github.com/hashicorp/raft"

	"github.com/redcell/redcell/fsm"
)

// Batch is the unit a connection hands to the proposer: every state-changing
// request of one pipeline read, in order. A connection owns one Batch and
// reuses it; Ops may alias the connection's read buffer, which the connection
// leaves untouched until Propose returns (the proposer copies the ops into the
// entry).
type Batch struct {
	Ops     []fsm.Op
	Results []fsm.Result // filled by Propose, one per op
	err     error
	done    chan struct{}
}

// NewBatch makes a reusable batch.
func NewBatch() *Batch { return &Batch{done: make(chan struct{}, 1)} }

// Reset empties the batch for reuse.
func (b *Batch) Reset() { b.Ops, b.Results, b.err = b.Ops[:0], b.Results[:0], nil }

// Propose commits the batch's ops through the log and fills Results. It
// returns only after the entry holding them is committed on a quorum and
// applied: a reply never leaves before its decision is durable. On error no
// result is valid (see the Err* values for what the client may assume).
func (g *Group) Propose(b *Batch) error {
	if len(b.Ops) == 0 {
		return nil
	}
	if err := g.awaitReady(); err != nil {
		return err
	}
	if cap(b.Results) < len(b.Ops) {
		b.Results = make([]fsm.Result, len(b.Ops))
	}
	b.Results = b.Results[:len(b.Ops)]
	b.err = nil
	g.qmu.Lock()
	if g.stopping.Load() {
		g.qmu.Unlock()
		return ErrShutdown
	}
	g.queue = append(g.queue, b)
	g.qmu.Unlock()
	select {
	case g.wake <- struct{}{}:
	default:
	}
	<-b.done
	return b.err
}

// inflightEntry is one entry handed to raft, with the batches whose results
// it will carry.
type inflightEntry struct {
	future  raft.ApplyFuture
	batches []*Batch
	enc     *fsm.Encoder
	err     error
}

// runProposer is the one goroutine that builds entries. It never waits for an
// entry to commit before building the next: it only waits for a free slot
// (MaxInflight entries in raft at once). While the slots are busy, requests
// pile up in the queue, so the next entry carries all of them: batches grow
// under load and shrink to one request when idle.
func (g *Group) runProposer() {
	defer g.wg.Done()
	defer close(g.inflight)
	var spare []*Batch
	for {
		select {
		case <-g.wake:
		case <-g.stopCh:
			g.failQueued()
			return
		}
		for {
			select {
			case g.slots <- struct{}{}:
			case <-g.stopCh:
				g.failQueued()
				return
			}
			enc := <-g.encoders
			batches := g.take(enc, spare)
			if len(batches) == 0 {
				g.encoders <- enc
				<-g.slots
				break
			}
			spare = nil
			data := enc.Finish()
			g.stats.entries.Add(1)
			g.stats.ops.Add(uint64(enc.Count()))
			g.stats.lastEntry.Store(uint64(enc.Count()))
			if n := uint64(enc.Count()); n > g.stats.maxEntryOps.Load() {
				g.stats.maxEntryOps.Store(n)
			}
			g.inflight <- &inflightEntry{future: g.raft.Apply(data, 0), batches: batches, enc: enc}
		}
	}
}

// take moves queued batches into a new entry in enc while it stays within
// MaxEntryBytes (an entry holds at least one batch whatever its size; a batch
// is never split across entries).
func (g *Group) take(enc *fsm.Encoder, spare []*Batch) []*Batch {
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
	taken := append(spare[:0:0], g.queue[:n]...)
	rest := copy(g.queue, g.queue[n:])
	clear(g.queue[rest:])
	g.queue = g.queue[:rest]
	if rest > 0 {
		select {
		case g.wake <- struct{}{}:
		default:
		}
	}
	return taken
}

// failQueued answers every queued batch ErrShutdown.
func (g *Group) failQueued() {
	g.qmu.Lock()
	q := g.queue
	g.queue = nil
	g.qmu.Unlock()
	for _, b := range q {
		b.err = ErrShutdown
		b.done <- struct{}{}
	}
}

// runCompleter waits for entries in the order they were proposed (raft
// applies them in that order) and hands each batch its results.
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
			}
		} else {
			e.err = mapRaftErr(e.err)
		}
		i := 0
		for _, b := range e.batches {
			if e.err != nil {
				b.err = e.err
			} else {
				i += copy(b.Results, res.R[i:i+len(b.Ops)])
			}
			b.done <- struct{}{}
		}
		g.fsm.Release(res)
		clear(e.batches)
		g.encoders <- e.enc
		<-g.slots
	}
}
