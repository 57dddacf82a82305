package main

import (
	"math/rand/v2"
	"os"
	"strings"
	"testing"
)

// A chase through the cycle must visit every line before it returns: a
// shorter loop would fit in a cache and measure the cache, not memory.
func TestRandomCycleVisitsEveryLine(t *testing.T) {
	for _, n := range []int{2, 3, 10, 1000, 1 << 16} {
		next := randomCycle(n, rand.New(rand.NewPCG(uint64(n), 7)))
		seen := make([]bool, n)
		at := 0
		for step := 0; step < n; step++ {
			if seen[at] {
				t.Fatalf("n=%d: line %d visited twice after %d steps", n, at, step)
			}
			seen[at] = true
			at = next[at]
		}
		if at != 0 {
			t.Fatalf("n=%d: after %d steps at line %d, not back at 0", n, n, at)
		}
	}
}

// The probe measures something, a random load costs more than a register
// multiply-add, and an unmeasured speed says so.
func TestMeasureMachineSpeed(t *testing.T) {
	s := measureMachineSpeed()
	if s.ALUNs <= 0 || s.LoadNs <= s.ALUNs {
		t.Fatalf("load %v ns, multiply-add %v ns", s.LoadNs, s.ALUNs)
	}
	if got := s.String(); !strings.Contains(got, "random load over 64 MiB") || !strings.Contains(got, "multiply-add") {
		t.Errorf("String: %q", got)
	}
	if (machineSpeed{}).String() != "unknown" {
		t.Error("an unmeasured speed must read unknown")
	}
}

// The results file gives the speed at the start and at the end of the run.
func TestReportGivesMachineSpeed(t *testing.T) {
	r := &resultsReport{
		info:     machineInfo{SpeedStart: machineSpeed{LoadNs: 125, ALUNs: 1}},
		speedEnd: machineSpeed{LoadNs: 197.4, ALUNs: 1.391},
	}
	want := "| machine speed | random load over 64 MiB 125 ns, multiply-add 1.00 ns at start; random load over 64 MiB 197 ns, multiply-add 1.39 ns at end"
	if md := r.markdown(); !strings.Contains(md, want) {
		t.Errorf("results file without the speed row %q:\n%s", want, md)
	}
}

// The results file says how the machine idles its CPUs, and the probe reads
// it from sysfs where there is one.
func TestReportGivesCPUIdle(t *testing.T) {
	r := &resultsReport{info: machineInfo{CPUIdle: "haltpoll/haltpoll, guest_halt_poll_ns 0"}}
	want := "| CPU idle | haltpoll/haltpoll, guest_halt_poll_ns 0 ("
	if md := r.markdown(); !strings.Contains(md, want) {
		t.Errorf("results file without the CPU idle row %q:\n%s", want, md)
	}
	got := cpuIdle()
	if _, err := os.Stat("/sys/devices/system/cpu/cpuidle/current_driver"); err == nil {
		if got == "unknown" || !strings.Contains(got, "/") {
			t.Errorf("cpuIdle() = %q with a cpuidle driver in sysfs", got)
		}
	} else if got != "unknown" {
		t.Errorf("cpuIdle() = %q without a cpuidle driver", got)
	}
}
