package raftstore

import (
	"bytes"
	"slices"
	"testing"
)

func TestKeys_LogKeysSortByIndex(t *testing.T) {
	idx := []uint64{0, 1, 255, 256, 1 << 32, 1<<64 - 2, 1<<64 - 1}
	for i := 1; i < len(idx); i++ {
		a, b := logKey(idx[i-1]), logKey(idx[i])
		if bytes.Compare(a[:], b[:]) >= 0 {
			t.Fatalf("logKey(%d) does not sort before logKey(%d)", idx[i-1], idx[i])
		}
		if got, err := parseLogKey(b[:]); err != nil || got != idx[i] {
			t.Fatalf("parseLogKey(logKey(%d)) = %d, %v", idx[i], got, err)
		}
	}
	if !bytes.Equal(logSpanEnd(^uint64(0)), logSpanUpper) {
		t.Fatal("span end of the largest index is not the end of the log span")
	}
}

func TestKeys_SnapshotIDs(t *testing.T) {
	good := []snapshotID{{0, 0, 0}, {1, 2, 3}, {^uint64(0), ^uint64(0), ^uint64(0)}}
	for _, id := range good {
		got, err := parseSnapshotID(id.String())
		if err != nil || got != id {
			t.Fatalf("parseSnapshotID(%q) = %v, %v", id.String(), got, err)
		}
		mk, err := parseSnapMetaKey(snapMetaKey(id))
		if err != nil || mk != id {
			t.Fatalf("meta key round trip of %v = %v, %v", id, mk, err)
		}
		ck, seq, err := parseSnapChunkKey(snapChunkKey(id, 7))
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
	ids := []snapshotID{{2, 5, 1}, {1, 100, 9}, {2, 3, 5}, {2, 5, 0}, {1, 1 << 40, 0}}
	slices.SortFunc(ids, func(a, b snapshotID) int { return bytes.Compare(snapMetaKey(a), snapMetaKey(b)) })
	want := []snapshotID{{1, 100, 9}, {1, 1 << 40, 0}, {2, 3, 5}, {2, 5, 0}, {2, 5, 1}}
	if !slices.Equal(ids, want) {
		t.Fatalf("meta key order = %v, want %v", ids, want)
	}
	id := snapshotID{1, 2, 3}
	lower, upper := snapChunkSpan(id)
	for _, seq := range []uint32{0, 1, ^uint32(0)} {
		k := snapChunkKey(id, seq)
		if bytes.Compare(k, lower) < 0 || bytes.Compare(k, upper) >= 0 {
			t.Fatalf("chunk %d of %v outside its span", seq, id)
		}
	}
	for _, other := range []snapshotID{{1, 2, 2}, {1, 2, 4}, {1, 3, 0}} {
		k := snapChunkKey(other, 0)
		if bytes.Compare(k, lower) >= 0 && bytes.Compare(k, upper) < 0 {
			t.Fatalf("chunk of %v inside the span of %v", other, id)
		}
	}
}
