package fsm

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/redcell/redcell/request"
)

// The feature level is replicated state: raised by the log, kept in
// snapshots. These tests run in every build; nextlevel_test.go (tag
// redcell_nextlevel) covers a code above the base level.

const t0Level = int64(1_700_000_000_000_000_000)

func setString(key, val string) request.Request {
	r := request.Request{Code: request.Set, Key: []byte(key), Keys: [][]byte{[]byte(val)}}
	r.SetArgs(0, 0, int64(request.ErrSetExpireTime))
	return r
}

// TestSetFeatureLevelAtOrBelowTheActiveChangesNothing: a raise to the
// active level (two leaders may both propose one) answers OK and leaves
// the state, and so the snapshot (still version 5), as it was.
func TestSetFeatureLevelAtOrBelowTheActiveChangesNothing(t *testing.T) {
	f := quietFSM(4)
	if got := f.FeatureLevel(); got != request.BaseFeatureLevel {
		t.Fatalf("a new state machine is at level %d, want %d", got, request.BaseFeatureLevel)
	}
	applyOne(t, f, commandLog(1, encodeEntry(t0Level, []request.Request{setString("k", "v")})))
	before := snapshotBytes(t, f)
	res := applyOne(t, f, commandLog(2, encodeEntry(t0Level, []request.Request{request.NewSetFeatureLevel(request.BaseFeatureLevel)})))
	if res[0].Kind != request.KindOK || f.FeatureLevel() != request.BaseFeatureLevel {
		t.Fatalf("SetFeatureLevel to the base: %+v, level %d", res[0], f.FeatureLevel())
	}
	after := snapshotBytes(t, f)
	if !bytes.Equal(before, after) || after[4] != snapshotVersion {
		t.Errorf("a raise to the active level changed the snapshot (version %d)", after[4])
	}
	// Level 0 is no level: refused as invalid on every replica alike.
	bad := request.Request{Code: request.SetFeatureLevel}
	bad.SetArgs(0)
	if res := applyOne(t, f, commandLog(3, encodeEntry(t0Level, []request.Request{bad}))); res[0].Err != request.ErrInvalidOp {
		t.Errorf("SetFeatureLevel 0: %+v, want ErrInvalidOp", res[0])
	}
}

// TestUnsupportedFeatureLevelStopsApply: a raise above what this build
// supports stops the state machine with an error that says what to do,
// and nothing after it is applied.
func TestUnsupportedFeatureLevelStopsApply(t *testing.T) {
	var fatal error
	f := New(Config{Stripes: 2, Logger: discardLogger(), OnFatal: func(err error) { fatal = err }})
	above := request.SupportedFeatureLevel + 1
	out := f.ApplyBatch([]*raft.Log{
		commandLog(1, encodeEntry(t0Level, []request.Request{request.NewSetFeatureLevel(above), setString("k", "v")})),
		commandLog(2, encodeEntry(t0Level, []request.Request{setString("k2", "v")})),
	})
	if _, ok := out[0].(error); !ok || fatal == nil {
		t.Fatalf("apply of a level above the supported one: %v (fatal %v), want an error", out[0], fatal)
	}
	want := "the cluster is at feature level " + strconv.Itoa(int(above)) + ", and this build supports feature levels up to " + strconv.Itoa(int(request.SupportedFeatureLevel))
	if !strings.Contains(fatal.Error(), want) {
		t.Errorf("the fatal error %q does not say %q", fatal, want)
	}
	if _, ok := out[1].(error); !ok {
		t.Errorf("the entry after it: %v, want an error", out[1])
	}
	if f.FeatureLevel() != request.BaseFeatureLevel {
		t.Errorf("level %d after the refused raise", f.FeatureLevel())
	}
}

// TestUnknownCodeNamesFeatureLevels: an entry with a code this build does
// not know (a newer build's) stops apply with an error that says so.
func TestUnknownCodeNamesFeatureLevels(t *testing.T) {
	var fatal error
	f := New(Config{Stripes: 2, Logger: discardLogger(), OnFatal: func(err error) { fatal = err }})
	entry := encodeEntry(t0Level, []request.Request{setString("k", "v")})
	entry[entryHeaderLen] = 62 // no build knows code 62
	f.ApplyBatch([]*raft.Log{commandLog(1, entry)})
	if fatal == nil || !strings.Contains(fatal.Error(), "written by a build with request codes this one does not know") {
		t.Errorf("fatal error %v", fatal)
	}
}

// asVersion6 re-encodes snapshot b (version 5) as version 6 at level.
func asVersion6(b []byte, level uint64) []byte {
	body := bytes.Clone(b[:len(b)-4])
	body[4] = snapshotV6
	body = binary.AppendUvarint(body, level)
	return binary.LittleEndian.AppendUint32(body, crc32.Checksum(body, crcTable))
}

// TestSnapshotFeatureLevel: a version 5 stream (every snapshot written
// before feature levels) restores at the base level; a version 6 stream
// at the base level is refused (no writer writes one), and so is one above
// what this build supports, with the error that says so.
func TestSnapshotFeatureLevel(t *testing.T) {
	src := quietFSM(4)
	applyOne(t, src, commandLog(1, encodeEntry(t0Level, []request.Request{setString("k", "v")})))
	v5 := snapshotBytes(t, src)
	if v5[4] != snapshotVersion {
		t.Fatalf("a snapshot at the base level is version %d, want %d", v5[4], snapshotVersion)
	}
	dst := quietFSM(2)
	if err := dst.Restore(io.NopCloser(bytes.NewReader(v5))); err != nil {
		t.Fatal(err)
	}
	if dst.FeatureLevel() != request.BaseFeatureLevel || !bytes.Equal(snapshotBytes(t, dst), v5) {
		t.Errorf("version 5 restored at level %d, or snapshots differently", dst.FeatureLevel())
	}
	for _, tt := range []struct {
		level uint64
		want  string
	}{
		{uint64(request.BaseFeatureLevel), "which no writer writes"},
		{uint64(request.SupportedFeatureLevel) + 1, "this build supports feature levels up to"},
	} {
		err := quietFSM(2).Restore(io.NopCloser(bytes.NewReader(asVersion6(v5, tt.level))))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("version 6 at level %d: %v, want an error saying %q", tt.level, err, tt.want)
		}
	}
}
