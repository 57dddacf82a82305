//go:build redcell_nextlevel

package fsm

import (
	"bytes"
	"io"
	"testing"

	"github.com/redcell/redcell/request"
)

func nextLevelSet(key, val string) request.Request {
	return request.Request{Code: request.DebugNextLevel, Key: []byte(key), Keys: [][]byte{[]byte(val)}}
}

// TestCodeAboveTheLevelIsRefusedAtApply: a code above the active level
// that reached the log answers ErrFeatureLevel, naming the code and both
// levels, and changes nothing, until a SetFeatureLevel raises the level
// (in the same entry, it counts from the next request); the raised level
// is in the snapshot (version 6), which restores at it.
func TestCodeAboveTheLevelIsRefusedAtApply(t *testing.T) {
	f := quietFSM(4)
	get := request.Request{Code: request.Get, Key: []byte("k")}
	res := applyOne(t, f, commandLog(1, encodeEntry(t0Level, []request.Request{nextLevelSet("k", "v"), get})))
	want := request.Result{Kind: request.KindError, Err: request.ErrFeatureLevel,
		Ints: [5]int64{int64(request.DebugNextLevel), 2, 1}}
	if !res[0].Equal(want) || res[1].Kind != request.KindNil {
		t.Fatalf("DEBUG NEXTLEVEL at level 1: %+v then GET %+v, want %+v and nil", res[0], res[1], want)
	}
	if got := request.FeatureLevelText(&res[0]); got != "ERR 'DEBUG NEXTLEVEL' needs cluster feature level 2 (every member must run a build that supports it); the cluster is at level 1" {
		t.Errorf("text %q", got)
	}
	res = applyOne(t, f, commandLog(2, encodeEntry(t0Level, []request.Request{request.NewSetFeatureLevel(2), nextLevelSet("k", "v"), get})))
	if res[0].Kind != request.KindOK || res[1].Kind != request.KindOK || string(res[2].Data) != "v" || f.FeatureLevel() != 2 {
		t.Fatalf("after SetFeatureLevel 2: %+v, level %d", res, f.FeatureLevel())
	}
	snap := snapshotBytes(t, f)
	if snap[4] != snapshotV6 {
		t.Fatalf("a snapshot at level 2 is version %d, want 6", snap[4])
	}
	g := quietFSM(2)
	if err := g.Restore(io.NopCloser(bytes.NewReader(snap))); err != nil {
		t.Fatal(err)
	}
	if g.FeatureLevel() != 2 || !bytes.Equal(snapshotBytes(t, g), snap) {
		t.Errorf("restored at level %d, or snapshots differently", g.FeatureLevel())
	}
	var r request.Result
	g.Read(&get, t0Level, &r)
	if string(r.Data) != "v" {
		t.Errorf("GET after restore: %+v", r)
	}
}
