package fsm_test

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/redcell/redcell/internal/clmodel"
)

// TestCLAgainstBigIntModel drives CL.THROTTLE, CL.PEEK, PTTL and EXISTS
// through the command table and the state machine with random parameters
// (near the int64 limits included) on a few keys, at instants that advance
// by anything from nothing to centuries, and compares every reply with
// internal/clmodel: the spec's algorithm in math/big plus redis-cell's
// keyspace. It checks what the gcra model test cannot: the storage of wide
// TATs and expiries (B, saturation), liveness judged on the exact TTL, and
// PTTL, after a snapshot round trip too.
func TestCLAgainstBigIntModel(t *testing.T) {
	const runs = 40
	steps := 400
	if testing.Short() {
		steps = 100
	}
	for run := 0; run < runs; run++ {
		r := rand.New(rand.NewPCG(uint64(run), 88))
		e := newEngine(1 + run%8)
		ks := clmodel.Keyspace{}
		now := t0 + r.Int64N(1e18)
		for step := 0; step < steps; step++ {
			now = advance(r, now)
			key := "k" + strconv.Itoa(r.IntN(3))
			b, c, p, q := clParam(r, true), clParam(r, false), clParam(r, false), clParam(r, true)
			if clmodel.Interval(c, p) == 0 {
				continue // the zero-rate error is the parser's, tested elsewhere
			}
			args := fmt.Sprintf("%s %d %d %d %d", key, b, c, p, q)
			var line, want string
			switch r.IntN(6) {
			case 0:
				line = "CL.PEEK " + args
				want = modelReply(ks.Peek(key, b, c, p, q, now))
			case 1:
				line = "PTTL " + key
				want = strconv.FormatInt(ks.PTTL(key, now), 10)
			case 2:
				line = "EXISTS " + key
				want = "0"
				if _, ok := ks.Live(key, now); ok {
					want = "1"
				}
			default:
				line = "CL.THROTTLE " + args
				want = modelReply(ks.Throttle(key, b, c, p, q, now))
			}
			if got := e.line(t, now, line); got != want {
				t.Fatalf("run %d step %d at %d: %s = %s, model says %s", run, step, now, line, got, want)
			}
		}
		// The state survives a snapshot round trip with the same answers.
		restored := newEngine(4)
		restoreFrom(t, restored, e)
		for i := 0; i < 3; i++ {
			key := "k" + strconv.Itoa(i)
			if got, want := restored.line(t, now, "PTTL "+key), strconv.FormatInt(ks.PTTL(key, now), 10); got != want {
				t.Fatalf("run %d after restore: PTTL %s = %s, model says %s", run, key, got, want)
			}
		}
	}
}

// advance moves the clock forward by a random step: often not at all or by
// less than a millisecond (redis-cell's ms expiry), sometimes by seconds,
// rarely by up to 10^18 ns, never past int64.
func advance(r *rand.Rand, now int64) int64 {
	var d int64
	switch r.IntN(8) {
	case 0, 1:
	case 2:
		d = r.Int64N(2e6)
	case 3, 4:
		d = r.Int64N(10e9)
	case 5:
		d = r.Int64N(1e13)
	case 6:
		d = int64(r.Uint64() >> (4 + r.IntN(60)))
	case 7:
		d = r.Int64N(1e18)
	}
	if d > math.MaxInt64-1e18-now {
		return now
	}
	return now + d
}

// clParam draws a CL.THROTTLE integer: small values most often, huge periods
// (past 2262 once added to now) and the int64 limits often enough.
func clParam(r *rand.Rand, signed bool) int64 {
	switch r.IntN(10) {
	case 0:
		return []int64{math.MaxInt64, math.MinInt64, math.MaxInt64 - 1, math.MinInt64 + 1, 0}[r.IntN(5)]
	case 1:
		return []int64{3_800_000_000, 5_000_000_000, 9_223_372_036, 9_223_372_037, 1e9, 1 << 53}[r.IntN(6)]
	case 2:
		if signed {
			return -r.Int64N(20)
		}
	case 3:
		return int64(r.Uint64()>>r.IntN(64)) * (1 - 2*int64(r.IntN(2)))
	}
	return r.Int64N(20) + 1
}

func modelReply(reply [5]int64, expireErr bool) string {
	if expireErr {
		return "-Cell error: Store error: Error while setting key expire"
	}
	return fmt.Sprint(reply[:])
}

// restoreFrom restores into dst a snapshot of src's state.
func restoreFrom(t *testing.T, dst, src *engine) {
	t.Helper()
	if err := dst.f.Restore(io.NopCloser(strings.NewReader(snapshotOf(t, src.f)))); err != nil {
		t.Fatal(err)
	}
}
