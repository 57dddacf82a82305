package systemtest

import (
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestClusterReplaceNodeBySnapshot replaces a member: with a small
// snapshot size (--snapshot-log-bytes 8192: a snapshot every few dozen
// entries, and raft's TrailingLogs then lowered to its floor of 1024, so
// about a thousand entries more compact the log) the log is compacted
// while decisions are written one entry each; RAFT REMOVE n3 (sent to a
// follower, which hands it to the leader) takes n3 out and it is killed; a
// fresh n4 with an empty data dir joins, receives the leader's snapshot
// instead of the compacted log (its log says "Installed remote snapshot"
// and INFO shows a snapshot index), is promoted to voter, and holds exactly
// the state of the others (RAFT DIGEST at the same index).
//
// With three groups (one led by each node, the keys and the filler in all
// three) every group's leader compacts its log before n4 joins, n4
// installs a snapshot in every group (raft's lines name their group), and
// every group's state is compared. n3 leads a group when it is removed.
func TestClusterReplaceNodeBySnapshot(t *testing.T) {
	forGroupCounts(t, testReplaceNodeBySnapshot)
}

func testReplaceNodeBySnapshot(t *testing.T, groups int) {
	c := startCluster(t, 3, append(groupFlags(groups), "--snapshot-log-bytes", "8192")...)
	if groups > 1 {
		c.waitBalanced()
	}
	leader := c.waitLeader()

	// Decisions one round trip each from two clients, so that nearly each
	// is its own log entry: key k takes k%5+1 of its 100 units. Key k is of
	// limiterFamilies[k%len(limiterFamilies)], so the snapshot n4 installs
	// holds CL, TB (greedy and INTERVAL), SL and counter (string and hash)
	// keys; with several groups it is in group k mod G.
	const keys = 200
	key := func(k int) string {
		return spreadKey(fmt.Sprintf("member:%s:%03d", memberFamily(k).tag, k), k%groups, groups)
	}
	writeStart := time.Now()
	for k := 0; k < keys; k++ {
		for j := 0; j <= k%5; j++ {
			r, err := c.call(leader, memberFamily(k).call(key(k), decisionCapacity)...)
			r = memberFamily(k).decode(r, decisionCapacity, false)
			if v, ok := r.ints(); err != nil || !ok || len(v) != 5 || v[0] != 0 || v[2] != int64(decisionBurst-j) {
				t.Fatalf("%s (#%d): %v %v", key(k), j+1, r, err)
			}
		}
	}
	// Then filler decisions until every group's leader has compacted its
	// log after a snapshot (hashicorp/raft logs "compacting logs"): a
	// joining node can then only be brought up by snapshots.
	fill := compactLeaderLogs(t, c, leader, 60*time.Second)
	st, err := c.status(leader)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d filler decisions in %v until every group's leader compacted its log; group 0's last snapshot at %d, commit index %d",
		fill, time.Since(writeStart).Round(time.Millisecond), st.snap, st.commit)
	r, err := c.call(leader, "RAFT", "SNAPSHOT")
	if err != nil {
		t.Fatal(err)
	}
	if r.kind != ':' || r.num <= 0 {
		t.Fatalf("RAFT SNAPSHOT on the leader: %v, want a positive index", r)
	}

	// RAFT REMOVE n3, sent to a follower other than n3: it reaches the
	// leader by forwarding.
	n3, via := c.byID("n3"), -1
	for i := range c.nodes {
		if i != leader && i != n3 {
			via = i
		}
	}
	r, err = c.call(via, "RAFT", "REMOVE", "n3")
	if err != nil {
		t.Fatal(err)
	}
	if r.kind != '+' || r.str != "OK" {
		t.Fatalf("RAFT REMOVE n3 sent to %s: %v, want +OK", c.nodes[via].id, r)
	}
	c.kill(n3)
	c.waitFormed(2)
	t.Logf("n3 removed (sent to %s) and killed; two voters", c.nodes[via].id)

	// A fresh n4 joins and must be brought up by a snapshot (of each group).
	joinAt := time.Now()
	n4 := c.addNode("n4", true)
	leader = c.waitFormed(3)
	t.Logf("n4 joined and became a voter in %v; %s leads group 0", time.Since(joinAt).Round(time.Millisecond), c.nodes[leader].id)
	i4 := c.byID("n4")
	st4, err := c.status(i4)
	if err != nil {
		t.Fatal(err)
	}
	if st4.snap <= 0 {
		t.Errorf("n4: raft_last_snapshot_index %d, want > 0", st4.snap)
	}
	for g := range groups {
		if groupLines(n4.logSince(0), "Installed remote snapshot", g, groups) == 0 {
			t.Errorf("n4 caught up in group %d without installing the leader's snapshot (no \"Installed remote snapshot\" of the group in its log): the log it was sent had not been compacted", g)
		}
	}
	c.compareReplicas("after n4 replaced n3")

	// And n4 decides like the others: every key's count is there.
	nc4, err := net.DialTimeout("tcp", n4.addr(), probeTimeout)
	if err != nil {
		t.Fatal(err)
	}
	conn4 := newRESPConn(nc4)
	defer conn4.close()
	for k := 0; k < keys; k++ {
		want := wantInts(0, decisionCapacity, int64(decisionBurst-(k%5+1)), -1, 0)
		r, err := conn4.doWithin(opTimeout, memberFamily(k).call(key(k), decisionCapacity)...)
		r = memberFamily(k).decode(r, decisionCapacity, false)
		v, ok := r.ints()
		if err != nil || !ok || len(v) != 5 || v[0] != want.ints[0] || v[2] != want.ints[2] {
			t.Errorf("%s on n4: %v %v, want allowed with %d remaining", key(k), r, err, want.ints[2])
		}
	}
}

func memberFamily(k int) limiterFamily { return limiterFamilies[k%len(limiterFamilies)] }

// compactLeaderLogs sends decisions, each its own log entry in its group,
// from two clients on node via until every group's leader has logged that
// it compacted the group's log, and returns how many it sent; it fails the
// test after limit. It looks after every 500 decisions, so it stops soon
// after the last group compacts.
func compactLeaderLogs(t *testing.T, c *cluster, via int, limit time.Duration) int {
	t.Helper()
	groups := c.groupCount()
	// 500 decisions a round, whatever the group count.
	const workers = 2
	perRound := 250 / groups
	n := c.nodes[via]
	deadline := time.Now().Add(limit)
	total := 0
	compacted := func() (bool, string) {
		leaders := c.waitLeaders()
		var missing []string
		for g, l := range leaders {
			if groupLines(c.nodes[l].logSince(0), "compacting logs", g, groups) == 0 {
				missing = append(missing, fmt.Sprintf("group %d (led by %s)", g, c.nodes[l].id))
			}
		}
		return len(missing) == 0, strings.Join(missing, ", ")
	}
	for {
		done, missing := compacted()
		if done {
			return total
		}
		if time.Now().After(deadline) {
			st, _ := c.status(via)
			t.Fatalf("the leaders of %s did not compact their logs within %v (%d filler decisions; group 0: last snapshot at %d, commit index %d): is the log kept beyond the snapshots (raft TrailingLogs)?",
				missing, limit, total, st.snap, st.commit)
		}
		var wg sync.WaitGroup
		errs := make([]error, workers)
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				nc, err := net.DialTimeout("tcp", n.addr(), probeTimeout)
				if err != nil {
					errs[w] = err
					return
				}
				conn := newRESPConn(nc)
				defer conn.close()
				// A pipeline of one decision per group: the node splits it
				// into one entry per group, decided at once, so every
				// group's log grows by one per round trip.
				for i := 0; i < perRound; i++ {
					for g := range groups {
						// The same keys each round: a decision on a spent
						// key is still an entry, and the snapshots stay
						// small.
						key := spreadKey(fmt.Sprintf("filler:%d:%d:%d", w, i, g), g, groups)
						conn.send("CL.THROTTLE", key, "0", "1", "86400")
					}
					if err := conn.flush(); err != nil {
						errs[w] = err
						return
					}
					for range groups {
						if r, err := conn.read(); err != nil || r.isErr() {
							errs[w] = fmt.Errorf("filler decision: %v %v", r, err)
							return
						}
					}
				}
			}(w)
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		total += perRound * workers * groups
	}
}
