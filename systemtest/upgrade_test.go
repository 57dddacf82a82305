package systemtest

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// A rolling upgrade that adds a log code (request/featurelevel.go): two
// builds in one cluster. The new build is this one with the tag
// redcell_nextlevel: it supports cluster feature level 2 and knows one code
// of that level, which DEBUG NEXTLEVEL key value (SET key value) proposes.
// The old build is this one without the tag (level 1).

// nextLevelTag is the build tag of the new build.
const nextLevelTag = "redcell_nextlevel"

// levelRefusal is what every new node answers DEBUG NEXTLEVEL while the
// cluster is at level 1.
const levelRefusal = "ERR 'DEBUG NEXTLEVEL' needs cluster feature level 2 (every member must run a build that supports it); the cluster is at level 1"

// levelTimeout bounds the wait for the leader to raise the level once
// every member supports it: it learns that from its once-a-second status
// poll (two of them after a restart), then commits one entry.
const levelTimeout = 20 * time.Second

// TestRollingUpgradeRaisesFeatureLevel: with two new nodes and one old one
// the cluster stays at level 1: the new command is refused with the
// feature-level error on every new node, leader or follower, while the old
// node leads (a new follower must not send the old leader a code it cannot
// decode) and while a new one does, and the old node keeps applying the
// log. Once the old
// node is restarted with the new build, on its data dir, the level rises to
// 2, the command is accepted on every node and replicated (same digest
// everywhere), and a restart of the whole cluster keeps level 2. An old
// build that then tries to join is refused with an error that says why.
func TestRollingUpgradeRaisesFeatureLevel(t *testing.T) {
	newBin, err := buildRedcellTags(t.TempDir(), nextLevelTag)
	if err != nil {
		t.Fatal(err)
	}
	// The old node bootstraps: a new node alone would raise the level at
	// its first status poll, before the old one joined (and then refuse
	// it, as the end of this test shows).
	c := startClusterWith(t, 3, nil, map[string]string{"n2": newBin, "n3": newBin})
	oldNode := c.byID("n1")
	for i := range c.nodes {
		supported := "2"
		if i == oldNode {
			supported = "1"
		}
		c.waitFeatureLevel(i, "1", supported)
	}

	// With the old node leading, the new followers refuse the command
	// themselves: the old leader could not decode it.
	c.transferTo(oldNode)
	c.requireLevelRefusals("the old node leading", oldNode)
	for i := range c.nodes {
		c.mustReply(i, "OK", "SET", fmt.Sprintf("old-leader-%d", i), "v")
	}

	// With a new node leading, it has polled every member and found n1
	// below (logged once per cause): the level stays, and the leader
	// refuses the command too.
	newLeader := c.byID("n2")
	c.transferTo(newLeader)
	c.waitFor(levelTimeout, "the new leader to find n1 holding the feature level back", func() (bool, string) {
		log := c.nodes[newLeader].logTail(1 << 20)
		return strings.Contains(log, "feature level stays below") && strings.Contains(log, "member=n1"), "not logged yet"
	})
	c.requireLevelRefusals("a new node leading", oldNode)
	// The old node serves, and applies what the others write.
	for i := range c.nodes {
		c.mustReply(i, "OK", "SET", fmt.Sprintf("new-leader-%d", i), "v")
	}
	c.compareReplicas("mixed builds at level 1")

	// Upgrade the old node: stop it by PID, start the new build on its
	// data dir and port.
	c.nodes[oldNode].mustStop(t)
	c.nodes[oldNode].binary = newBin
	c.restart(oldNode)
	for i := range c.nodes {
		c.waitFeatureLevel(i, "2", "2")
	}
	for i := range c.nodes {
		key := fmt.Sprintf("next-%d", i)
		c.mustReply(i, "OK", "DEBUG", "NEXTLEVEL", key, "value")
		c.mustReply(i, "value", "GET", key)
	}
	c.compareReplicas("all new builds at level 2")

	// A restart of everything keeps the level: it is in the log and, after
	// a snapshot, in the snapshot (version 6).
	c.mustReply(c.waitLeader(), "", "RAFT", "SNAPSHOT")
	c.stopAll()
	for i := range c.nodes {
		c.restart(i)
	}
	c.waitFormed(3)
	for i := range c.nodes {
		c.waitFeatureLevel(i, "2", "2")
		c.mustReply(i, "value", "GET", fmt.Sprintf("next-%d", i))
	}
	c.mustReply(0, "OK", "DEBUG", "NEXTLEVEL", "after-restart", "value")
	c.compareReplicas("after a restart of every node")

	// An old build cannot join a cluster at level 2.
	old := newNode("old-joiner", t.TempDir(), c.logDir, "--cluster-secret-file", c.secretFile, "--node-id", "n4",
		"--join", c.nodes[0].addr(), "--raft-heartbeat-timeout", testHeartbeat.String())
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	old.port = port
	registerNodeCleanup(t, old, 0)
	if err := old.launch(); err != nil {
		t.Fatal(err)
	}
	if err := old.waitExit(clusterFormTimeout); err != nil {
		t.Fatal(err)
	}
	const why = "node n4 not added: it runs a build that supports cluster feature level 1, and the cluster is at level 2"
	if log := old.logTail(1 << 16); old.exitCode() == 0 || !strings.Contains(log, why) {
		t.Fatalf("an old build joining a level 2 cluster: exit code %d, want non-zero and %q in its log:\n%s",
			old.exitCode(), why, lastLines(log, 20))
	}
}

// waitFeatureLevel waits until node i's INFO raft shows the active level
// active and this build's supported level supported.
func (c *cluster) waitFeatureLevel(i int, active, supported string) {
	c.t.Helper()
	c.waitFor(levelTimeout, fmt.Sprintf("%s at feature_level:%s feature_level_supported:%s", c.nodes[i].id, active, supported), func() (bool, string) {
		info, err := c.info(i)
		if err != nil {
			return false, err.Error()
		}
		got := infoField(info, "feature_level") + " " + infoField(info, "feature_level_supported")
		return got == active+" "+supported, got
	})
}

// transferTo hands leadership to node i and waits until it leads.
func (c *cluster) transferTo(i int) {
	c.t.Helper()
	if st, err := c.status(i); err == nil && st.state == "leader" && st.ready {
		return
	}
	if r, err := c.call(c.waitLeader(), "RAFT", "TRANSFER", c.nodes[i].id); err != nil || r.isErr() {
		c.t.Fatalf("RAFT TRANSFER %s: %v %v", c.nodes[i].id, r, err)
	}
	c.waitFor(clusterFormTimeout, c.nodes[i].id+" to lead", func() (bool, string) {
		st, err := c.status(i)
		return err == nil && st.state == "leader" && st.ready, fmt.Sprint(st, err)
	})
}

// requireLevelRefusals checks DEBUG NEXTLEVEL on every node of a cluster
// at level 1: the feature-level error on each new node, and on the old one
// an unknown subcommand (its build has no such command).
func (c *cluster) requireLevelRefusals(when string, oldNode int) {
	c.t.Helper()
	for i := range c.nodes {
		r, err := c.call(i, "DEBUG", "NEXTLEVEL", "k", "v")
		switch {
		case err != nil:
			c.t.Fatalf("%s: DEBUG NEXTLEVEL on %s: %v", when, c.nodes[i].id, err)
		case i == oldNode:
			if !r.isErr() || !strings.Contains(r.str, "unknown subcommand") {
				c.t.Fatalf("%s: DEBUG NEXTLEVEL on the old build %s: got %v, want an unknown subcommand", when, c.nodes[i].id, r)
			}
		case !r.isErr() || r.str != levelRefusal:
			c.t.Fatalf("%s: DEBUG NEXTLEVEL on %s: got %v, want -%s", when, c.nodes[i].id, r, levelRefusal)
		}
	}
}

// mustReply sends a command to node i and requires a reply whose text is
// want (a simple or bulk string; "" accepts any reply that is not an error).
func (c *cluster) mustReply(i int, want string, args ...string) {
	c.t.Helper()
	r, err := c.call(i, args...)
	if err != nil || r.isErr() || want != "" && r.str != want {
		c.t.Fatalf("%s on %s: got %v %v, want %q", strings.Join(args, " "), c.nodes[i].id, r, err, want)
	}
}
