package fsm_test

import (
	"bytes"
	"io"
	"testing"

	"github.com/redcell/redcell/fsm"
)

// clStep is one command at an instant and the reply expected, as text.
type clStep struct {
	at   int64
	line string
	want string
}

// TestCLEdges: CL.THROTTLE and the keyspace commands at the edges of the
// spec's widths, through the command table and the state machine. Expected
// replies follow from cl-throttle.md's formulas with exact sums (computed
// independently with a Python big-integer model of the spec).
func TestCLEdges(t *testing.T) {
	const big = "3800000000" // 1 per 3.8e9 s: the second TAT lies past 2262
	scenarios := map[string][]clStep{
		"TAT past 2262 is stored and read back": {
			{t0, "CL.THROTTLE k 1 1 " + big, "[0 2 1 -1 3800000000]"},
			{t0, "CL.THROTTLE k 1 1 " + big, "[0 2 0 -1 7600000000]"},
			{t0, "CL.THROTTLE k 1 1 " + big, "[1 2 0 3800000000 7600000000]"},
			{t0, "CL.PEEK k 1 1 " + big, "[1 2 0 3800000000 7600000000]"},
			{t0, "CL.THROTTLE k 1 1 " + big + " 0", "[0 2 0 -1 7600000000]"}, // allow_at == now
			{t0, "EXISTS k", "1"},
			{t0, "PTTL k", "7600000000000"},
			{t0, "TTL k", "7600000000"},
			{t0 + 1e18, "PTTL k", "6600000000000"},
			{t0 + 1e18, "CL.THROTTLE k 1 1 " + big, "[1 2 0 2800000000 6600000000]"},
			// limit 3: tau = 3·3.8e18 wraps negative, so never allowed.
			{t0 + 1e18, "CL.THROTTLE k 2 1 " + big, "[1 3 0 -1 6600000000]"},
			{t0 + 1e18, "PTTL k", "6600000000000"},
		},
		"period 5e9 s": {
			{t0, "CL.THROTTLE k 0 1 5000000000", "[0 1 0 -1 5000000000]"},
			{t0, "CL.THROTTLE k 0 1 5000000000", "[1 1 0 5000000000 5000000000]"},
			{t0, "PTTL k", "5000000000000"},
			{t0, "CL.THROTTLE k 1 1 5000000000", "[1 2 0 -1 5000000000]"}, // tau wraps negative
		},
		"T MaxInt64: now + T does not wrap into the past": {
			{t0, "CL.THROTTLE k 9223372036854775807 1 9223372036854775807", "[1 -9223372036854775808 0 -1 0]"},
			{t0, "EXISTS k", "0"},
			// The key's TAT and expiry land past 2262.
			{t0, "CL.THROTTLE k 0 1 9223372036854775807", "[0 1 0 -1 9223372037]"},
			{t0, "EXISTS k", "1"},
			{t0, "PTTL k", "9223372036854"},
			{t0, "CL.THROTTLE k 9223372036854775806 1 9223372036854775807", "[1 9223372036854775807 -1 -1 9223372037]"},
		},
		"refund past 1970 errors and leaves no key": {
			{t0, "CL.THROTTLE k 5 1000000000 1", "[0 6 0 -1 0]"}, // T = 1 ns
			{t0, "CL.THROTTLE k 5 1000000000 1 -9223372036854775808", "-Cell error: Store error: Error while setting key expire"},
			{t0, "EXISTS k", "0"},
			{t0, "CL.THROTTLE k 5 1000000000 1", "[0 6 0 -1 0]"},
		},
		"quantity MinInt64 with an even T wraps to 0": {
			{t0, "CL.THROTTLE k 5 1 1", "[0 6 5 -1 1]"},
			{t0, "CL.THROTTLE k 5 1 1 -9223372036854775808", "[0 6 5 -1 1]"},
			{t0, "PTTL k", "1000"},
		},
	}
	for name, steps := range scenarios {
		t.Run(name, func(t *testing.T) {
			e := newEngine(4)
			for i, s := range steps {
				if got := e.line(t, s.at, s.line); got != s.want {
					t.Errorf("step %d %s: %s, want %s", i, s.line, got, s.want)
				}
			}
		})
	}
}

// TestCLWideExpirySnapshot: a CL key whose expiry lies past 2262 survives a
// snapshot (version 3) with its TAT and expiry, answers the same afterwards,
// and the same stream labelled version 2 is refused (version 2 could not
// hold that expiry).
func TestCLWideExpirySnapshot(t *testing.T) {
	a := newEngine(4)
	a.line(t, t0, "CL.THROTTLE wide 1 1 3800000000")
	a.line(t, t0, "CL.THROTTLE wide 1 1 3800000000")
	a.line(t, t0, "CL.THROTTLE plain 5 1 60")
	data := []byte(snapshotOf(t, a.f))
	if data[4] != fsm.SnapshotVersion {
		t.Fatalf("snapshot version %d, want %d", data[4], fsm.SnapshotVersion)
	}
	b := newEngine(8)
	if err := b.f.Restore(io.NopCloser(bytes.NewReader(data))); err != nil {
		t.Fatal(err)
	}
	if got := snapshotOf(t, b.f); got != string(data) {
		t.Fatalf("the restored state's snapshot differs")
	}
	for _, cmd := range []string{"PTTL wide", "PTTL plain", "CL.PEEK wide 1 1 3800000000", "CL.THROTTLE wide 1 1 3800000000", "CL.THROTTLE plain 5 1 60"} {
		at := t0 + 5e9
		if ga, gb := a.line(t, at, cmd), b.line(t, at, cmd); ga != gb {
			t.Errorf("%s: original %s, restored %s", cmd, ga, gb)
		}
	}
	if err := newEngine(1).f.Restore(io.NopCloser(bytes.NewReader(fsm.SnapshotAs(data, 2)))); err == nil {
		t.Errorf("a version 2 stream with a wide CL expiry was restored")
	}
}
