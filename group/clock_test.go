package group

import (
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/redcell/redcell/gcra"
)

// wallBetween requires got to lie in [before, after], with what for the
// message.
func wallBetween(t *testing.T, what string, got, before, after int64) {
	t.Helper()
	if got < before || got > after {
		t.Errorf("%s = %d, want within the wall clock's [%d, %d]", what, got, before, after)
	}
}

func Test_Clock_SetAdvanceReal(t *testing.T) {
	var c Clock

	before := time.Now().UnixNano()
	got := c.Now()
	wallBetween(t, "zero Clock's Now", got, before, time.Now().UnixNano())

	c.Set(frozenAt)
	if a, b := c.Now(), c.Now(); a != frozenAt || b != frozenAt {
		t.Errorf("after Set(%d), Now = %d then %d", frozenAt, a, b)
	}
	c.Advance(1500)
	if got := c.Now(); got != frozenAt+1500 {
		t.Errorf("Advance(1500) from %d: Now = %d", frozenAt, got)
	}
	c.Set(-7) // tests may put the clock anywhere, before 1970 too
	if got := c.Now(); got != -7 {
		t.Errorf("after Set(-7), Now = %d", got)
	}

	c.Real()
	before = time.Now().UnixNano()
	got = c.Now()
	wallBetween(t, "Now after Real", got, before, time.Now().UnixNano())

	// Advance on a running clock freezes it at wall clock + ns.
	before = time.Now().UnixNano()
	c.Advance(int64(time.Hour))
	after := time.Now().UnixNano()
	first := c.Now()
	wallBetween(t, "Now after Advance(1h) on a running clock, minus 1h", first-int64(time.Hour), before, after)
	if again := c.Now(); again != first {
		t.Errorf("after Advance the clock moved on by itself: %d then %d", first, again)
	}
	c.Advance(int64(time.Second))
	if got := c.Now(); got != first+int64(time.Second) {
		t.Errorf("a second Advance(1s): Now = %d, want %d", got, first+int64(time.Second))
	}
}

// Test_Clock_ConcurrentUse is for the race detector: every method at once.
func Test_Clock_ConcurrentUse(t *testing.T) {
	var c Clock
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 1000; i++ {
				switch (g + i) % 4 {
				case 0:
					c.Set(int64(i))
				case 1:
					c.Advance(1)
				case 2:
					c.Real()
				default:
					_ = c.Now()
				}
			}
		}()
	}
	wg.Wait()
}

// Test_Clock_StampsNeverGoBackwards: whatever the clock is set to, each
// entry is stamped max(clock, previous stamp, replicated clock). One write
// per step, decoded back from the log.
func Test_Clock_StampsNeverGoBackwards(t *testing.T) {
	n := openSingle(t, nil)
	sec := int64(time.Second)
	steps := []struct {
		name string
		move func(*Clock)
		want int64
	}{
		{"Set", func(c *Clock) { c.Set(frozenAt) }, frozenAt},
		{"Set 5 s into the past", func(c *Clock) { c.Set(frozenAt - 5*sec) }, frozenAt},
		{"Advance 1 s, still in the past", func(c *Clock) { c.Advance(sec) }, frozenAt},
		{"Set 2 s ahead", func(c *Clock) { c.Set(frozenAt + 2*sec) }, frozenAt + 2*sec},
		{"Real, years behind", func(c *Clock) { c.Real() }, frozenAt + 2*sec},
		{"Set 0", func(c *Clock) { c.Set(0) }, frozenAt + 2*sec},
		{"Advance 10 s from 0", func(c *Clock) { c.Advance(10 * sec) }, frozenAt + 2*sec},
		{"Set 3 s ahead", func(c *Clock) { c.Set(frozenAt + 3*sec) }, frozenAt + 3*sec},
		{"Advance 1 ns", func(c *Clock) { c.Advance(1) }, frozenAt + 3*sec + 1},
	}
	b := NewBatch()
	p := gcra.Params{Interval: int64(time.Millisecond), Limit: 5, Quantity: 1}
	for _, s := range steps {
		s.move(n.clock)
		b.Reset()
		b.Ops = append(b.Ops, throttleReq([]byte("k"), p))
		if err := n.g.Propose(b); err != nil {
			t.Fatalf("Propose after %q: %v", s.name, err)
		}
	}
	entries := committedEntries(t, n.store)
	if len(entries) != len(steps) {
		t.Fatalf("%d entries in the log for %d writes", len(entries), len(steps))
	}
	for i, s := range steps {
		if entries[i].stamp != s.want {
			t.Errorf("after %q the entry was stamped %d, want %d", s.name, entries[i].stamp, s.want)
		}
	}
	if got, want := n.fsm.Clock(), steps[len(steps)-1].want; got != want {
		t.Errorf("replicated clock %d, want %d", got, want)
	}
}

// Test_Clock_StampsMonotonicUnderConcurrentSets: eight connections write,
// and before each write set the shared clock to a random instant within a
// second either side of frozenAt, so the clock moves backwards and forwards
// under the proposer. Stamps in the log never decrease, and each is a value
// the clock was set to (a whole millisecond off frozenAt, within range).
func Test_Clock_StampsMonotonicUnderConcurrentSets(t *testing.T) {
	n := openSingle(t, nil)
	ms := int64(time.Millisecond)
	p := gcra.Params{Interval: ms, Limit: 5, Quantity: 1}
	var writers sync.WaitGroup
	for w := 0; w < 8; w++ {
		writers.Add(1)
		go func() {
			defer writers.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			b := NewBatch()
			for i := 0; i < 100; i++ {
				n.clock.Set(frozenAt + (rng.Int64N(2001)-1000)*ms)
				b.Reset()
				b.Ops = append(b.Ops, throttleReq([]byte{byte(w)}, p))
				if err := n.g.Propose(b); err != nil {
					t.Errorf("Propose: %v", err)
					return
				}
			}
		}()
	}
	writers.Wait()

	var last int64
	for _, e := range committedEntries(t, n.store) {
		if e.stamp < last {
			t.Fatalf("entry %d stamped %d after an entry stamped %d", e.log.Index, e.stamp, last)
		}
		if off := e.stamp - frozenAt; off%ms != 0 || off < -1000*ms || off > 1000*ms {
			t.Fatalf("entry %d stamped %d, a value the clock was never set to", e.log.Index, e.stamp)
		}
		last = e.stamp
	}
}
