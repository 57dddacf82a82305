package systemtest

import (
	"testing"
	"time"
)

// Bounds of the partition test.
const (
	// leaseTimeout is the test clusters' --raft-lease-timeout (it follows
	// --raft-heartbeat-timeout): a leader that has not reached a quorum for
	// this long steps down.
	leaseTimeout = testHeartbeat
	// minorityMargin is added to the lease: replies already on their way when
	// the links were cut may still arrive just after.
	minorityMargin = 200 * time.Millisecond
	// minorityReadTimeout bounds a request on the cut-off node: its client
	// gives up, redials and asks again, so it keeps probing the minority.
	minorityReadTimeout = time.Second
	partitionFor        = 3 * time.Second
	// With several groups the cut lasts partitionForGroups and the load
	// goes on healedFor after the heal (1.5 s with one): only group 0
	// elects, so the majority decides for as long in less time, and the
	// suite's time is kept in check.
	partitionForGroups = 2 * time.Second
	healedForGroups    = time.Second
)

// TestClusterPartitionLeader cuts the leader off from the other two nodes,
// once by closing every connection (partition) and once by holding them open
// with nothing passing (stall, as on a dead network), while clients send
// decisions to all three client ports. Requirements: the cut-off node
// answers no decision from the lease time (testHeartbeat) plus 200 ms after the cut
// until the heal (it may answer TRYAGAIN or CLUSTERDOWN, or nothing); the
// other two elect a leader and go on deciding; after the heal all three
// apply the same index and hold the same state (RAFT DIGEST); and, as under
// a kill, no key admits more than 100, no unit is given twice, no
// acknowledged decision is lost.
//
// Each mode runs with one group and with three (keys in all three, each
// node leading one group): there the node cut off leads group 0, so only
// group 0 elects on the majority side, which has every group's leader while
// cut; each group decides there while cut, with no gap over
// maxFailoverGap; the cut-off node decides nothing in any group, its own
// included. The cut is shorter there (partitionForGroups).
func TestClusterPartitionLeader(t *testing.T) {
	for _, mode := range []string{"partition", "stall"} {
		t.Run(mode, func(t *testing.T) {
			forGroupCounts(t, func(t *testing.T, groups int) { testPartitionLeader(t, mode, groups) })
		})
	}
}

func testPartitionLeader(t *testing.T, mode string, groups int) {
	c := startCluster(t, 3, groupFlags(groups)...)
	if groups > 1 {
		c.waitBalanced()
	}
	leader := c.waitLeader()
	before, err := c.status(leader)
	if err != nil {
		t.Fatal(err)
	}
	leadersBefore := c.leaderIDs()
	var majority []int
	for i := range c.nodes {
		if i != leader {
			majority = append(majority, i)
		}
	}
	// Two clients on each majority node, two on the leader's own port (one
	// per group with more groups, so it is probed in each).
	load := startDecisionLoad(t, c, "part-"+mode, majority, 2, loadReadTimout)
	minority := startDecisionLoad(t, c, "part-"+mode+"-min", []int{leader}, max(2, groups), minorityReadTimeout)
	minority.start = load.start
	time.Sleep(time.Second)

	cutAt := time.Now()
	if mode == "stall" {
		c.net.stall(c.nodes[leader].id)
	} else {
		c.net.partition(c.nodes[leader].id)
	}
	// The majority elects a leader of its own (of group 0, the group the
	// cut-off node led; the others' leaders are on the majority side).
	newLeader := c.waitLeader(majority...)
	electedAfter := time.Since(cutAt)
	if groups > 1 {
		requireOnlyGroupsMoved(t, c, leadersBefore, []int{0}, majority...)
	}
	cutFor, healedFor := partitionFor, 1500*time.Millisecond
	if groups > 1 {
		cutFor, healedFor = partitionForGroups, healedForGroups
	}
	time.Sleep(cutFor - time.Since(cutAt))
	healAt := time.Now()
	c.net.heal()
	time.Sleep(healedFor) // decisions after the heal, the old leader back
	stopAt := time.Now()
	load.halt()
	minority.halt()

	// The minority side: nothing decided from lease + margin to the heal.
	quietFrom := cutAt.Add(leaseTimeout + minorityMargin)
	var lastMinority time.Time
	late := 0
	for _, e := range minority.events() {
		if e.at.Before(healAt) {
			lastMinority = e.at
		}
		if e.at.After(quietFrom) && e.at.Before(healAt) {
			late++
			if late <= 5 {
				t.Errorf("the cut-off node %s answered a decision of group %d %v after the cut (request sent %v after it)",
					c.nodes[leader].id, e.group, e.at.Sub(cutAt).Round(time.Millisecond), e.sent.Sub(cutAt).Round(time.Millisecond))
			}
		}
	}
	if late > 0 {
		t.Errorf("the cut-off node answered %d decisions later than %v after the cut", late, leaseTimeout+minorityMargin)
	}
	minAllowed, minLimited, minUnknown, minFailed := minority.totals()
	t.Logf("%s: minority %s: last decision %v after the cut; %d allowed, %d limited, %d outcome unknown, %d refused; errors: %s; timeouts/broken %v; failed requests (times from the cut):%s",
		mode, c.nodes[leader].id, lastMinority.Sub(cutAt).Round(time.Millisecond), minAllowed, minLimited, minUnknown, minFailed,
		minority.errs.String(), minority.ioErrs, minority.describeFailures(c, cutAt, 12))

	// The majority side: a new leader, and decisions while cut, in every
	// group.
	var firstMajority time.Duration = -1
	majorityDuring := make([]int, groups)
	for _, e := range load.events() {
		if e.at.After(cutAt) && e.at.Before(healAt) {
			if firstMajority < 0 && e.sent.After(cutAt) {
				firstMajority = e.at.Sub(cutAt)
			}
			majorityDuring[e.group]++
		}
	}
	gap, gapAt := load.longestGap(load.start.Add(200*time.Millisecond), stopAt)
	after, err := c.status(newLeader)
	if err != nil {
		t.Fatal(err)
	}
	allowed, limited, unknown, failed := load.totals()
	t.Logf("%s: majority: leader %s ready %v after the cut, first decision sent after the cut answered %v after it, %v decisions by group while cut; longest gap %v (from +%v, cut at +%v); term %d → %d",
		mode, c.nodes[newLeader].id, electedAfter.Round(time.Millisecond), durOrNone(firstMajority), majorityDuring,
		gap.Round(time.Millisecond), gapAt.Sub(load.start).Round(time.Millisecond), cutAt.Sub(load.start).Round(time.Millisecond), before.term, after.term)
	t.Logf("%s: majority: %d allowed, %d limited, %d outcome unknown, %d refused; errors: %s; timeouts/broken %v; failed requests (times from the cut, heal at %+v):%s",
		mode, allowed, limited, unknown, failed, load.errs.String(), load.ioErrs,
		healAt.Sub(cutAt).Round(time.Millisecond), load.describeFailures(c, cutAt, 20))
	for g, n := range majorityDuring {
		if n == 0 {
			t.Errorf("the majority made no decision of group %d while the leader was cut off", g)
		}
	}
	if gap > maxFailoverGap {
		t.Errorf("the majority made no decision for %v (from +%v), more than %v", gap.Round(time.Millisecond), gapAt.Sub(load.start).Round(time.Millisecond), maxFailoverGap)
	}
	if groups > 1 {
		for g := range groups {
			if gg, at := load.longestGapOf(g, load.start.Add(200*time.Millisecond), stopAt); gg > maxFailoverGap {
				t.Errorf("the majority made no decision of group %d for %v (from +%v), more than %v", g, gg.Round(time.Millisecond), at.Sub(load.start).Round(time.Millisecond), maxFailoverGap)
			}
		}
	}

	// Both sides' replies together: keys are disjoint, so each is checked
	// alone against the state the healed cluster holds.
	leaderNow := c.waitFormed(3)
	load.verify(t, c, leaderNow)
	minority.verify(t, c, leaderNow)
	c.compareReplicas("after the heal")
}
