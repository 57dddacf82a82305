//go:build linux

package main

import (
	"runtime"
	"syscall"
	"testing"
	"time"
)

// BenchmarkThreadHandoff measures what overlapping a sync with other work
// costs at the least: a round trip between two goroutines locked to their
// own threads, each waking the other through a channel (a futex wake and a
// sleep each way), with two processors so that both can run at once: back
// to back, and with 200 µs of work between round trips (the caller spins
// while the other thread sleeps, as a syncer thread waits between syncs).
// It reports the wall time and the CPU time of the whole process per round
// trip, the spinning taken out.
//
//	go test -run '^$' -bench ThreadHandoff ./bench/iomodel
func BenchmarkThreadHandoff(b *testing.B) {
	for _, idle := range []time.Duration{0, 200 * time.Microsecond} {
		name := "back-to-back"
		if idle > 0 {
			name = "idle-200us"
		}
		b.Run(name, func(b *testing.B) { benchHandoff(b, idle) })
	}
}

func benchHandoff(b *testing.B, idle time.Duration) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	ping, pong := make(chan struct{}), make(chan struct{})
	go func() {
		runtime.LockOSThread()
		for range ping {
			pong <- struct{}{}
		}
	}()
	defer close(ping)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var spun time.Duration
	cpu0 := processCPU()
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		ping <- struct{}{}
		<-pong
		if idle > 0 { // stay busy (not asleep) while the other thread sleeps
			s := time.Now()
			for time.Since(s) < idle {
			}
			spun += time.Since(s)
		}
	}
	wall := time.Since(start) - spun
	cpu := processCPU() - cpu0 - spun
	b.StopTimer()
	b.ReportMetric(float64(wall.Nanoseconds())/1e3/float64(b.N), "µs-wall/roundtrip")
	b.ReportMetric(float64(cpu.Nanoseconds())/1e3/float64(b.N), "µs-cpu/roundtrip")
}

func processCPU() time.Duration {
	var r syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &r)
	return time.Duration(syscall.TimevalToNsec(r.Utime) + syscall.TimevalToNsec(r.Stime))
}
