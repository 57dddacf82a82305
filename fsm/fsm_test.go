package fsm

import (
	"bytes"
	"errors"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/redcell/redcell/gcra"
)

func mustParams(t *testing.T, burst, count, period, q int64) gcra.Params {
	t.Helper()
	p, err := gcra.NewParams(burst, count, period, q)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

const t0 = int64(1_700_000_000_000_000_000)

// TestResultsAreNotShared: a Results handed out is the caller's until it is
// released — later entries never write into it — and a released buffer that
// is reused carries nothing over from the entry that filled it before (kind,
// error code and all five integers are reset).
func TestResultsAreNotShared(t *testing.T) {
	f := quietFSM(2)
	k := []byte("k")
	e1 := encodeEntry(t0, []Op{
		{Code: OpThrottle, Key: k, GCRA: mustParams(t, 15, 30, 60, 1)},          // [0 16 15 -1 2]
		{Code: OpThrottle, Key: []byte("r"), GCRA: mustParams(t, 0, 1, 1, -10)}, // refund far into the past: expire error
		{Code: OpDel, Keys: [][]byte{[]byte("none")}},                           // 0
	})
	e2 := encodeEntry(t0, []Op{
		{Code: OpFlushAll},
		{Code: OpDel, Keys: [][]byte{k}},
	})
	want1 := []Result{
		{Kind: ResultThrottle, Ints: [5]int64{0, 16, 15, -1, 2}},
		{Kind: ResultError, Err: ErrExpire},
		{Kind: ResultInt},
	}
	want2 := []Result{{Kind: ResultOK}, {Kind: ResultInt}}

	out1 := f.ApplyBatch([]*raft.Log{commandLog(1, e1)})
	r1 := out1[0].(*Results)
	if !equalResults(r1.R, want1) {
		t.Fatalf("entry 1: %+v, want %+v", r1.R, want1)
	}
	// Not released: entry 2 must not touch r1.
	out2 := f.ApplyBatch([]*raft.Log{commandLog(2, e2)})
	r2 := out2[0].(*Results)
	if r1 == r2 || !equalResults(r1.R, want1) {
		t.Fatalf("an unreleased Results was reused: entry 1 now reads %+v", r1.R)
	}
	if !equalResults(r2.R, want2) {
		t.Fatalf("entry 2: %+v, want %+v", r2.R, want2)
	}
	// Released: whatever buffer comes back must hold only the new entry.
	reused := 0
	for i := 0; i < 20; i++ {
		f.Release(r1)
		f.Release(r2)
		out := f.ApplyBatch([]*raft.Log{commandLog(uint64(3+2*i), e2), commandLog(uint64(4+2*i), e1)})
		a, b := out[0].(*Results), out[1].(*Results)
		if a == r1 || a == r2 || b == r1 || b == r2 {
			reused++
		}
		if !equalResults(a.R, want2) {
			t.Fatalf("round %d: a reused buffer answered %+v for entry 2, want %+v", i, a.R, want2)
		}
		// Entry 1 again, on a flushed keyspace: the same answers.
		if !equalResults(b.R, want1) {
			t.Fatalf("round %d: %+v for entry 1, want %+v", i, b.R, want1)
		}
		r1, r2 = b, a
	}
	if reused == 0 {
		t.Logf("the pool never handed a buffer back (GC or race mode); reuse was not exercised")
	}
}

// TestApplyBatchResponses: one response per log, nil for non-command entries.
func TestApplyBatchResponses(t *testing.T) {
	f := quietFSM(1)
	data := encodeEntry(t0, []Op{{Code: OpDel, Keys: [][]byte{[]byte("x")}}})
	logs := []*raft.Log{
		{Type: raft.LogNoop, Index: 1},
		commandLog(2, data),
		{Type: raft.LogConfiguration, Index: 3},
		{Type: raft.LogBarrier, Index: 4},
		commandLog(5, data),
	}
	out := f.ApplyBatch(logs)
	if len(out) != len(logs) {
		t.Fatalf("%d responses for %d logs", len(out), len(logs))
	}
	for i, l := range logs {
		if (l.Type == raft.LogCommand) != (out[i] != nil) {
			t.Errorf("log %d (%v): response %v", i, l.Type, out[i])
		}
	}
	if f.AppliedIndex() != 5 {
		t.Errorf("AppliedIndex = %d, want 5", f.AppliedIndex())
	}
	if r := f.Apply(commandLog(6, data)); r == nil {
		t.Errorf("Apply returned nil for a command")
	} else {
		takeResults(t, f, r)
	}
}

// TestClockNeverGoesBack: now = max(stamp, clock); an entry stamped in the
// past decides at the replicated clock.
func TestClockNeverGoesBack(t *testing.T) {
	f := quietFSM(1)
	p := mustParams(t, 0, 1, 10, 1)
	applyOne(t, f, commandLog(1, encodeEntry(t0+5e9, []Op{{Code: OpThrottle, Key: []byte("a"), GCRA: p}})))
	if f.Clock() != t0+5e9 {
		t.Fatalf("Clock = %d", f.Clock())
	}
	// Stamped 5 s earlier: still decided at t0+5s, so "a" is limited with 10 s to wait.
	r := applyOne(t, f, commandLog(2, encodeEntry(t0, []Op{{Code: OpThrottle, Key: []byte("a"), GCRA: p}})))
	if f.Clock() != t0+5e9 || r[0].Ints != [5]int64{1, 1, 0, 10, 10} {
		t.Fatalf("clock %d, reply %v; want clock %d and [1 1 0 10 10]", f.Clock(), r[0].Ints, t0+5e9)
	}
	// Non-command entries do not move the clock.
	f.ApplyBatch([]*raft.Log{{Type: raft.LogNoop, Index: 3}})
	if f.Clock() != t0+5e9 {
		t.Fatalf("a no-op moved the clock to %d", f.Clock())
	}
}

// TestUnknownVersionStops: an entry of a newer format stops the state
// machine: OnFatal once, an error wrapping ErrUnknownVersion for it, errors
// for every later entry, and no state change after the last good entry.
func TestUnknownVersionStops(t *testing.T) {
	var fatal []error
	f := New(Config{Stripes: 1, Logger: discardLogger(), OnFatal: func(err error) { fatal = append(fatal, err) }})
	p := mustParams(t, 5, 1, 1, 1)
	good := encodeEntry(t0, []Op{{Code: OpThrottle, Key: []byte("a"), GCRA: p}})
	newer := bytes.Clone(good)
	newer[0] = EntryVersion + 1
	later := encodeEntry(t0+1e9, []Op{{Code: OpThrottle, Key: []byte("b"), GCRA: p}})

	applyOne(t, f, commandLog(1, good))
	state := snapshotBytes(t, f)
	out := f.ApplyBatch([]*raft.Log{commandLog(2, newer), commandLog(3, later)})
	err, ok := out[0].(error)
	if !ok || !errors.Is(err, ErrUnknownVersion) {
		t.Fatalf("newer entry: %v, want an error wrapping ErrUnknownVersion", out[0])
	}
	if _, ok := out[1].(error); !ok {
		t.Fatalf("entry after the fatal one: %v, want an error", out[1])
	}
	if again := f.Apply(commandLog(4, later)); again == nil {
		t.Fatalf("a later Apply succeeded")
	} else if _, ok := again.(error); !ok {
		t.Fatalf("a later Apply answered %v", again)
	}
	if len(fatal) != 1 || !errors.Is(fatal[0], ErrUnknownVersion) {
		t.Fatalf("OnFatal calls: %v, want one with ErrUnknownVersion", fatal)
	}
	if !bytes.Equal(snapshotBytes(t, f), state) || f.Clock() != t0 {
		t.Fatalf("the state moved after the fatal entry (clock %d)", f.Clock())
	}
}

// TestReads checks the read path against a state built through the log.
func TestReads(t *testing.T) {
	f := quietFSM(1)
	p := mustParams(t, 0, 1, 10, 1)
	applyOne(t, f, commandLog(1, encodeEntry(t0, []Op{{Code: OpThrottle, Key: []byte("a"), GCRA: p}})))
	read := func(r Read, now int64) Result {
		var res Result
		f.Read(&r, now, &res)
		return res
	}
	peek := mustParams(t, 0, 1, 10, 0)
	tests := []struct {
		name string
		r    Read
		now  int64
		want Result
	}{
		{"pttl", Read{Code: ReadPTTL, Key: []byte("a")}, t0, Result{Kind: ResultInt, Ints: [5]int64{10000}}},
		{"pttl earlier than the clock reads at the clock", Read{Code: ReadPTTL, Key: []byte("a")}, t0 - 5e9, Result{Kind: ResultInt, Ints: [5]int64{10000}}},
		{"ttl", Read{Code: ReadTTL, Key: []byte("a")}, t0 + 2.4e9, Result{Kind: ResultInt, Ints: [5]int64{8}}},
		{"pttl missing", Read{Code: ReadPTTL, Key: []byte("b")}, t0, Result{Kind: ResultInt, Ints: [5]int64{-2}}},
		{"exists", Read{Code: ReadExists, Keys: [][]byte{[]byte("a"), []byte("b"), []byte("a")}}, t0, Result{Kind: ResultInt, Ints: [5]int64{2}}},
		{"exists after expiry", Read{Code: ReadExists, Keys: [][]byte{[]byte("a")}}, t0 + 11e9, Result{Kind: ResultInt}},
		{"type", Read{Code: ReadType, Key: []byte("a")}, t0, Result{Kind: ResultType, Ints: [5]int64{1}}},
		{"type missing", Read{Code: ReadType, Key: []byte("b")}, t0, Result{Kind: ResultType}},
		{"dbsize", Read{Code: ReadDBSize}, t0, Result{Kind: ResultInt, Ints: [5]int64{1}}},
		{"peek", Read{Code: ReadPeek, Key: []byte("a"), GCRA: peek}, t0, Result{Kind: ResultThrottle, Ints: [5]int64{0, 1, 0, -1, 10}}},
		{"peek limited", Read{Code: ReadPeek, Key: []byte("a"), GCRA: p}, t0, Result{Kind: ResultThrottle, Ints: [5]int64{1, 1, 0, 10, 10}}},
		{"peek missing", Read{Code: ReadPeek, Key: []byte("b"), GCRA: peek}, t0, Result{Kind: ResultThrottle, Ints: [5]int64{0, 1, 1, -1, 0}}},
	}
	for _, tt := range tests {
		if got := read(tt.r, tt.now); got != tt.want {
			t.Errorf("%s: %+v, want %+v", tt.name, got, tt.want)
		}
	}
	// Reads change nothing.
	if got := read(Read{Code: ReadDBSize}, t0); got.Ints[0] != 1 {
		t.Errorf("dbsize after the reads: %d", got.Ints[0])
	}
}
