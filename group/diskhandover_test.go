package group

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redcell/redcell/gcra"
	"github.com/redcell/redcell/guard"
	"github.com/redcell/redcell/request"
)

// While the node's guard says the disk is below the reserve, the leader
// proposes nothing and answers at once with ErrDiskFull saying where and
// how much; when the guard lifts it proposes again. (The free space is
// injected here, the guard's margins are package guard's tests; the system
// test fills a real filesystem.)
func Test_DiskGuard_RefusesBelowTheReserveAndResumes(t *testing.T) {
	var free atomic.Uint64
	free.Store(1 << 30)
	gd := guard.Start(guard.Config{MinFreeDisk: 64 << 20, DataDir: "/data/redcell",
		FreeSpace: func() (uint64, error) { return free.Load(), nil }})
	t.Cleanup(gd.Stop)
	n := openSingle(t, func(c *Config) { c.Guard = gd })
	p, err := gcra.NewParams(15, 30, 60, 1)
	if err != nil {
		t.Fatal(err)
	}
	propose := func() error {
		b := NewBatch()
		b.Ops = append(b.Ops, throttleReq([]byte("k"), p))
		return n.g.Propose(b)
	}
	if err := propose(); err != nil {
		t.Fatal(err)
	}
	before := n.g.Stats().EntriesProposed
	free.Store(10 << 20)
	waitFor(t, 5*time.Second, "the guard to see the low disk", gd.DiskLow)
	start := time.Now()
	err = propose()
	if !errors.Is(err, request.ErrDiskFull) {
		t.Fatalf("Propose on a low disk = %v; want ErrDiskFull", err)
	}
	if took := time.Since(start); took > time.Second {
		t.Fatalf("refused after %v; want at once", took)
	}
	var df *request.Failure
	if !errors.As(err, &df) || !strings.Contains(df.Detail, "/data/redcell has 10 MiB free, below the reserve of 64 MiB") {
		t.Fatalf("detail = %v", err)
	}
	if got := n.g.Stats().EntriesProposed; got != before {
		t.Fatalf("%d entries proposed while the disk was low", got-before)
	}
	free.Store(100 << 20)
	waitFor(t, 5*time.Second, "the guard to see space again", func() bool { return !gd.DiskLow() })
	if err := propose(); err != nil {
		t.Fatalf("after space returned: %v", err)
	}
}

// Once the storage has failed, every write is refused at once with the
// reason, instead of queueing behind an append that will never finish.
func Test_DiskGuard_StorageFailedRefusesWrites(t *testing.T) {
	gd := guard.Start(guard.Config{})
	n := openSingle(t, func(c *Config) { c.Guard = gd })
	p, err := gcra.NewParams(15, 30, 60, 1)
	if err != nil {
		t.Fatal(err)
	}
	gd.StorageFailed(errors.New("fdatasync: input/output error"))
	b := NewBatch()
	b.Ops = append(b.Ops, throttleReq([]byte("k"), p))
	err = n.g.Propose(b)
	var df *request.Failure
	if !errors.As(err, &df) || !strings.Contains(df.Detail, "storage engine failed") || !strings.Contains(df.Detail, "input/output error") {
		t.Fatalf("Propose after StorageFailed = %v", err)
	}
}
