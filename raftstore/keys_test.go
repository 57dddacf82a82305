package raftstore

import (
	"bytes"
	"slices"
	"testing"

	"github.com/redcell/redcell/slots"
)

func TestKeys_LogKeysSortByIndex(t *testing.T) {
	ks := newKeyspace(7)
	idx := []uint64{0, 1, 255, 256, 1 << 32, 1<<64 - 2, 1<<64 - 1}
	for i := 1; i < len(idx); i++ {
		a, b := ks.logKey(idx[i-1]), ks.logKey(idx[i])
		if bytes.Compare(a[:], b[:]) >= 0 {
			t.Fatalf("ks.logKey(%d) does not sort before ks.logKey(%d)", idx[i-1], idx[i])
		}
		if got, err := ks.parseLogKey(b[:]); err != nil || got != idx[i] {
			t.Fatalf("ks.parseLogKey(ks.logKey(%d)) = %d, %v", idx[i], got, err)
		}
	}
	if !bytes.Equal(ks.logSpanEnd(^uint64(0)), ks.logUpper) {
		t.Fatal("span end of the largest index is not the end of the log span")
	}
}

func TestKeys_SnapshotIDs(t *testing.T) {
	ks := newKeyspace(1<<32 - 1)
	good := []snapshotID{{0, 0, 0}, {1, 2, 3}, {^uint64(0), ^uint64(0), ^uint64(0)}}
	for _, id := range good {
		got, err := parseSnapshotID(id.String())
		if err != nil || got != id {
			t.Fatalf("parseSnapshotID(%q) = %v, %v", id.String(), got, err)
		}
		mk, err := ks.parseSnapMetaKey(ks.snapMetaKey(id))
		if err != nil || mk != id {
			t.Fatalf("meta key round trip of %v = %v, %v", id, mk, err)
		}
		ck, seq, err := ks.parseSnapChunkKey(ks.snapChunkKey(id, 7))
		if err != nil || ck != id || seq != 7 {
			t.Fatalf("chunk key round trip of %v = %v, %d, %v", id, ck, seq, err)
		}
	}
	bad := []string{"", "1-2", "1-2-3-4", "01-2-3", "1--3", "-1-2-3", "+1-2-3", "1-2-x", "18446744073709551616-0-0", "1-2-3 "}
	for _, s := range bad {
		if _, err := parseSnapshotID(s); err == nil {
			t.Errorf("parseSnapshotID(%q) accepted a malformed id", s)
		}
	}
}

// Metadata keys sort like hashicorp's file store orders snapshots: by term,
// then index, then creation time; a chunk span holds exactly one snapshot.
func TestKeys_SnapshotOrderAndChunkSpans(t *testing.T) {
	ks := newKeyspace(0)
	ids := []snapshotID{{2, 5, 1}, {1, 100, 9}, {2, 3, 5}, {2, 5, 0}, {1, 1 << 40, 0}}
	slices.SortFunc(ids, func(a, b snapshotID) int { return bytes.Compare(ks.snapMetaKey(a), ks.snapMetaKey(b)) })
	want := []snapshotID{{1, 100, 9}, {1, 1 << 40, 0}, {2, 3, 5}, {2, 5, 0}, {2, 5, 1}}
	if !slices.Equal(ids, want) {
		t.Fatalf("meta key order = %v, want %v", ids, want)
	}
	id := snapshotID{1, 2, 3}
	lower, upper := ks.snapChunkSpan(id)
	for _, seq := range []uint32{0, 1, ^uint32(0)} {
		k := ks.snapChunkKey(id, seq)
		if bytes.Compare(k, lower) < 0 || bytes.Compare(k, upper) >= 0 {
			t.Fatalf("chunk %d of %v outside its span", seq, id)
		}
	}
	for _, other := range []snapshotID{{1, 2, 2}, {1, 2, 4}, {1, 3, 0}} {
		k := ks.snapChunkKey(other, 0)
		if bytes.Compare(k, lower) >= 0 && bytes.Compare(k, upper) < 0 {
			t.Fatalf("chunk of %v inside the span of %v", other, id)
		}
	}
}

// Every key of a group lies in its span and in no other group's, whatever
// its kind; a key of one group does not parse as another's; the node span
// and the first layout's spans (format 1) lie outside every group's.
func TestKeys_GroupSpansAreDisjoint(t *testing.T) {
	groups := []slots.GroupID{0, 1, 255, 256, 1<<32 - 1}
	id := snapshotID{1, 2, 3}
	for _, g := range groups {
		ks := newKeyspace(g)
		lk := ks.logKey(^uint64(0))
		keys := [][]byte{lk[:], ks.stableKey([]byte{0xff, 0xff}), ks.snapMetaKey(id), ks.snapChunkKey(id, ^uint32(0)), ks.logUpper, ks.snapMetaLower}
		for _, other := range groups {
			ko := newKeyspace(other)
			for _, k := range keys {
				in := bytes.Compare(k, ko.groupLower) >= 0 && bytes.Compare(k, ko.groupUpper) < 0
				if in != (g == other) {
					t.Fatalf("key %x of group %d: in the span of group %d = %v", k, g, other, in)
				}
			}
			if _, err := ko.parseLogKey(lk[:]); (err == nil) != (g == other) {
				t.Fatalf("log key of group %d parsed as group %d's: %v", g, other, err)
			}
		}
		for _, k := range [][]byte{formatKey, nodeRecordKey("node-id"), legacySpanLower, {kindSnapMeta, 0xff}} {
			if bytes.Compare(k, ks.groupLower) >= 0 && bytes.Compare(k, ks.groupUpper) < 0 {
				t.Fatalf("key %x is inside group %d's span", k, g)
			}
		}
	}
	// A key's part after the group prefix is the first layout's key.
	ks := newKeyspace(0)
	lk := ks.logKey(5)
	if want := []byte{kindLog, 0, 0, 0, 0, 0, 0, 0, 5}; !bytes.Equal(keyInGroup(lk[:]), want) {
		t.Fatalf("log key 5 within its group = %x, want %x", keyInGroup(lk[:]), want)
	}
}
