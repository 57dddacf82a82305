package shard

import (
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
)

// heapPerKey inserts n keys "user:%010d" into a fresh store with the given
// stripes and returns the growth of the live heap (after GC) per key, and the
// store's own accounting per key.
func heapPerKey(stripes, n int) (heap, table float64) {
	return heapPerKeyWithValue(stripes, n, 0)
}

// heapPerKeyWithValue is heapPerKey for keys holding a value of valLen
// bytes (0: a fixed-size state, as CL and TB keys have).
func heapPerKeyWithValue(stripes, n, valLen int) (heap, table float64) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	s := New(stripes)
	key := make([]byte, 0, 16)
	val := make([]byte, valLen)
	for i := range val {
		val[i] = byte(i + 1)
	}
	kind := kindA
	if valLen > 0 {
		kind = kindB
	}
	for i := range n {
		key = appendUserKey(key[:0], i)
		s.Update(key, 0, putState(memoryState(kind, i, val)))
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	st := s.Stats()
	runtime.KeepAlive(s)
	return float64(after.HeapAlloc-before.HeapAlloc) / float64(n), float64(st.TotalBytes) / float64(n)
}

// memoryState is key i's state in the memory benchmarks: without a value a
// CL key's shape (A its TAT, Expire the millisecond after the TAT's: the
// TAT form, record.go), with one a sliding log's or a string's (A = B = 0).
func memoryState(kind Kind, i int, val []byte) State {
	if len(val) > 0 {
		return State{Kind: kind, Expire: 1 << 60, Val: val}
	}
	tat := int64(1)<<60 + int64(i)*1_000
	return State{Kind: kind, Expire: (tat/nsPerMs + 1) * nsPerMs, A: tat}
}

// The table must cost ~41 bytes per key or less at a million CL keys like
// "user:0000012345" (15 bytes of key, 1 of key header, 14 of layout byte,
// TAT and change marker, ~7.5 of index).
func Test_Store_MemoryPerKey(t *testing.T) {
	if testing.Short() {
		t.Skip("inserts a million keys")
	}
	heap, table := heapPerKey(64, 1_000_000)
	t.Logf("1M keys, 64 stripes: %.1f heap bytes/key (table accounting %.1f)", heap, table)
	if heap > 44 {
		t.Fatalf("%.1f heap bytes per key, want <= 44", heap)
	}
}

// BenchmarkMemoryPerKey reports heap bytes per key after inserting 1M keys.
func BenchmarkMemoryPerKey(b *testing.B) {
	for _, stripes := range []int{1, 64, 256} {
		b.Run(map[int]string{1: "stripes=1", 64: "stripes=64", 256: "stripes=256"}[stripes], func(b *testing.B) {
			var heap, table float64
			for range b.N {
				heap, table = heapPerKey(stripes, 1_000_000)
			}
			b.ReportMetric(heap, "heapB/key")
			b.ReportMetric(table, "tableB/key")
		})
	}
}

// BenchmarkMemoryPerKeyWithValue is MemoryPerKey for sliding-log keys, 64
// stripes: a value of 10 bytes is a log of one run (any number of hits at
// one instant), 63 bytes a limit-10 log of 10 runs 100 ms apart
// (slidinglog/DESIGN.md's table).
func BenchmarkMemoryPerKeyWithValue(b *testing.B) {
	for _, n := range []int{10, 63} {
		b.Run(map[int]string{10: "value=10", 63: "value=63"}[n], func(b *testing.B) {
			var heap, table float64
			for range b.N {
				heap, table = heapPerKeyWithValue(64, 1_000_000, n)
			}
			b.ReportMetric(heap, "heapB/key")
			b.ReportMetric(table, "tableB/key")
		})
	}
}

// The 1M-key store shared by the benchmarks below (building it takes ~0.5s).
var (
	bigOnce  sync.Once
	bigStore *Store
	bigKeys  [][]byte
)

const bigN = 1_000_000

func big() (*Store, [][]byte) {
	bigOnce.Do(func() { bigStore, bigKeys = filledStore(64, bigN) })
	return bigStore, bigKeys
}

// randomOrder is a fixed random permutation of key indexes, so the loops
// below measure table access rather than random number generation.
func randomOrder(n int) []int32 {
	p := make([]int32, n)
	for i := range p {
		p[i] = int32(i)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	rng.Shuffle(n, func(i, j int) { p[i], p[j] = p[j], p[i] })
	return p
}

// Update (read-modify-write, Put) of random existing keys among 1M. Keys
// are formatted on the fly (~10 ns) so that fetching them costs no cache
// miss of its own.
func BenchmarkUpdate1M(b *testing.B) {
	s, _ := big()
	order := randomOrder(bigN)
	key := make([]byte, 0, 16)
	fn := func(cur State, live bool) (State, Action) {
		return clThrottled(cur), Put
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		key = appendUserKey(key[:0], int(order[i%bigN]))
		s.Update(key, 1, fn)
	}
}

// Update of a small hot set (fits in cache): the per-operation cost of the
// code itself.
func BenchmarkUpdateHot(b *testing.B) {
	s, keys := big()
	fn := func(cur State, live bool) (State, Action) {
		return clThrottled(cur), Put
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		s.Update(keys[i&1023], 1, fn)
	}
}

// Get of random existing keys among 1M.
func BenchmarkGet1M(b *testing.B) {
	s, _ := big()
	order := randomOrder(bigN)
	key := make([]byte, 0, 16)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		key = appendUserKey(key[:0], int(order[i%bigN]))
		if _, ok := s.Get(key, 1); !ok {
			b.Fatal("missing key")
		}
	}
}

// Get from 2 goroutines per core on random keys while nothing writes.
func BenchmarkGetParallel1M(b *testing.B) {
	s, _ := big()
	order := randomOrder(bigN)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		key := make([]byte, 0, 16)
		i := rand.IntN(bigN)
		for pb.Next() {
			key = appendUserKey(key[:0], int(order[i%bigN]))
			s.Get(key, 1)
			i++
		}
	})
}

// Insert of new keys and delete of old ones at a constant population of
// 1M (steady churn), one op = one insert + one delete.
func BenchmarkChurn1M(b *testing.B) {
	s, keys := filledStore(64, bigN)
	fresh := make([]byte, 0, 16)
	put := putState(clShaped(0))
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		k := keys[i%len(keys)]
		s.Delete(k, 0)
		fresh = appendUserKey(fresh[:0], bigN+i)
		keys[i%len(keys)] = append(k[:0], fresh...)
		s.Update(fresh, 0, put)
	}
}

// Sweep of a 1M store where every key has expired, budget 1000 per call;
// reported per removed entry.
func BenchmarkSweep1M(b *testing.B) {
	for range b.N {
		b.StopTimer()
		s, _ := filledStore(64, bigN)
		b.StartTimer()
		for s.Stats().Entries > 0 {
			s.Sweep(1<<61, 1000)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*bigN), "ns/entry")
}

// Sweep over 1M live keys where nothing has expired: the cost of one call
// with budget 1000 (it examines 1000 records).
func BenchmarkSweepNothingExpired1M(b *testing.B) {
	s, _ := big()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		s.Sweep(1, 1000)
	}
}

func BenchmarkSnapshot1M(b *testing.B) {
	s, _ := big()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if s.Snapshot(1).Len() != bigN {
			b.Fatal("short snapshot")
		}
	}
}

// Range over a fresh 1M snapshot: includes the one-time sort.
func BenchmarkRange1M(b *testing.B) {
	s, _ := big()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		sn := s.Snapshot(1)
		b.StartTimer()
		n := 0
		sn.Range(func([]byte, State) bool { n++; return true })
		if n != bigN {
			b.Fatal("short range")
		}
	}
}

// Range over random (unsorted, no shared prefix) binary keys.
func BenchmarkRangeRandomKeys1M(b *testing.B) {
	s := New(64)
	rng := rand.New(rand.NewPCG(5, 6))
	key := make([]byte, 16)
	for range bigN {
		for i := range key {
			key[i] = byte(rng.Uint32())
		}
		s.Put(key, State{Expire: 1 << 60})
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		sn := s.Snapshot(1)
		b.StartTimer()
		sn.Range(func([]byte, State) bool { return true })
	}
}

// Put of 1M keys into an empty store (the restore path).
func BenchmarkRestore1M(b *testing.B) {
	key := make([]byte, 0, 16)
	b.ReportAllocs()
	for range b.N {
		s := New(64)
		for i := range bigN {
			key = appendUserKey(key[:0], i)
			s.Put(key, State{Expire: 1 << 60})
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*bigN), "ns/key")
}

// BenchmarkLiveStats1M: INFO keyspace's scan of 1M keys.
func BenchmarkLiveStats1M(b *testing.B) {
	s, _ := big()
	for b.Loop() {
		if n, _, _ := s.LiveStats(0, math.MaxInt64); n != bigN {
			b.Fatalf("%d keys", n)
		}
	}
}
