package shard

import (
	"runtime"
	"testing"
)

func filledStore(stripes, n int) (*Store, [][]byte) {
	s := New(stripes)
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = appendUserKey(nil, i)
		s.Put(keys[i], clShaped(i))
	}
	return s, keys
}

// The apply path allocates nothing in steady state: updates of existing
// keys (with a capturing callback, as fsm passes), reads, deletes.
func Test_Store_SteadyStateDoesNotAllocate(t *testing.T) {
	s, keys := filledStore(16, 10_000)
	var i int
	var seen int64
	tests := []struct {
		name string
		op   func()
	}{
		{"Update existing, Put", func() {
			i++
			s.Update(keys[i%len(keys)], 5, func(cur State, live bool) (State, Action) {
				seen += cur.A
				cur.A++
				return cur, Put
			})
		}},
		{"Update existing, Keep", func() {
			i++
			s.Update(keys[i%len(keys)], 5, func(cur State, live bool) (State, Action) { return cur, Keep })
		}},
		{"Update absent, Keep", func() {
			s.Update([]byte("absent"), 5, func(cur State, live bool) (State, Action) { return cur, Keep })
		}},
		{"Get", func() {
			i++
			if _, ok := s.Get(keys[i%len(keys)], 5); !ok {
				t.Fatal("key missing")
			}
		}},
		{"Delete absent", func() { s.Delete([]byte("absent"), 5) }},
		{"Sweep nothing expired", func() { s.Sweep(5, 10) }},
	}
	for _, tt := range tests {
		if a := testing.AllocsPerRun(2000, tt.op); a != 0 {
			t.Errorf("%s: %.2f allocations per call", tt.name, a)
		}
	}
}

// Keys churn at a constant population: new keys arrive, old ones go. Arenas
// compact in place and indexes are rebuilt into the same array, so
// allocations are rarer than one per thousand operations.
func Test_Store_ChurnAllocatesRarely(t *testing.T) {
	s, keys := filledStore(16, 20_000)
	fresh := make([]byte, 0, 32)
	put := func(State, bool) (State, Action) { return State{Kind: kindA, Expire: 1 << 60}, Put }
	var now int64
	churn := func(from, to int) {
		for i := from; i < to; i++ {
			s.Delete(keys[i%len(keys)], now) // a tombstone, dropped Linger later
			fresh = appendUserKey(fresh[:0], i+len(keys))
			keys[i%len(keys)] = append(keys[i%len(keys)][:0], fresh...)
			s.Update(fresh, now, put)
			now += Linger / 4096
			s.Sweep(now, 4)
		}
	}
	churn(0, 100_000) // reach the steady cycle
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	const ops = 200_000
	churn(100_000, 100_000+ops)
	runtime.ReadMemStats(&after)
	perOp := float64(after.Mallocs-before.Mallocs) / ops
	if perOp > 0.001 {
		t.Fatalf("%.4f allocations per delete+insert", perOp)
	}
	t.Logf("%.5f allocations per delete+insert", perOp)
	s.checkInvariants(t)
}

// appendUserKey appends "user:%010d" without fmt, which allocates.
// clShaped is key i's state in a filled store: a CL key's shape, A its TAT
// (from 2^60 ns, far past any instant the tests use) and Expire the start
// of the millisecond after the TAT's, as fsm's gcraExpire leaves it.
func clShaped(i int) State {
	tat := int64(1)<<60 + int64(i)*1_000
	return State{Kind: kindA, Expire: (tat/1_000_000 + 1) * 1_000_000, A: tat}
}

// clThrottled is st after a CL.THROTTLE that moved its TAT on by 1 µs.
func clThrottled(st State) State {
	st.A += 1_000
	st.Expire = (st.A/1_000_000 + 1) * 1_000_000
	return st
}

func appendUserKey(b []byte, n int) []byte {
	b = append(b, "user:"...)
	for div := 1_000_000_000; div > 0; div /= 10 {
		b = append(b, byte('0'+n/div%10))
	}
	return b
}

// Snapshot and the first Range allocate a constant number of times, not per
// key.
func Test_Snapshot_AllocationsIndependentOfSize(t *testing.T) {
	for _, n := range []int{100, 20_000} {
		s, _ := filledStore(16, n)
		snap := testing.AllocsPerRun(5, func() { s.Snapshot(0) })
		rng := testing.AllocsPerRun(5, func() {
			s.Snapshot(0).Range(func([]byte, State) bool { return true })
		})
		if snap > 2 || rng > 5 {
			t.Errorf("%d keys: Snapshot %.0f allocations, Snapshot+Range %.0f", n, snap, rng)
		}
	}
}
