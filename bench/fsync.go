package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// Figures from different machines are comparable only next to the disk's
// own speed: a durable decision waits for an fsync, and fsyncs on one log do
// not overlap, so the fsync latency bounds unpipelined throughput. Every run
// therefore measures it first, in the directory that holds the data dirs, as
// Redcell's log does it: append a 4 KiB block to one file and fdatasync,
// fsyncSamples times (after a few unmeasured warm-up rounds).

const (
	fsyncSamples = 300
	fsyncWarmup  = 20
	fsyncBlock   = 4 << 10
)

// fsyncSpeed is the measured latency of one append + fdatasync.
type fsyncSpeed struct {
	P50, P99 time.Duration
}

func (f fsyncSpeed) String() string {
	if f.P50 == 0 {
		return "unknown"
	}
	return fmt.Sprintf("p50 %.3f ms, p99 %.3f ms (4 KiB append + fdatasync)", ms(f.P50), ms(f.P99))
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// measureFsync appends and syncs in a temporary file under dir, removes it,
// and returns the latency percentiles.
func measureFsync(dir string) (fsyncSpeed, error) {
	f, err := os.CreateTemp(dir, "fsync-probe-*")
	if err != nil {
		return fsyncSpeed{}, fmt.Errorf("fsync probe: %w", err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	block := make([]byte, fsyncBlock)
	lat := make([]time.Duration, 0, fsyncSamples)
	for i := 0; i < fsyncWarmup+fsyncSamples; i++ {
		start := time.Now()
		if _, err := f.Write(block); err != nil {
			return fsyncSpeed{}, fmt.Errorf("fsync probe %s: %w", filepath.Base(f.Name()), err)
		}
		if err := f.Sync(); err != nil {
			return fsyncSpeed{}, fmt.Errorf("fsync probe %s: %w", filepath.Base(f.Name()), err)
		}
		if i >= fsyncWarmup {
			lat = append(lat, time.Since(start))
		}
	}
	slices.Sort(lat)
	return fsyncSpeed{P50: lat[len(lat)/2], P99: lat[len(lat)*99/100]}, nil
}
