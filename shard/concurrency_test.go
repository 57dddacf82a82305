package shard

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
)

// consistentState derives every field from x, so a reader can tell a torn
// state (fields from two different writes) from a whole one.
func consistentState(x int64) State {
	return State{Kind: Kind(x%4 + 1), Expire: 1<<40 + x, A: x * 3, B: ^x}
}

func isConsistent(st State) bool {
	x := st.Expire - 1<<40
	return st.Equal(consistentState(x))
}

// One writer updates, inserts, deletes, sweeps and snapshots while readers
// call Get, Len and Stats and range over the snapshots. Run with -race: the
// race detector checks the locking, the assertions check that no reader sees
// a torn state and that snapshots do not change under the writer.
func Test_Store_ConcurrentReadersDuringWrites(t *testing.T) {
	const (
		keys    = 2_000
		writes  = 60_000
		readers = 3
	)
	s := New(8)
	keyOf := func(i int) []byte { return fmt.Appendf(nil, "key:%d", i) }
	for i := range keys {
		s.Put(keyOf(i), consistentState(int64(i)))
	}

	var stop atomic.Bool
	snaps := make(chan *Snapshot, 4)
	var wg sync.WaitGroup
	errs := make(chan error, readers+4) // each goroutine stops at its first error

	for r := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(r), 1))
			for n := 0; !stop.Load(); n++ {
				k := keyOf(rng.IntN(keys * 2)) // half of them mostly absent
				if st, live := s.Get(k, 0); live && !isConsistent(st) {
					errs <- fmt.Errorf("reader %d: torn state %+v for %s", r, st, k)
					return
				}
				if n%500 == 0 {
					if l := s.Len(0); l < 0 || l > 2*keys {
						errs <- fmt.Errorf("reader %d: Len %d", r, l)
						return
					}
					_ = s.Stats()
				}
			}
		}()
	}
	// The snapshot reader checks each snapshot twice: whatever the writer
	// did in between, both passes must be identical and ordered.
	wg.Add(1)
	go func() {
		defer wg.Done()
		for sn := range snaps {
			var first []string
			sn.Range(func(key []byte, st State) bool {
				if st.Expire > sn.Now() && !isConsistent(st) { // gone records: kept for their markers
					errs <- fmt.Errorf("snapshot: torn state %+v", st)
					return false
				}
				first = append(first, fmt.Sprintf("%s=%d", key, st.A))
				return true
			})
			i := 0
			var prev []byte
			sn.Range(func(key []byte, st State) bool {
				if i >= len(first) || first[i] != fmt.Sprintf("%s=%d", key, st.A) || (prev != nil && string(prev) >= string(key)) {
					i = -1
					return false
				}
				prev = append(prev[:0], key...)
				i++
				return true
			})
			if i != sn.Len() || len(first) != sn.Len() {
				errs <- fmt.Errorf("snapshot changed under the writer, unordered, or Len %d wrong (%d, %d)", sn.Len(), len(first), i)
				return
			}
		}
	}()

	rng := rand.New(rand.NewPCG(42, 1))
	for w := range writes {
		i := rng.IntN(keys * 2)
		x := int64(w)
		switch rng.IntN(10) {
		case 0:
			s.Delete(keyOf(i), 0)
		case 1:
			// Expired on purpose: readers must never see it as live.
			s.Update(keyOf(i), 0, func(State, bool) (State, Action) {
				st := consistentState(x)
				st.Expire = -x
				return st, Put
			})
		default:
			s.Update(keyOf(i), 0, func(State, bool) (State, Action) {
				return consistentState(x), Put
			})
		}
		if w%1000 == 0 {
			s.Sweep(0, 100)
		}
		if w%15_000 == 0 {
			snaps <- s.Snapshot(0)
		}
	}
	close(snaps)
	stop.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	s.checkInvariants(t)
}
