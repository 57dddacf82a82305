//go:build redcell_slowdisk

// A slow-disk build, for the bench's slowdisk mode only: go build -tags
// redcell_slowdisk ./cmd/redcell. Every WAL sync is stretched by the
// duration in REDCELL_SLOWDISK_FSYNC (e.g. 500us, 1ms; unset or 0: none),
// which is how a node behaves on a disk whose fsync takes that much longer
// (cloud block storage). The normal build has none of this file.
//
// The delay is spent as a slow fsync spends it: blocked in a system call on
// the thread that synced, right after the real sync returns (raftstore
// calls node.Config.AfterWALSync on the syncing goroutine, before it takes
// the sync's time, so INFO's log_wal_sync_usec_total includes it). An
// ordinary sync is fdatasync through syscall.Syscall, which lets the
// runtime hand the thread's P to another thread while it blocks, so the
// delay is nanosleep through syscall.Syscall too; a direct sync
// (--direct-wal-sync) is fdatasync through syscall.RawSyscall, which keeps
// the P, so its delay goes through RawSyscall. time.Sleep would park the
// goroutine and free the thread, which no fsync does.

package main

import (
	"fmt"
	"os"
	"syscall"
	"time"
	"unsafe"
)

// slowDiskEnv names the variable that holds the delay.
const slowDiskEnv = "REDCELL_SLOWDISK_FSYNC"

func init() {
	d, err := parseSlowDisk(os.Getenv(slowDiskEnv))
	if err != nil {
		fmt.Fprintf(os.Stderr, "redcell: %s: %v\n", slowDiskEnv, err)
		os.Exit(2)
	}
	if d == 0 {
		return
	}
	fmt.Fprintf(os.Stderr, "redcell: slow-disk build: every WAL sync takes %v longer (%s)\n", d, slowDiskEnv)
	afterWALSync = slowDiskHook(d)
}

// parseSlowDisk reads the delay: a Go duration, "" or 0 for none.
func parseSlowDisk(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, err
	}
	if d < 0 {
		return 0, fmt.Errorf("negative delay %v", d)
	}
	return d, nil
}

// slowDiskHook is the AfterWALSync that spends d after each sync, in the
// same kind of system call as the sync it follows.
func slowDiskHook(d time.Duration) func(direct bool) {
	return func(direct bool) { nanosleep(d, direct) }
}

// nanosleep blocks the calling thread in nanosleep(2) for d: through
// syscall.RawSyscall when raw (the runtime is not told, the thread keeps
// its P), through syscall.Syscall otherwise. A signal (Go's preemption
// sends them) interrupts it with EINTR; it goes on with what remains.
func nanosleep(d time.Duration, raw bool) {
	ts := syscall.NsecToTimespec(int64(d))
	var rem syscall.Timespec
	for {
		var e syscall.Errno
		if raw {
			_, _, e = syscall.RawSyscall(syscall.SYS_NANOSLEEP, uintptr(unsafe.Pointer(&ts)), uintptr(unsafe.Pointer(&rem)), 0)
		} else {
			_, _, e = syscall.Syscall(syscall.SYS_NANOSLEEP, uintptr(unsafe.Pointer(&ts)), uintptr(unsafe.Pointer(&rem)), 0)
		}
		if e != syscall.EINTR {
			return
		}
		ts = rem
	}
}
