// Package guard watches what a node has once for all its Raft groups and
// what makes each of them refuse writes before harm is done: the memory the
// process uses against maxmemory, the free space of the data dir against
// its reserve, and the storage engine's failure. A node starts one Guard
// and hands it to every group it runs; a group reads the guard's verdicts
// with one atomic load per proposal (package group: memoryguard.go,
// diskhandover.go). So a node with G groups polls the heap and statfs once
// per interval, not G times, and a full disk or a dead WAL stops every
// group's writes at the same moment. See DESIGN.md.
//
// Goroutines: Start runs one polling goroutine, which Stop ends; every
// other method may be called from any goroutine, any number at once, and
// returns without blocking.
package guard

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redcell/redcell/nodeinfo"
	"github.com/redcell/redcell/request"
)

// PollInterval is how often the guard reads the heap and the free space.
const PollInterval = 100 * time.Millisecond

// Config is what a Guard watches.
type Config struct {
	// MaxMemory is maxmemory in bytes (0: none), shared with whoever sets
	// it at runtime (CONFIG SET); nil: no memory guard (memory.go).
	MaxMemory *atomic.Int64
	// MinFreeDisk is the data dir's reserve (disk.go): below it every
	// group refuses writes with request.ErrDiskFull. 0: no disk guard.
	MinFreeDisk uint64
	// DataDir names the log's directory in messages, and is where the free
	// space is measured unless FreeSpace says otherwise.
	DataDir string
	// FreeSpace reports the bytes free for the log (default:
	// FreeDiskSpace(DataDir)).
	FreeSpace func() (uint64, error)
	Logger    *slog.Logger
}

// Guard is a node's verdicts on memory, disk and storage. A nil *Guard
// refuses nothing (a group opened without one, in tests).
type Guard struct {
	cfg  Config
	log  *slog.Logger
	mem  memoryState
	disk diskState

	stop     chan struct{}
	stopOnce sync.Once
	wg       sync.WaitGroup
}

// Start makes a guard and, when it has anything to poll, starts polling.
func Start(cfg Config) *Guard {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.MinFreeDisk > 0 && cfg.FreeSpace == nil && cfg.DataDir != "" {
		cfg.FreeSpace = FreeDiskSpace(cfg.DataDir)
	}
	if cfg.FreeSpace == nil {
		cfg.MinFreeDisk = 0 // nothing to measure
	}
	g := &Guard{cfg: cfg, log: cfg.Logger, stop: make(chan struct{})}
	if cfg.MaxMemory != nil || cfg.MinFreeDisk > 0 {
		g.wg.Add(1)
		go g.run()
	}
	return g
}

// Stop ends polling and waits for it. The verdicts keep their last values.
func (g *Guard) Stop() {
	if g == nil {
		return
	}
	g.stopOnce.Do(func() { close(g.stop) })
	g.wg.Wait()
}

// run polls until Stop. The first poll is at once, so a node that starts
// above maxmemory or below its reserve refuses from its first write.
func (g *Guard) run() {
	defer g.wg.Done()
	t := time.NewTicker(PollInterval)
	defer t.Stop()
	var lastLog time.Time
	for {
		if g.cfg.MaxMemory != nil {
			g.pollMemory()
		}
		if g.cfg.MinFreeDisk > 0 {
			g.pollDisk(&lastLog)
		}
		select {
		case <-t.C:
		case <-g.stop:
			return
		}
	}
}

// OverMemory reports whether used memory was above maxmemory at the last
// poll: then new keys are refused (package group, memoryguard.go).
func (g *Guard) OverMemory() bool { return g != nil && g.mem.over.Load() }

// RefusingWrites reports whether every write must be refused now: the
// disk is below its reserve, or the storage has failed. DiskFullErr says
// why.
func (g *Guard) RefusingWrites() bool {
	return g != nil && (g.disk.low.Load() || g.disk.failed.Load() != nil)
}

// DiskLow reports whether the data dir is below its reserve (a leader then
// hands its leadership to a voter whose disk may be healthy).
func (g *Guard) DiskLow() bool { return g != nil && g.disk.low.Load() }

// DiskFullErr is the error a write gets while RefusingWrites.
func (g *Guard) DiskFullErr() error {
	if p := g.disk.failed.Load(); p != nil {
		return request.DiskFull(*p)
	}
	d := "the log disk is below its reserve"
	if p := g.disk.detail.Load(); p != nil {
		d = *p
	}
	return request.DiskFull(d)
}

// StorageFailed records that the storage engine cannot write any more (a
// failed WAL write or fsync; the node is stopping): from now on every write
// of every group is refused at once with MISCONF saying so, instead of
// waiting behind an append that will never finish.
func (g *Guard) StorageFailed(err error) {
	if g == nil {
		return
	}
	d := "the storage engine failed and the node is stopping: " + err.Error()
	g.disk.failed.Store(&d)
}

// Disk is INFO persistence's disk guard figures; nil without a disk guard.
func (g *Guard) Disk() *nodeinfo.DiskSpace {
	if g == nil || g.cfg.MinFreeDisk == 0 {
		return nil
	}
	return &nodeinfo.DiskSpace{
		FreeBytes:    int64(g.disk.free.Load()),
		ReserveBytes: int64(g.cfg.MinFreeDisk),
		Low:          g.disk.low.Load(),
		LowEvents:    g.disk.trips.Load(),
	}
}

// UsedMemory is the heap's live bytes at the last poll (0 without a memory
// guard).
func (g *Guard) UsedMemory() uint64 {
	if g == nil {
		return 0
	}
	return g.mem.used.Load()
}
