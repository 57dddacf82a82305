package guard

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redcell/redcell/request"
)

// newPolled is a guard whose polls the test makes itself (no goroutine).
func newPolled(cfg Config) *Guard {
	g := Start(Config{Logger: cfg.Logger}) // nothing to poll: no goroutine
	g.cfg = cfg
	return g
}

// Below the reserve every write is refused with ErrDiskFull saying where
// and how much; just above it the guard holds (no flapping at the edge);
// above the reserve plus a quarter writes resume.
func TestDiskBelowTheReserveRefusesAndResumes(t *testing.T) {
	var free atomic.Uint64
	free.Store(1 << 30)
	g := newPolled(Config{MinFreeDisk: 64 << 20, DataDir: "/data/redcell",
		FreeSpace: func() (uint64, error) { return free.Load(), nil }})
	var lastLog time.Time
	g.pollDisk(&lastLog)
	if g.RefusingWrites() || g.DiskLow() {
		t.Fatal("refusing with 1 GiB free")
	}
	free.Store(10 << 20)
	g.pollDisk(&lastLog)
	if !g.RefusingWrites() || !g.DiskLow() {
		t.Fatal("not refusing with 10 MiB free and a 64 MiB reserve")
	}
	err := g.DiskFullErr()
	var df *request.Failure
	if !errors.Is(err, request.ErrDiskFull) || !errors.As(err, &df) ||
		!strings.Contains(df.Detail, "/data/redcell has 10 MiB free, below the reserve of 64 MiB") {
		t.Fatalf("DiskFullErr = %v", err)
	}
	free.Store(70 << 20)
	for range 3 {
		g.pollDisk(&lastLog)
	}
	if !g.DiskLow() {
		t.Fatal("resumed at 70 MiB free; want the 25% margin (80 MiB)")
	}
	free.Store(100 << 20)
	g.pollDisk(&lastLog)
	if g.RefusingWrites() {
		t.Fatal("still refusing with 100 MiB free")
	}
	d := g.Disk()
	if d == nil || d.FreeBytes != 100<<20 || d.ReserveBytes != 64<<20 || d.Low || d.LowEvents != 1 {
		t.Fatalf("Disk() = %+v", d)
	}
}

// A free-space reading that fails keeps the last verdict.
func TestDiskUnreadableKeepsTheVerdict(t *testing.T) {
	fail := errors.New("statfs: input/output error")
	var free atomic.Uint64
	var broken atomic.Bool
	g := newPolled(Config{MinFreeDisk: 64 << 20, FreeSpace: func() (uint64, error) {
		if broken.Load() {
			return 0, fail
		}
		return free.Load(), nil
	}})
	var lastLog time.Time
	free.Store(1 << 20)
	g.pollDisk(&lastLog)
	broken.Store(true)
	g.pollDisk(&lastLog)
	if !g.DiskLow() {
		t.Fatal("an unreadable disk lifted the refusal")
	}
}

// Once the storage has failed every write is refused with the reason, and
// nothing lifts it.
func TestStorageFailedRefusesForGood(t *testing.T) {
	g := newPolled(Config{})
	g.StorageFailed(errors.New("fdatasync: input/output error"))
	if !g.RefusingWrites() {
		t.Fatal("not refusing after the storage failed")
	}
	var df *request.Failure
	if err := g.DiskFullErr(); !errors.As(err, &df) || !strings.Contains(df.Detail, "the storage engine failed and the node is stopping: fdatasync: input/output error") {
		t.Fatalf("DiskFullErr = %v", err)
	}
	if g.Disk() != nil {
		t.Fatal("Disk() without a disk guard")
	}
}

// Above maxmemory the guard says so; a limit of 0 is none.
func TestMemoryAboveTheLimit(t *testing.T) {
	var limit atomic.Int64
	g := newPolled(Config{MaxMemory: &limit})
	g.pollMemory()
	if g.OverMemory() || g.UsedMemory() == 0 {
		t.Fatalf("over = %v, used = %d with no limit", g.OverMemory(), g.UsedMemory())
	}
	limit.Store(1) // any heap is above one byte
	g.pollMemory()
	if !g.OverMemory() {
		t.Fatal("not over a limit of one byte")
	}
	limit.Store(0)
	g.pollMemory()
	if g.OverMemory() {
		t.Fatal("over with no limit")
	}
}

// A nil guard refuses nothing, and Stop on a started guard ends its poll.
func TestNilGuardAndStop(t *testing.T) {
	var g *Guard
	if g.OverMemory() || g.RefusingWrites() || g.DiskLow() || g.Disk() != nil {
		t.Fatal("a nil guard refuses")
	}
	g.StorageFailed(errors.New("x"))
	g.Stop()
	var limit atomic.Int64
	s := Start(Config{MaxMemory: &limit, MinFreeDisk: 1, FreeSpace: func() (uint64, error) { return 1 << 30, nil }})
	s.Stop()
	s.Stop()
}
