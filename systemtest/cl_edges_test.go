package systemtest

import (
	"strings"
	"testing"
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
	n.kill()
	logOffset := n.logSize()
	n.mustRestart(t)
	c = mustDial(t, n.addr())
	if logs := n.logSince(logOffset); !strings.Contains(logs, "restored from snapshot") {
		t.Errorf("the restart did not restore a snapshot; its log:\n%s", lastLines(logs, 20))
	}
	run(after)
}
