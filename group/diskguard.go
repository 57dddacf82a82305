package group

import (
	"fmt"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redcell/redcell/request"
)

// The disk guard: refuse writes before the disk refuses them.
//
// Pebble cannot go on after a failed WAL write (it treats it as fatal), and
// when a flush or compaction finds no space it retries for ever. So a node
// must never let its log disk run out: the guard polls the free space of
// the data dir and, while it is below the reserve (Config.MinFreeDisk), the
// leader proposes nothing — every state-changing request is answered at once
// with request.ErrDiskFull (MISCONF to the client, saying where and how
// much) instead of hanging or crashing. Reads, PING and INFO keep working.
// The reserve leaves Pebble room to flush its memtables and compact, and
// raft room for its term and vote. In a cluster the leader also hands its
// leadership to another voter, whose disk may be healthy, so the cluster
// keeps deciding; a follower with a full disk only falls behind.
//
// When space returns (above the reserve plus a margin, so that a disk at
// the edge does not flap) writes resume by themselves. The condition is
// logged when it begins and ends, and every minute while it lasts.
//
// Polling is enough because the reserve is far larger than what the node
// can write between two polls (at most MaxEntryBytes per entry, a few
// entries per poll interval).

// DefaultMinFreeDisk is the default reserve: twice Pebble's memtables and
// a compaction's worth of the log, with room to spare.
const DefaultMinFreeDisk = 64 << 20

// diskPollInterval is how often the guard looks at the free space.
const diskPollInterval = 100 * time.Millisecond

// diskGuard is the guard's state, read by Propose with one atomic load.
type diskGuard struct {
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

// StorageFailed tells the group that its log store cannot write any more
// (a failed WAL write or fsync; the node is stopping): from now on every
// write is refused at once with MISCONF saying so, instead of waiting behind
// the append that will never finish. Any goroutine.
func (g *Group) StorageFailed(err error) {
	d := "the storage engine failed and the node is stopping: " + err.Error()
	g.guard.failed.Store(&d)
}

// diskFullErr is the error Propose returns while the guard is low.
func (g *Group) diskFullErr() error {
	if p := g.guard.failed.Load(); p != nil {
		return request.DiskFull(*p)
	}
	d := "the log disk is below its reserve"
	if p := g.guard.detail.Load(); p != nil {
		d = *p
	}
	return request.DiskFull(d)
}

// refusingWrites reports whether Propose must refuse: the disk is below its
// reserve, or the storage has failed.
func (g *Group) refusingWrites() bool {
	return g.guard.low.Load() || g.guard.failed.Load() != nil
}

// runDiskGuard polls the free space until the group stops.
func (g *Group) runDiskGuard() {
	defer g.wg.Done()
	t := time.NewTicker(diskPollInterval)
	defer t.Stop()
	var lastLog, lastTransfer time.Time
	for {
		g.checkDisk(&lastLog, &lastTransfer)
		select {
		case <-t.C:
		case <-g.stopCh:
			return
		}
	}
}

// checkDisk polls once and acts on a change.
func (g *Group) checkDisk(lastLog, lastTransfer *time.Time) {
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
	g.guard.free.Store(free)
	low := g.guard.low.Load()
	switch {
	case !low && free < reserve:
		d := fmt.Sprintf("the disk of %s has %d MiB free, below the reserve of %d MiB (--min-free-disk)",
			g.cfg.DataDir, free>>20, reserve>>20)
		g.guard.detail.Store(&d)
		g.guard.low.Store(true)
		g.guard.trips.Add(1)
		g.log.Error("log disk below its reserve: refusing writes until space returns", "dir", g.cfg.DataDir,
			"free_bytes", free, "reserve_bytes", reserve)
		*lastLog = time.Now()
	case low && free >= reserve+reserve/4:
		g.guard.low.Store(false)
		g.log.Info("log disk has space again: accepting writes", "dir", g.cfg.DataDir, "free_bytes", free)
		return
	case low && time.Since(*lastLog) > time.Minute:
		g.log.Warn("log disk still below its reserve: refusing writes", "dir", g.cfg.DataDir,
			"free_bytes", free, "reserve_bytes", reserve)
		*lastLog = time.Now()
	}
	if g.guard.low.Load() && g.raft.State().String() == "Leader" && time.Since(*lastTransfer) > 10*time.Second {
		*lastTransfer = time.Now()
		if g.otherVoters() > 0 {
			go func() {
				if err := g.raft.LeadershipTransfer().Error(); err != nil {
					g.log.Warn("handing leadership away from a full disk failed", "err", err)
				}
			}()
		}
	}
}

// otherVoters counts the voters besides this node.
func (g *Group) otherVoters() int {
	f := g.raft.GetConfiguration()
	if f.Error() != nil {
		return 0
	}
	n := 0
	for _, s := range f.Configuration().Servers {
		if s.Suffrage.String() == "Voter" && string(s.ID) != g.cfg.NodeID {
			n++
		}
	}
	return n
}
