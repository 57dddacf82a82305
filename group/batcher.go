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
//
//     Merging cohorts, on a slow disk. There the clients settle into two
//     cohorts: one comes back while the other's entry is synced, each
//     client waits for two syncs per request, and an entry carries half of
//     them. When a cohort comes back in less than a sync, waiting for it
//     makes the two one: every client per sync and round trip, N / (F +
//     round trip) instead of N / 2F. On a fast disk the round trip is the
//     longer, and the wait, an idle node woken by each client that comes
//     back, costs more than it saves. Which one pays is measured, not
//     guessed: the batcher runs one way (the incumbent) and every so often
//     the other for mergeWindow cuts (a trial), and keeps the trial's way
//     only if it cut more batches a second than the incumbent's window
//     just before it, by mergeMargin. A trial that loses doubles the cuts
//     before the next (up to maxMergeRetry windows apart), one that wins
//     starts them again from minMergeRetry. While merging, the cut waits
//     until the queue holds every client in play, at most a mean append
//     (and maxMergeWait). The clients in play are the recent high-water
//     mark of the batches in the group (queued, or in entries not yet
//     answered): in a closed loop of N clients they reach N whenever
//     nobody is between an answer and the next request; a merge that runs
//     out lowers it to what is in the group then, a batch that finds more
//     raises it.
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
	lingerSince   int64 // when the wait for stragglers under way began; 0: none
	merge         bool  // waiting for every client in play (rule 4's merge of cohorts)
	inPlay        int   // clients in play: the recent high-water mark of batches in the group
	now           int64
}

// cutDecision is decideCut's answer; until is set for waitForStragglers.
type cutDecision struct {
	action cutAction
	until  int64 // monoNanos
}

// cutPolicy holds the decision's tunables.
type cutPolicy struct {
	maxLinger    time.Duration // the longest wait for stragglers, whatever the disk
	maxMergeWait time.Duration // the longest wait for every client in play
}

// defaultMaxLinger bounds the wait for stragglers whatever the disk's speed.
const defaultMaxLinger = 500 * time.Microsecond

// defaultMaxMergeWait bounds a merge's wait whatever the mean append says:
// a slow disk's append (cloud block storage: 0.5-2 ms) with room for a
// slower one, not a stall that inflated the mean.
const defaultMaxMergeWait = 10 * time.Millisecond

// The trials of the merge of cohorts (rule 4). A window is mergeWindow
// cuts, timed from the cut before its first: the incumbent's last window
// is what a trial of the other way is measured against, and a trial wins
// only by more than mergeMargin (a noisy window must not flip the way the
// batcher cuts). After a trial, the incumbent runs minMergeRetry cuts
// before the next, twice as many after each trial that loses, up to
// maxMergeRetry: a fast disk pays a trial of merging (one window of waits
// of at most a mean append each) every 4,096 cuts once it has lost a few
// times, and a disk that becomes slow, or clients that come back sooner,
// are noticed within that many cuts.
const (
	mergeWindow   = 64
	mergeMargin   = 0.05
	minMergeRetry = 64
	maxMergeRetry = 4096
)

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
	if in.expect <= 1 || in.appendNanos <= 0 {
		return 0, false // a lone client, or no append measured yet: no wait worth making
	}
	start := in.lingerSince
	if start == 0 {
		start = in.now
	}
	if in.merge {
		if in.queued >= in.inPlay {
			return 0, false // everyone in play is here
		}
		until = start + min(in.appendNanos, int64(p.maxMergeWait))
		return until, in.now < until
	}
	if in.queued >= in.expect {
		return 0, false // everyone expected is here
	}
	until = start + int64(p.linger(in.appendNanos, in.pipelined))
	return until, in.now < until
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
// the log watcher update. Every field is safe for any goroutine, except the
// trials' state, which only judgeMerge touches, under proposeMu.
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
	lingerSince atomic.Int64 // monoNanos the wait for stragglers began; 0: none
	lingerUntil atomic.Int64 // monoNanos the linger timer is armed for; 0: not armed
	timer       *time.Timer  // fires at lingerUntil

	// The merge of cohorts (rule 4): whether it is on, the cuts made while
	// it was and the trials it lost (atomics, for INFO), batches ever
	// queued and ever answered (their difference is the batches in the
	// group), and the recent high-water mark of that difference, the
	// clients in play.
	merging             atomic.Bool
	mergedCuts          atomic.Uint64 // cuts made while merging
	mergeEnds           atomic.Uint64 // times merging lost to cutting without it
	enqueued, answeredN atomic.Uint64
	inPlay              atomic.Int64
	// The trials (judgeMerge), under proposeMu.
	trial         bool    // the window under way runs the other way than the incumbent
	untilTrial    int     // the incumbent's cuts before the next trial
	retry         int     // untilTrial after a trial: minMergeRetry..maxMergeRetry
	winStart      int64   // monoNanos of the cut before the window's first; 0: none yet
	winBatches    int     // batches cut in the window so far
	winCuts       int     // cuts in the window so far
	incumbentRate float64 // batches a nanosecond in the incumbent's last window
}

// init readies b; onLinger runs when a wait for stragglers is over.
func (b *batcher) init(inflightLimit int, onLinger func()) {
	b.policy = cutPolicy{maxLinger: defaultMaxLinger, maxMergeWait: defaultMaxMergeWait}
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
		lingerSince:   b.lingerSince.Load(),
		merge:         b.merging.Load(),
		inPlay:        int(b.inPlay.Load()),
		now:           monoNanos(),
	}
}

// waitUntil notes that a wait for stragglers is under way (from now, if
// it is the first decision of this wait) and arms the linger timer for
// until, unless it is armed for an earlier instant already: the timer
// firing early only makes the decision again (lingerOver), which re-arms
// it for the wait's new end. until is monoNanos, taken before this call,
// so the timer never fires before it.
func (b *batcher) waitUntil(until, now int64) {
	b.lingerSince.CompareAndSwap(0, now)
	for {
		cur := b.lingerUntil.Load()
		if cur != 0 && cur <= until {
			return
		}
		if b.lingerUntil.CompareAndSwap(cur, until) {
			b.timer.Reset(time.Duration(until - monoNanos()))
			return
		}
	}
}

// timerFired is the linger timer's: it is armed no more.
func (b *batcher) timerFired() { b.lingerUntil.Store(0) }

// cutting ends a wait for stragglers: the entry being cut takes what
// queued. Called under proposeMu before the queue is taken.
func (b *batcher) cutting(queued int) {
	b.lingerSince.Store(0)
	b.judgeMerge(queued, monoNanos())
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

// queuedOne counts a batch that joined the queue and raises the clients in
// play to the batches now in the group if they are more. Any goroutine.
func (b *batcher) queuedOne() {
	in := int64(b.enqueued.Add(1) - b.answeredN.Load())
	for {
		cur := b.inPlay.Load()
		if in <= cur || b.inPlay.CompareAndSwap(cur, in) {
			return
		}
	}
}

// done counts batches answered, whatever their outcome (the completer).
func (b *batcher) done(batches int) { b.answeredN.Add(uint64(batches)) }

// judgeMerge counts a cut of queued batches toward the merge of cohorts'
// trials (rule 4): the window under way, and, when a window is complete,
// the incumbent's rate or the trial's verdict. A cut made while merging
// that did not gather every client in play (its wait ran out: some left,
// or the load is not a closed loop) lowers the clients in play to the
// batches in the group then; a batch that finds more raises it again.
// Under proposeMu.
func (b *batcher) judgeMerge(queued int, now int64) {
	merging := b.merging.Load()
	if merging {
		b.mergedCuts.Add(1)
		if int64(queued) < b.inPlay.Load() {
			b.inPlay.Store(max(1, int64(b.enqueued.Load()-b.answeredN.Load())))
		}
	}
	if b.winStart == 0 {
		b.winStart, b.untilTrial, b.retry = now, minMergeRetry, minMergeRetry
		return
	}
	b.winBatches += queued
	if b.winCuts++; b.winCuts < mergeWindow {
		return
	}
	rate := float64(b.winBatches) / float64(max(now-b.winStart, 1))
	b.winStart, b.winBatches, b.winCuts = now, 0, 0
	if !b.trial {
		b.incumbentRate = rate
		if b.untilTrial -= mergeWindow; b.untilTrial <= 0 {
			b.trial = true
			b.merging.Store(!merging) // the other way, for one window
		}
		return
	}
	b.trial = false
	if rate > b.incumbentRate*(1+mergeMargin) {
		b.incumbentRate, b.retry = rate, minMergeRetry // the trial's way is the incumbent now
		if !merging {
			b.mergeEnds.Add(1)
		}
	} else {
		b.retry = min(2*b.retry, maxMergeRetry)
		b.merging.Store(!merging) // back to the incumbent
		if merging {
			b.mergeEnds.Add(1)
		}
	}
	b.untilTrial = b.retry
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
		in := g.batcher.inputs(g.queued(), !yielded)
		d := g.batcher.policy.decideCut(in)
		switch d.action {
		case cutNothing, waitForLog, waitForSlot:
			return
		case yieldFirst:
			yielded = true
			g.yieldToRunnable()
		case waitForStragglers:
			g.batcher.waitUntil(d.until, in.now)
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

// lingerOver is the linger timer's function: the wait for stragglers may
// be over (decideCut sees whether its end has passed, and waits on if
// batches came meanwhile), so decide again.
func (g *Group) lingerOver() {
	g.batcher.timerFired()
	g.proposeQueued()
}
