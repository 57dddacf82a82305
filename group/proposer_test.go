package group

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/redcell/redcell/fsm"
	"github.com/redcell/redcell/gcra"
	"github.com/redcell/redcell/request"
)

// frozenAt is the instant tests freeze the clock at: a fixed date in 2030,
// later than the wall clock, so that Real() moves a clock backwards.
const frozenAt int64 = 1_900_000_000_000_000_000

// proposalRun is a set of batches proposed concurrently by workers, with
// every op tagged (model_test.go) and every result kept by tag.
type proposalRun struct {
	batches  [][]request.Request // batch number → ops
	origins  []origin            // op tag → where it came from
	batchLen []int
	got      []request.Result // op tag → what Propose answered
}

// newProposalRun makes workers×perWorker batches of 1..maxOps ops on keys.
func newProposalRun(seed uint64, workers, perWorker, maxOps int, keys [][]byte) *proposalRun {
	rng := rand.New(rand.NewPCG(seed, 1))
	r := &proposalRun{}
	for b := 0; b < workers*perWorker; b++ {
		n := 1 + rng.IntN(maxOps)
		ops := make([]request.Request, n)
		for j := range ops {
			id := len(r.origins)
			ops[j] = taggedOp(rng, keys[rng.IntN(len(keys))], id)
			r.origins = append(r.origins, origin{batch: b, pos: j})
		}
		r.batches = append(r.batches, ops)
		r.batchLen = append(r.batchLen, n)
	}
	r.got = make([]request.Result, len(r.origins))
	return r
}

// propose runs the batches of worker w (w, w+workers, ...) through one
// reused Batch, as a connection would, and keeps the results.
func (r *proposalRun) propose(g *Group, workers int) error {
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b := NewBatch()
			for bi := w; bi < len(r.batches); bi += workers {
				b.Reset()
				b.Ops = append(b.Ops, r.batches[bi]...)
				if err := g.Propose(b); err != nil {
					errs <- fmt.Errorf("batch %d: %w", bi, err)
					return
				}
				if len(b.Results) != len(b.Ops) {
					errs <- fmt.Errorf("batch %d: %d results for %d ops", bi, len(b.Results), len(b.Ops))
					return
				}
				for j := range b.Ops {
					r.got[opTag(&b.Ops[j])] = b.Results[j]
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

func (r *proposalRun) opCount() int { return len(r.origins) }

// checkAgainstSequential replays the logged entries, in log order, through
// the sequential model and through a fresh fsm, and requires both to give
// exactly what Propose answered for every op. Every stamp must be want.
func (r *proposalRun) checkAgainstSequential(t *testing.T, entries []loggedEntry, want int64) {
	t.Helper()
	model := newGCRAModel()
	fresh := fsm.New(fsm.Config{Stripes: 3, Logger: testLogger()})
	kinds := map[string]int{}
	for _, e := range entries {
		if e.stamp != want {
			t.Fatalf("entry %d stamped %d, want the frozen clock %d", e.log.Index, e.stamp, want)
		}
		l := e.log
		out := fresh.ApplyBatch([]*raft.Log{&l})
		replayed, ok := out[0].(*fsm.Results)
		if !ok {
			t.Fatalf("entry %d: fresh fsm answered %v", e.log.Index, out[0])
		}
		for i := range e.ops {
			op := &e.ops[i]
			tag := opTag(op)
			got := r.got[tag]
			if m := model.throttle(op, e.stamp); !got.Equal(m) {
				t.Fatalf("op %d (batch %d, entry %d position %d) on %q: Propose answered %+v, sequential model %+v",
					tag, r.origins[tag].batch, e.log.Index, i, op.Key, got, m)
			}
			if !replayed.R[i].Equal(got) {
				t.Fatalf("op %d (entry %d position %d): Propose answered %+v, replay on a fresh fsm %+v",
					tag, e.log.Index, i, got, replayed.R[i])
			}
			switch {
			case got.Kind == request.KindError:
				kinds["expire error"]++
			case got.Ints[0] == 1:
				kinds["limited"]++
			default:
				kinds["allowed"]++
			}
		}
	}
	// The run must have exercised every kind of answer, or the comparison
	// above proves little about ordering.
	for _, k := range []string{"allowed", "limited", "expire error"} {
		if kinds[k] == 0 {
			t.Errorf("no %s answer in the run (%v): the workload does not exercise ordering", k, kinds)
		}
	}
}

// Test_Propose_ConcurrentBatchesMatchSequentialModel: 50 connections each
// propose 200 pipelines of 1-16 CL.THROTTLEs on 24 shared keys under a
// frozen clock. Whatever the interleaving, each answer must be what the
// sequential specification gives when the ops are applied in log order, and
// batches must be packed into entries whole.
func Test_Propose_ConcurrentBatchesMatchSequentialModel(t *testing.T) {
	const workers, perWorker = 50, 200
	var keys [][]byte
	for i := 0; i < 24; i++ {
		keys = append(keys, []byte(fmt.Sprintf("user:%d", i)))
	}
	run := newProposalRun(1, workers, perWorker, 16, keys)

	n := newTestNode(t, "node1")
	n.clock.Set(frozenAt)
	n.open(t, nil)
	waitFor(t, 10*time.Second, "a ready leader", n.g.Ready)

	if err := run.propose(n.g, workers); err != nil {
		t.Fatal(err)
	}

	st := n.g.Stats()
	if st.OpsProposed != uint64(run.opCount()) {
		t.Errorf("Stats().OpsProposed = %d, want the %d ops proposed", st.OpsProposed, run.opCount())
	}
	if c := n.g.Counters(); c.Ops != st.OpsProposed || c.Entries != st.EntriesProposed {
		t.Errorf("Counters() = %+v, Stats() says entries %d ops %d", c, st.EntriesProposed, st.OpsProposed)
	}
	if st.EntriesProposed >= uint64(len(run.batches)) {
		t.Errorf("Stats().EntriesProposed = %d for %d batches: no batching happened", st.EntriesProposed, len(run.batches))
	}
	if st.MaxEntryOps < st.LastEntryOps || st.MaxEntryOps <= 16 {
		t.Errorf("MaxEntryOps = %d, LastEntryOps = %d: want max >= last and max > one batch", st.MaxEntryOps, st.LastEntryOps)
	}
	t.Logf("%d ops in %d batches went into %d entries (max %d ops)", run.opCount(), len(run.batches), st.EntriesProposed, st.MaxEntryOps)

	entries := committedEntries(t, n.store)
	if uint64(len(entries)) != st.EntriesProposed {
		t.Fatalf("%d command entries in the log, Stats().EntriesProposed = %d", len(entries), st.EntriesProposed)
	}
	checkEntriesKeepBatches(t, entries, run.origins, run.batchLen)
	run.checkAgainstSequential(t, entries, frozenAt)

	// The leader's own state agrees with the model too (through Read).
	model := newGCRAModel()
	for _, e := range entries {
		for i := range e.ops {
			model.throttle(&e.ops[i], e.stamp)
		}
	}
	for _, k := range keys {
		res := []request.Result{{}}
		if err := n.g.Read([]request.Request{{Code: request.Exists, Keys: [][]byte{k}}}, res); err != nil {
			t.Fatalf("Read EXISTS %s: %v", k, err)
		}
		want := int64(0)
		if model.tat[string(k)] > frozenAt {
			want = 1
		}
		if res[0].Kind != request.KindInt || res[0].Ints[0] != want {
			t.Errorf("EXISTS %s = %+v, model says %d", k, res[0], want)
		}
	}
}

// Test_Propose_EntrySizeCap: with a 1 KiB cap, a burst of pipelines with
// long keys is spread over many entries. Batches are never split or mixed
// across entries, an oversized batch still gets an entry of its own, and
// the answers stay those of the sequential model.
func Test_Propose_EntrySizeCap(t *testing.T) {
	const maxEntry = 1024
	const workers, perWorker = 30, 12
	var keys [][]byte
	for i := 0; i < 12; i++ {
		keys = append(keys, bytes.Repeat([]byte{byte('a' + i)}, 150+40*i)) // 150..590 bytes
	}
	run := newProposalRun(2, workers, perWorker, 4, keys)

	n := newTestNode(t, "node1")
	n.clock.Set(frozenAt)
	n.open(t, func(c *Config) { c.MaxEntryBytes = maxEntry })
	waitFor(t, 10*time.Second, "a ready leader", n.g.Ready)

	if err := run.propose(n.g, workers); err != nil {
		t.Fatal(err)
	}
	entries := committedEntries(t, n.store)
	perEntry := checkEntriesKeepBatches(t, entries, run.origins, run.batchLen)
	run.checkAgainstSequential(t, entries, frozenAt)

	multi, oversized := 0, 0
	for ei, bs := range perEntry {
		if len(bs) > 1 {
			multi++
		}
		if len(entries[ei].log.Data) > maxEntry {
			oversized++
		}
	}
	if len(entries) < 2 {
		t.Fatalf("%d entries: the cap split nothing", len(entries))
	}
	if multi == 0 {
		t.Errorf("no entry holds more than one batch: the burst was not batched at all")
	}
	if oversized == 0 {
		t.Errorf("no entry is larger than the cap: the workload never had a batch that needed an entry of its own")
	}
	t.Logf("%d batches in %d entries; %d entries hold several batches, %d exceed %d bytes", len(run.batches), len(entries), multi, oversized, maxEntry)

	// Config.MaxEntryBytes: "bounds one log entry; the proposer starts a new
	// entry when the next batch would not fit". Only an entry holding a
	// single batch may exceed it.
	over := 0
	for ei, bs := range perEntry {
		if size := len(entries[ei].log.Data); len(bs) > 1 && size > maxEntry {
			if over == 0 {
				t.Errorf("entry %d holds %d batches in %d bytes, over MaxEntryBytes %d: the proposer added a batch that did not fit",
					entries[ei].log.Index, len(bs), size, maxEntry)
			}
			over++
		}
	}
	if over > 0 {
		t.Errorf("%d of %d entries hold several batches and exceed MaxEntryBytes", over, len(entries))
	}
}

// Test_Propose_StateMachineStopped: once the state machine has met an entry
// it cannot apply (here one of a future format, as a newer Redcell would
// write), it refuses every later entry; Propose answers ErrStateMachine,
// each time, without hanging the proposer.
func Test_Propose_StateMachineStopped(t *testing.T) {
	fatal := make(chan error, 1)
	n := newTestNode(t, "node1")
	n.fsm = fsm.New(fsm.Config{Logger: testLogger(), OnFatal: func(err error) {
		select {
		case fatal <- err:
		default:
		}
	}})
	n.open(t, nil)
	waitFor(t, 10*time.Second, "a ready leader", n.g.Ready)

	future := make([]byte, 13)
	future[0] = fsm.EntryVersion + 1
	if err := n.g.Raft().Apply(future, 0).Error(); err != nil {
		t.Fatalf("applying an entry of a future version: %v", err)
	}
	select {
	case err := <-fatal:
		t.Logf("OnFatal: %v", err)
	default:
		t.Fatal("the state machine applied an entry of a future version without calling OnFatal")
	}
	b := NewBatch()
	for i := 0; i < 3; i++ {
		b.Reset()
		b.Ops = append(b.Ops, throttleReq([]byte("k"), gcraParams1s))
		if err := n.g.Propose(b); !errors.Is(err, ErrStateMachine) {
			t.Fatalf("Propose %d after the state machine stopped: %v, want ErrStateMachine", i, err)
		}
	}
}

// gcraParams1s: one token per second, a burst of 10.
var gcraParams1s = gcra.Params{Interval: int64(time.Second), Limit: 10, Quantity: 1}
