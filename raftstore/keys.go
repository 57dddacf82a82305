package raftstore

import (
	"encoding/binary"
	"fmt"
	"strings"
)

// The whole store is one Pebble key space. The first byte of every key names
// its kind, so each kind is one contiguous span that can be iterated, bounded
// and range-deleted on its own; every integer in a key is fixed-width
// big-endian so that Pebble's bytewise order is numeric order.
//
//	kind              key                                              value
//	log entry         0x01 | index(8)                                  logCodec v1
//	stable key        0x02 | raft's key bytes (any length)             raw bytes
//	snapshot chunk    0x03 | term(8) index(8) ms(8) | chunk seq(4)     chunk v1
//	snapshot meta     0x04 | term(8) index(8) ms(8)                    snapshot meta v1
//
// A kind's span is every key starting with its prefix byte, so the exclusive
// upper bound of a span is simply the next prefix byte, and a stable key can
// never sort into the log whatever bytes raft chooses for it.
const (
	prefixLog       byte = 0x01
	prefixStable    byte = 0x02
	prefixSnapChunk byte = 0x03
	prefixSnapMeta  byte = 0x04
)

const (
	logKeyLen       = 1 + 8
	snapIDLen       = 8 + 8 + 8 // term, index, creation ms
	snapMetaKeyLen  = 1 + snapIDLen
	snapChunkKeyLen = 1 + snapIDLen + 4
)

// logKey is the key of the log entry at index.
func logKey(index uint64) [logKeyLen]byte {
	var k [logKeyLen]byte
	k[0] = prefixLog
	binary.BigEndian.PutUint64(k[1:], index)
	return k
}

// putLogKey writes the key of the log entry at index into dst, which must be
// logKeyLen bytes long (it is Pebble batch memory in the append path).
func putLogKey(dst []byte, index uint64) {
	dst[0] = prefixLog
	binary.BigEndian.PutUint64(dst[1:], index)
}

// parseLogKey returns the index of a log key, or an error if k is not one.
func parseLogKey(k []byte) (uint64, error) {
	if len(k) != logKeyLen || k[0] != prefixLog {
		return 0, fmt.Errorf("raftstore: malformed log key %x", k)
	}
	return binary.BigEndian.Uint64(k[1:]), nil
}

// logSpanEnd is the exclusive end of the key span holding entries up to and
// including max. For max == MaxUint64 there is no index max+1, so the end is
// the first key after the whole log span.
func logSpanEnd(max uint64) []byte {
	if max == ^uint64(0) {
		return logSpanUpper
	}
	k := logKey(max + 1)
	return k[:]
}

var (
	logSpanLower = []byte{prefixLog}
	logSpanUpper = []byte{prefixLog + 1}

	snapMetaSpanLower  = []byte{prefixSnapMeta}
	snapMetaSpanUpper  = []byte{prefixSnapMeta + 1}
	snapChunkSpanLower = []byte{prefixSnapChunk}
	snapChunkSpanUpper = []byte{prefixSnapChunk + 1}
)

// stableKey is the key under which raft's stable-store key is kept. It
// allocates; stable keys are written a handful of times per term, never on
// the per-entry path.
func stableKey(key []byte) []byte {
	k := make([]byte, 1+len(key))
	k[0] = prefixStable
	copy(k[1:], key)
	return k
}

// snapshotID names one snapshot. Its fields, in this order, are also its
// sort order: the same order hashicorp's file store uses (term, index, then
// creation time), so iterating the metadata span backwards lists the newest
// snapshot first.
type snapshotID struct {
	Term, Index, MS uint64
}

// String is the raft-visible ID, formatted like the file store's
// "term-index-ms" directory names.
func (id snapshotID) String() string {
	return fmt.Sprintf("%d-%d-%d", id.Term, id.Index, id.MS)
}

// parseSnapshotID parses an ID made by String. It accepts only the canonical
// form (no signs, no leading zeros) so that one snapshot has exactly one name.
func parseSnapshotID(s string) (snapshotID, error) {
	var id snapshotID
	fields := [3]*uint64{&id.Term, &id.Index, &id.MS}
	rest := s
	for i, f := range fields {
		end := len(rest)
		if i < len(fields)-1 {
			end = strings.IndexByte(rest, '-')
			if end < 0 {
				return snapshotID{}, fmt.Errorf("raftstore: malformed snapshot id %q", s)
			}
		}
		n, ok := parseCanonicalUint(rest[:end])
		if !ok {
			return snapshotID{}, fmt.Errorf("raftstore: malformed snapshot id %q", s)
		}
		*f = n
		if end < len(rest) {
			rest = rest[end+1:]
		} else {
			rest = ""
		}
	}
	return id, nil
}

// parseCanonicalUint parses a decimal uint64 with no sign and no leading zero
// (except "0" itself).
func parseCanonicalUint(s string) (uint64, bool) {
	if s == "" || len(s) > 20 || (len(s) > 1 && s[0] == '0') {
		return 0, false
	}
	var n uint64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if n > (^uint64(0)-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	return n, true
}

func (id snapshotID) put(dst []byte) {
	binary.BigEndian.PutUint64(dst[0:], id.Term)
	binary.BigEndian.PutUint64(dst[8:], id.Index)
	binary.BigEndian.PutUint64(dst[16:], id.MS)
}

// snapMetaKey is the key of a snapshot's metadata: its presence is what makes
// a snapshot exist.
func snapMetaKey(id snapshotID) []byte {
	k := make([]byte, snapMetaKeyLen)
	k[0] = prefixSnapMeta
	id.put(k[1:])
	return k
}

// parseSnapMetaKey returns the snapshot ID of a metadata key.
func parseSnapMetaKey(k []byte) (snapshotID, error) {
	if len(k) != snapMetaKeyLen || k[0] != prefixSnapMeta {
		return snapshotID{}, fmt.Errorf("raftstore: malformed snapshot meta key %x", k)
	}
	return snapshotID{
		Term:  binary.BigEndian.Uint64(k[1:]),
		Index: binary.BigEndian.Uint64(k[9:]),
		MS:    binary.BigEndian.Uint64(k[17:]),
	}, nil
}

// snapChunkKey is the key of chunk seq of snapshot id.
func snapChunkKey(id snapshotID, seq uint32) []byte {
	k := make([]byte, snapChunkKeyLen)
	k[0] = prefixSnapChunk
	id.put(k[1:])
	binary.BigEndian.PutUint32(k[1+snapIDLen:], seq)
	return k
}

// snapChunkSpan is the key span [lower, upper) holding every chunk of id,
// used to delete a cancelled, orphaned or reaped snapshot with one range
// delete. lower is the 25-byte prefix shared by all chunk keys of id, upper
// its successor, so the span covers all 2^32 sequence numbers and nothing of
// any other snapshot.
func snapChunkSpan(id snapshotID) (lower, upper []byte) {
	lower = make([]byte, 1+snapIDLen)
	lower[0] = prefixSnapChunk
	id.put(lower[1:])
	upper = incrementKey(append([]byte(nil), lower...))
	return lower, upper
}

// parseSnapChunkKey returns the snapshot ID and sequence number of a chunk key.
func parseSnapChunkKey(k []byte) (snapshotID, uint32, error) {
	if len(k) != snapChunkKeyLen || k[0] != prefixSnapChunk {
		return snapshotID{}, 0, fmt.Errorf("raftstore: malformed snapshot chunk key %x", k)
	}
	id := snapshotID{
		Term:  binary.BigEndian.Uint64(k[1:]),
		Index: binary.BigEndian.Uint64(k[9:]),
		MS:    binary.BigEndian.Uint64(k[17:]),
	}
	return id, binary.BigEndian.Uint32(k[1+snapIDLen:]), nil
}

// incrementKey returns the smallest key greater than every key that has k as
// a prefix, modifying k in place. k must not be all 0xff bytes; every key we
// pass starts with a prefix byte below 0xff.
func incrementKey(k []byte) []byte {
	for i := len(k) - 1; i >= 0; i-- {
		if k[i] != 0xff {
			k[i]++
			return k[:i+1]
		}
	}
	return k
}
