package node

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redcell/redcell/group"
)

var testSecret = []byte("node-package-test-secret-0123456789")

// fastRaft gives the test clusters elections of a fraction of a second
// that a busy machine does not trigger: the three nodes of a test share one
// process, and with the shipped 100 ms a stall of the whole process (the
// suite runs beside other CPU-bound work in CI) makes a leader step down
// and the test meet a spurious TRYAGAIN. The write timeout stays well above
// answeredAtOnce, so a reply that waited it out cannot pass for one that
// did not wait.
func fastRaft(c *Config) {
	c.ClusterSecret = testSecret
	c.HeartbeatTimeout = 300 * time.Millisecond
	c.ElectionTimeout = 300 * time.Millisecond
	c.LeaderLeaseTimeout = 300 * time.Millisecond
	c.WriteTimeout = 5 * time.Second
}

// startCluster opens n nodes: the first bootstraps, the others join it.
func startCluster(t *testing.T, n int) []*Node {
	t.Helper()
	dirs := make([]string, n)
	for i := range dirs {
		dirs[i] = t.TempDir()
	}
	return startClusterIn(t, dirs)
}

// startClusterIn is startCluster with node i's data dir in dirs[i].
func startClusterIn(t *testing.T, dirs []string) []*Node {
	t.Helper()
	n := len(dirs)
	first := mustOpen(t, dirs[0], func(c *Config) { fastRaft(c); c.NodeID = "n1"; c.Bootstrap = true })
	nodes := []*Node{first}
	for i := 2; i <= n; i++ {
		nodes = append(nodes, mustOpen(t, dirs[i-1], func(c *Config) {
			fastRaft(c)
			c.NodeID = fmt.Sprintf("n%d", i)
			c.Join = first.Addr.String()
		}))
	}
	t.Cleanup(func() {
		for _, nd := range nodes {
			if nd != nil {
				nd.Close()
			}
		}
	})
	waitCond(t, 20*time.Second, "every node a voter", func() bool {
		ms, err := first.base.group.Members()
		if err != nil || len(ms) != n {
			return false
		}
		for _, m := range ms {
			if m.Suffrage != group.Voter {
				return false
			}
		}
		return true
	})
	return nodes
}

func waitCond(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond) // polling a condition with a deadline
	}
}

func leaderOf(nodes []*Node) int {
	for i, n := range nodes {
		if n != nil && n.base.group.IsLeader() {
			return i
		}
	}
	return -1
}

// Three nodes: joined by address, promoted to voters, any node decides any
// request (followers forward), and the decisions are one sequence: a limit
// of 10 per day admits exactly 10 whichever nodes the calls go to. Then the
// leader stops and the survivors go on deciding, still within the limit.
func TestClusterJoinForwardAndFailover(t *testing.T) {
	nodes := startCluster(t, 3)
	clients := make([]*client, 3)
	for i, n := range nodes {
		clients[i] = dial(t, n)
	}
	allowed := 0
	for i := 0; i < 15; i++ {
		got := clients[i%3].throttle(t, "shared")
		if strings.HasPrefix(got, ":0 ") {
			allowed++
		} else if !strings.HasPrefix(got, ":1 ") {
			t.Fatalf("call %d on node %d: %q", i, i%3, got)
		}
	}
	if allowed != 10 {
		t.Fatalf("%d of 15 calls allowed across three nodes, want 10", allowed)
	}
	for i, c := range clients {
		if got := c.do(t, "CL.PEEK", "shared", "9", "1", "86400"); !strings.HasPrefix(got, ":1 :10 :0 ") {
			t.Errorf("CL.PEEK on node %d: %q, want limited with 0 remaining", i, got)
		}
	}

	l := leaderOf(nodes)
	if l < 0 {
		t.Fatal("no leader")
	}
	if err := nodes[l].Close(); err != nil {
		t.Fatalf("closing the leader: %v", err)
	}
	nodes[l] = nil
	for i := range nodes {
		if nodes[i] == nil {
			continue
		}
		c := dial(t, nodes[i])
		// A write forwarded on a connection the old leader closed may be
		// answered "outcome unknown" (TRYAGAIN Leadership changed…): a
		// client retries it, counting it as possibly applied.
		got, _ := c.throttleRetrying(t, "shared") // limited either way
		if !strings.HasPrefix(got, ":1 :10 :0 ") {
			t.Errorf("after the leader left, node %d answered %q: want still limited", i, got)
		}
		got, unknown := c.throttleRetrying(t, fmt.Sprintf("fresh%d", i))
		if !strings.HasPrefix(got, ":0 :10 :9 ") && !(unknown > 0 && strings.HasPrefix(got, ":0 :10 :8 ")) {
			t.Errorf("after the leader left, node %d answered %q for a fresh key (%d outcomes unknown before)", i, got, unknown)
		}
	}
}

// digest sends RAFT DIGEST and returns "index hex". (do reads an array's
// first lines only, so the bulk string's body is read here.)
func (cl *client) digest(t *testing.T) string {
	t.Helper()
	got := cl.do(t, "RAFT", "DIGEST")
	idx, hdr, ok := strings.Cut(got, " ")
	if !ok || !strings.HasPrefix(idx, ":") || hdr != "$64" {
		t.Fatalf("RAFT DIGEST: %q", got)
	}
	sum, err := cl.r.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	return idx[1:] + " " + strings.TrimSpace(sum)
}

// RAFT administration sent to any node: digests agree once every node has
// applied the same entries; TRANSFER and REMOVE sent to a follower are
// carried out by the leader; SNAPSHOT answers an index.
func TestClusterAdministration(t *testing.T) {
	nodes := startCluster(t, 3)
	c0 := dial(t, nodes[0])
	for i := 0; i < 30; i++ {
		c0.throttle(t, fmt.Sprintf("k%d", i%7))
	}
	var digests []string
	waitCond(t, 10*time.Second, "equal digests on all nodes", func() bool {
		digests = digests[:0]
		for _, n := range nodes {
			digests = append(digests, dial(t, n).digest(t))
		}
		return digests[0] == digests[1] && digests[1] == digests[2]
	})

	l := leaderOf(nodes)
	follower := (l + 1) % 3
	cf := dial(t, nodes[follower])
	if got := cf.do(t, "RAFT", "TRANSFER", nodes[follower].ID); got != "+OK" {
		t.Fatalf("RAFT TRANSFER to %s sent to it: %q", nodes[follower].ID, got)
	}
	waitCond(t, 10*time.Second, "the transfer", func() bool { return nodes[follower].base.group.IsLeader() })

	victim := (follower + 1) % 3
	other := (follower + 2) % 3
	if got := dial(t, nodes[other]).do(t, "RAFT", "REMOVE", nodes[victim].ID); got != "+OK" {
		t.Fatalf("RAFT REMOVE sent to a follower: %q", got)
	}
	ms, err := nodes[follower].base.group.Members()
	if err != nil || len(ms) != 2 {
		t.Fatalf("members after REMOVE: %v, %v", ms, err)
	}
	if got := cf.do(t, "RAFT", "SNAPSHOT"); !strings.HasPrefix(got, ":") || got == ":0" {
		t.Errorf("RAFT SNAPSHOT: %q, want a positive index", got)
	}
	if got := cf.do(t, "RAFT", "REMOVE", "nobody"); !strings.HasPrefix(got, "-ERR") || !strings.Contains(got, "not a member") {
		t.Errorf("RAFT REMOVE of a stranger: %q", got)
	}
	if got := cf.do(t, "RAFT", "BOGUS"); !strings.HasPrefix(got, "-ERR unknown subcommand 'BOGUS'. Try RAFT HELP.") {
		t.Errorf("RAFT BOGUS: %q", got)
	}
}

// INFO replication: the leader lists every member with its last contact
// and lag once it has polled them; a follower names its leader the way
// Redis replicas name their master.
func TestClusterInfoReplication(t *testing.T) {
	nodes := startCluster(t, 3)
	info := func(n *Node) map[string]string {
		m := map[string]string{}
		nodeStatus{n}.Replication().Fields(func(k string, v any) { m[k] = fmt.Sprint(v) })
		return m
	}
	l := leaderOf(nodes)
	waitCond(t, 10*time.Second, "the leader to hear from both followers", func() bool {
		m := info(nodes[l])
		return m["connected_slaves"] == "2"
	})
	m := info(nodes[l])
	for i := 0; i < 3; i++ {
		line := m[fmt.Sprintf("member%d", i)]
		if strings.Contains(line, "self=1") {
			continue
		}
		if !strings.Contains(line, "suffrage=voter") || !strings.Contains(line, "last_contact_ms=") || strings.Contains(line, "lag=-1") {
			t.Errorf("leader's member%d line: %q", i, line)
		}
	}
	f := info(nodes[(l+1)%3])
	if f["master_link_status"] != "up" || f["cluster_leader_id"] != nodes[l].ID || f["master_port"] == "" {
		t.Errorf("follower's view: %v", f)
	}
}

// A node that has lost its quorum, once it knows that no leader is left
// (no contact for longer than an election takes), answers writes and
// linearizable reads CLUSTERDOWN at once instead of after the write
// timeout, and a READONLY connection reads its own applied state at once.
func TestClusterReadonlyReadsLocalState(t *testing.T) {
	nodes := startCluster(t, 3)
	l := leaderOf(nodes)
	dial(t, nodes[l]).throttle(t, "seen")
	survivor := (l + 1) % 3
	waitCond(t, 5*time.Second, "the survivor to apply the write", func() bool {
		return nodes[survivor].base.fsm.AppliedIndex() >= nodes[l].base.fsm.AppliedIndex()
	})
	for i := range nodes {
		if i != survivor {
			nodes[i].Close()
			nodes[i] = nil
		}
	}
	waitCond(t, 5*time.Second, "the survivor to know it has no leader", func() bool {
		return infoField(nodes[survivor], "cluster_state") == "no_leader"
	})
	c := dial(t, nodes[survivor])
	if got := c.timedDo(t, answeredAtOnce, "CL.PEEK", "seen", "9", "1", "86400"); !strings.HasPrefix(got, "-CLUSTERDOWN No leader") {
		t.Errorf("linearizable read without a quorum: %q, want CLUSTERDOWN", got)
	}
	if got := c.timedDo(t, answeredAtOnce, "CL.THROTTLE", "seen", "9", "1", "86400"); !strings.HasPrefix(got, "-CLUSTERDOWN No leader") {
		t.Errorf("write without a quorum: %q, want CLUSTERDOWN", got)
	}
	if got := c.do(t, "READONLY"); got != "+OK" {
		t.Fatalf("READONLY: %q", got)
	}
	start := time.Now()
	if got := c.do(t, "CL.PEEK", "seen", "9", "1", "86400"); !strings.HasPrefix(got, ":0 :10 :8 ") {
		t.Errorf("READONLY read: %q, want the applied state (one unit taken)", got)
	}
	if d := time.Since(start); d > answeredAtOnce {
		t.Errorf("READONLY read took %v: it must not wait for a leader", d)
	}
	if got := c.do(t, "READWRITE"); got != "+OK" {
		t.Fatalf("READWRITE: %q", got)
	}
}

// throttleRetrying is throttle as a client that retries TRYAGAIN and
// CLUSTERDOWN does it (for up to 10 s): the final reply, and how many
// attempts ended with an unknown outcome (which may have been applied).
func (cl *client) throttleRetrying(t *testing.T, key string) (reply string, unknown int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := cl.throttle(t, key)
		retry := strings.HasPrefix(got, "-TRYAGAIN") || strings.HasPrefix(got, "-CLUSTERDOWN")
		if !retry || time.Now().After(deadline) {
			return got, unknown
		}
		if strings.Contains(got, "may or may not") {
			unknown++
		}
	}
}
