package systemtest

import (
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestClusterReplaceNodeBySnapshot replaces a member: with a small snapshot
// threshold (64 entries, checked every 200 ms) the log is compacted while
// decisions are written one entry each; RAFT REMOVE n3 (sent to a follower,
// which hands it to the leader) takes n3 out and it is killed; a fresh n4
// with an empty data dir joins, receives the leader's snapshot instead of
// the compacted log (its log says "Installed remote snapshot" and INFO shows
// a snapshot index), is promoted to voter, and holds exactly the state of
// the others (RAFT DIGEST at the same index).
func TestClusterReplaceNodeBySnapshot(t *testing.T) {
	c := startCluster(t, 3, "--snapshot-threshold", "64", "--snapshot-interval", "200ms")
	leader := c.waitLeader()

	// Decisions one round trip each from two clients, so that nearly each
	// is its own log entry: key k takes k%5+1 of its 100 units. Key k is of
	// limiterFamilies[k%len(limiterFamilies)], so the snapshot n4 installs
	// holds CL, TB (greedy and INTERVAL), SL and counter (string and hash)
	// keys.
	const keys = 200
	key := func(k int) string { return fmt.Sprintf("member:%s:%03d", memberFamily(k).tag, k) }
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
	// Then filler decisions until the leader has compacted its log after a
	// snapshot (hashicorp/raft logs "compacting logs"): a joining node can
	// then only be brought up by the snapshot.
	fill := compactLeaderLog(t, c, leader, 60*time.Second)
	st, err := c.status(leader)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d filler decisions in %v until the leader compacted its log; last snapshot at %d, commit index %d",
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

	// A fresh n4 joins and must be brought up by a snapshot.
	joinAt := time.Now()
	n4 := c.addNode("n4", true)
	leader = c.waitFormed(3)
	t.Logf("n4 joined and became a voter in %v; %s leads", time.Since(joinAt).Round(time.Millisecond), c.nodes[leader].id)
	i4 := c.byID("n4")
	st4, err := c.status(i4)
	if err != nil {
		t.Fatal(err)
	}
	if st4.snap <= 0 {
		t.Errorf("n4: raft_last_snapshot_index %d, want > 0", st4.snap)
	}
	if log := n4.logSince(0); !strings.Contains(log, "Installed remote snapshot") {
		t.Errorf("n4 caught up without installing the leader's snapshot (no \"Installed remote snapshot\" in its log): the log it was sent had not been compacted")
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

// compactLeaderLog sends decisions, each its own log entry, from two
// clients on the leader until the leader's log says it compacted its log,
// and returns how many it sent; it fails the test after limit.
func compactLeaderLog(t *testing.T, c *cluster, leader int, limit time.Duration) int {
	t.Helper()
	n := c.nodes[leader]
	from := int64(0)
	deadline := time.Now().Add(limit)
	total := 0
	for !strings.Contains(n.logSince(from), "compacting logs") {
		if time.Now().After(deadline) {
			st, _ := c.status(leader)
			t.Fatalf("the leader did not compact its log within %v (%d filler decisions, last snapshot at %d, commit index %d): is the log kept beyond the snapshots (raft TrailingLogs)?",
				limit, total, st.snap, st.commit)
		}
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for w := 0; w < 2; w++ {
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
				for i := 0; i < 500; i++ {
					r, err := conn.doWithin(opTimeout, "CL.THROTTLE", fmt.Sprintf("filler:%d:%d", w, i), "0", "1", "86400")
					if err != nil || r.isErr() {
						errs[w] = fmt.Errorf("filler decision: %v %v", r, err)
						return
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
		total += 1000
	}
	return total
}
