package systemtest

import (
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/redcell/redcell/internal/clmodel"
)

// clEdgeT0 is the instant CL edge scenarios run at: their replies depend on
// the absolute time (sums past 2262), so they are not shifted.
const clEdgeT0 = int64(1_700_000_000_000_000_000)

// clEdgeStep is one command at an instant with its expected reply.
type clEdgeStep struct {
	at   int64
	args []string
	want want
}

func clArgs(line string) []string { return strings.Fields(line) }

// TestCLThrottleEdgesOverRESP: CL.THROTTLE, CL.PEEK and the keyspace
// commands at the edges of cl-throttle.md's widths, against the binary over
// RESP with DEBUG CLOCK SET: TATs and expiries past 2262 (the end of int64
// nanoseconds) are stored, read back, survive a snapshot (SAVE, SIGKILL,
// restart from it) and age with the clock; sums that int64 would wrap stay
// exact; an argument starting with CR or LF is sanitised on the whole error
// message. Expected values come from a big-integer model of the spec.
func TestCLThrottleEdgesOverRESP(t *testing.T) {
	t.Parallel()
	n := startTestNode(t, "cl-edges")
	c := mustDial(t, n.addr())
	if clk := replicatedClock(t, c); clk > clEdgeT0 {
		t.Fatalf("fresh node's replicated clock %d is past %d", clk, clEdgeT0)
	}
	const big = " 1 1 3800000000"
	t0, later := clEdgeT0, clEdgeT0+1e18
	before := []clEdgeStep{
		// The example: the second decision's TAT lies past 2262.
		{t0, clArgs("CL.THROTTLE w" + big), wantInts(0, 2, 1, -1, 3800000000)},
		{t0, clArgs("CL.THROTTLE w" + big), wantInts(0, 2, 0, -1, 7600000000)},
		{t0, clArgs("CL.THROTTLE w" + big), wantInts(1, 2, 0, 3800000000, 7600000000)},
		{t0, clArgs("CL.PEEK w" + big), wantInts(1, 2, 0, 3800000000, 7600000000)},
		{t0, clArgs("EXISTS w"), wantInt(1)},
		{t0, clArgs("PTTL w"), wantInt(7600000000000)},
		{t0, clArgs("TTL w"), wantInt(7600000000)},
		{t0, clArgs("TYPE w"), wantStatus("string")},
		// Periods of 5e9 s.
		{t0, clArgs("CL.THROTTLE p 0 1 5000000000"), wantInts(0, 1, 0, -1, 5000000000)},
		{t0, clArgs("CL.THROTTLE p 0 1 5000000000"), wantInts(1, 1, 0, 5000000000, 5000000000)},
		{t0, clArgs("PTTL p"), wantInt(5000000000000)},
		// T = MaxInt64: now + T stays in the future, tau = T·MinInt64 wraps.
		{t0, clArgs("CL.THROTTLE m 9223372036854775807 1 9223372036854775807"), wantInts(1, -9223372036854775808, 0, -1, 0)},
		{t0, clArgs("EXISTS m"), wantInt(0)},
		{t0, clArgs("CL.THROTTLE m 0 1 9223372036854775807"), wantInts(0, 1, 0, -1, 9223372037)},
		{t0, clArgs("PTTL m"), wantInt(9223372036854)},
		// A refund past 1970 (T = 1 ns, quantity MinInt64): the expire error,
		// no key left.
		{t0, clArgs("CL.THROTTLE r 5 1000000000 1"), wantInts(0, 6, 0, -1, 0)},
		{t0, clArgs("CL.THROTTLE r 5 1000000000 1 -9223372036854775808"), wantErr("Cell error: Store error: Error while setting key expire")},
		{t0, clArgs("EXISTS r"), wantInt(0)},
		// Sanitised on the whole message.
		{t0, []string{"CL.THROTTLE", "s", "\n5", "1", "1"}, wantErr("Cell error: Store error: Couldn't parse as integer:  5")},
		{t0, []string{"CL.THROTTLE", "s", "1", "\r\n5\r\n", "1"}, wantErr("Cell error: Store error: Couldn't parse as integer:   5")},
		{t0, []string{"CL.THROTTLE", "s", "1", "1", "5\n"}, wantErr("Cell error: Store error: Couldn't parse as integer: 5")},
		{t0, []string{"CL.THROTTLE", "s", "1", "1", "1", "2\r3"}, wantErr("Cell error: Store error: Couldn't parse as integer: 2 3")},
		{t0, []string{"CL.PEEK", "s", "1", "\n1\x00x", "1"}, wantErr("Cell error: Store error: Couldn't parse as integer:  1")},
		{t0, clArgs("EXISTS s"), wantInt(0)},
	}
	after := []clEdgeStep{
		{t0, clArgs("PTTL w"), wantInt(7600000000000)},
		{t0, clArgs("PTTL m"), wantInt(9223372036854)},
		{t0, clArgs("CL.PEEK w" + big), wantInts(1, 2, 0, 3800000000, 7600000000)},
		{later, clArgs("PTTL w"), wantInt(6600000000000)},
		{later, clArgs("PTTL p"), wantInt(4000000000000)},
		{later, clArgs("CL.THROTTLE w" + big), wantInts(1, 2, 0, 2800000000, 6600000000)},
		{later, clArgs("CL.THROTTLE w 1 1 3800000000 0"), wantInts(0, 2, 0, -1, 6600000000)},
		{later, clArgs("EXISTS w p m"), wantInt(3)},
		{later, clArgs("DEL w"), wantInt(1)},
		{later, clArgs("CL.THROTTLE w" + big), wantInts(0, 2, 1, -1, 3800000000)},
	}
	run := func(steps []clEdgeStep) {
		t.Helper()
		for _, s := range steps {
			setClock(t, c, s.at)
			expectReply(t, c, s.want, s.args...)
		}
	}
	run(before)

	expectReply(t, c, wantStatus("OK"), "SAVE")
	c = killAndRestoreSnapshot(t, n)
	run(after)
}

// TestCLAgainstModelOverRESP sends random CL.THROTTLE, CL.PEEK, PTTL and
// EXISTS commands (parameters near the int64 limits and periods of billions
// of seconds included) to the binary, freezing its clock at instants that
// advance by 0 ns to 10^17 ns, and compares every reply with
// internal/clmodel (the spec in math/big plus redis-cell's keyspace).
func TestCLAgainstModelOverRESP(t *testing.T) {
	t.Parallel()
	n := startTestNode(t, "cl-model")
	c := mustDial(t, n.addr())
	if clk := replicatedClock(t, c); clk > clEdgeT0 {
		t.Fatalf("fresh node's replicated clock %d is past %d", clk, clEdgeT0)
	}
	r := rand.New(rand.NewPCG(20261123, 8))
	ks := clmodel.Keyspace{}
	now := clEdgeT0
	param := func(signed bool) int64 {
		switch r.IntN(10) {
		case 0:
			return []int64{math.MaxInt64, math.MinInt64, math.MaxInt64 - 1, math.MinInt64 + 1, 0}[r.IntN(5)]
		case 1:
			return []int64{3_800_000_000, 5_000_000_000, 9_223_372_036, 1e9, 1 << 53}[r.IntN(5)]
		case 2:
			if signed {
				return -r.Int64N(20)
			}
		case 3:
			return int64(r.Uint64()>>r.IntN(64)) * (1 - 2*int64(r.IntN(2)))
		}
		return r.Int64N(20) + 1
	}
	failures := 0
	for step := 0; step < 600 && failures < 8; step++ {
		switch r.IntN(6) {
		case 0:
		case 1:
			now += r.Int64N(2e6)
		case 2, 3:
			now += r.Int64N(10e9)
		case 4:
			now += r.Int64N(1e13)
		case 5:
			now += r.Int64N(1e17)
		}
		key := "m" + strconv.Itoa(r.IntN(3))
		b, cnt, p, q := param(true), param(false), param(false), param(true)
		if r.IntN(3) == 0 { // a huge period: the TAT and expiry land past 2262
			b, cnt, q = r.Int64N(3), 1, r.Int64N(2)
			p = []int64{3_800_000_000, 5_000_000_000, 9_223_372_036, 2_000_000_000}[r.IntN(4)]
		}
		if clmodel.Interval(cnt, p) == 0 {
			continue
		}
		nums := []string{itoa(b), itoa(cnt), itoa(p), itoa(q)}
		var args []string
		var w want
		throttleWant := func(reply [5]int64, expireErr bool) want {
			if expireErr {
				return wantErr("Cell error: Store error: Error while setting key expire")
			}
			return wantInts(reply[:]...)
		}
		switch r.IntN(6) {
		case 0:
			args = append([]string{"CL.PEEK", key}, nums...)
			w = throttleWant(ks.Peek(key, b, cnt, p, q, now))
		case 1:
			args = []string{"PTTL", key}
			w = wantInt(ks.PTTL(key, now))
		case 2:
			args = []string{"EXISTS", key}
			w = wantInt(0)
			if _, ok := ks.Live(key, now); ok {
				w = wantInt(1)
			}
		default:
			args = append([]string{"CL.THROTTLE", key}, nums...)
			w = throttleWant(ks.Throttle(key, b, cnt, p, q, now))
		}
		setClock(t, c, now)
		if got := mustDo(t, c, args...); !w.matches(got) {
			failures++
			t.Errorf("step %d at %d: %s = %v, model says %v", step, now, quoteArgs(args), got, w)
		}
	}
}
