package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// userHZ is the unit of the CPU times in /proc/stat and /proc/PID/stat. The
// kernel reports them in USER_HZ, which is 100 on every Linux architecture
// that matters here (it is not the kernel's internal HZ).
const userHZ = 100

// cpuSnapshot holds cumulative CPU times, in USER_HZ ticks, of the whole
// machine (busy = user, nice, system and steal) and of some processes.
// Interrupt and softirq time is left out: it is mostly the loopback network
// carrying the measured traffic itself, which no process is charged for.
// Steal (the hypervisor running someone else) is noise and stays in.
// Differences between two snapshots around a run tell how much CPU the
// measured server got and how much went elsewhere: the noise of that run.
type cpuSnapshot struct {
	machineBusy uint64
	procs       map[int]uint64
}

// takeCPUSnapshot reads /proc/stat and /proc/PID/stat of each pid. A process
// that cannot be read (it exited) counts as zero.
func takeCPUSnapshot(pids []int) (cpuSnapshot, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return cpuSnapshot{}, fmt.Errorf("read /proc/stat: %w", err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return cpuSnapshot{}, fmt.Errorf("unexpected /proc/stat line %q", line)
	}
	var snap cpuSnapshot
	// Fields: cpu user nice system idle iowait irq softirq steal ...
	for _, i := range []int{1, 2, 3, 8} {
		v, err := strconv.ParseUint(f[i], 10, 64)
		if err != nil {
			return cpuSnapshot{}, fmt.Errorf("parse /proc/stat field %d: %w", i, err)
		}
		snap.machineBusy += v
	}
	snap.procs = make(map[int]uint64, len(pids))
	for _, pid := range pids {
		snap.procs[pid] = processTicks(pid)
	}
	return snap, nil
}

// processTicks is utime + stime of pid, or 0 if it cannot be read.
func processTicks(pid int) uint64 {
	user, sys := processUserSys(pid)
	return user + sys
}

// processUserSys is utime and stime of pid apart (0, 0 if it cannot be
// read): the system share of a server's CPU is the kernel's network and
// disk work, which no change to the server's own code makes cheaper.
func processUserSys(pid int) (user, sys uint64) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0
	}
	// The command name (field 2) may hold spaces; fields after it are fixed.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, 0
	}
	utime, err1 := strconv.ParseUint(f[11], 10, 64) // field 14
	stime, err2 := strconv.ParseUint(f[12], 10, 64) // field 15
	if err1 != nil || err2 != nil {
		return 0, 0
	}
	return utime, stime
}

// cpuShares splits the CPU used between two snapshots into cores (CPU
// seconds per second of elapsed time): the measured server (the sum of
// serverPIDs: one process, or every node of a cluster), and everything else
// except the load generators, whose own CPU time is passed in.
func cpuShares(before, after cpuSnapshot, serverPIDs []int, loadGenCPU, elapsed time.Duration) (server, elsewhere float64) {
	if elapsed <= 0 {
		return 0, 0
	}
	ticks := func(t uint64) time.Duration { return time.Duration(t) * time.Second / userHZ }
	var serverCPU time.Duration
	for _, pid := range serverPIDs {
		if a, b := after.procs[pid], before.procs[pid]; a >= b {
			serverCPU += ticks(a - b)
		}
	}
	busy := ticks(after.machineBusy - before.machineBusy)
	rest := busy - serverCPU - loadGenCPU
	if rest < 0 { // tick granularity
		rest = 0
	}
	return serverCPU.Seconds() / elapsed.Seconds(), rest.Seconds() / elapsed.Seconds()
}

// waitForQuiet returns once the whole machine has used less than
// quietCores of CPU over one window, or after limit, or when ctx ends. It
// is called between runs with no load running, so that the previous
// server's aftermath (Redcell's compactions and GC, a Redis AOF rewrite
// child) is over before the next server is measured instead of landing in
// its numbers. Work from outside bench may keep the machine busy; then it
// gives up after limit and the run's "busy elsewhere" figure tells.
// It returns how long it waited.
func waitForQuiet(ctx context.Context, quietCores float64, window, limit time.Duration) (time.Duration, error) {
	start := time.Now()
	tick := time.NewTicker(window)
	defer tick.Stop()
	prev, err := takeCPUSnapshot(nil)
	if err != nil {
		return 0, err
	}
	for {
		select {
		case <-ctx.Done():
			return time.Since(start), ctx.Err()
		case <-tick.C:
		}
		cur, err := takeCPUSnapshot(nil)
		if err != nil {
			return 0, err
		}
		busy := time.Duration(cur.machineBusy-prev.machineBusy) * time.Second / userHZ
		if busy.Seconds()/window.Seconds() < quietCores || time.Since(start) >= limit {
			return time.Since(start), nil
		}
		prev = cur
	}
}
