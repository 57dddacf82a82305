package raftstore

import (
	"fmt"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// Zero-filled WAL files: every sync of the log an overwrite.
//
// An fdatasync of a file that grew since the last one must also make the new
// size durable, and on ext4 that is a journal commit: a second write and a
// longer wait. An fdatasync of blocks written before is the data and a cache
// flush, nothing else. Pebble knows this: it recycles old WAL files (renames
// one and writes over it from the start) instead of creating new ones, and
// its preallocation (fallocate) does not help, since writing into an
// allocated but never written extent changes metadata as well. But it can
// recycle only WALs that became obsolete since it opened, so a node's first
// three WALs after every start — the first ~12 MiB of log; 360k decisions
// at -c 50 -P 1 on a fresh node did not get past the fourth — are new
// files, and every append to them pays the journal.
//
// Measured on the 2-core VM (ext4 on virtio, fsync p50 0.21–0.38 ms), a node
// just started against one whose WALs were already recycled, same commit:
//
//   - a 4 KiB write + fdatasync loop: appending 341–469 µs and 97–113 µs of
//     CPU per sync (3.0 writes to the device each, counted in
//     /sys/block/vda/stat), overwriting 241–250 µs and 77–78 µs (2.06);
//   - a lone client (redis-benchmark -c 1 -P 1): p50 0.279–0.335 against
//     0.215 ms, 130–170 against 94–98 µs of CPU per decision;
//   - -c 50 -P 1: 23.0–23.6k against 26.8–28.6k decisions/s.
//
// So a new WAL file is written with zeros up to Pebble's preallocation size
// and synced before Pebble gets it: from its first append on, the log is
// written over blocks that exist, as a recycled one is. A node pays it for
// the three WALs Pebble creates before it can recycle: 4.4 MiB written and
// one fsync each, 5.8–7.7 ms on this VM (timed around prefillWAL), at
// startup and at the first two memtable rotations. The disk space is the
// same that the preallocation reserves.
//
// Zeros are what Pebble's reader already meets at the end of a preallocated
// or recycled WAL: a zeroed chunk, a read-ahead that finds no chunk of this
// log with a sync offset past it, and the end of the log (a torn tail in
// the newest WAL, tolerated; an older WAL ends earlier, at the EOF trailer
// Pebble writes when it closes it). walcheck.go reads it the same way.
// TestWALPrefill_* and the kill-and-reopen tests cover it on a real disk.

// walPrefillSize is how much of a new WAL is zero-filled: Pebble's own
// preallocation size (110 % of a memtable, DB.walPreallocateSize), which a
// WAL outgrows rarely and only by a little before it is rotated.
const walPrefillSize = memTableSize + memTableSize/10

// walPrefillChunk is the size of one zero write.
const walPrefillChunk = 256 << 10

// prefillWAL writes zeros over the first size bytes of f, a WAL file Pebble
// just created (empty), and syncs data and metadata. Positional writes leave
// the file offset at 0, where Pebble starts appending.
func prefillWAL(f vfs.File, size int) error {
	zeros := make([]byte, min(walPrefillChunk, size))
	for off := 0; off < size; off += len(zeros) {
		n := min(len(zeros), size-off)
		if _, err := f.WriteAt(zeros[:n], int64(off)); err != nil {
			return fmt.Errorf("raftstore: zero-filling a new WAL at offset %d: %w", off, err)
		}
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("raftstore: syncing a zero-filled WAL: %w", err)
	}
	return nil
}
