package guard

import (
	"fmt"
	"sync/atomic"
	"syscall"
	"time"
)

// The disk guard: refuse writes before the disk refuses them.
//
// Pebble cannot go on after a failed WAL write (it treats it as fatal), and
// when a flush or compaction finds no space it retries for ever. So a node
// must never let its log disk run out: the guard polls the free space of
// the data dir and, while it is below the reserve (Config.MinFreeDisk),
// every group's leader proposes nothing — every state-changing request is
// answered at once with request.ErrDiskFull (MISCONF to the client, saying
// where and how much) instead of hanging or crashing. Reads, PING and INFO
// keep working. The reserve leaves Pebble room to flush its memtables and
// compact, and raft room for its terms and votes. A leader also hands its
// leadership to another voter, whose disk may be healthy (package group,
// diskhandover.go); a follower with a full disk only falls behind.
//
// All of a node's groups share one Pebble and so one disk: one poll serves
// them all.
//
// When space returns (above the reserve plus a quarter, so that a disk at
// the edge does not flap) writes resume by themselves. The condition is
// logged when it begins and ends, and every minute while it lasts.
//
// Polling is enough because the reserve is far larger than what the node
// can write between two polls (at most MaxEntryBytes per entry, a few
// entries per poll interval and group).

// DefaultMinFreeDisk is the default reserve: twice Pebble's memtables and
// a compaction's worth of the log, with room to spare.
const DefaultMinFreeDisk = 64 << 20

type diskState struct {
	low    atomic.Bool
	detail atomic.Pointer[string] // why, while low
	free   atomic.Uint64          // bytes free at the last poll
	trips  atomic.Uint64          // how many times it went low
	failed atomic.Pointer[string] // set by StorageFailed: why writes can never succeed
}

// FreeDiskSpace is the default Config.FreeSpace: the bytes available to an
// unprivileged writer on the filesystem holding dir.
func FreeDiskSpace(dir string) func() (uint64, error) {
	return func() (uint64, error) {
		var st syscall.Statfs_t
		if err := syscall.Statfs(dir, &st); err != nil {
			return 0, fmt.Errorf("statfs %s: %w", dir, err)
		}
		return st.Bavail * uint64(st.Bsize), nil
	}
}

// pollDisk reads the free space once and acts on a change.
func (g *Guard) pollDisk(lastLog *time.Time) {
	reserve := g.cfg.MinFreeDisk
	free, err := g.cfg.FreeSpace()
	if err != nil {
		// Cannot tell: keep the last verdict, say so now and then.
		if time.Since(*lastLog) > time.Minute {
			g.log.Error("cannot read the log disk's free space", "err", err)
			*lastLog = time.Now()
		}
		return
	}
	g.disk.free.Store(free)
	low := g.disk.low.Load()
	switch {
	case !low && free < reserve:
		d := fmt.Sprintf("the disk of %s has %d MiB free, below the reserve of %d MiB (--min-free-disk)",
			g.cfg.DataDir, free>>20, reserve>>20)
		g.disk.detail.Store(&d)
		g.disk.low.Store(true)
		g.disk.trips.Add(1)
		g.log.Error("log disk below its reserve: refusing writes until space returns", "dir", g.cfg.DataDir,
			"free_bytes", free, "reserve_bytes", reserve)
		*lastLog = time.Now()
	case low && free >= reserve+reserve/4:
		g.disk.low.Store(false)
		g.log.Info("log disk has space again: accepting writes", "dir", g.cfg.DataDir, "free_bytes", free)
	case low && time.Since(*lastLog) > time.Minute:
		g.log.Warn("log disk still below its reserve: refusing writes", "dir", g.cfg.DataDir,
			"free_bytes", free, "reserve_bytes", reserve)
		*lastLog = time.Now()
	}
}
