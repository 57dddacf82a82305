package systemtest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/redcell/redcell/group"
)

// defaultKills is how many leader kills TestClusterFailoverDefaults makes.
const defaultKills = 3

// TestClusterFailoverDefaults kills the leader of a three-node cluster
// running the shipped Raft timeouts (100 ms; every other test cluster runs
// testHeartbeat) with SIGKILL defaultKills times, with clients on every node
// (two per node, one decision at a time, each bound to its node's client
// port; a fresh set per kill, halted before the killed node restarts). The
// killed node is restarted on its data dir and caught up before the next
// kill. Per kill: a new leader decides within maxFailoverGap of the last
// decision before the kill, and, as under every fault, no key admits more
// than its units, no unit is given twice, and no acknowledged decision is
// lost (verify). The longest gap without a decision is logged, not bounded
// tightly: how fast failover is belongs to bench -mode failover (20 kills,
// and a count of elections while nothing failed), because on a machine
// busy with other work the shipped timeouts also elect spuriously.
func TestClusterFailoverDefaults(t *testing.T) {
	c := startCluster(t, 3, "--raft-heartbeat-timeout", group.DefaultHeartbeatTimeout.String())
	c.waitLeader()

	var gaps []time.Duration
	for k := 1; k <= defaultKills; k++ {
		// A fresh load per kill, halted before the killed node restarts
		// and started again once it has loaded (its clients would meet
		// LOADING while it replays its log).
		load := startDecisionLoad(t, c, fmt.Sprintf("defaults%d", k), []int{0, 1, 2}, 2, loadReadTimout)
		time.Sleep(500 * time.Millisecond) // every client deciding before the kill
		leader := c.waitLeader()
		termBefore := c.nodesTerm()
		killedAt := time.Now()
		c.kill(leader)
		var survivors []int
		for i := range c.nodes {
			if i != leader {
				survivors = append(survivors, i)
			}
		}
		newLeader := c.waitLeader(survivors...)
		c.waitFor(leaderTimeout, "a decision after the kill", func() (bool, string) {
			ev := load.events()
			return len(ev) > 0 && ev[len(ev)-1].sent.After(killedAt), fmt.Sprintf("%d decisions in all", len(ev))
		})
		from := lastBefore(load.events(), killedAt)
		gap, _ := load.longestGap(from, time.Now())
		gaps = append(gaps, gap)
		load.halt()
		allowed, limited, unknown, failed := load.totals()
		t.Logf("kill %d of %s: no decision anywhere for %v (from %v before the kill); new leader %s, term %d → %d; decisions: %d allowed, %d limited, %d outcome unknown, %d refused; error replies: %s",
			k, c.nodes[leader].id, gap.Round(time.Millisecond), killedAt.Sub(from).Round(time.Millisecond),
			c.nodes[newLeader].id, termBefore, c.nodesTerm(), allowed, limited, unknown, failed, load.errs.String())
		if gap > maxFailoverGap {
			t.Errorf("kill %d: the cluster made no decision for %v, more than %v", k, gap.Round(time.Millisecond), maxFailoverGap)
		}
		load.verify(t, c, newLeader)
		c.restart(leader)
		c.waitFormed(3)
		c.waitLoaded(leader) // else its next clients meet LOADING
	}
	t.Logf("longest gaps without a decision over %d leader kills with the default timeouts: %v", defaultKills, gaps)
}

// lastBefore is when the last decision at or before t arrived (t when
// none did); ev is sorted by arrival.
func lastBefore(ev []decisionEvent, t time.Time) time.Time {
	i, _ := slices.BinarySearchFunc(ev, t, func(e decisionEvent, t time.Time) int {
		if e.at.After(t) {
			return 1
		}
		return -1
	})
	if i == 0 {
		return t
	}
	return ev[i-1].at
}

// nodesTerm is the highest term any running node reports.
func (c *cluster) nodesTerm() int64 {
	var term int64
	for _, st := range c.statuses() {
		term = max(term, st.term)
	}
	return term
}
