package raftstore

import (
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/redcell/redcell/slots"
)

// The whole database is one Pebble key space shared by the node's Raft
// groups. The first byte of a key says whose it is: the node's (0x00) or a
// group's (0x10, followed by the group's ID). Within a group's span a kind
// byte names what the key holds, so each kind of each group is one
// contiguous span that can be iterated, bounded and range-deleted on its
// own. Every integer in a key is fixed-width big-endian so that Pebble's
// bytewise order is numeric order.
//
//	span    kind              key                                                    value
//	node    format marker     0x00 0x01                                              format version (1 byte)
//	node    node record       0x00 0x02 | name                                       raw bytes
//	group   log entry         0x10 | group(4) | 0x01 | index(8)                      logCodec v1
//	group   stable key        0x10 | group(4) | 0x02 | raft's key bytes (any length) raw bytes
//	group   snapshot chunk    0x10 | group(4) | 0x03 | term(8) index(8) ms(8) | seq(4) chunk v1
//	group   snapshot meta     0x10 | group(4) | 0x04 | term(8) index(8) ms(8)        snapshot meta v1
//
// A kind's span is every key starting with its group prefix and kind byte,
// so the exclusive upper bound of a span is the same prefix with the next
// kind byte, and a stable key can never sort into the log whatever bytes
// raft chooses for it. The group ID is 4 bytes: a node runs a handful of
// groups, and the 5-byte prefix costs 5 bytes per log entry.
//
// The part of a key after the group prefix (kind onward) is exactly the key
// of the first layout, which had no group prefix (format 1, migrate.go): a
// data dir of that layout becomes group 0 by prefixing every key, values
// unchanged. It is also what a snapshot chunk's checksum covers
// (keyInGroup), so the migration copies chunks as they are.
const (
	spanNode  byte = 0x00
	spanGroup byte = 0x10

	kindFormat     byte = 0x01 // in the node span
	kindNodeRecord byte = 0x02 // in the node span

	kindLog       byte = 0x01
	kindStable    byte = 0x02
	kindSnapChunk byte = 0x03
	kindSnapMeta  byte = 0x04
)

const (
	groupPrefixLen  = 1 + 4
	logKeyLen       = groupPrefixLen + 1 + 8
	snapIDLen       = 8 + 8 + 8 // term, index, creation ms
	snapMetaKeyLen  = groupPrefixLen + 1 + snapIDLen
	snapChunkKeyLen = groupPrefixLen + 1 + snapIDLen + 4
)

var (
	formatKey = []byte{spanNode, kindFormat}

	// The spans of the first layout (format 1): every kind's prefix byte
	// from the log's to the snapshot metadata's.
	legacySpanLower = []byte{kindLog}
	legacySpanUpper = []byte{kindSnapMeta + 1}
)

// nodeRecordKey is the key of the node-level record name.
func nodeRecordKey(name string) []byte {
	k := make([]byte, 2+len(name))
	k[0], k[1] = spanNode, kindNodeRecord
	copy(k[2:], name)
	return k
}

// keyspace makes and parses the keys of one group. Its spans are computed
// once, so bounding an iterator or a range delete allocates nothing.
type keyspace struct {
	group  slots.GroupID
	prefix [groupPrefixLen]byte

	groupLower, groupUpper         []byte // the group's whole span
	logLower, logUpper             []byte
	snapMetaLower, snapMetaUpper   []byte
	snapChunkLower, snapChunkUpper []byte
}

func newKeyspace(g slots.GroupID) keyspace {
	ks := keyspace{group: g}
	ks.prefix[0] = spanGroup
	binary.BigEndian.PutUint32(ks.prefix[1:], uint32(g))
	kind := func(b byte) []byte { return append(ks.prefix[:len(ks.prefix):len(ks.prefix)], b) }
	ks.groupLower = append([]byte(nil), ks.prefix[:]...)
	ks.groupUpper = incrementKey(append([]byte(nil), ks.prefix[:]...))
	ks.logLower, ks.logUpper = kind(kindLog), kind(kindLog+1)
	ks.snapMetaLower, ks.snapMetaUpper = kind(kindSnapMeta), kind(kindSnapMeta+1)
	ks.snapChunkLower, ks.snapChunkUpper = kind(kindSnapChunk), kind(kindSnapChunk+1)
	return ks
}

// hasPrefix reports whether k is one of this group's keys of kind.
func (ks *keyspace) hasPrefix(k []byte, kind byte) bool {
	return len(k) > groupPrefixLen && [groupPrefixLen]byte(k[:groupPrefixLen]) == ks.prefix && k[groupPrefixLen] == kind
}

// keyInGroup is the part of a group's key after the group prefix: what a
// snapshot chunk's checksum covers.
func keyInGroup(k []byte) []byte { return k[groupPrefixLen:] }

// logKey is the key of the log entry at index.
func (ks *keyspace) logKey(index uint64) [logKeyLen]byte {
	var k [logKeyLen]byte
	ks.putLogKey(k[:], index)
	return k
}

// putLogKey writes the key of the log entry at index into dst, which must be
// logKeyLen bytes long (it is Pebble batch memory in the append path).
func (ks *keyspace) putLogKey(dst []byte, index uint64) {
	copy(dst, ks.prefix[:])
	dst[groupPrefixLen] = kindLog
	binary.BigEndian.PutUint64(dst[groupPrefixLen+1:], index)
}

// parseLogKey returns the index of a log key, or an error if k is not one
// of this group's.
func (ks *keyspace) parseLogKey(k []byte) (uint64, error) {
	if len(k) != logKeyLen || !ks.hasPrefix(k, kindLog) {
		return 0, fmt.Errorf("raftstore: malformed log key %x", k)
	}
	return binary.BigEndian.Uint64(k[groupPrefixLen+1:]), nil
}

// logSpanEnd is the exclusive end of the key span holding entries up to and
// including max. For max == MaxUint64 there is no index max+1, so the end is
// the first key after the whole log span.
func (ks *keyspace) logSpanEnd(max uint64) []byte {
	if max == ^uint64(0) {
		return ks.logUpper
	}
	k := ks.logKey(max + 1)
	return k[:]
}

// stableKey is the key under which raft's stable-store key is kept. It
// allocates; stable keys are written a handful of times per term, never on
// the per-entry path.
func (ks *keyspace) stableKey(key []byte) []byte {
	k := make([]byte, groupPrefixLen+1+len(key))
	copy(k, ks.prefix[:])
	k[groupPrefixLen] = kindStable
	copy(k[groupPrefixLen+1:], key)
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

func getSnapshotID(src []byte) snapshotID {
	return snapshotID{
		Term:  binary.BigEndian.Uint64(src[0:]),
		Index: binary.BigEndian.Uint64(src[8:]),
		MS:    binary.BigEndian.Uint64(src[16:]),
	}
}

// snapMetaKey is the key of a snapshot's metadata: its presence is what makes
// a snapshot exist.
func (ks *keyspace) snapMetaKey(id snapshotID) []byte {
	k := make([]byte, snapMetaKeyLen)
	copy(k, ks.prefix[:])
	k[groupPrefixLen] = kindSnapMeta
	id.put(k[groupPrefixLen+1:])
	return k
}

// parseSnapMetaKey returns the snapshot ID of a metadata key.
func (ks *keyspace) parseSnapMetaKey(k []byte) (snapshotID, error) {
	if len(k) != snapMetaKeyLen || !ks.hasPrefix(k, kindSnapMeta) {
		return snapshotID{}, fmt.Errorf("raftstore: malformed snapshot meta key %x", k)
	}
	return getSnapshotID(k[groupPrefixLen+1:]), nil
}

// snapChunkKey is the key of chunk seq of snapshot id.
func (ks *keyspace) snapChunkKey(id snapshotID, seq uint32) []byte {
	k := make([]byte, snapChunkKeyLen)
	copy(k, ks.prefix[:])
	k[groupPrefixLen] = kindSnapChunk
	id.put(k[groupPrefixLen+1:])
	binary.BigEndian.PutUint32(k[groupPrefixLen+1+snapIDLen:], seq)
	return k
}

// snapChunkSpan is the key span [lower, upper) holding every chunk of id,
// used to delete a cancelled, orphaned or reaped snapshot with one range
// delete. lower is the prefix shared by all chunk keys of id, upper its
// successor, so the span covers all 2^32 sequence numbers and nothing of any
// other snapshot.
func (ks *keyspace) snapChunkSpan(id snapshotID) (lower, upper []byte) {
	lower = make([]byte, groupPrefixLen+1+snapIDLen)
	copy(lower, ks.prefix[:])
	lower[groupPrefixLen] = kindSnapChunk
	id.put(lower[groupPrefixLen+1:])
	upper = incrementKey(append([]byte(nil), lower...))
	return lower, upper
}

// parseSnapChunkKey returns the snapshot ID and sequence number of a chunk key.
func (ks *keyspace) parseSnapChunkKey(k []byte) (snapshotID, uint32, error) {
	if len(k) != snapChunkKeyLen || !ks.hasPrefix(k, kindSnapChunk) {
		return snapshotID{}, 0, fmt.Errorf("raftstore: malformed snapshot chunk key %x", k)
	}
	return getSnapshotID(k[groupPrefixLen+1:]), binary.BigEndian.Uint32(k[groupPrefixLen+1+snapIDLen:]), nil
}

// incrementKey returns the smallest key greater than every key that has k as
// a prefix, modifying k in place. k must not be all 0xff bytes; every key we
// pass starts with a span byte below 0xff.
func incrementKey(k []byte) []byte {
	for i := len(k) - 1; i >= 0; i-- {
		if k[i] != 0xff {
			k[i]++
			return k[:i+1]
		}
	}
	return k
}
