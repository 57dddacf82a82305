package group

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redcell/redcell/gcra"
	"github.com/redcell/redcell/request"
)

// Test_Read_SeesCompletedWrites: a write whose Propose has returned is
// visible to a Read issued afterwards from any other goroutine, while other
// writes keep the proposer busy. Six writers hand each completed key to
// readers over a channel; the reader must find the key present and consumed
// exactly once.
func Test_Read_SeesCompletedWrites(t *testing.T) {
	n := openSingle(t, nil)
	n.clock.Set(frozenAt)
	p := gcra.Params{Interval: int64(time.Hour), Limit: 10, Quantity: 1}

	const writers, perWriter, readers = 6, 60, 3
	written := make(chan []byte, writers*perWriter)
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b := NewBatch()
			for i := 0; i < perWriter; i++ {
				key := []byte(fmt.Sprintf("w%d:%d", w, i))
				b.Reset()
				b.Ops = append(b.Ops, throttleReq(key, p))
				if err := n.g.Propose(b); err != nil {
					t.Errorf("Propose %s: %v", key, err)
					return
				}
				written <- key
			}
		}()
	}
	var rwg sync.WaitGroup
	for r := 0; r < readers; r++ {
		rwg.Add(1)
		go func() {
			defer rwg.Done()
			res := make([]request.Result, 2)
			for key := range written {
				reads := []request.Request{
					{Code: request.Exists, Keys: [][]byte{key}},
					peekReq(key, p),
				}
				if err := n.g.Read(reads, res); err != nil {
					t.Errorf("Read %s: %v", key, err)
					return
				}
				// Present, and CL.PEEK: 8 left after one more means one was taken.
				if res[0].Ints[0] != 1 || res[1].Kind != request.KindThrottle || res[1].Ints[2] != 8 {
					t.Errorf("after Propose(%s) returned, a Read saw EXISTS %+v, CL.PEEK %+v", key, res[0], res[1])
				}
			}
		}()
	}
	wg.Wait()
	close(written)
	rwg.Wait()
	if got := n.g.Stats().Reads; got != 2*writers*perWriter {
		t.Errorf("Stats().Reads = %d, want %d", got, 2*writers*perWriter)
	}
}

// Test_Read_UsesLaterOfClockAndReplicatedClock: a Read is answered at
// max(this node's clock, the replicated clock). A clock set into the past
// does not rewind what reads see (nor what writes are stamped with); a
// clock set into the future ages keys as a real one would.
func Test_Read_UsesLaterOfClockAndReplicatedClock(t *testing.T) {
	n := openSingle(t, nil)
	p := gcra.Params{Interval: int64(time.Second), Limit: 10, Quantity: 1} // a burst of 10, 1 per second
	key := []byte("k")
	t1 := frozenAt

	n.clock.Set(t1)
	b := NewBatch()
	b.Ops = append(b.Ops, throttleReq(key, p))
	if err := n.g.Propose(b); err != nil {
		t.Fatalf("Propose: %v", err)
	}
	tat := t1 + p.Interval // the key's state after one token at t1
	if got := n.fsm.Clock(); got != t1 {
		t.Fatalf("replicated clock %d after one entry at %d", got, t1)
	}

	peekAt := func(now int64) request.Result {
		rep, err := gcra.Peek(tat, true, now, p)
		if err != nil {
			return request.Result{Kind: request.KindError, Err: request.ErrExpire}
		}
		return request.Result{Kind: request.KindThrottle, Ints: [5]int64{rep.Limited, rep.Limit, rep.Remaining, rep.RetryAfter, rep.ResetAfter}}
	}
	read := func(t *testing.T, r request.Request) request.Result {
		t.Helper()
		res := make([]request.Result, 1)
		if err := n.g.Read([]request.Request{r}, res); err != nil {
			t.Fatalf("Read: %v", err)
		}
		return res[0]
	}
	peek := peekReq(key, p)
	exists := request.Request{Code: request.Exists, Keys: [][]byte{key}}

	tests := []struct {
		name  string
		clock int64
		at    int64 // the instant the read must be answered at
	}{
		{"clock equal to the replicated clock", t1, t1},
		{"clock ten seconds in the past", t1 - 10*int64(time.Second), t1},
		{"clock at zero", 0, t1},
		{"clock half a second ahead", t1 + 500*int64(time.Millisecond), t1 + 500*int64(time.Millisecond)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n.clock.Set(tc.clock)
			if got, want := read(t, peek), peekAt(tc.at); !got.Equal(want) {
				t.Errorf("CL.PEEK with the clock at %d: %+v, want %+v (as at %d)", tc.clock, got, want, tc.at)
			}
		})
	}
	// The cases are distinguishable: reading at the stale clock would differ.
	if peekAt(t1 - 10*int64(time.Second)).Equal(peekAt(t1)) {
		t.Fatal("the test's instants give the same CL.PEEK; it cannot tell them apart")
	}

	// Past the key's expiry it is gone.
	n.clock.Set(tat + 5*int64(time.Millisecond))
	if got := read(t, exists); got.Ints[0] != 0 {
		t.Errorf("EXISTS after the key's TAT: %+v, want 0", got)
	}
	n.clock.Set(t1 - int64(time.Hour))
	if got := read(t, exists); got.Ints[0] != 1 {
		t.Errorf("EXISTS with the clock an hour in the past: %+v, want 1 (the replicated clock rules)", got)
	}
}
