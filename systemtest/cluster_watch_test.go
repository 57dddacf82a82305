package systemtest

import (
	"fmt"
	"testing"
	"time"
)

// TestClusterWatch: WATCH on a follower holds across the cluster. A write
// to the watched key made through another node between WATCH and EXEC makes
// EXEC answer nil and run nothing; with no change the transaction applies
// (forwarded to the leader); and a leader kill between WATCH and EXEC makes
// EXEC answer nil, the check being made where the transaction is applied.
func TestClusterWatch(t *testing.T) {
	c := startCluster(t, 3)
	leader := c.waitLeader()
	f, other := (leader+1)%3, (leader+2)%3
	fc := mustDial(t, c.nodes[f].addr())
	oc := mustDial(t, c.nodes[other].addr())
	lc := mustDial(t, c.nodes[leader].addr())
	// A write in the leader's term, applied everywhere: the follower's
	// WATCH then reads that term.
	expectReply(t, lc, wantStatus("OK"), "SET", "k", "v")
	c.waitConverged(20 * time.Second)

	exec := func(what string, wantNil bool, wantTx int64) {
		t.Helper()
		expectReply(t, fc, wantStatus("OK"), "MULTI")
		expectReply(t, fc, wantStatus("QUEUED"), "INCR", "tx")
		r := mustDo(t, fc, "EXEC")
		switch {
		case wantNil && !r.null:
			t.Fatalf("%s: EXEC = %v, want nil", what, r)
		case !wantNil && (r.null || r.String() != fmt.Sprintf("[%d]", wantTx)):
			t.Fatalf("%s: EXEC = %v, want [%d]", what, r, wantTx)
		}
	}

	// A write through the other follower (forwarded to the leader).
	expectReply(t, fc, wantStatus("OK"), "WATCH", "k")
	expectReply(t, oc, wantStatus("OK"), "SET", "k", "v")
	exec("a write through another node", true, 0)

	// No change: applies. The follower's state may lag; the check is the
	// leader's state machine's, on the markers every replica shares.
	c.waitConverged(20 * time.Second)
	expectReply(t, fc, wantStatus("OK"), "WATCH", "k")
	exec("no change", false, 1)

	// A leader change between WATCH and EXEC.
	c.waitConverged(20 * time.Second)
	expectReply(t, fc, wantStatus("OK"), "WATCH", "k")
	c.kill(leader)
	c.waitLeader(f, other)
	exec("a leader kill between WATCH and EXEC", true, 0)
	// Nothing ran: tx is still 1, and a new WATCH (of the new term, once
	// the follower applied an entry of it) works.
	c.waitConverged(20 * time.Second)
	expectReply(t, fc, wantStatus("OK"), "WATCH", "k")
	exec("after the failover", false, 2)
}
