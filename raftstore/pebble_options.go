package raftstore

import (
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/redcell/redcell/internal/lograte"
)

// Pebble tuning for a Raft log: a stream of small synced appends that are read
// back soon (followers, apply) and deleted in bulk once a snapshot covers
// them, plus a few stable keys and the occasional multi-megabyte snapshot.
// The numbers are for one node whose whole budget is ~100 bytes per limiter
// key (100 MB at a million keys), so Pebble gets about 12 MiB of it.
const (
	// memTableSize: writes at the expected peak (a few thousand appends/s of
	// a few KiB, ~20 MB/s) fill 4 MiB in ~0.2 s, so a flush every fraction
	// of a second; flushing 4 MiB takes milliseconds, so the second memtable
	// never fills while the first is written out. Larger memtables would let
	// more entries die (be range-deleted) before reaching an sstable, but the
	// snapshot cadence is thousands of entries, far beyond what would fit in
	// any memtable we can afford anyway. Pebble's default is also 4 MiB.
	memTableSize = 4 << 20
	// memTableStopWritesThreshold bounds queued memtables to 2 (8 MiB):
	// the one being filled and the one being flushed. Pebble's default.
	memTableStopWritesThreshold = 2
	// blockCacheSize: reads are GetLog of recent entries (mostly still in a
	// memtable) and sequential snapshot reads, which gain nothing from a
	// cache. 4 MiB keeps index blocks and the hot tail of the log resident;
	// Pebble's default is 8 MiB.
	blockCacheSize = 4 << 20
	// maxOpenFiles: the log is compacted behind every snapshot, so the LSM
	// holds few sstables; 256 descriptors is plenty and bounds the table
	// cache's memory.
	maxOpenFiles = 256
)

// pebbleOptions returns the Pebble options for one store. What is set here and
// why:
//
//   - WAL on (Pebble's default, never disabled): the WAL is what an fsync
//     makes durable; every append is one synced WAL record.
//   - WALMinSyncInterval 0: no artificial delay before an fsync. Group
//     commit happens above us (the proposer packs many requests into one
//     entry), so a delay here would only add latency.
//   - WALBytesPerSync 0: every append syncs anyway.
//   - No compression: log entries live from append to the next snapshot, and
//     snapshot chunks are the FSM's already compact binary; compressing them
//     on every flush and compaction costs CPU on a 2-core node for space we
//     give back within minutes (measured: see DESIGN.md).
//   - FormatMajorVersion pinned to FormatTableFormatV6, which includes
//     FormatWALSyncChunks: the WAL records how far it was synced, so replay
//     can tell a torn tail of unsynced data (ignored) from corruption of
//     synced data (an error), rather than silently truncating the log at the
//     first bad record.
//   - Default compaction concurrency (1): a second compaction would compete
//     with the request path for one of two cores.
func pebbleOptions(opts Options, logger *slog.Logger, ws *walSync) *pebble.Options {
	po := &pebble.Options{
		CacheSize:                   blockCacheSize,
		MemTableSize:                memTableSize,
		MemTableStopWritesThreshold: memTableStopWritesThreshold,
		MaxOpenFiles:                maxOpenFiles,
		FormatMajorVersion:          pebble.FormatTableFormatV6,
		Logger:                      &pebbleLogger{logger: logger, onFatal: opts.OnFatal},
		EventListener:               pebbleEventListener(logger),
		FS:                          opts.fs,
	}
	if po.FS == nil {
		// The real disk, with direct WAL syncs (walsync.go) under Pebble's
		// usual disk-health checks.
		po.FS = walSyncFS{FS: vfs.Default, ws: ws}
		po.WithFSDefaults()
	}
	po.ApplyCompressionSettings(func() pebble.DBCompressionSettings {
		return pebble.DBCompressionNone
	})
	return po
}

// pebbleEventListener reports the events an operator needs to see (write
// stalls, slow disks, background errors) and ignores routine ones (every
// flush and compaction), which would drown the log. Background errors and
// slow-disk reports repeat for as long as their cause lasts (Pebble retries
// a flush that found no space hundreds of times a second): each is logged
// at most once per logEvery, with how many were left out.
func pebbleEventListener(logger *slog.Logger) *pebble.EventListener {
	lines := lograte.New(logEvery) // keyed by event
	return &pebble.EventListener{
		BackgroundError: func(err error) {
			if n, ok := lines.Allow("background error"); ok {
				logger.Error("pebble background error", "error", err, "suppressed_since_last", n)
			}
		},
		WriteStallBegin: func(info pebble.WriteStallBeginInfo) {
			logger.Warn("pebble write stall", "reason", info.Reason)
		},
		WriteStallEnd: func() {
			logger.Info("pebble write stall ended")
		},
		DiskSlow: func(info pebble.DiskSlowInfo) {
			if n, ok := lines.Allow("disk slow"); ok {
				logger.Warn("pebble disk slow", "path", info.Path, "op", info.OpType.String(), "duration", info.Duration, "suppressed_since_last", n)
			}
		},
	}
}

// pebbleLogger adapts slog to pebble.Logger. Pebble calls it from its own
// background goroutines.
type pebbleLogger struct {
	logger    *slog.Logger
	onFatal   func(error)
	fatalOnce sync.Once
}

// Infof logs Pebble's informational lines at debug: on every start they
// list the WALs it found and replayed ("Found 0 WALs", "[JOB 1] WAL …"),
// which say nothing an operator acts on. What does (a slow disk, a
// background error) reaches the log through the event listener above and
// Errorf.
func (l *pebbleLogger) Infof(format string, args ...any) {
	l.logger.Debug(fmt.Sprintf(format, args...), "source", "pebble")
}

func (l *pebbleLogger) Errorf(format string, args ...any) {
	l.logger.Error(fmt.Sprintf(format, args...), "source", "pebble")
}

// Fatalf is called by Pebble when an invariant of its on-disk state is broken
// (for example a MANIFEST it cannot write) and it cannot go on; its contract
// is not to return (Pebble's default logger exits the process). Continuing
// would risk acknowledging writes that are not stored, so we log, tell the
// owner (Options.OnFatal), which stops the process, and never return; with
// no owner to tell, we panic. Never on bad input, only on a storage engine
// that has lost its footing (a failed WAL write or fsync among them).
func (l *pebbleLogger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	l.logger.Error(msg, "source", "pebble", "fatal", true)
	if l.onFatal == nil {
		panic("raftstore: pebble fatal error: " + msg)
	}
	l.fatalOnce.Do(func() { l.onFatal(fmt.Errorf("raftstore: the storage engine cannot go on: %s", msg)) })
	select {} // Pebble's contract: Fatalf does not return
}

// logEvery is how often a repeating Pebble event is logged at most.
const logEvery = 10 * time.Second
