package fsm

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/redcell/redcell/scripting"
	"github.com/redcell/redcell/shard"
)

// TestSnapshotScriptSection: version 5 carries the script cache after the
// records; a version 4 stream (no cache) restores with an empty one; a
// cache section whose scripts are not in SHA-1 order, repeat one, or is cut
// short is refused, like any other corruption.
func TestSnapshotScriptSection(t *testing.T) {
	recs := []streamRecord{{key: []byte("k"), st: shard.State{Kind: 1, Expire: noExpiry, A: 1}}}
	bodies := [][]byte{[]byte("return 1"), []byte("return 2"), []byte("return 3")}
	sorted := func(bs [][]byte) [][]byte {
		out := append([][]byte(nil), bs...)
		for i := range out {
			for j := i + 1; j < len(out); j++ {
				if scripting.SHA1Hex(out[j]) < scripting.SHA1Hex(out[i]) {
					out[i], out[j] = out[j], out[i]
				}
			}
		}
		return out
	}
	restore := func(b []byte) (*FSM, error) {
		f := quietFSM(2)
		return f, f.Restore(io.NopCloser(bytes.NewReader(b)))
	}

	good := sorted(bodies)
	f, err := restore(encodeStreamAs(streamHeader{version: 5, clock: 5, term: 1, scripts: good}, recs))
	if err != nil {
		t.Fatalf("version 5 with a cache: %v", err)
	}
	if len(f.scripts) != 3 || string(f.scripts[scripting.SHA1Hex(bodies[1])]) != "return 2" {
		t.Fatalf("restored cache %v", f.scripts)
	}
	var again bytes.Buffer
	if err := f.WriteSnapshot(&again); err != nil {
		t.Fatal(err)
	}
	if want := encodeStreamAs(streamHeader{version: 5, clock: 5, term: 1, scripts: good}, recs); !bytes.Equal(again.Bytes(), want) {
		t.Fatalf("a restored cache is written back differently")
	}

	f, err = restore(encodeStreamAs(streamHeader{version: 4, clock: 5, term: 1}, recs))
	if err != nil || len(f.scripts) != 0 || f.store.Len(5) != 1 {
		t.Fatalf("version 4: err %v, %d scripts, %d keys", err, len(f.scripts), f.store.Len(5))
	}

	for name, scripts := range map[string][][]byte{
		"out of order": {good[1], good[0], good[2]},
		"repeated":     {good[0], good[0]},
	} {
		if _, err := restore(encodeStreamAs(streamHeader{version: 5, clock: 5, term: 1, scripts: scripts}, recs)); err == nil || !strings.Contains(err.Error(), "script") {
			t.Errorf("%s: restore error %v", name, err)
		}
	}
	full := encodeStreamAs(streamHeader{version: 5, clock: 5, term: 1, scripts: good}, recs)
	cut := append(bytes.Clone(full[:len(full)-4-3]), 0, 0, 0, 0)
	if _, err := restore(cut); err == nil {
		t.Errorf("a cache section cut short restores")
	}
}
