package main

import "testing"

// The tuner takes a second P only after raiseAfter samples in a row with
// apply busy at least applyBusyHigh, gives it back only after lowerAfter
// samples in a row below applyBusyLow, and a sample in between resets both
// runs; it never goes past the CPUs or below where it started.
func TestProcsTunerFollowsApply(t *testing.T) {
	tu := newProcsTuner(1, 2)
	step := func(share float64, want int) {
		t.Helper()
		if got := tu.observe(share); got != want {
			t.Fatalf("after a sample of %.2f: %d Ps, want %d", share, got, want)
		}
	}
	for range raiseAfter - 1 {
		step(0.9, 1)
	}
	step(0.4, 1) // between the lines: the run starts again
	for range raiseAfter - 1 {
		step(applyBusyHigh, 1)
	}
	step(applyBusyHigh, 2)
	step(1.0, 2) // never more than base+1
	for range lowerAfter - 1 {
		step(0.1, 2)
	}
	step(0.3, 2) // between the lines again
	for range lowerAfter - 1 {
		step(0, 2)
	}
	step(0, 1)
	for range 2 * lowerAfter {
		step(0, 1) // never below where it started
	}

	one := newProcsTuner(1, 1) // one CPU: nothing to take
	for range 2 * raiseAfter {
		if got := one.observe(1); got != 1 {
			t.Fatalf("one CPU: %d Ps", got)
		}
	}
}
