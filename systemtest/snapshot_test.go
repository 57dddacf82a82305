package systemtest

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestRestartFromSnapshot checks the other half of durability: with a tiny
// snapshot threshold the node snapshots its state machine into Pebble while
// decisions keep arriving, then is killed with SIGKILL; the restart restores
// the snapshot, replays the log after it, and every acknowledged decision —
// taken before and after the snapshot — is in force.
//
// It runs with one group and with three on the one node (each family's
// key i in group i mod 3): there every group snapshots before the kill and
// restores its own snapshot at the restart (its raft lines say so, naming
// the group).
func TestRestartFromSnapshot(t *testing.T) {
	t.Parallel()
	for _, groups := range faultGroupCounts {
		t.Run(fmt.Sprintf("groups=%d", groups), func(t *testing.T) {
			t.Parallel()
			testRestartFromSnapshot(t, groups)
		})
	}
}

func testRestartFromSnapshot(t *testing.T, groups int) {
	n := startTestNode(t, "snapshot", append(groupFlags(groups), "--snapshot-threshold", "16", "--snapshot-interval", "50ms")...)
	c := mustDial(t, n.addr())
	origin := freshBase(t, c)
	// Family prefix p's key i ("", "tb:", "ti:", "sl:"), in group i mod G.
	key := func(p string, i int) string { return spreadKey(fmt.Sprintf("%ssnap:%03d", p, i), i%groups, groups) }

	// One request per round trip, so each decision is its own log entry:
	// key i takes i%5+1 tokens of its 5 (max_burst 4, 1 per 100 s).
	// The same on TB and SL keys: 5 tokens, 1 per 100 s; 5 hits per 100 s.
	const keys = 120
	for i := 0; i < keys; i++ {
		for j := int64(1); j <= int64(i%5+1); j++ {
			expectReply(t, c, wantInts(0, 5, 5-j, -1, 100*j), "CL.THROTTLE", key("", i), "4", "1", "100")
			expectReply(t, c, wantInts(0, 5, 5-j, -1, 100_000*j), "TB.TAKE", key("tb:", i), "5", "1", "100000")
			expectReply(t, c, wantInts(0, 5, 5-j, -1, 100_000*j), "TB.TAKE", key("ti:", i), "5", "1", "100000", "INTERVAL")
			expectReply(t, c, wantInts(0, 5, 5-j, -1, 100_000), "SL.HIT", key("sl:", i), "5", "100000")
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	var snapIndex int64
	for {
		info := mustDo(t, c, "INFO", "raft")
		snapIndex, _ = strconv.ParseInt(infoField(info.str, "raft_last_snapshot_index"), 10, 64)
		snapped := 0 // groups whose raft logged a snapshot (group 0's is INFO's)
		for g := 1; g < groups; g++ {
			if groupLines(n.logSince(0), "snapshot complete up to", g, groups) > 0 {
				snapped++
			}
		}
		if snapIndex > 0 && snapped == groups-1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no snapshot was taken (in %d of the other %d groups): INFO raft says\n%s", groups-1-snapped, groups-1, info.str)
		}
		time.Sleep(50 * time.Millisecond) // polling a server-side condition, not synchronising the algorithm
	}
	// A few decisions after the snapshot, so the restart must replay the log
	// on top of the restored state too.
	for j := int64(1); j <= 5; j++ {
		expectReply(t, c, wantInts(0, 5, 5-j, -1, 100*j), "CL.THROTTLE", "after-snapshot", "4", "1", "100")
	}

	logOffset := n.logSize()
	c = killAndRestoreSnapshot(t, n)
	for g := range groups {
		if groups > 1 && groupLines(n.logSince(logOffset), "restored from snapshot", g, groups) == 0 {
			t.Errorf("group %d did not restore a snapshot at the restart", g)
		}
	}
	if clk := replicatedClock(t, c); clk != origin {
		t.Errorf("replicated clock after restart: got %d, want %d", clk, origin)
	}
	setClock(t, c, origin)
	for i := 0; i < keys; i++ {
		taken := int64(i%5 + 1)
		expectReply(t, c, wantInts(0, 5, 5-taken, -1, 100*taken), "CL.PEEK", key("", i), "4", "1", "100", "0")
		expectReply(t, c, wantInts(0, 5, 5-taken, -1, 100_000*taken), "TB.PEEK", key("tb:", i), "5", "1", "100000", "COST", "0")
		expectReply(t, c, wantInts(0, 5, 5-taken, -1, 100_000*taken), "TB.PEEK", key("ti:", i), "5", "1", "100000", "COST", "0", "INTERVAL")
		if taken < 5 {
			expectReply(t, c, wantInts(0, 5, 4-taken, -1, 100_000), "SL.PEEK", key("sl:", i), "5", "100000")
		} else {
			expectReply(t, c, wantInts(1, 5, 0, 100_000, 100_000), "SL.PEEK", key("sl:", i), "5", "100000")
		}
	}
	expectReply(t, c, wantInts(1, 5, 0, 100, 500), "CL.THROTTLE", "after-snapshot", "4", "1", "100")
	expectReply(t, c, wantInt(4*keys+1), "DBSIZE")
	info := mustDo(t, c, "INFO", "raft")
	if v, _ := strconv.ParseInt(infoField(info.str, "raft_last_snapshot_index"), 10, 64); v < snapIndex {
		t.Errorf("after restart raft_last_snapshot_index %d < %d taken before the kill", v, snapIndex)
	}
	n.mustStop(t)
}

// killAndRestoreSnapshot kills n with SIGKILL, restarts it on its data dir
// and fails t unless the restart restored a snapshot (hashicorp/raft logs
// "restored from snapshot" once the FSM has restored one at startup); it
// returns a connection to the restarted node.
func killAndRestoreSnapshot(t *testing.T, n *node) *respConn {
	t.Helper()
	n.kill()
	logOffset := n.logSize()
	n.mustRestart(t)
	c := mustDial(t, n.addr())
	if logs := n.logSince(logOffset); !strings.Contains(logs, "restored from snapshot") {
		t.Errorf("the restart did not restore a snapshot; its log:\n%s", lastLines(logs, 20))
	}
	return c
}
