package group

import (
	"testing"
	"time"
)

// The stage sums attribute a batch's time to the stage it spent it in: with
// the first entry held on the disk, its batch's wait is local-log time and
// the batches queued behind it wait in the queue, each at least as long as
// the test saw them wait. Every batch is counted once, and INFO shows the
// sums.
func Test_CommitTimes_AttributeWaitsToTheirStage(t *testing.T) {
	const clients = 20
	n, disk, propose := openOnHeldDisk(t, nil)
	before := n.g.CommitTimes()
	start := time.Now()
	first, rest := queueBehindHeldEntry(t, n, disk, propose, clients)
	allQueued := time.Now()
	waitFor(t, 10*time.Second, "a measurable wait", func() bool { return time.Since(allQueued) > time.Millisecond })
	released := time.Now()
	disk.letGo()
	awaitProposals(t, first, rest, clients)
	total := time.Since(start)

	after := n.g.CommitTimes()
	if got := after.Batches - before.Batches; got != clients+1 {
		t.Fatalf("%d batches timed; want %d", got, clients+1)
	}
	queue := after.Queue - before.Queue
	localLog := after.LocalLog - before.LocalLog
	quorum := after.QuorumApply - before.QuorumApply
	// The first batch was on the held disk from before allQueued to after
	// released, and the others queued for as long.
	if min := released.Sub(allQueued); localLog < min {
		t.Fatalf("local-log time %v; the first entry alone was held %v", localLog, min)
	}
	if min := clients * released.Sub(allQueued); queue < min {
		t.Fatalf("queue time %v; the %d queued batches waited at least %v", queue, clients, min)
	}
	// Nothing is counted twice: each batch's stages fit in the time the
	// test ran (the first batch's queue wait is nil).
	if sum, most := queue+localLog+quorum, time.Duration(clients+1)*total; sum > most {
		t.Fatalf("stages add up to %v, more than %d batches × %v", sum, clients+1, total)
	}

	fields := map[string]any{}
	NewLocal(n.g, nil).Raft().Fields(func(name string, v any) { fields[name] = v })
	if fields["raft_batches_timed"] != after.Batches {
		t.Fatalf("INFO raft_batches_timed = %v; want %d", fields["raft_batches_timed"], after.Batches)
	}
	for name, d := range map[string]time.Duration{
		"raft_batch_queue_usec_total":        after.Queue,
		"raft_batch_local_log_usec_total":    after.LocalLog,
		"raft_batch_quorum_apply_usec_total": after.QuorumApply,
	} {
		if fields[name] != d.Microseconds() {
			t.Fatalf("INFO %s = %v; want %d", name, fields[name], d.Microseconds())
		}
	}
}

// The durable stamps are a ring keyed by sequence number: a stamp is found
// only for its own entry, an overwritten slot is reported missing, and an
// entry without its stamp is left out of the sums rather than guessed.
func Test_CommitTimes_DurableStampsRing(t *testing.T) {
	var c commitTimes
	c.stampDurable(0, 3)
	for s := uint64(1); s <= 3; s++ {
		if _, ok := c.durableAt(s); !ok {
			t.Fatalf("entry %d stamped but not found", s)
		}
	}
	if _, ok := c.durableAt(4); ok {
		t.Fatal("entry 4 found before it was stamped")
	}
	ring := uint64(len(c.durable))
	c.stampDurable(3, 3+2*ring) // more than the ring holds: only the last ring entries
	if _, ok := c.durableAt(3 + ring); ok {
		t.Fatalf("entry %d found after its slot was reused", 3+ring)
	}
	for _, s := range []uint64{4 + ring, 3 + 2*ring} {
		if _, ok := c.durableAt(s); !ok {
			t.Fatalf("entry %d stamped but not found", s)
		}
	}

	at, _ := c.durableAt(3 + 2*ring)
	e := &inflightEntry{seq: 3 + 2*ring, proposed: at - 100, queued: 7, batches: make([]*Batch, 2)}
	c.noteAnswered(e, at+50)
	got := CommitTimes{Batches: c.batches.Load(), Queue: time.Duration(c.queue.Load()),
		LocalLog: time.Duration(c.localLog.Load()), QuorumApply: time.Duration(c.quorum.Load())}
	if want := (CommitTimes{Batches: 2, Queue: 7, LocalLog: 200, QuorumApply: 100}); got != want {
		t.Fatalf("sums %+v; want %+v", got, want)
	}
	c.noteAnswered(&inflightEntry{seq: 3 + ring, batches: make([]*Batch, 5)}, at) // stamp lost
	if c.batches.Load() != 2 {
		t.Fatalf("an entry without its durable stamp was counted: %d batches", c.batches.Load())
	}
}
