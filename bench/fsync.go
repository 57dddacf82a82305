package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"
)

// Figures from different machines are comparable only next to the disk's
// own speed: a durable decision waits for an fsync, and fsyncs on one log do
// not overlap, so the fsync latency bounds unpipelined throughput. Every run
// therefore measures it first, in the directory that holds the data dirs:
// append a 4 KiB block to one file and fsync, fsyncSamples times (after a
// few unmeasured warm-up rounds). That is the reference the targets use.
//
// Redcell's log syncs a cheaper way: its WAL files are written with zeros
// before use or recycled (raftstore/walprefill.go), so each fdatasync
// overwrites blocks that exist and has no new file size to journal. The
// probe measures that too, rewriting the blocks it appended, so that a
// figure can be set against both.

const (
	fsyncSamples = 300
	fsyncWarmup  = 20
	fsyncBlock   = 4 << 10
)

// fsyncSpeed is the measured latency of one append + fsync (P50, P99) and of
// one overwrite + fdatasync (OverwriteP50, OverwriteP99).
type fsyncSpeed struct {
	P50, P99                   time.Duration
	OverwriteP50, OverwriteP99 time.Duration
}

func (f fsyncSpeed) String() string {
	if f.P50 == 0 {
		return "unknown"
	}
	s := fmt.Sprintf("p50 %.3f ms, p99 %.3f ms (4 KiB append + fsync)", ms(f.P50), ms(f.P99))
	if f.OverwriteP50 > 0 {
		s += fmt.Sprintf("; overwriting written blocks + fdatasync, as Redcell's log does: p50 %.3f ms, p99 %.3f ms", ms(f.OverwriteP50), ms(f.OverwriteP99))
	}
	return s
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// measureFsync appends and syncs in a temporary file under dir, then
// rewrites the blocks it appended with an fdatasync each, removes the file,
// and returns the latency percentiles of both.
func measureFsync(dir string) (fsyncSpeed, error) {
	f, err := os.CreateTemp(dir, "fsync-probe-*")
	if err != nil {
		return fsyncSpeed{}, fmt.Errorf("fsync probe: %w", err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	block := make([]byte, fsyncBlock)
	var sp fsyncSpeed
	appendOne := func(int) error {
		if _, err := f.Write(block); err != nil {
			return err
		}
		return f.Sync()
	}
	if sp.P50, sp.P99, err = syncLatencies(appendOne); err != nil {
		return fsyncSpeed{}, fmt.Errorf("fsync probe %s: %w", filepath.Base(f.Name()), err)
	}
	overwriteOne := func(i int) error {
		if _, err := f.WriteAt(block, int64(i)*fsyncBlock); err != nil {
			return err
		}
		return syscall.Fdatasync(int(f.Fd()))
	}
	if sp.OverwriteP50, sp.OverwriteP99, err = syncLatencies(overwriteOne); err != nil {
		return fsyncSpeed{}, fmt.Errorf("fsync probe %s (overwrite): %w", filepath.Base(f.Name()), err)
	}
	return sp, nil
}

// syncLatencies runs one(i) for i = 0, 1, … fsyncWarmup+fsyncSamples times
// and returns the p50 and p99 of the measured ones.
func syncLatencies(one func(i int) error) (p50, p99 time.Duration, err error) {
	lat := make([]time.Duration, 0, fsyncSamples)
	for i := 0; i < fsyncWarmup+fsyncSamples; i++ {
		start := time.Now()
		if err := one(i); err != nil {
			return 0, 0, err
		}
		if i >= fsyncWarmup {
			lat = append(lat, time.Since(start))
		}
	}
	slices.Sort(lat)
	return lat[len(lat)/2], lat[len(lat)*99/100], nil
}
