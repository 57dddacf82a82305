package group

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/redcell/redcell/gcra"
	"github.com/redcell/redcell/guard"
	"github.com/redcell/redcell/request"
)

// Above maxmemory a request that would create a key is refused with ErrOOM
// and never proposed; existing limiters keep deciding in the same batch, in
// order; below the limit new keys are accepted again.
func Test_MemoryGuard_RefusesNewKeysOnly(t *testing.T) {
	var limit atomic.Int64
	gd := guard.Start(guard.Config{MaxMemory: &limit})
	t.Cleanup(gd.Stop)
	n := openSingle(t, func(c *Config) { c.Guard = gd })
	p, err := gcra.NewParams(15, 30, 60, 1)
	if err != nil {
		t.Fatal(err)
	}
	batch := func(keys ...string) *Batch {
		b := NewBatch()
		for _, k := range keys {
			b.Ops = append(b.Ops, throttleReq([]byte(k), p))
		}
		return b
	}
	if err := n.g.Propose(batch("old")); err != nil {
		t.Fatal(err)
	}
	limit.Store(1) // any heap is above one byte
	waitFor(t, 5*time.Second, "the guard to see memory above maxmemory", gd.OverMemory)

	before := n.g.Stats().OpsProposed
	b := batch("new1", "old", "new2", "old")
	if err := n.g.Propose(b); err != nil {
		t.Fatal(err)
	}
	for i, want := range []request.ErrCode{request.ErrOOM, request.ErrNone, request.ErrOOM, request.ErrNone} {
		if b.Results[i].Err != want {
			t.Errorf("result %d: err %v, want %v", i, b.Results[i].Err, want)
		}
	}
	// "old" was decided twice more: remaining 15 → 14 → 13 (16 max).
	if b.Results[1].Ints[2] != 14 || b.Results[3].Ints[2] != 13 {
		t.Errorf("existing key's remaining = %d, %d; want 14, 13", b.Results[1].Ints[2], b.Results[3].Ints[2])
	}
	if got := n.g.Stats().OpsProposed - before; got != 2 {
		t.Errorf("%d requests proposed; want the 2 on the existing key", got)
	}
	if b := batch("new3"); n.g.Propose(b) != nil || b.Results[0].Err != request.ErrOOM {
		t.Errorf("a batch of only new keys: %+v", b.Results)
	}

	limit.Store(0) // no limit
	waitFor(t, 5*time.Second, "the guard to see memory within limits", func() bool { return !gd.OverMemory() })
	if b := batch("new1"); n.g.Propose(b) != nil || b.Results[0].Err != request.ErrNone {
		t.Errorf("below maxmemory a new key was refused: %+v", b.Results)
	}
}

// guardKeeps: a WatchGuard above maxmemory still guards exactly its
// transaction when some of its requests are left out of the entry.
func Test_MemoryGuard_WatchGuardCountsWhatIsProposed(t *testing.T) {
	g := request.NewWatchGuard([]request.WatchedKey{{Key: []byte("k"), Live: true, W: 5}}, 1, 3)
	guardKeeps(&g, []bool{true, false, true, false})
	if g.Args[1] != 1 {
		t.Fatalf("guard counts %d requests, want 1", g.Args[1])
	}
}
