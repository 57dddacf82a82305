package group

import (
	"testing"
	"time"
)

// The cut decision alone, as a table: given what the batcher knows at one
// instant, cut now or wait, and for what. No group, raft or goroutine.
func Test_DecideCut(t *testing.T) {
	const (
		us  = int64(time.Microsecond)
		now = 1_000_000 * us // any instant
	)
	p := cutPolicy{maxLinger: 500 * time.Microsecond, maxMergeWait: 10 * time.Millisecond}
	// idle: a free log, a free slot, the last entry answered one batch.
	idle := cutInputs{queued: 1, inflightLimit: 4, expect: 1, appendNanos: 400 * us, now: now}
	// merging sets up rule 4's merge of cohorts: queued batches, the last
	// entry's batches, the clients in play and the mean append.
	merging := func(in *cutInputs, queued, expect, inPlay int, appendNs int64) {
		in.merge, in.queued, in.expect, in.inPlay, in.appendNanos = true, queued, expect, inPlay, appendNs
	}
	with := func(mod func(*cutInputs)) cutInputs {
		in := idle
		mod(&in)
		return in
	}
	for _, c := range []struct {
		name  string
		in    cutInputs
		want  cutAction
		until int64 // for waitForStragglers
	}{
		{"a lone client on an idle group goes at once", idle, cutNow, 0},
		{"nothing queued, nothing to do", with(func(in *cutInputs) { in.queued = 0 }), cutNothing, 0},
		{"an entry on its way to the log: wait for its append",
			with(func(in *cutInputs) { in.queued = 30; in.logBusy = true }), waitForLog, 0},
		{"the log busy comes before yielding",
			with(func(in *cutInputs) { in.logBusy = true; in.yield = true }), waitForLog, 0},
		{"alone, a free log: yield before cutting",
			with(func(in *cutInputs) { in.yield = true }), yieldFirst, 0},
		{"alone, nothing queued yet: still yield (woken clients may queue)",
			with(func(in *cutInputs) { in.queued = 0; in.yield = true }), yieldFirst, 0},
		{"alone, after pipelines: no yield",
			with(func(in *cutInputs) { in.yield = true; in.pipelined = true }), cutNow, 0},
		{"alone, after pipelines, direct syncs: yield (no connection ran during the sync)",
			with(func(in *cutInputs) { in.yield = true; in.pipelined = true; in.syncHoldsP = true }), yieldFirst, 0},
		{"direct syncs, yield already done: cut",
			with(func(in *cutInputs) { in.pipelined = true; in.syncHoldsP = true }), cutNow, 0},
		{"alone, after pipelines, nothing queued: nothing to do",
			with(func(in *cutInputs) { in.queued = 0; in.yield = true; in.pipelined = true; in.expect = 5 }), cutNothing, 0},
		{"every slot taken: wait for one",
			with(func(in *cutInputs) { in.inflight = 4 }), waitForSlot, 0},
		{"a lower limit (peers) counts",
			with(func(in *cutInputs) { in.inflight = 1; in.inflightLimit = 1 }), waitForSlot, 0},
		// Rule 4, a mean append of 400 µs.
		{"after single requests, 3 of 5 back: wait a quarter of an append",
			with(func(in *cutInputs) { in.queued = 3; in.expect = 5 }), waitForStragglers, now + 100*us},
		{"after pipelines, 3 of 5 back: wait half an append",
			with(func(in *cutInputs) { in.queued = 3; in.expect = 5; in.pipelined = true }), waitForStragglers, now + 200*us},
		{"a slow disk: never more than maxLinger",
			with(func(in *cutInputs) { in.queued = 3; in.expect = 5; in.pipelined = true; in.appendNanos = 10_000 * us }),
			waitForStragglers, now + 500*us},
		{"everyone expected is back: cut",
			with(func(in *cutInputs) { in.queued = 5; in.expect = 5 }), cutNow, 0},
		{"more than expected: cut",
			with(func(in *cutInputs) { in.queued = 9; in.expect = 5 }), cutNow, 0},
		{"a wait under way keeps its end",
			with(func(in *cutInputs) { in.queued = 3; in.expect = 5; in.lingerSince = now - 60*us }), waitForStragglers, now + 40*us},
		{"a wait that has ended: cut what is there",
			with(func(in *cutInputs) { in.queued = 3; in.expect = 5; in.lingerSince = now - 100*us }), cutNow, 0},
		{"a wait that has ended but no slot: wait for the slot",
			with(func(in *cutInputs) { in.queued = 3; in.expect = 5; in.lingerSince = now - 101*us; in.inflight = 4 }), waitForSlot, 0},
		{"stragglers are awaited before a slot is taken",
			with(func(in *cutInputs) { in.queued = 3; in.expect = 5; in.inflight = 4 }), waitForStragglers, now + 100*us},
		// Rule 4 merging cohorts: wait until every client in play is
		// queued, at most an append after the wait began.
		{"merging: two cohorts, the one queued waits for the one just answered",
			with(func(in *cutInputs) { merging(in, 25, 25, 50, 2000*us) }), waitForStragglers, now + 2000*us},
		{"merging: a wait under way keeps its end",
			with(func(in *cutInputs) { merging(in, 40, 25, 50, 2000*us); in.lingerSince = now - 1500*us }), waitForStragglers, now + 500*us},
		{"merging: a wait that has lasted an append: cut",
			with(func(in *cutInputs) { merging(in, 40, 25, 50, 2000*us); in.lingerSince = now - 2000*us }), cutNow, 0},
		{"merging: everyone in play is here: cut",
			with(func(in *cutInputs) { merging(in, 50, 25, 50, 2000*us) }), cutNow, 0},
		{"merging: never longer than maxMergeWait, whatever the mean append says",
			with(func(in *cutInputs) { merging(in, 25, 25, 50, 50_000*us) }), waitForStragglers, now + 10_000*us},
		{"merging: the last entry answered one batch: a lone client never waits",
			with(func(in *cutInputs) { merging(in, 1, 1, 50, 2000*us) }), cutNow, 0},
		{"nothing queued while stragglers are expected: nothing to cut",
			with(func(in *cutInputs) { in.queued = 0; in.expect = 5 }), cutNothing, 0},
		{"no append measured yet: no wait worth making",
			with(func(in *cutInputs) { in.queued = 3; in.expect = 5; in.appendNanos = 0 }), cutNow, 0},
	} {
		got := p.decideCut(c.in)
		if got.action != c.want || got.until != c.until {
			t.Errorf("%s: got %v until %+d µs, want %v until %+d µs (inputs %+v)",
				c.name, got.action, (got.until-now)/us, c.want, (c.until-now)/us, c.in)
		}
	}
}

// The merge of cohorts is judged at each cut: it goes on while everyone in
// play is back within a mean append, ends when they take longer or when two
// waits in a row run out (each lowering the clients in play to those in the
// group), and is tried again after retryAfter cuts without it, twice as
// many after each try that ends. The clients in play are the high-water
// mark of the batches in the group: a batch that finds more raises it,
// answered batches do not lower it.
func Test_Batcher_JudgesTheMerge(t *testing.T) {
	var b batcher
	b.init(4, func() {})
	b.appendNanos.Store(int64(2 * time.Millisecond))
	for range 5 {
		b.queuedOne()
	}
	if got := b.inPlay.Load(); got != 5 {
		t.Fatalf("in play %d after five batches; want 5", got)
	}
	b.done(5) // answered: their clients are out, still in play
	for range 3 {
		b.queuedOne()
	}
	if got := b.inPlay.Load(); got != 5 {
		t.Fatalf("in play %d with three of five back; want 5", got)
	}
	unmergedCuts := func() int {
		n := 0
		for !b.merging.Load() {
			b.judgeMerge(3, 0, 0)
			n++
		}
		return n
	}
	if n := unmergedCuts(); n != minMergeRetry {
		t.Fatalf("tried a merge after %d cuts; want %d", n, minMergeRetry)
	}
	const ms = int64(time.Millisecond)
	b.judgeMerge(5, 10*ms, 11*ms) // all five, within an append
	if !b.merging.Load() || b.mergedCuts.Load() != 1 {
		t.Fatal("a merge that gathered everyone within an append ended merging")
	}
	b.judgeMerge(5, 10*ms, 13*ms) // all five, but after 3 ms: once is not enough
	if !b.merging.Load() {
		t.Fatal("one merge slower than an append ended merging")
	}
	b.judgeMerge(5, 10*ms, 13*ms) // twice in a row
	if b.merging.Load() || b.mergeEnds.Load() != 1 {
		t.Fatal("two merges in a row slower than an append kept merging")
	}
	if n := unmergedCuts(); n != 2*minMergeRetry {
		t.Fatalf("tried a merge again after %d cuts; want %d (doubled)", n, 2*minMergeRetry)
	}
	b.judgeMerge(3, 10*ms, 12*ms) // ran out with three of five: once is not enough
	if !b.merging.Load() || b.inPlay.Load() != 3 {
		t.Fatalf("after one merge ran out: merging %v, in play %d; want true, 3", b.merging.Load(), b.inPlay.Load())
	}
	b.judgeMerge(2, 10*ms, 12*ms) // and again
	if b.merging.Load() {
		t.Fatal("two merges in a row ran out and it goes on merging")
	}
	if n := unmergedCuts(); n != 4*minMergeRetry {
		t.Fatalf("tried a merge again after %d cuts; want %d", n, 4*minMergeRetry)
	}
	b.judgeMerge(3, 10*ms, 11*ms) // a success resets the backoff
	b.judgeMerge(3, 10*ms, 14*ms)
	b.judgeMerge(3, 10*ms, 14*ms)
	if n := unmergedCuts(); n != 2*minMergeRetry {
		t.Fatalf("after a success then an end: tried again after %d cuts; want %d", n, 2*minMergeRetry)
	}
	b.done(3)
	b.judgeMerge(0, 10*ms, 11*ms)
	if got := b.inPlay.Load(); got != 1 {
		t.Fatalf("in play %d with none in the group; want 1 (never 0)", got)
	}
}
