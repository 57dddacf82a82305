//go:build redcell_slowdisk

package main

import (
	"runtime"
	"syscall"
	"testing"
	"time"
)

// Run with: go test -tags redcell_slowdisk ./cmd/redcell -run SlowDisk
// (bench's TestSlowDiskBuildDelaysWALSyncs checks the built binary).

func TestSlowDiskParsesTheDelay(t *testing.T) {
	for _, c := range []struct {
		in      string
		want    time.Duration
		wantErr bool
	}{
		{"", 0, false},
		{"0", 0, false},
		{"500us", 500 * time.Microsecond, false},
		{"2ms", 2 * time.Millisecond, false},
		{"-1ms", 0, true},
		{"1", 0, true}, // a duration needs its unit
		{"soon", 0, true},
	} {
		got, err := parseSlowDisk(c.in)
		if (err != nil) != c.wantErr || got != c.want {
			t.Errorf("parseSlowDisk(%q) = %v, %v; want %v, error %v", c.in, got, err, c.want, c.wantErr)
		}
	}
}

// The delay is at least what was asked, either way, and is spent in the
// kernel on the calling thread: its CPU time stays near zero, as a blocked
// fsync's does.
func TestSlowDiskSleepsInTheKernel(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	const d = 2 * time.Millisecond
	hook := slowDiskHook(d)
	for _, direct := range []bool{false, true} {
		var before, after syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_THREAD, &before); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		for range 5 {
			hook(direct)
		}
		took := time.Since(start)
		if err := syscall.Getrusage(syscall.RUSAGE_THREAD, &after); err != nil {
			t.Fatal(err)
		}
		if took < 5*d {
			t.Errorf("direct=%v: 5 delays of %v took %v", direct, d, took)
		}
		cpu := time.Duration(after.Utime.Nano()+after.Stime.Nano()) - time.Duration(before.Utime.Nano()+before.Stime.Nano())
		if cpu > took/2 {
			t.Errorf("direct=%v: the thread used %v of CPU in %v: it spun instead of sleeping", direct, cpu, took)
		}
	}
}
