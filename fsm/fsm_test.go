package fsm

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/redcell/redcell/gcra"
	"github.com/redcell/redcell/request"
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
	e1 := encodeEntry(t0, []request.Request{
		throttleReq(k, mustParams(t, 15, 30, 60, 1)),          // [0 16 15 -1 2]
		throttleReq([]byte("r"), mustParams(t, 0, 1, 1, -10)), // refund far into the past: expire error
		{Code: request.Del, Keys: [][]byte{[]byte("none")}},   // 0
	})
	e2 := encodeEntry(t0, []request.Request{
		{Code: request.FlushAll},
		{Code: request.Del, Keys: [][]byte{k}},
	})
	want1 := []request.Result{
		{Kind: request.KindThrottle, Ints: [5]int64{0, 16, 15, -1, 2}},
		{Kind: request.KindError, Err: request.ErrExpire},
		{Kind: request.KindInt},
	}
	want2 := []request.Result{{Kind: request.KindOK}, {Kind: request.KindInt}}

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
	data := encodeEntry(t0, []request.Request{{Code: request.Del, Keys: [][]byte{[]byte("x")}}})
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
	applyOne(t, f, commandLog(1, encodeEntry(t0+5e9, []request.Request{throttleReq([]byte("a"), p)})))
	if f.Clock() != t0+5e9 {
		t.Fatalf("Clock = %d", f.Clock())
	}
	// Stamped 5 s earlier: still decided at t0+5s, so "a" is limited with 10 s to wait.
	r := applyOne(t, f, commandLog(2, encodeEntry(t0, []request.Request{throttleReq([]byte("a"), p)})))
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
	good := encodeEntry(t0, []request.Request{throttleReq([]byte("a"), p)})
	newer := bytes.Clone(good)
	newer[0] = EntryVersion + 1
	later := encodeEntry(t0+1e9, []request.Request{throttleReq([]byte("b"), p)})

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
	applyOne(t, f, commandLog(1, encodeEntry(t0, []request.Request{throttleReq([]byte("a"), p)})))
	read := func(r request.Request, now int64) request.Result {
		res := request.Result{Kind: request.KindError, Ints: [5]int64{7, 7, 7, 7, 7}} // Read overwrites all of it
		f.Read(&r, now, &res)
		return res
	}
	peek := mustParams(t, 0, 1, 10, 0)
	tests := []struct {
		name string
		r    request.Request
		now  int64
		want request.Result
	}{
		{"pttl", request.Request{Code: request.PTTL, Key: []byte("a")}, t0, request.Result{Kind: request.KindInt, Ints: [5]int64{10000}}},
		{"pttl earlier than the clock reads at the clock", request.Request{Code: request.PTTL, Key: []byte("a")}, t0 - 5e9, request.Result{Kind: request.KindInt, Ints: [5]int64{10000}}},
		{"ttl", request.Request{Code: request.TTL, Key: []byte("a")}, t0 + 2.4e9, request.Result{Kind: request.KindInt, Ints: [5]int64{8}}},
		{"pttl missing", request.Request{Code: request.PTTL, Key: []byte("b")}, t0, request.Result{Kind: request.KindInt, Ints: [5]int64{-2}}},
		{"exists", request.Request{Code: request.Exists, Keys: [][]byte{[]byte("a"), []byte("b"), []byte("a")}}, t0, request.Result{Kind: request.KindInt, Ints: [5]int64{2}}},
		{"exists after expiry", request.Request{Code: request.Exists, Keys: [][]byte{[]byte("a")}}, t0 + 11e9, request.Result{Kind: request.KindInt}},
		{"type", request.Request{Code: request.Type, Key: []byte("a")}, t0, request.Result{Kind: request.KindType, Ints: [5]int64{int64(request.KeyGCRA)}}},
		{"type missing", request.Request{Code: request.Type, Key: []byte("b")}, t0, request.Result{Kind: request.KindType}},
		{"dbsize", request.Request{Code: request.DBSize}, t0, request.Result{Kind: request.KindInt, Ints: [5]int64{1}}},
		{"peek", peekReq([]byte("a"), peek), t0, request.Result{Kind: request.KindThrottle, Ints: [5]int64{0, 1, 0, -1, 10}}},
		{"peek limited", peekReq([]byte("a"), p), t0, request.Result{Kind: request.KindThrottle, Ints: [5]int64{1, 1, 0, 10, 10}}},
		{"peek missing", peekReq([]byte("b"), peek), t0, request.Result{Kind: request.KindThrottle, Ints: [5]int64{0, 1, 1, -1, 0}}},
	}
	for _, tt := range tests {
		if got := read(tt.r, tt.now); !got.Equal(tt.want) {
			t.Errorf("%s: %+v, want %+v", tt.name, got, tt.want)
		}
		// The same read inside a log entry stamped at now answers the same:
		// apply reads at max(stamp, clock), as Read does.
		g := quietFSM(2)
		applyOne(t, g, commandLog(1, encodeEntry(t0, []request.Request{throttleReq([]byte("a"), p)})))
		if got := applyOne(t, g, commandLog(2, encodeEntry(tt.now, []request.Request{tt.r}))); !got[0].Equal(tt.want) {
			t.Errorf("%s inside an entry: %+v, want %+v", tt.name, got[0], tt.want)
		}
	}
	// Reads change nothing.
	state := snapshotBytes(t, f)
	if got := read(request.Request{Code: request.DBSize}, t0); got.Ints[0] != 1 {
		t.Errorf("dbsize after the reads: %d", got.Ints[0])
	}
	// Writes, and reads with arguments the parser never produces, are
	// refused by Read and change nothing: writes go through the log.
	invalid := request.Result{Kind: request.KindError, Err: request.ErrInvalidOp}
	badPeek := peekReq([]byte("a"), p)
	badPeek.NArgs = 2
	for _, r := range []request.Request{
		throttleReq([]byte("a"), p),
		{Code: request.Del, Keys: [][]byte{[]byte("a")}},
		{Code: request.FlushAll},
		peekReq([]byte("a"), gcra.Params{Interval: 0, Limit: 1, Quantity: 1}),
		badPeek,
	} {
		if got := read(r, t0); !got.Equal(invalid) {
			t.Errorf("Read of %s: %+v, want %+v", opString(&r), got, invalid)
		}
	}
	if !bytes.Equal(snapshotBytes(t, f), state) {
		t.Errorf("the reads changed the state")
	}
}

// TestReadsInsideAnEntry: an entry may carry reads among its writes (MULTI
// next); each answers at the entry's now and sees exactly the writes before
// it in the entry, on every replica alike.
func TestReadsInsideAnEntry(t *testing.T) {
	p := mustParams(t, 1, 1, 10, 1) // limit 2, T = 10 s
	a, b := []byte("a"), []byte("b")
	entry := encodeEntry(t0, []request.Request{
		{Code: request.Exists, Keys: [][]byte{a, b}},
		throttleReq(a, p),
		{Code: request.PTTL, Key: a},
		peekReq(a, p),
		{Code: request.Exists, Keys: [][]byte{a, b}},
		{Code: request.Type, Key: a},
		{Code: request.Del, Keys: [][]byte{a}},
		{Code: request.Type, Key: a},
		{Code: request.DBSize},
	})
	want := []request.Result{
		{Kind: request.KindInt},
		{Kind: request.KindThrottle, Ints: [5]int64{0, 2, 1, -1, 10}},
		{Kind: request.KindInt, Ints: [5]int64{10000}},
		{Kind: request.KindThrottle, Ints: [5]int64{0, 2, 0, -1, 20}}, // what a second THROTTLE would answer
		{Kind: request.KindInt, Ints: [5]int64{1}},
		{Kind: request.KindType, Ints: [5]int64{int64(request.KeyGCRA)}},
		{Kind: request.KindInt, Ints: [5]int64{1}},
		{Kind: request.KindType, Ints: [5]int64{int64(request.KeyNone)}},
		{Kind: request.KindInt},
	}
	for _, stripes := range []int{1, 16} {
		f := quietFSM(stripes)
		if got := applyOne(t, f, commandLog(1, entry)); !equalResults(got, want) {
			t.Fatalf("%d stripes: %+v, want %+v", stripes, got, want)
		}
		if f.Clock() != t0 {
			t.Fatalf("clock %d after an entry stamped %d", f.Clock(), t0)
		}
	}
	// Stamped before the replicated clock: the reads answer at the clock.
	f := quietFSM(1)
	applyOne(t, f, commandLog(1, encodeEntry(t0, []request.Request{throttleReq(a, p)})))
	got := applyOne(t, f, commandLog(2, encodeEntry(t0-5e9, []request.Request{{Code: request.PTTL, Key: a}})))
	if !got[0].Equal(request.Result{Kind: request.KindInt, Ints: [5]int64{10000}}) {
		t.Fatalf("PTTL in an entry stamped before the clock: %+v, want 10000 at the clock", got[0])
	}
}

// With an origin set, entries of other origins (a follower's log, a replay)
// answer nil and entries of this origin a Results; the state and the
// results are those of an FSM without one. The FSM must not allocate a
// Results for an entry nobody reads.
func TestOriginDecidesWhoGetsResults(t *testing.T) {
	mine, other := []byte("node-a01"), []byte("node-b02")
	plain, tagged := quietFSM(4), quietFSM(4)
	tagged.SetOrigin(mine)
	gen := newOpGen(7, 40)
	for i := uint64(1); i <= 200; i++ {
		ops := make([]request.Request, 1+gen.rng.IntN(20))
		for j := range ops {
			ops[j] = gen.op()
		}
		data := encodeEntry(t0+int64(i)*int64(time.Millisecond), ops)
		ext := other
		switch i % 3 {
		case 0:
			ext = mine
		case 1:
			ext = nil // entries from before tags, or from a tool
		}
		l := commandLog(i, data)
		l.Extensions = ext
		want := takeResults(t, plain, plain.ApplyBatch([]*raft.Log{l})[0])
		got := tagged.ApplyBatch([]*raft.Log{l})[0]
		if !bytes.Equal(ext, mine) {
			if got != nil {
				t.Fatalf("entry %d of another origin (%q) answered %T, want nil", i, ext, got)
			}
			continue
		}
		if r := takeResults(t, tagged, got); !equalResults(r, want) {
			t.Fatalf("entry %d: %+v, want %+v", i, r, want)
		}
	}
	if !bytes.Equal(snapshotBytes(t, plain), snapshotBytes(t, tagged)) {
		t.Fatal("the origin changed the state")
	}
	l := commandLog(201, encodeEntry(t0+int64(time.Second), []request.Request{gen.op(), gen.op()}))
	l.Extensions = other
	tagged.ApplyBatch([]*raft.Log{l}) // warm the buffer
	if n := testing.AllocsPerRun(20, func() {
		l.Index++
		tagged.ApplyBatch([]*raft.Log{l})
	}); n > 1 { // the []interface{} of ApplyBatch's answer
		t.Errorf("an entry of another origin allocated %.0f times, want at most 1", n)
	}
}
