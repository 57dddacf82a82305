//go:build redcell_nextlevel

package group

import (
	"testing"

	"github.com/redcell/redcell/request"
)

// Test_FeatureLevel_LeaderRefusesAboveTheLevel: at level 1 the leader
// answers a code of level 2 ErrFeatureLevel without proposing it, while
// the rest of its batch, a transaction's guard included, is decided in one
// entry; through ProposeAsync (a forwarded batch) too. Once a
// SetFeatureLevel entry raises the level the code is proposed.
func Test_FeatureLevel_LeaderRefusesAboveTheLevel(t *testing.T) {
	n := openSingle(t, nil)
	set := func(key string) request.Request {
		r := request.Request{Code: request.Set, Key: []byte(key), Keys: [][]byte{[]byte("v")}}
		r.SetArgs(0, 0, int64(request.ErrSetExpireTime))
		return r
	}
	next := request.Request{Code: request.DebugNextLevel, Key: []byte("n"), Keys: [][]byte{[]byte("v")}}
	first := NewBatch() // the replicated clock WATCH reads must have started
	first.Ops = []request.Request{set("x")}
	if err := n.g.Propose(first); err != nil {
		t.Fatal(err)
	}
	var mark request.Result // WATCH a, as the server reads it
	n.g.fsm.Read(&request.Request{Code: request.WatchMark, Keys: [][]byte{[]byte("a")}}, 0, &mark)
	guard := request.NewWatchGuard([]request.WatchedKey{{Key: []byte("a"), W: uint64(mark.Ints[0]), TW: mark.Ints[2]}}, uint64(mark.Ints[1]), 3)

	before := n.g.Stats().OpsProposed
	b := NewBatch()
	b.Ops = []request.Request{guard, set("a"), next, set("c")}
	if err := n.g.Propose(b); err != nil {
		t.Fatal(err)
	}
	if b.Results[0].Kind != request.KindInt || b.Results[0].Ints[0] != 0 {
		t.Errorf("the guard: %+v, want 0 (no watched key changed)", b.Results[0])
	}
	if b.Results[1].Kind != request.KindOK || b.Results[3].Kind != request.KindOK {
		t.Errorf("the other requests: %+v", b.Results)
	}
	if r := b.Results[2]; r.Err != request.ErrFeatureLevel || r.Ints[0] != int64(request.DebugNextLevel) || r.Ints[1] != 2 || r.Ints[2] != 1 {
		t.Errorf("the code of level 2: %+v, want ErrFeatureLevel (code, 2, 1)", r)
	}
	if got := n.g.Stats().OpsProposed - before; got != 3 {
		t.Errorf("%d requests proposed, want 3 (the refused one left out)", got)
	}

	done := make(chan error, 1)
	a := NewBatch()
	a.Ops = []request.Request{next}
	n.g.ProposeAsync(a, func(err error) { done <- err })
	if err := <-done; err != nil || a.Results[0].Err != request.ErrFeatureLevel {
		t.Errorf("ProposeAsync: %v %+v, want ErrFeatureLevel", err, a.Results)
	}

	raise := NewBatch()
	raise.Ops = []request.Request{request.NewSetFeatureLevel(2)}
	if err := n.g.Propose(raise); err != nil || n.g.FeatureLevel() != 2 {
		t.Fatalf("raise: %v, level %d", err, n.g.FeatureLevel())
	}
	ok := NewBatch()
	ok.Ops = []request.Request{next}
	if err := n.g.Propose(ok); err != nil || ok.Results[0].Kind != request.KindOK {
		t.Errorf("at level 2: %v %+v, want OK", err, ok.Results)
	}
}
