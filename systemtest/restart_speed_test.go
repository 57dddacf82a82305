package systemtest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// How soon a restarted node decides again (issue 35, "fast restarts"). The
// bounds are generous (the figures are bench -mode restart's): they catch
// a node that waits out a timer it need not, not a slow machine. Safety on
// the way — a restarted node answers LOADING, never from a keyspace behind
// its log — is covered by TestLoadingAfterKillNine here, node's
// TestRestartedNodeAnswersLOADINGUntilLoaded and group's Test_Loading_*;
// these tests check that every reply before the first decision is LOADING
// or a failover error, and that the first decision counts every decision
// acknowledged before the restart.
const (
	// restartDecideBound: process start → first decision answered.
	restartDecideBound = 1500 * time.Millisecond
	// restartDownFor is how long a follower stays down: long enough for
	// the leader's failed attempts to reach it to pile up (hashicorp/raft
	// doubles its pause after each one, up to 10 s).
	restartDownFor = 8 * time.Second
	restartPrior   = 20 // decisions on the probe key before the restart
	restartLimit   = 1000
)

// TestRestartedLoneNodeDecidesAtOnce: a single node, restarted with a small
// log, does not wait out its heartbeat timeout before electing itself.
// With a 3 s heartbeat timeout a lone node used to need 3-6 s.
func TestRestartedLoneNodeDecidesAtOnce(t *testing.T) {
	t.Parallel()
	n := startTestNode(t, "lone-restart", "--raft-heartbeat-timeout", "3s")
	key := "restart-speed:lone"
	for i := 0; i < restartPrior; i++ {
		mustDecide(t, n.addr(), key)
	}
	n.kill()
	took := relaunchAndDecide(t, n, key)
	t.Logf("lone node: first decision %v after start", took.Round(time.Millisecond))
}

// TestClusterRestartedFollowerDecidesAtOnce: a follower down for several
// seconds and restarted while the others run decides (through its
// leader) soon after it starts: the leader reaches it as soon as it
// listens instead of sleeping out the backoff its failed attempts built
// up, and it leaves LOADING once it has applied what the leader says is
// committed.
//
// The cluster has no proxies between its nodes (startDirectCluster): a
// proxy accepts a connection for a stopped node and then closes it, which
// a dialer cannot tell from a peer that turns every peer away (no cluster
// secret), so Raft's dials wait only for a peer that refuses or does not
// answer.
func TestClusterRestartedFollowerDecidesAtOnce(t *testing.T) {
	c := startDirectCluster(t, 3)
	leader := c.waitLeader()
	f := (leader + 1) % len(c.nodes)
	key := "restart-speed:follower"
	for i := 0; i < restartPrior; i++ {
		mustDecide(t, c.nodes[leader].addr(), key)
	}
	c.kill(f)
	// Decisions while it is down, through the survivors: its log is now
	// behind the leader's.
	for i := 0; i < restartPrior; i++ {
		mustDecide(t, c.nodes[leader].addr(), key+":down")
	}
	time.Sleep(restartDownFor) // the downtime is what is under test, not a synchronisation
	took := relaunchAndDecide(t, c.nodes[f].node, key)
	t.Logf("follower %s: first decision %v after start", c.nodes[f].id, took.Round(time.Millisecond))
}

// startDirectCluster is startCluster without the fault-injecting proxies.
func startDirectCluster(t *testing.T, size int) *cluster {
	t.Helper()
	dir := t.TempDir()
	c := &cluster{t: t, net: newFaultNet(t), secretFile: filepath.Join(dir, "secret"), logDir: dir, direct: true}
	if err := os.WriteFile(c.secretFile, []byte(clusterSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= size; i++ {
		c.addNode(fmt.Sprintf("n%d", i), i > 1)
	}
	c.waitFormed(size)
	return c
}

// mustDecide makes one allowed decision on key, failing the test otherwise.
func mustDecide(t *testing.T, addr, key string) {
	t.Helper()
	r, err := callAddr(addr, probeTimeout, "CL.THROTTLE", key, fmt.Sprint(restartLimit-1), fmt.Sprint(restartLimit), "86400")
	if err != nil {
		t.Fatal(err)
	}
	if ints, ok := r.ints(); !ok || ints[0] != 0 {
		t.Fatalf("CL.THROTTLE %s: %v", key, r)
	}
}

// relaunchAndDecide starts n again and asks for a decision on key every 10 ms
// until one comes, failing the test when it takes longer than
// restartDecideBound, when a reply other than LOADING or a failover error
// comes first, or when the decision does not count the restartPrior
// decisions made before. It returns start → decision.
func relaunchAndDecide(t *testing.T, n *node, key string) time.Duration {
	t.Helper()
	start := time.Now()
	if err := n.launch(); err != nil {
		t.Fatal(err)
	}
	var last string
	for time.Since(start) < restartDecideBound+10*time.Second {
		r, err := callAddr(n.addr(), probeTimeout, "CL.THROTTLE", key, fmt.Sprint(restartLimit-1), fmt.Sprint(restartLimit), "86400")
		took := time.Since(start)
		switch {
		case err != nil:
			last = err.Error()
		case r.isErr():
			if !strings.HasPrefix(r.str, "LOADING") && !isFailoverError(r.str) {
				t.Fatalf("%s after %v: %v, want LOADING or a decision", n.name, took, r)
			}
			last = r.str
		default:
			ints, ok := r.ints()
			if !ok || ints[0] != 0 || ints[2] != restartLimit-restartPrior-1 {
				t.Fatalf("%s's first decision after the restart: %v, want allowed with %d left", n.name, r, restartLimit-restartPrior-1)
			}
			if took > restartDecideBound {
				t.Fatalf("%s decided %v after its start, want within %v", n.name, took, restartDecideBound)
			}
			return took
		}
		if !n.running() {
			t.Fatalf("%s exited after its restart", n.name)
		}
		<-time.After(10 * time.Millisecond) // poll interval
	}
	t.Fatalf("%s: no decision %v after its restart (last: %s)", n.name, time.Since(start), last)
	return 0
}
