package fsm

import (
	"bytes"
	"fmt"
	"io"
	"testing"

	"github.com/redcell/redcell/gcra"
	"github.com/redcell/redcell/request"
)

// recordingWatcher keeps what Written reported, copying the keys.
type recordingWatcher struct {
	on    bool
	calls []string
}

func (w *recordingWatcher) Watching() bool { return w.on }
func (w *recordingWatcher) Written(keys [][]byte, flushed bool) {
	w.calls = append(w.calls, fmt.Sprintf("%q %v", keys, flushed))
}

// TestWatchWrites: each applied entry reports the keys its writes named (a
// refused decision included, reads not), a FLUSHALL reports flushed and only
// the keys after it, a restore reports flushed, and nothing is collected
// while the watcher is not watching.
func TestWatchWrites(t *testing.T) {
	f := quietFSM(4)
	w := &recordingWatcher{on: true}
	f.WatchWrites(w)
	p, err := gcra.NewParams(0, 1, 60, 1)
	if err != nil {
		t.Fatal(err)
	}
	now := int64(4e18)
	applyOne(t, f, commandLog(1, encodeEntry(now, []request.Request{
		throttleReq([]byte("a"), p),
		throttleReq([]byte("a"), p), // refused: still reported
		peekReq([]byte("r"), p),
		{Code: request.Exists, Keys: [][]byte{[]byte("r")}},
		{Code: request.Del, Keys: [][]byte{[]byte("b"), []byte("c")}},
	})))
	applyOne(t, f, commandLog(2, encodeEntry(now, []request.Request{
		throttleReq([]byte("x"), p),
		{Code: request.FlushAll},
		throttleReq([]byte("y"), p),
	})))
	applyOne(t, f, commandLog(3, encodeEntry(now, []request.Request{peekReq([]byte("r"), p)})))
	snap := snapshotBytes(t, f)
	w.on = false
	applyOne(t, f, commandLog(4, encodeEntry(now, []request.Request{throttleReq([]byte("z"), p)})))
	w.on = true
	if err := f.Restore(io.NopCloser(bytes.NewReader(snap))); err != nil {
		t.Fatal(err)
	}
	want := []string{
		`["a" "a" "b" "c"] false`,
		`["y"] true`,
		`[] true`,
	}
	if fmt.Sprint(w.calls) != fmt.Sprint(want) {
		t.Errorf("Written calls:\n got %q\nwant %q", w.calls, want)
	}
}
