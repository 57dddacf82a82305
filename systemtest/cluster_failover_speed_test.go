package systemtest

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// Bounds of TestClusterFailoverSpeed, for the default Raft timeouts (100 ms,
// group/group.go). bench -mode failover measures the same over 20 kills
// (bench/DESIGN.md, "Failover mode"): 0.14-0.33 s per kill, 0.15-0.29 s
// beside two busy loops. With the former 300 ms defaults a kill cost
// 0.38-1.02 s, under 450 ms about one kill in ten (7 of 75 measured), so
// that code passes (three of five under the bound) in under one run in a
// hundred; it failed 3 runs of 3.
const (
	speedKills = 5
	// speedMedianGap bounds the median of the kills' longest gaps: two
	// kills that meet a stall of a busy machine do not fail the test,
	// three do.
	speedMedianGap = 450 * time.Millisecond
	// speedQuiet is the steady load in which no election may happen.
	speedQuiet = 6 * time.Second
	// speedWarm is the load before each later kill.
	speedWarm = 500 * time.Millisecond
)

// TestClusterFailoverSpeed measures how long decisions stop when the leader
// of a three-node cluster dies, with clients on every node (two per node,
// one decision at a time, each bound to its node's client port; a fresh set
// per kill, halted before the killed node restarts):
//
//   - first, speedQuiet of steady load with nothing failing must not change
//     any node's term or leader (pre-vote and the leader lease keep a busy
//     but healthy cluster from electing);
//   - then the leader is killed with SIGKILL speedKills times, restarted on
//     its data dir and caught up before the next kill. Per kill, the longest
//     stretch in which no client anywhere got a decision, from the last
//     decision before the kill until one sent after it has been answered:
//     their median must be at most speedMedianGap, and none above
//     maxFailoverGap;
//   - and, as under every fault, no key admits more than its units, no unit
//     is given twice, and no acknowledged decision is lost (verify, per kill).
func TestClusterFailoverSpeed(t *testing.T) {
	c := startCluster(t, 3)
	c.waitLeader()

	var gaps []time.Duration
	for k := 1; k <= speedKills; k++ {
		// A fresh load per kill, halted before the killed node restarts
		// and started again once it has loaded (its clients would meet
		// LOADING while it replays its log).
		load := startDecisionLoad(t, c, fmt.Sprintf("speed%d", k), []int{0, 1, 2}, 2, loadReadTimout)
		if k == 1 {
			// Nothing fails: no election.
			quietFrom := c.logOffsets()
			before := c.statuses()
			time.Sleep(speedQuiet) // the window observed, not a wait for a condition
			after := c.statuses()
			for i, st := range before {
				if a, ok := after[i]; !ok || a.term != st.term || a.leaderID != st.leaderID {
					t.Errorf("%s changed term or leader in %v of steady load with nothing failing: before %s; after %s%s",
						c.nodes[i].id, speedQuiet, describeStatuses(c, before), describeStatuses(c, after), c.electionLines(quietFrom))
					break
				}
			}
		} else {
			time.Sleep(speedWarm) // every client deciding before the kill
		}
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
	sorted := slices.Sorted(slices.Values(gaps))
	median := sorted[len(sorted)/2]
	t.Logf("longest gaps without a decision over %d leader kills: %v (median %v)", speedKills, gaps, median.Round(time.Millisecond))
	if median > speedMedianGap {
		t.Errorf("median longest gap %v over %d leader kills, more than %v: failover is slower than the defaults promise",
			median.Round(time.Millisecond), speedKills, speedMedianGap)
	}
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

// logOffsets is every node's log size now, to read what follows.
func (c *cluster) logOffsets() []int64 {
	out := make([]int64, len(c.nodes))
	for i, n := range c.nodes {
		out[i] = n.logSize()
	}
	return out
}

// electionLines are the lines about elections and step-downs each node
// logged since offsets, for a failure message.
func (c *cluster) electionLines(offsets []int64) string {
	var b strings.Builder
	for i, n := range c.nodes {
		for _, line := range strings.Split(n.logSince(offsets[i]), "\n") {
			if strings.Contains(line, "election") || strings.Contains(line, "stepping down") || strings.Contains(line, "failed to contact") {
				fmt.Fprintf(&b, "\n\t%s: %s", n.id, line)
			}
		}
	}
	return b.String()
}
