package main

import (
	"log/slog"
	"runtime"
	"time"
)

// The processor tuner: GOMAXPROCS follows the goroutine that applies the
// log. See DESIGN.md, "Processors: one, and a second while apply is busy".
//
// A decision is a chain of goroutine handoffs (connection, batcher, raft,
// the state machine, the answer) that is cheapest on one P, which is why the
// node starts with half the CPUs (setProcs). But when applying the log is
// itself most of the work (Lua scripts: tens of µs an entry's request),
// every connection waits for the P that the apply holds, and a second P lets
// them parse, answer and sync beside it. So while the apply goroutine is
// busy at least applyBusyHigh of the time for raiseAfter samples in a row,
// the node takes one more P (as long as the machine has the CPU), and gives
// it back after lowerAfter samples in a row below applyBusyLow. The wide
// gap and the longer wait to lower keep it from flapping on a load near the
// line; a change costs one stop-the-world (runtime.GOMAXPROCS).
const (
	procsSampleEvery = time.Second
	applyBusyHigh    = 0.5
	applyBusyLow     = 0.25
	raiseAfter       = 3
	lowerAfter       = 10
)

// procsTuner decides the number of Ps from the apply goroutine's busy
// share per sample. One goroutine (runProcsTuner's) owns it.
type procsTuner struct {
	base, most int // the starting Ps, and the most it takes (base+1, at most the CPUs)
	procs      int // the Ps it has set
	high, low  int // samples in a row above applyBusyHigh, below applyBusyLow
}

func newProcsTuner(base, cpus int) *procsTuner {
	return &procsTuner{base: base, most: min(base+1, cpus), procs: base}
}

// observe takes one sample, the share of the last interval the apply
// goroutine was busy, and returns the Ps the node should run with.
func (t *procsTuner) observe(share float64) int {
	switch {
	case share >= applyBusyHigh:
		t.high, t.low = t.high+1, 0
	case share < applyBusyLow:
		t.high, t.low = 0, t.low+1
	default:
		t.high, t.low = 0, 0
	}
	switch {
	case t.procs < t.most && t.high >= raiseAfter:
		t.procs, t.high = t.most, 0
	case t.procs > t.base && t.low >= lowerAfter:
		t.procs, t.low = t.base, 0
	}
	return t.procs
}

// runProcsTuner samples applyBusy every procsSampleEvery until stop is
// closed, and sets GOMAXPROCS when the tuner's answer changes. Started only
// when neither --procs nor the GOMAXPROCS environment variable chose the
// number, and the machine has a CPU to spare.
func runProcsTuner(applyBusy func() time.Duration, log *slog.Logger, stop <-chan struct{}) {
	base := runtime.GOMAXPROCS(0)
	t := newProcsTuner(base, runtime.NumCPU())
	if t.most == base {
		return
	}
	tick := time.NewTicker(procsSampleEvery)
	defer tick.Stop()
	lastBusy, lastAt := applyBusy(), time.Now()
	for {
		select {
		case <-stop:
			return
		case now := <-tick.C:
			busy := applyBusy()
			share := float64(busy-lastBusy) / float64(now.Sub(lastAt))
			lastBusy, lastAt = busy, now
			before := t.procs
			if want := t.observe(share); want != before {
				runtime.GOMAXPROCS(want)
				log.Info("processors changed", "gomaxprocs", want, "apply_busy", share)
			}
		}
	}
}
