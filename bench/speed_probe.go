package main

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"
)

// The VM this project is measured on has slow phases that last from minutes
// to a whole day, with no steal time to show for them: on 2026-11-25 Redis
// + Lua needed 1.15–1.7× its usual CPU per request on random keys while its
// hot-key rows cost what they always do, and Redcell's random-key rows
// stayed near their usual cost: the work that misses the caches slows most,
// and the denominator of every ratio slowed more than the numerator. So a
// ratio is only comparable with another next to the machine's speed at the
// time, and every run measures it at its start and its end, as it measures
// the disk's fsync (fsync.go):
//
//   - random load: the latency of one dependent load from a random cache line
//     of 64 MiB (bigger than any last-level cache of the machines used, and
//     walked in 4 KiB pages like the servers' heaps, so TLB misses are in it);
//   - multiply-add: one step of a dependent integer multiply-add chain, which
//     touches no memory: the core's own speed.
//
// Each is the median of speedRounds rounds.

const (
	speedProbeBytes = 64 << 20
	cacheLine       = 64
	speedLoads      = 1 << 19 // dependent loads per round
	speedALUSteps   = 1 << 25 // multiply-add steps per round
	speedRounds     = 5
)

// machineSpeed is one measurement of the probe; zero values mean unmeasured.
type machineSpeed struct {
	LoadNs float64 // per dependent random load over speedProbeBytes
	ALUNs  float64 // per dependent multiply-add step
}

func (s machineSpeed) String() string {
	if s.LoadNs == 0 {
		return "unknown"
	}
	return fmt.Sprintf("random load over 64 MiB %.0f ns, multiply-add %.2f ns", s.LoadNs, s.ALUNs)
}

// speedSink keeps the probe's results alive so the compiler cannot drop the
// loops that produce them. It is written and never read, on purpose.
//
//lint:ignore U1000 the write is what keeps the loops; nothing reads it
var speedSink uint64

// measureMachineSpeed runs both probes; it takes about a second on the VM
// measured and allocates speedProbeBytes for that time.
func measureMachineSpeed() machineSpeed {
	lines := speedProbeBytes / cacheLine
	const words = cacheLine / 8
	mem := make([]uint64, lines*words)
	for i, next := range randomCycle(lines, rand.New(rand.NewPCG(1, 2))) {
		mem[i*words] = uint64(next * words)
	}
	at := uint64(0)
	for range speedLoads { // one unmeasured round: page faults, TLB
		at = mem[at]
	}
	loads := make([]float64, speedRounds)
	for r := range loads {
		start := time.Now()
		for range speedLoads {
			at = mem[at]
		}
		loads[r] = float64(time.Since(start).Nanoseconds()) / speedLoads
	}
	x := at | 1
	alu := make([]float64, speedRounds)
	for r := range alu {
		start := time.Now()
		for range speedALUSteps {
			x = x*6364136223846793005 + 1442695040888963407
		}
		alu[r] = float64(time.Since(start).Nanoseconds()) / speedALUSteps
	}
	speedSink += x
	return machineSpeed{LoadNs: median(loads), ALUNs: median(alu)}
}

// randomCycle returns next[] such that following next from any line visits
// every line once before it comes back (Sattolo's algorithm): a chase
// through it cannot settle into a short loop that fits in a cache.
func randomCycle(n int, rng *rand.Rand) []int {
	next := make([]int, n)
	for i := range next {
		next[i] = i
	}
	for i := n - 1; i > 0; i-- {
		j := rng.IntN(i)
		next[i], next[j] = next[j], next[i]
	}
	return next
}

// median is the middle value of d (the mean of the two middle ones for an
// even count); d must not be empty. It sorts a copy.
func median(d []float64) float64 {
	s := slices.Clone(d)
	slices.Sort(s)
	if len(s)%2 == 0 {
		return (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return s[len(s)/2]
}
