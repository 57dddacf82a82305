package systemtest

import (
	"context"
	"strconv"
	"testing"

	"github.com/redis/rueidis"
)

// TestClusterTrackingSeesWritesFromEveryNode: a client tracking keys on one
// follower hears of writes made through the other follower and through the
// leader, because invalidations come from the writes this node applies, not
// from its own clients' commands.
func TestClusterTrackingSeesWritesFromEveryNode(t *testing.T) {
	c := startCluster(t, 3)
	leader := c.waitLeader()
	f1, f2 := (leader+1)%3, (leader+2)%3
	tr := mustDial(t, c.nodes[f1].addr())
	if r := mustDo(t, tr, "HELLO", "3"); r.isErr() {
		t.Fatalf("HELLO 3: %v", r)
	}
	expectReply(t, tr, wantStatus("OK"), "CLIENT", "TRACKING", "ON")

	// RESP2 redirect on the same follower.
	sub := mustDial(t, c.nodes[f1].addr())
	id := mustDo(t, sub, "CLIENT", "ID")
	if r := mustDo(t, sub, "SUBSCRIBE", "__redis__:invalidate"); r.String() != `["subscribe" "__redis__:invalidate" 1]` {
		t.Fatalf("SUBSCRIBE = %v", r)
	}
	tr2 := mustDial(t, c.nodes[f1].addr())
	expectReply(t, tr2, wantStatus("OK"), "CLIENT", "TRACKING", "ON", "REDIRECT", strconv.FormatInt(id.num, 10))

	// appliedHere waits until f1 has applied everything the leader has
	// committed: then f1 has applied the write and queued its pushes.
	appliedHere := func() {
		t.Helper()
		st, err := c.status(leader)
		if err != nil {
			t.Fatal(err)
		}
		c.waitFor(convergeTimeout, "the follower applies the write", func() (bool, string) {
			fs, err := c.status(f1)
			if err != nil {
				return false, err.Error()
			}
			return fs.applied >= st.commit, "applied " + strconv.FormatInt(fs.applied, 10) + " of " + strconv.FormatInt(st.commit, 10)
		})
	}
	// pushesBeforePong sends PING on conn and returns what came before PONG.
	pushesBeforePong := func(conn *respConn) []string {
		t.Helper()
		conn.send("PING")
		if err := conn.flush(); err != nil {
			t.Fatal(err)
		}
		var got []string
		for {
			r, err := conn.read()
			if err != nil {
				t.Fatal(err)
			}
			if r.String() == "+PONG" || r.String() == `["pong" ""]` {
				return got
			}
			got = append(got, r.String())
		}
	}

	// rueidis with its defaults (RESP3, client-side caching) on the
	// follower, held there as a standalone client: as a cluster client it
	// would send its reads to the leader, the shard's master.
	ctx, cancel := context.WithTimeout(context.Background(), clientTimeout)
	defer cancel()
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{c.nodes[f1].addr()}, ForceSingleClient: true})
	if err != nil {
		t.Fatalf("rueidis.NewClient on %s: %v", c.nodes[f1].id, err)
	}
	defer rc.Close()

	for _, writer := range []int{f2, leader} {
		key := "rueidis-via-" + c.nodes[writer].id
		checkRueidisInvalidation(ctx, t, rc, key, func() {
			wc := mustDial(t, c.nodes[writer].addr())
			if r := mustDo(t, wc, "CL.THROTTLE", key, "5", "1", "60"); r.isErr() {
				t.Fatalf("CL.THROTTLE on %s: %v", c.nodes[writer].id, r)
			}
			appliedHere()
		})
	}

	for _, writer := range []int{f2, leader} {
		key := "tracked-via-" + c.nodes[writer].id
		for _, conn := range []*respConn{tr, tr2} {
			if r := mustDo(t, conn, "CL.PEEK", key, "5", "1", "60"); r.isErr() {
				t.Fatalf("CL.PEEK on %s: %v", c.nodes[f1].id, r)
			}
		}
		wc := mustDial(t, c.nodes[writer].addr())
		if r := mustDo(t, wc, "CL.THROTTLE", key, "5", "1", "60"); r.isErr() {
			t.Fatalf("CL.THROTTLE on %s: %v", c.nodes[writer].id, r)
		}
		appliedHere()
		want := `>["invalidate" ["` + key + `"]]`
		if got := pushesBeforePong(tr); len(got) != 1 || got[0] != want {
			t.Errorf("write through %s: RESP3 tracking client on %s got %q, want [%s]", c.nodes[writer].id, c.nodes[f1].id, got, want)
		}
		want = `["message" "__redis__:invalidate" ["` + key + `"]]`
		if got := pushesBeforePong(sub); len(got) != 1 || got[0] != want {
			t.Errorf("write through %s: RESP2 redirect subscriber on %s got %q, want [%s]", c.nodes[writer].id, c.nodes[f1].id, got, want)
		}
	}
}
