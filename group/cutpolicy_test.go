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

// The merge of cohorts is judged by trials: the batcher cuts one way (at
// first without merging) and, after retry cuts, the other way for one
// window of mergeWindow cuts; the trial's way stays only when it cut more
// batches a second than the incumbent's last window, by more than
// mergeMargin. A trial that loses doubles the cuts before the next (up to
// maxMergeRetry), one that wins starts from minMergeRetry. The clients in
// play are the high-water mark of the batches in the group: a batch that
// finds more raises it, answered batches do not lower it, a merged cut that
// gathered fewer lowers it to the batches in the group.
func Test_Batcher_JudgesTheMergeByTrials(t *testing.T) {
	var b batcher
	b.init(4, func() {})
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

	const ms = int64(time.Millisecond)
	now := int64(1)
	// window cuts one window of batches per cut, each cut gap ns after the
	// last, and reports whether the batcher merged during it.
	window := func(batches int, gap int64) (merged bool) {
		merged = b.merging.Load()
		for range mergeWindow {
			now += gap
			if b.merging.Load() != merged {
				t.Fatalf("the way changed inside a window")
			}
			b.judgeMerge(batches, now)
		}
		return merged
	}
	b.judgeMerge(3, now) // the first cut opens the first window
	// Unmerged: 3 batches a cut every 1 ms. After minMergeRetry cuts
	// (one window), a trial of merging.
	if window(3, ms) {
		t.Fatal("merged from the start")
	}
	// The trial merges 5 batches a cut every 1.5 ms: 3.33 a ms against 3,
	// more than the margin: merging is the incumbent.
	if !window(5, 3*ms/2) {
		t.Fatal("the second window was not a trial of merging")
	}
	if !b.merging.Load() || b.mergedCuts.Load() != mergeWindow || b.mergeEnds.Load() != 0 {
		t.Fatalf("a merge that cut more a second lost: merging %v, merged cuts %d, ends %d", b.merging.Load(), b.mergedCuts.Load(), b.mergeEnds.Load())
	}
	// Merging stays for minMergeRetry cuts, then a trial without it, which
	// cuts 3 a ms against 3.33: merging stays, and the next trial comes
	// twice as late.
	if !window(5, 3*ms/2) || window(3, ms) {
		t.Fatal("not a merged window then a trial without merging")
	}
	if !b.merging.Load() || b.mergeEnds.Load() != 0 {
		t.Fatal("a trial without merging that cut less a second ended merging")
	}
	for range 2 * minMergeRetry / mergeWindow {
		if !window(5, 3*ms/2) {
			t.Fatal("a trial came before twice the retry")
		}
	}
	// The disk got fast: the trial without merging cuts 3 every 0.5 ms,
	// 6 a ms: merging ends, and is tried again after minMergeRetry cuts.
	if window(3, ms/2) {
		t.Fatal("no trial after twice the retry")
	}
	if b.merging.Load() || b.mergeEnds.Load() != 1 {
		t.Fatalf("a faster way without merging kept merging (ends %d)", b.mergeEnds.Load())
	}
	// Trials of merging now lose: 5 a cut every 1 ms is 5 a ms against 6.
	// Each doubles the cuts before the next, up to maxMergeRetry.
	retry := minMergeRetry
	for range 8 {
		for range retry / mergeWindow {
			if window(3, ms/2) {
				t.Fatalf("a trial before %d cuts", retry)
			}
		}
		if !window(5, ms) {
			t.Fatalf("no trial after %d cuts", retry)
		}
		if b.merging.Load() {
			t.Fatal("a merge that cut less a second won its trial")
		}
		retry = min(2*retry, maxMergeRetry)
	}
	if retry != maxMergeRetry || b.retry != maxMergeRetry {
		t.Fatalf("retry %d (batcher %d); want it capped at %d", retry, b.retry, maxMergeRetry)
	}
	// A trial within the margin does not win: 6.2 a ms against 6.
	for range maxMergeRetry / mergeWindow {
		window(3, ms/2)
	}
	if !window(31, 5*ms) || b.merging.Load() {
		t.Fatal("a trial within the margin won")
	}

	// A merged cut that did not gather every client in play lowers them
	// to the batches in the group; never below one.
	b.merging.Store(true)
	b.inPlay.Store(5)
	b.judgeMerge(2, now+ms) // 3 in the group (8 queued, 5 answered)
	if got := b.inPlay.Load(); got != 3 {
		t.Fatalf("in play %d after a merge gathered 2 of 5 with 3 in the group; want 3", got)
	}
	b.done(3)
	b.judgeMerge(0, now+2*ms)
	if got := b.inPlay.Load(); got != 1 {
		t.Fatalf("in play %d with none in the group; want 1 (never 0)", got)
	}
}
