package group

import (
	"runtime"
	"sync/atomic"
	"time"
)

// The batcher: the one place that decides when the queue is cut into a log
// entry.
//
// Connections queue batches (proposer.go); an entry is cut from everything
// queued. When to cut is the whole of group commit: too early makes a small
// entry that costs a whole fsync, too late leaves the log idle. The decision
// is decideCut, a pure function of what the batcher knows at one instant
// (cutInputs), with table tests of its own (cutpolicy_test.go). Four events
// may make a cut possible and each one only asks decideCut again:
//
//	a connection queued a batch              Propose
//	an entry was answered, its slot freed    the completer (proposer.go)
//	an append of this group's log is durable the log watcher (logwatcher.go)
//	the wait for stragglers is over          the linger timer
//
// The rules, in the order decideCut applies them:
//
//  1. Nothing queued: nothing to cut.
//  2. One entry on its way to the log at a time. hashicorp/raft's leader
//     goroutine appends an entry to the group's log store (and waits for
//     its fsync) before it takes the next, so the best next entry is the one
//     cut the instant the previous append is durable, carrying everything
//     that queued meanwhile. Cutting earlier makes a small entry that waits
//     anyway; the log watcher asks again the moment the append is durable.
//     This counts this group's entries in this group's log only (the log
//     store raft is given is wrapped per group): nothing assumes the group
//     is the disk's only writer. Several groups sharing one Pebble share its
//     WAL syncs (Pebble's commit pipeline gathers concurrent commits into
//     one), and each group's append time (below) then includes waiting for
//     the others.
//  3. Yield first, while alone: let every runnable goroutine queue before
//     the entry is cut (yieldToRunnable). The netpoller wakes connections in
//     bunches, and Go runs the goroutine a channel send just woke ahead of
//     the rest, so without it the entry often leaves with one batch and the
//     others wait a whole append for the next. After an entry of pipelines
//     it pays only while WAL syncs are direct (raftstore/walsync.go): a
//     direct sync holds the processor, so no connection ran while the last
//     entry was synced and the queue is all but empty when its append is
//     durable; with ordinary syncs the connections parsed their pipelines
//     during the fsync, the queue already holds them, and letting the rest
//     parse before the cut leaves the log idle for that long instead of
//     overlapping their parsing with the next fsync. Alonemode.go sets it;
//     with peers an entry waits for the previous one's commit anyway.
//  4. Stragglers. Clients that do not pipeline come back one by one after
//     their replies; the first would find the log free and go alone, and
//     the others would wait for its fsync: two fsyncs per round of clients.
//     So when the last answered entry carried several batches, and fewer
//     have queued, the cut waits for them, at most a fraction of the recent
//     mean append (a wait longer than the fsync it saves cannot pay): half
//     after pipelines, a quarter after single requests (a straggler is then
//     one decision, and the node mostly idles while it waits), never more
//     than maxLinger. A lone client never waits.
//  5. A free in-flight slot (MaxInflight alone, MaxInflightWithPeers with
//     peers): the completer asks again when one frees.
//  6. Otherwise: cut now.
//
// Nothing here holds a request for good: every proposed entry is eventually
// durable or fails, and the completer marks it passed either way; a wait for
// stragglers ends by its timer.

// cutAction is what decideCut tells the proposer to do.
type cutAction int

const (
	cutNothing        cutAction = iota // the queue is empty
	waitForLog                         // an entry is on its way to the log; its append asks again
	yieldFirst                         // yield to runnable goroutines, then decide again
	waitForStragglers                  // wait until the decision's until, or until enough have queued
	waitForSlot                        // every slot is taken; the completer asks again
	cutNow                             // take a slot and cut an entry from the queue
)

var cutActionNames = [...]string{"nothing", "wait for log", "yield first", "wait for stragglers", "wait for slot", "cut now"}

func (a cutAction) String() string { return cutActionNames[a] }

// cutInputs is what the cut decision depends on, read at one instant.
// Durations and instants are monoNanos.
type cutInputs struct {
	queued        int  // batches waiting for an entry
	logBusy       bool // an entry of this group is proposed and not yet durable in its log
	yield         bool // may yield before cutting (alone, and not yet done by this caller)
	syncHoldsP    bool // the log's next sync is direct: nothing runs while it lasts
	inflight      int  // entries in raft, not yet answered
	inflightLimit int
	expect        int   // batches the last answered entry carried: clients likely to return
	pipelined     bool  // ... holding two or more requests each, on average
	appendNanos   int64 // recent mean duration of a durable append of this group's log
	lingerUntil   int64 // when the wait for stragglers that began ends; 0: none began
	now           int64
}

// cutDecision is decideCut's answer; until is set for waitForStragglers.
type cutDecision struct {
	action cutAction
	until  int64 // monoNanos
}

// cutPolicy holds the decision's one tunable.
type cutPolicy struct {
	maxLinger time.Duration // the longest wait for stragglers, whatever the disk
}

// defaultMaxLinger bounds the wait for stragglers whatever the disk's speed.
const defaultMaxLinger = 500 * time.Microsecond

// decideCut applies the rules above. Pure: same inputs, same answer.
func (p cutPolicy) decideCut(in cutInputs) cutDecision {
	yield := in.yield && (!in.pipelined || in.syncHoldsP) // rule 3
	switch {
	case in.queued == 0 && !yield:
		return cutDecision{action: cutNothing}
	case in.logBusy:
		return cutDecision{action: waitForLog}
	case yield:
		return cutDecision{action: yieldFirst} // even with nothing queued: a yield lets woken clients queue
	}
	if until, wait := p.stragglerWait(in); wait {
		return cutDecision{action: waitForStragglers, until: until}
	}
	if in.inflight >= in.inflightLimit {
		return cutDecision{action: waitForSlot}
	}
	return cutDecision{action: cutNow}
}

// stragglerWait reports whether the queue should wait for more batches, and
// until when.
func (p cutPolicy) stragglerWait(in cutInputs) (until int64, wait bool) {
	if in.expect <= 1 || in.queued >= in.expect {
		return 0, false // a lone client, or everyone expected is here
	}
	if in.lingerUntil != 0 {
		return in.lingerUntil, in.now < in.lingerUntil
	}
	d := p.linger(in.appendNanos, in.pipelined)
	if d <= 0 {
		return 0, false // no append measured yet: no wait worth making
	}
	return in.now + int64(d), true
}

// linger is how long a free log waits for stragglers: half an append after
// an entry of pipelines, a quarter after one of single requests.
func (p cutPolicy) linger(appendNanos int64, pipelined bool) time.Duration {
	wait := appendNanos / 4
	if pipelined {
		wait = appendNanos / 2
	}
	return min(time.Duration(wait), p.maxLinger)
}

// batcher is the state decideCut reads and the proposer, the completer and
// the log watcher update. Every field is safe for any goroutine.
type batcher struct {
	policy cutPolicy

	// The group's log: entries proposed (sequence of the newest, written
	// under proposeMu) and known durable or failed (≤ proposed).
	proposed, stored atomic.Uint64
	wake             chan struct{} // buffer 1: an append became durable (runLogWatcher)

	// In-flight slots: entries in raft, and how many may be (alonemode.go).
	inflight, inflightLimit atomic.Int32
	yieldFirst              atomic.Bool // set while alone (alonemode.go)
	// syncHoldsP reports whether the log's next sync is direct (the
	// Store's DirectWALSyncActive); nil for a log store without them.
	syncHoldsP func() bool

	expect      atomic.Int64 // batches the last answered entry carried
	pipelined   atomic.Bool  // they held two or more requests each, on average
	appendNanos atomic.Int64 // moving average of a durable append's duration
	lingerUntil atomic.Int64 // monoNanos the wait for stragglers ends; 0: none
	timer       *time.Timer  // fires at lingerUntil
}

// init readies b; onLinger runs when a wait for stragglers is over.
func (b *batcher) init(inflightLimit int, onLinger func()) {
	b.policy = cutPolicy{maxLinger: defaultMaxLinger}
	b.wake = make(chan struct{}, 1)
	b.inflightLimit.Store(int32(inflightLimit))
	b.timer = time.AfterFunc(time.Hour, onLinger)
	b.timer.Stop()
}

// inputs reads the decision's inputs; yield says whether this caller has
// still to yield (alone only).
func (b *batcher) inputs(queued int, yield bool) cutInputs {
	return cutInputs{
		queued:        queued,
		logBusy:       !b.logFree(),
		yield:         yield && b.yieldFirst.Load(),
		syncHoldsP:    b.syncHoldsP != nil && b.syncHoldsP(),
		inflight:      int(b.inflight.Load()),
		inflightLimit: int(b.inflightLimit.Load()),
		expect:        int(b.expect.Load()),
		pipelined:     b.pipelined.Load(),
		appendNanos:   b.appendNanos.Load(),
		lingerUntil:   b.lingerUntil.Load(),
		now:           monoNanos(),
	}
}

// waitUntil arms the linger timer for a wait that ends at until (monoNanos,
// taken before this call, so the timer never fires before it), unless a
// wait is already armed.
func (b *batcher) waitUntil(until int64) {
	if b.lingerUntil.CompareAndSwap(0, until) {
		b.timer.Reset(time.Duration(until - monoNanos()))
	}
}

// cutting ends a wait for stragglers: the entry being cut takes what
// queued. Called under proposeMu before the queue is taken.
func (b *batcher) cutting() {
	if b.lingerUntil.Swap(0) != 0 {
		b.timer.Stop()
	}
}

// answered records what an applied entry tells about the clients it
// answered: they are likely to come back. Set before they are woken.
func (b *batcher) answered(batches, ops int) {
	b.expect.Store(int64(batches))
	b.pipelined.Store(ops >= 2*batches)
}

// takeSlot takes one of the in-flight slots if fewer than the limit are
// taken; false when none is free.
func (b *batcher) takeSlot() bool {
	for {
		n := b.inflight.Load()
		if n >= b.inflightLimit.Load() { // never above MaxInflight (Open)
			return false
		}
		if b.inflight.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// freeSlot gives back a slot taken by takeSlot.
func (b *batcher) freeSlot() { b.inflight.Add(-1) }

// logFree reports whether every proposed entry is durable here (or failed),
// so that the next entry can go to the log at once.
func (b *batcher) logFree() bool { return b.stored.Load() >= b.proposed.Load() }

// passed records that the entries up to seq are durable (or failed: either
// way they no longer hold the log).
func (b *batcher) passed(seq uint64) {
	for {
		cur := b.stored.Load()
		if cur >= seq || b.stored.CompareAndSwap(cur, seq) {
			return
		}
	}
}

// noteAppend folds one durable append's duration into the average (1/8 weight).
func (b *batcher) noteAppend(took time.Duration) {
	old := b.appendNanos.Load()
	b.appendNanos.Store(old + (int64(took)-old)/8)
}

// appended is called by raft's goroutine after an append of n command
// entries to this group's log is durable. On the leader every command entry
// in the group's log was proposed by this group's proposer, in order; on a
// follower nothing is proposed and the count is capped at what was. It
// returns the sequence numbers that became durable: (from, to].
func (b *batcher) appended(n uint64) (from, to uint64) {
	for {
		cur, top := b.stored.Load(), b.proposed.Load()
		next := min(cur+n, top)
		if next == cur || b.stored.CompareAndSwap(cur, next) {
			from, to = cur, next
			break
		}
	}
	select {
	case b.wake <- struct{}{}:
	default: // a wake-up is already pending
	}
	return from, to
}

// maxYields bounds the yields of one yieldToRunnable.
const maxYields = 8

// yieldToRunnable lets the goroutines that are runnable now run before the
// caller goes on, for as long as they keep queueing batches: it yields the
// processor (runtime.Gosched puts the caller behind every runnable
// goroutine) until two yields in a row saw the queue unchanged, at most
// maxYields times. One yield is not always enough: Go's scheduler takes a
// yielded goroutine back ahead of the runnable ones every 61st pass, for
// fairness. It never sleeps; with nothing else runnable each yield returns
// at once.
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

// proposeQueued asks decideCut what to do and does it, until the answer is
// to wait for an event (or there is nothing to cut). Any goroutine may call
// it, at any time; proposeMu keeps entries' stamps and their order in raft
// and in the completer's queue identical.
func (g *Group) proposeQueued() {
	yielded := false
	for !g.stopping.Load() {
		d := g.batcher.policy.decideCut(g.batcher.inputs(g.queued(), !yielded))
		switch d.action {
		case cutNothing, waitForLog, waitForSlot:
			return
		case yieldFirst:
			yielded = true
			g.yieldToRunnable()
		case waitForStragglers:
			g.batcher.waitUntil(d.until)
			return
		case cutNow:
			if !g.batcher.takeSlot() {
				continue // another caller took the last slot: decide again
			}
			if !g.proposeOne() {
				g.batcher.freeSlot() // someone else cut the queue first
			}
		}
	}
}

// lingerOver is the linger timer's function: the wait for stragglers is
// over (decideCut sees its end has passed), so cut what queued.
func (g *Group) lingerOver() { g.proposeQueued() }
