package systemtest

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestClusterScanAndPeeksThroughFollowers: a follower forwards SCAN, KEYS
// and the TB/SL PEEKs to the leader (reads are linearizable by default) and
// relays their replies, lists of keys included; after READONLY it answers
// them from its own state, which holds the same keys once it has applied
// them. Keys of every family, written through the leader.
func TestClusterScanAndPeeksThroughFollowers(t *testing.T) {
	c := startCluster(t, 3)
	leader := c.waitLeader()
	lc := mustDial(t, c.nodes[leader].addr())
	// The leader's clock frozen ahead of the wall clock: every node then
	// reads at the replicated clock, so the replies are exact.
	expectReply(t, lc, wantStatus("OK"), "DEBUG", "CLOCK", "SET", "4000000000000000000")
	var want []string
	cmds := []string{"CL.THROTTLE %s 9 1 86400", "TB.TAKE %s 10 1 86400000", "TB.TAKE %s 10 1 86400000 INTERVAL", "SL.HIT %s 10 86400000"}
	for i := 0; i < 40; i++ {
		k := fmt.Sprintf("scan:%02d", i)
		args := strings.Fields(fmt.Sprintf(cmds[i%4], k))
		if v, ok := mustDo(t, lc, args...).ints(); !ok || len(v) != 5 || v[0] != 0 || v[2] != 9 {
			t.Fatalf("%v: %v", args, v)
		}
		want = append(want, k)
	}
	for i := range c.nodes {
		if i == leader {
			continue
		}
		fc := mustDial(t, c.nodes[i].addr())
		for _, readonly := range []bool{false, true} {
			if readonly {
				expectReply(t, fc, wantStatus("OK"), "READONLY")
				c.waitConverged(opTimeout) // the follower has applied every write
			}
			var got []string
			cursor := "0"
			for calls := 0; ; calls++ {
				cur, keys := scanPage(t, mustDo(t, fc, "SCAN", cursor, "COUNT", "3", "MATCH", "scan:*"))
				got = append(got, keys...)
				if cursor = cur; cursor == "0" {
					break
				}
				if calls > 1000 {
					t.Fatal("SCAN does not end")
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Errorf("%s (readonly %v): SCAN gave %d keys %v, want %d", c.nodes[i].id, readonly, len(got), got, len(want))
			}
			if r := mustDo(t, fc, "KEYS", "scan:*"); r.kind != '*' || len(r.elems) != len(want) {
				t.Errorf("%s (readonly %v): KEYS gave %v", c.nodes[i].id, readonly, r)
			}
			expectReply(t, fc, wantInts(0, 10, 9, -1, 86_400_000), "TB.PEEK", "scan:01", "10", "1", "86400000", "COST", "0")
			expectReply(t, fc, wantInts(0, 10, 8, -1, 86_400_000), "SL.PEEK", "scan:03", "10", "86400000")
			expectReply(t, fc, wantStatus("slidinglog"), "TYPE", "scan:03")
		}
	}
	c.compareReplicas("after the writes")
}
