package raftstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Corruption in the middle of the WAL.
//
// When Pebble replays its WAL and meets a chunk that does not check out, it
// looks ahead for proof that the chunk had been synced (a later block whose
// chunks record a sync offset beyond it) and, finding none, treats the rest
// as the torn tail of a write that never completed: the log simply ends
// there. Within the last 32 KiB block it does not look at all. So four
// flipped bytes in the middle of a small WAL silently drop every entry after
// them — entries that were fsynced and acknowledged. A replica that loses
// acknowledged log entries can break Raft's safety, and a single node loses
// decisions it answered.
//
// checkWALs scans every WAL before Pebble opens it: it finds the first chunk
// that does not check out and then looks, at every later offset, for a valid
// chunk of the same log (right log number and checksum) whose recorded sync
// offset lies beyond that point. Such a chunk proves the damaged one had been
// synced before it was written: that is corruption, and the store refuses to
// open. A torn tail has no such chunk (whatever follows it was never
// synced), and the store opens as before, losing only the unacknowledged
// write. Chunks in formats without a sync offset prove nothing and are not
// counted.
//
// The format is Pebble's record format (pebble/record): 32 KiB blocks of
// chunks, each with a header of checksum (4 bytes, masked CRC-32C over
// the rest of the header and the payload), length (2), encoding (1), and for
// the WALSync encodings the log number (4) and the sync offset (8). The
// store pins its format major version (FormatTableFormatV6 writes WALSync
// chunks), so the format cannot change under it without a code change here.

const (
	walBlockSize         = 32 << 10
	walLegacyHeader      = 7
	walRecyclableHeader  = walLegacyHeader + 4
	walSyncHeader        = walRecyclableHeader + 8
	walSyncFirstEncoding = 9  // walSyncFullChunkEncoding
	walSyncLastEncoding  = 12 // walSyncLastChunkEncoding
	walMaxEncoding       = 12
)

// ErrCorruptWAL marks a WAL damaged in data that had been synced.
var ErrCorruptWAL = errors.New("raftstore: the write-ahead log is corrupt in data that had been synced")

var walCRCTable = crc32.MakeTable(crc32.Castagnoli)

// walChecksum is Pebble's masked CRC-32C.
func walChecksum(b []byte) uint32 {
	c := crc32.Update(0, walCRCTable, b)
	return (c>>15 | c<<17) + 0xa282ead8
}

// checkWALs checks every *.log file of a Pebble directory (see above).
func checkWALs(dir string) error {
	names, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil {
		return err
	}
	sort.Strings(names)
	for _, name := range names {
		num, err := strconv.ParseUint(strings.TrimSuffix(filepath.Base(name), ".log"), 10, 32)
		if err != nil {
			continue // not a WAL of Pebble's naming
		}
		data, err := os.ReadFile(name)
		if err != nil {
			return fmt.Errorf("raftstore: reading %s: %w", name, err)
		}
		if bad, proof, ok := findSyncedCorruption(data, uint32(num)); ok {
			return fmt.Errorf("%w: %s is damaged at byte %d, yet a chunk at byte %d records that the log had been synced past it; "+
				"the entries after the damage were acknowledged and would be lost. Refusing to start: restore the data dir from a backup, "+
				"or in a cluster remove it and let the node rejoin and catch up by snapshot", ErrCorruptWAL, name, bad, proof)
		}
	}
	return nil
}

// findSyncedCorruption returns the offset of the first chunk of log logNum
// in data that does not check out and the offset of a later valid chunk
// whose sync offset proves the damaged chunk had been synced; ok is false
// when the log is intact or ends in a torn tail.
func findSyncedCorruption(data []byte, logNum uint32) (bad, proof int64, ok bool) {
	bad = firstBadChunk(data, logNum)
	if bad < 0 {
		return 0, 0, false
	}
	for q := bad + 1; q+walSyncHeader <= int64(len(data)); q++ {
		if sync, valid := syncChunkAt(data, q, logNum); valid && sync > uint64(bad) {
			return bad, q, true
		}
	}
	return 0, 0, false
}

// firstBadChunk walks the chunks of data as Pebble's reader does and
// returns the offset of the first one that does not check out, or -1 when
// every chunk up to the end (or up to zeroed, never-written space) is valid.
func firstBadChunk(data []byte, logNum uint32) int64 {
	for block := int64(0); block < int64(len(data)); block += walBlockSize {
		end := min(block+walBlockSize, int64(len(data)))
		off := block
		for off+walLegacyHeader <= end {
			length := int64(binary.LittleEndian.Uint16(data[off+4 : off+6]))
			enc := data[off+6]
			if enc == 0 {
				if allZero(data[off:end]) {
					break // the rest of the block was never written (padding or preallocated)
				}
				return off
			}
			if enc > walMaxEncoding {
				return off
			}
			header := int64(walLegacyHeader)
			switch {
			case enc >= walSyncFirstEncoding:
				header = walSyncHeader
			case enc >= 5:
				header = walRecyclableHeader
			}
			if off+header+length > end {
				return off
			}
			if header > walLegacyHeader && binary.LittleEndian.Uint32(data[off+7:off+11]) != logNum {
				// A chunk of an older log in a recycled file: this log
				// ends here, as Pebble's reader treats it.
				if allZeroOrStale(data, off, end, logNum) {
					break
				}
				return off
			}
			if walChecksum(data[off+6:off+header+length]) != binary.LittleEndian.Uint32(data[off:off+4]) {
				return off
			}
			off += header + length
		}
		if end-off < walLegacyHeader && end-off > 0 && !allZero(data[off:end]) {
			return off // trailing bytes too short for a header, not padding
		}
	}
	return -1
}

// syncChunkAt reports whether a valid WALSync chunk of logNum starts at q,
// and its sync offset.
func syncChunkAt(data []byte, q int64, logNum uint32) (syncOffset uint64, ok bool) {
	enc := data[q+6]
	if enc < walSyncFirstEncoding || enc > walSyncLastEncoding {
		return 0, false
	}
	length := int64(binary.LittleEndian.Uint16(data[q+4 : q+6]))
	blockEnd := (q/walBlockSize + 1) * walBlockSize
	if q+walSyncHeader+length > min(blockEnd, int64(len(data))) {
		return 0, false
	}
	if binary.LittleEndian.Uint32(data[q+7:q+11]) != logNum {
		return 0, false
	}
	if walChecksum(data[q+6:q+walSyncHeader+length]) != binary.LittleEndian.Uint32(data[q:q+4]) {
		return 0, false
	}
	return binary.LittleEndian.Uint64(data[q+11 : q+19]), true
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// allZeroOrStale: after off, the block holds nothing that claims to belong
// to logNum (only zeroes or other logs' chunks): the log ended at off.
func allZeroOrStale(data []byte, off, end int64, logNum uint32) bool {
	for q := off; q+walSyncHeader <= end; q++ {
		if _, ok := syncChunkAt(data, q, logNum); ok {
			return false
		}
	}
	return true
}
