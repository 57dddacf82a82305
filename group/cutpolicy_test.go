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
	p := cutPolicy{maxLinger: 500 * time.Microsecond}
	// idle: a free log, a free slot, the last entry answered one batch.
	idle := cutInputs{queued: 1, inflightLimit: 4, expect: 1, appendNanos: 400 * us, now: now}
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
			with(func(in *cutInputs) { in.queued = 3; in.expect = 5; in.lingerUntil = now + 40*us }), waitForStragglers, now + 40*us},
		{"a wait that has ended: cut what is there",
			with(func(in *cutInputs) { in.queued = 3; in.expect = 5; in.lingerUntil = now }), cutNow, 0},
		{"a wait that has ended but no slot: wait for the slot",
			with(func(in *cutInputs) { in.queued = 3; in.expect = 5; in.lingerUntil = now - us; in.inflight = 4 }), waitForSlot, 0},
		{"stragglers are awaited before a slot is taken",
			with(func(in *cutInputs) { in.queued = 3; in.expect = 5; in.inflight = 4 }), waitForStragglers, now + 100*us},
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
