package main

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
)

// defaultGCPercent trades GC frequency for memory. The keyspace lives in
// pointer-free arenas, so a GC cycle has little to mark and a low GOGC costs
// no measurable throughput, while the default 100 lets garbage (e.g. arenas
// left behind when they grow) double the heap. Measured with bench -mode
// memory at 1M keys: 106 B/key at GOGC=100, 90 at 50, 75 at 25; redis-
// benchmark -P 16 and -P 1 throughput equal within noise. GOGC in the
// environment still wins.
const defaultGCPercent = 25

// minGCHeadroom is the least garbage the heap may gather between two
// collections. A quarter of a small live heap is a few megabytes, which a
// load that allocates fills in milliseconds: Lua scripts box every string
// and number they make (gopher-lua's values are interfaces), about 900
// bytes a call, so a node with 13 MB live under redis_rate's script
// collected 50 times a second, with the write barrier on for half of the
// time, and decided 15 % fewer scripts than at GOGC=100 (bench -mode
// scripts). Above 64 MB live a quarter is more than this, so the memory
// figures of large keyspaces, where defaultGCPercent matters, do not move.
const minGCHeadroom = 16 << 20

// maxGCPercent bounds the percentage tuneGC sets for a nearly empty heap.
const maxGCPercent = 800

// gcTuner keeps GOGC at defaultGCPercent, raised where the live heap is so
// small that a quarter of it is less than minGCHeadroom. It runs after
// every collection, from the finalizer of an object it re-arms each time
// (the finalizer goroutine; nothing else calls it).
type gcTuner struct {
	percent int
	sample  []metrics.Sample
}

// startGCTuner sets GOGC to defaultGCPercent and keeps it tuned from the
// next collection on. Call it once, from main, when GOGC is not in the
// environment.
func startGCTuner() {
	t := &gcTuner{sample: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}}
	t.percent = defaultGCPercent
	debug.SetGCPercent(t.percent)
	t.arm()
}

// gcSentinel is the object whose finalizer marks the end of a collection.
// It holds a pointer so that it is not a tiny allocation, whose finalizer
// may never run.
type gcSentinel struct {
	t *gcTuner
}

func (t *gcTuner) arm() {
	runtime.SetFinalizer(&gcSentinel{t: t}, func(s *gcSentinel) {
		s.t.tune()
		s.t.arm()
	})
}

// tune sets the percentage for the live heap the last collection found.
func (t *gcTuner) tune() {
	metrics.Read(t.sample)
	if t.sample[0].Value.Kind() != metrics.KindUint64 {
		return
	}
	p := gcPercentFor(t.sample[0].Value.Uint64())
	if p != t.percent {
		t.percent = p
		debug.SetGCPercent(p)
	}
}

// gcPercentFor is the GOGC that lets live bytes grow by at least
// minGCHeadroom, and never less than defaultGCPercent. It moves in steps
// of 25 so that a heap that breathes does not reset the pacer each cycle.
func gcPercentFor(live uint64) int {
	if live == 0 {
		return maxGCPercent
	}
	p := uint64(defaultGCPercent)
	if live*p/100 < minGCHeadroom {
		p = (minGCHeadroom*100/live + 24) / 25 * 25
	}
	return int(min(p, maxGCPercent))
}
