package fsm_test

import (
	"bytes"
	"io"
	"os"
	"testing"

	"github.com/redcell/redcell/fsm"
)

// v3Lines built testdata/snapshot_v3.bin, written by the build before
// snapshot version 4 (keys of every family, a wide CL expiry, strings with
// and without TTL, an expired and a deleted key), one line per entry at
// t0 + i ms.
var v3Lines = []string{
	"CL.THROTTLE cl:a 5 1 60", "CL.THROTTLE wide 1 1 3800000000", "TB.TAKE tb:a 50 1 60000", "TB.TAKE ti:a 50 1 60000 INTERVAL",
	"SL.HIT sl:a 10 60000", "SL.HIT sl:a 10 60000", "SET s:plain hello", "SET s:ttl v EX 1000", "SET s:empty \"\"",
	"INCR s:n", "APPEND s:ttl more", "SET gone x PX 1", "SET del x", "DEL del",
}

// TestSnapshotVersion3FileRestores: a version 3 snapshot written by the
// older build restores (markers 0, term 0), answers every read as the state
// built by this build does, snapshots to what this build's state is without
// markers and gone keys, and that snapshot written back as version 3 is the
// file byte for byte.
func TestSnapshotVersion3FileRestores(t *testing.T) {
	file, err := os.ReadFile("testdata/snapshot_v3.bin")
	if err != nil {
		t.Fatal(err)
	}
	if file[4] != 3 {
		t.Fatalf("testdata/snapshot_v3.bin is version %d", file[4])
	}
	a := newEngine(4)
	for i, l := range v3Lines {
		a.line(t, t0+int64(i)*1e6, l)
	}
	b := newEngine(2)
	if err := b.f.Restore(io.NopCloser(bytes.NewReader(file))); err != nil {
		t.Fatal(err)
	}
	b.index = a.index
	snap := []byte(snapshotOf(t, b.f))
	if !bytes.Equal(snap, fsm.RestoredFromOld([]byte(snapshotOf(t, a.f)))) {
		t.Errorf("the restored version 3 state differs from the state this build makes")
	}
	if !bytes.Equal(fsm.SnapshotAs(snap, 3), file) {
		t.Errorf("the restored state written as version 3 is not the file")
	}
	at := t0 + 1e9
	for _, k := range []string{"cl:a", "wide", "tb:a", "ti:a", "sl:a", "s:plain", "s:ttl", "s:empty", "s:n", "gone", "del"} {
		for _, cmd := range []string{"TYPE ", "PTTL ", "EXISTS ", "GET "} {
			if ga, gb := a.line(t, at, cmd+k), b.line(t, at, cmd+k); ga != gb {
				t.Errorf("%s%s: built %s, restored %s", cmd, k, ga, gb)
			}
		}
	}
}
