package node

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// answeredAtOnce bounds a reply that must not wait for a leader: under half
// the tests' write timeout (5 s, fastRaft), with room for a busy machine
// (idle, these replies take a few ms).
const answeredAtOnce = 2 * time.Second

// infoField reads one field of node n's INFO replication.
func infoField(n *Node, name string) string {
	var v string
	nodeStatus{n}.Replication().Fields(func(k string, val any) {
		if k == name {
			v = fmt.Sprint(val)
		}
	})
	return v
}

// timedDo is do, failing the test if the reply took longer than limit.
func (cl *client) timedDo(t *testing.T, limit time.Duration, args ...string) string {
	t.Helper()
	start := time.Now()
	got := cl.do(t, args...)
	if d := time.Since(start); d > limit {
		t.Errorf("%v took %v, want at most %v (reply %q)", args, d, limit, got)
	}
	return got
}

// wantRemoved checks that every command that needs the cluster answers the
// removed error at once on cl (a connection to node id), and that the node
// still answers what concerns only itself.
func wantRemoved(t *testing.T, cl *client, id string) {
	t.Helper()
	isRemoved := func(got string) bool {
		return strings.HasPrefix(got, "-CLUSTERDOWN This node ("+id+") was removed from the cluster")
	}
	for _, cmd := range [][]string{
		{"CL.THROTTLE", "k", "9", "1", "86400"}, // a write
		{"CL.PEEK", "k", "9", "1", "86400"},     // a linearizable read
		{"DBSIZE"},
		{"RAFT", "TRANSFER"},
		{"RAFT", "JOIN", "nx", "127.0.0.1:1"},
	} {
		if got := cl.timedDo(t, answeredAtOnce, cmd...); !isRemoved(got) {
			t.Errorf("%v on removed %s: %q, want the removed error", cmd, id, got)
		}
	}
	if got := cl.do(t, "MULTI"); got != "+OK" {
		t.Fatalf("MULTI: %q", got)
	}
	cl.do(t, "CL.THROTTLE", "k", "9", "1", "86400")
	if got := cl.timedDo(t, answeredAtOnce, "EXEC"); !isRemoved(got) {
		t.Errorf("EXEC on removed %s: %q, want the removed error", id, got)
	}
	// READONLY reads too: the state is frozen at the removal (ReadLocal).
	cl.do(t, "READONLY")
	if got := cl.timedDo(t, answeredAtOnce, "CL.PEEK", "k", "9", "1", "86400"); !isRemoved(got) {
		t.Errorf("READONLY read on removed %s: %q, want the removed error", id, got)
	}
	cl.do(t, "READWRITE")
	if got := cl.do(t, "PING"); got != "+PONG" {
		t.Errorf("PING on removed %s: %q", id, got)
	}
}

// A follower taken out by RAFT REMOVE (sent to the other follower) answers
// every request that needs the cluster at once with an error that says it
// was removed — before, it forwarded for a moment and then made every
// client wait out the write timeout for CLUSTERDOWN "No leader is known" —
// INFO says removed, and so does the node after a restart on its data dir.
func TestRemovedFollowerSaysSoAtOnce(t *testing.T) {
	dirs := []string{t.TempDir(), t.TempDir(), t.TempDir()}
	nodes := startClusterIn(t, dirs)
	l := leaderOf(nodes)
	victim, via := (l+1)%3, (l+2)%3
	cv := dial(t, nodes[victim])
	if got := cv.throttle(t, "before"); !strings.HasPrefix(got, ":0 ") {
		t.Fatalf("a decision on %s before the removal: %q", nodes[victim].ID, got)
	}
	if got := dial(t, nodes[via]).do(t, "RAFT", "REMOVE", nodes[victim].ID); got != "+OK" {
		t.Fatalf("RAFT REMOVE %s sent to %s: %q", nodes[victim].ID, nodes[via].ID, got)
	}
	// The removal entry reaches the victim with (or just after) the commit.
	waitCond(t, time.Second, "the victim to know it was removed", func() bool { return nodes[victim].base.group.Removed() })
	wantRemoved(t, cv, nodes[victim].ID)
	if got := infoField(nodes[victim], "cluster_state"); got != "removed" {
		t.Errorf("INFO replication cluster_state on the removed node: %q", got)
	}
	// The others are not removed, and decide.
	for _, i := range []int{l, via} {
		if nodes[i].base.group.Removed() || infoField(nodes[i], "cluster_state") != "ok" {
			t.Errorf("%s: removed %v, cluster_state %q", nodes[i].ID, nodes[i].base.group.Removed(), infoField(nodes[i], "cluster_state"))
		}
		if got := dial(t, nodes[i]).throttle(t, "after"); !strings.HasPrefix(got, ":0 ") && !strings.HasPrefix(got, ":1 ") {
			t.Errorf("a decision on %s after the removal: %q", nodes[i].ID, got)
		}
	}

	// Restarted on its data dir, it knows at once.
	id := nodes[victim].ID
	mustClose(t, nodes[victim])
	nodes[victim] = mustOpen(t, dirs[victim], func(c *Config) { fastRaft(c); c.NodeID = id })
	wantRemoved(t, dial(t, nodes[victim]), id)
}

// A leader taken out by RAFT REMOVE (sent to a follower) steps down and
// stops its raft (raft's ShutdownOnRemove); it answers the removed error at
// once, and the other two elect a leader and decide.
func TestRemovedLeaderSaysSoAtOnce(t *testing.T) {
	nodes := startCluster(t, 3)
	l := leaderOf(nodes)
	via := (l + 1) % 3
	if got := dial(t, nodes[via]).do(t, "RAFT", "REMOVE", nodes[l].ID); got != "+OK" {
		t.Fatalf("RAFT REMOVE of the leader %s sent to %s: %q", nodes[l].ID, nodes[via].ID, got)
	}
	waitCond(t, time.Second, "the old leader to know it was removed", func() bool { return nodes[l].base.group.Removed() })
	wantRemoved(t, dial(t, nodes[l]), nodes[l].ID)
	got, _ := dial(t, nodes[via]).throttleRetrying(t, "after")
	if !strings.HasPrefix(got, ":0 ") {
		t.Errorf("a decision on %s after the leader's removal: %q", nodes[via].ID, got)
	}
}

// A node that joins walks through configurations that do not name it: it
// is never taken for removed, and decides once it has joined.
func TestJoiningNodeIsNotRemoved(t *testing.T) {
	nodes := startCluster(t, 2)
	c0 := dial(t, nodes[0])
	for i := 0; i < 50; i++ {
		c0.throttle(t, fmt.Sprintf("pre%d", i))
	}
	seen := make(chan bool, 1)
	joined := make(chan struct{})
	joiner := mustOpen(t, t.TempDir(), func(c *Config) {
		fastRaft(c)
		c.NodeID = "n3"
		c.Join = nodes[0].Addr.String()
	})
	t.Cleanup(func() { joiner.Close() })
	go func() {
		removed := false
		for {
			select {
			case <-joined:
				seen <- removed
				return
			default:
			}
			removed = removed || joiner.base.group.Removed()
			time.Sleep(time.Millisecond) // sampling the joiner's view while it catches up
		}
	}()
	waitCond(t, 20*time.Second, "n3 a voter", func() bool {
		ms, err := nodes[0].base.group.Members()
		return err == nil && len(ms) == 3 && ms[2].Suffrage == "voter"
	})
	close(joined)
	if <-seen {
		t.Error("the joining node was taken for removed while it caught up")
	}
	if got := dial(t, joiner).throttle(t, "joined"); !strings.HasPrefix(got, ":0 ") {
		t.Errorf("a decision on the joined node: %q", got)
	}
}
