package main

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
)

// The collector's headroom follows what it has to scan, not the heap.
//
// Go's GOGC lets garbage grow in proportion to the live heap, because a
// collection's work is proportional to the live heap it marks through. Most
// of a Redcell node's heap is the keyspace's arenas and indexes, a few
// hundred large pointer-free arrays (package shard) that a collection marks
// without scanning, so its work is proportional to the rest: the objects
// with pointers, the stacks and the globals (/gc/scan/total:bytes: 1.7 MB
// on a node that has loaded a million CL keys, whose live heap is then
// 37 MB). Headroom in proportion to the whole heap is memory spent on
// nothing: GOGC 25 holds a quarter of the keyspace again as garbage (9 B
// per CL key), and the 16 MB floor this tuner had, for scripts, half of it
// at a million keys (43 % rounded up to 50: 18 B per key).
//
// So the tuner sets GOGC after every collection for a headroom of
// scanHeadroomPercent of the scannable bytes, and at least minGCHeadroom:
//
//   - scripts (gopher-lua boxes every value it makes, about 900 bytes a
//     call, all of it pointers) get what GOGC 100 gives a heap of
//     pointers, which decided 15 % more scripts than GOGC 25 did;
//   - a keyspace of any size adds nothing: loading a million CL keys took
//     67 collections instead of 16, 105 ms of the collector's CPU instead
//     of 32 (0.07 µs per decision, of ~3.5 µs), for 14 B per key less RSS
//     (cmd/redcell/DESIGN.md, "Runtime tuning").
//
// GOGC in the environment still wins (main does not start the tuner).
const (
	minGCHeadroom       = 4 << 20
	scanHeadroomPercent = 100
	// maxGCPercent bounds the percentage for a nearly empty heap.
	maxGCPercent = 800
	// startGCPercent is Go's default, until the first collection has
	// measured the heap (and for good, should the runtime not report it).
	startGCPercent = 100
)

// gcTuner keeps GOGC where the next collection comes after the headroom
// gcPercentFor allows. It runs after every collection, from the finalizer
// of an object it re-arms each time (the finalizer goroutine; nothing else
// calls it).
type gcTuner struct {
	percent int
	sample  []metrics.Sample
}

// startGCTuner sets GOGC to startGCPercent and keeps it tuned from the next
// collection on. Call it once, from main, when GOGC is not in the
// environment.
func startGCTuner() {
	t := &gcTuner{sample: []metrics.Sample{
		{Name: "/gc/heap/live:bytes"},
		{Name: "/gc/scan/total:bytes"},
	}}
	t.percent = startGCPercent
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

// tune sets the percentage for the live and scannable bytes the last
// collection found.
func (t *gcTuner) tune() {
	metrics.Read(t.sample)
	for _, s := range t.sample {
		if s.Value.Kind() != metrics.KindUint64 {
			return
		}
	}
	p := gcPercentFor(t.sample[0].Value.Uint64(), t.sample[1].Value.Uint64())
	if retune(t.percent, p) {
		t.percent = p
		debug.SetGCPercent(p)
	}
}

// gcPercentFor is the GOGC that lets a heap of live bytes, scan of them
// (with stacks and globals) scannable, grow by scanHeadroomPercent of scan
// and at least minGCHeadroom before the next collection: at least 1, at
// most maxGCPercent.
func gcPercentFor(live, scan uint64) int {
	if live == 0 {
		return maxGCPercent
	}
	h := max(uint64(minGCHeadroom), scan*scanHeadroomPercent/100)
	p := (h*100 + live - 1) / live // rounded up: at least h
	return int(max(1, min(p, maxGCPercent)))
}

// retune reports whether the tuner changes GOGC from cur to p: when p asks
// for more headroom, or for an eighth less or more, so that a heap that
// breathes does not reset the pacer every cycle.
func retune(cur, p int) bool {
	return p > cur || p*8 < cur*7
}
