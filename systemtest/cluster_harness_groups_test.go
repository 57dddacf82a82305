package systemtest

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/redcell/redcell/slots"
)

// The cluster harness's view of Raft groups (--groups G at bootstrap).
//
// With several groups INFO raft keeps its raft_* fields for group 0 and adds
// raft_groups, raft_groups_leading and one raft_group<N> line per group
// (state, ready, term, leader_id, commit_index, applied_index, …); the
// voter count stays group 0's, and each group's configuration shows in
// CLUSTER SLOTS (one range per group: its leader, then its other voters).
// A fault test asks "who leads group g", "does every group have a leader",
// "has every group converged", and compares every group's RAFT DIGEST <g>.
// With one group each of these is what it was before groups (group 0 is
// the only one), so one test body runs at either count.

// faultGroupCounts are the group counts every fault test runs at: one
// group, and three on the three nodes, so that each node leads one group
// and a fault to one node takes one group's leader while the others keep
// theirs.
var faultGroupCounts = []int{1, 3}

// forGroupCounts runs body once per group count in faultGroupCounts, as
// subtests named groups=N.
func forGroupCounts(t *testing.T, body func(t *testing.T, groups int)) {
	for _, g := range faultGroupCounts {
		t.Run("groups="+strconv.Itoa(g), func(t *testing.T) { body(t, g) })
	}
}

// groupFlags is the flags that start a cluster of groups groups: none for
// one, so such a cluster starts exactly as before groups.
func groupFlags(groups int) []string {
	if groups <= 1 {
		return nil
	}
	return []string{"--groups", strconv.Itoa(groups)}
}

// groupCount is the cluster's group count: its nodes' --groups, 1 without.
// Read from the flags each time, so a cluster built field by field gets it
// too.
func (c *cluster) groupCount() int {
	for i := 0; i+1 < len(c.extra); i++ {
		if c.extra[i] == "--groups" {
			if n, err := strconv.Atoi(c.extra[i+1]); err == nil && n > 0 {
				return n
			}
		}
	}
	return 1
}

// keyGroup is the group of groups that owns key: its Redis Cluster slot s
// (slots.KeySlot, the function every client shares) falls in group
// s·groups/16384, the contiguous ranges docs/cluster.md describes and
// CLUSTER SLOTS lists (shardVotersMissing checks the two agree).
func keyGroup(key string, groups int) int {
	return int(slots.KeySlotString(key)) * max(groups, 1) / slots.Count
}

// spreadKey is base itself with one group, or when it already falls in
// group g; otherwise base~N for the first N that does. A test names its
// keys as before and gets them spread over the groups as it chooses: the
// suffix follows the key's last ':' field, so key formats read by field
// (familyOfKey) still read. With one group every key is base, unchanged.
// base carries no hash tag (a suffix would not move it).
func spreadKey(base string, g, groups int) string {
	if groups <= 1 || keyGroup(base, groups) == g {
		return base
	}
	for n := 1; n < 1<<16; n++ {
		if k := base + "~" + strconv.Itoa(n); keyGroup(k, groups) == g {
			return k
		}
	}
	panic(fmt.Sprintf("spreadKey: no suffix moves %q into group %d of %d (a hash tag?)", base, g, groups))
}

// groupStatus is one group's standing on one node, from INFO raft.
type groupStatus struct {
	state, leaderID string
	ready           bool
	term            int64
	commit, applied int64
}

// parseGroupStatuses reads every raft_group<N> line of info; without
// raft_groups (one group) it is group 0 alone, from st's raft_* fields.
func parseGroupStatuses(info string, st raftStatus) []groupStatus {
	n, err := strconv.Atoi(infoField(info, "raft_groups"))
	if err != nil || n < 1 {
		return []groupStatus{{state: st.state, leaderID: st.leaderID, ready: st.ready, term: st.term, commit: st.commit, applied: st.applied}}
	}
	out := make([]groupStatus, n)
	for g := range out {
		for _, kv := range strings.Split(infoField(info, "raft_group"+strconv.Itoa(g)), ",") {
			k, v, _ := strings.Cut(kv, "=")
			num, _ := strconv.ParseInt(v, 10, 64)
			switch k {
			case "state":
				out[g].state = v
			case "ready":
				out[g].ready = v == "1"
			case "term":
				out[g].term = num
			case "leader_id":
				out[g].leaderID = v
			case "commit_index":
				out[g].commit = num
			case "applied_index":
				out[g].applied = num
			}
		}
	}
	return out
}

// describeGroups is every group's standing on one node, for logs; empty
// with one group (the raft_* fields say it all).
func describeGroups(st raftStatus) string {
	if len(st.groups) <= 1 {
		return ""
	}
	parts := make([]string, len(st.groups))
	for g, gs := range st.groups {
		ready := ""
		if gs.state == "leader" && !gs.ready {
			ready = " (not ready)"
		}
		parts[g] = fmt.Sprintf("g%d %s%s term %d leader %q commit %d applied %d", g, gs.state, ready, gs.term, gs.leaderID, gs.commit, gs.applied)
	}
	return " [" + strings.Join(parts, "; ") + "]"
}

// groupLeaderIn is the index of the node that leads group g and is ready
// according to sts (restricted to among when not empty), or -1.
func (c *cluster) groupLeaderIn(sts map[int]raftStatus, g int, among []int) int {
	for i, st := range sts {
		if g < len(st.groups) && st.groups[g].state == "leader" && st.groups[g].ready && (len(among) == 0 || slices.Contains(among, i)) {
			return i
		}
	}
	return -1
}

// waitGroupLeader waits for a ready leader of group g among the nodes in
// among (all running nodes when among is empty) and returns its index.
func (c *cluster) waitGroupLeader(g int, among ...int) int {
	c.t.Helper()
	leader := -1
	c.waitFor(leaderTimeout, fmt.Sprintf("a ready leader of group %d", g), func() (bool, string) {
		sts := c.statuses()
		leader = c.groupLeaderIn(sts, g, among)
		return leader >= 0, describeStatuses(c, sts)
	})
	return leader
}

// waitLeaders waits until every group has a ready leader among the nodes
// in among (all running nodes when empty) and returns them by group.
func (c *cluster) waitLeaders(among ...int) []int {
	c.t.Helper()
	leaders := make([]int, c.groupCount())
	c.waitFor(leaderTimeout, "a ready leader of every group", func() (bool, string) {
		sts := c.statuses()
		for g := range leaders {
			if leaders[g] = c.groupLeaderIn(sts, g, among); leaders[g] < 0 {
				return false, describeStatuses(c, sts)
			}
		}
		return true, describeStatuses(c, sts)
	})
	return leaders
}

// agreedLeaders is, by group, the node that every node in sts names as the
// group's leader and that is its ready leader; ok is false when any group
// lacks one (or a node shows another group count).
func (c *cluster) agreedLeaders(sts map[int]raftStatus) (leaders []int, ok bool) {
	groups := c.groupCount()
	leaders = make([]int, groups)
	for g := range groups {
		id := ""
		for _, st := range sts {
			if len(st.groups) != groups || st.groups[g].leaderID == "" || id != "" && st.groups[g].leaderID != id {
				return nil, false
			}
			id = st.groups[g].leaderID
		}
		l := c.byID(id)
		if st, ok := sts[l]; l < 0 || !ok || st.groups[g].state != "leader" || !st.groups[g].ready {
			return nil, false
		}
		leaders[g] = l
	}
	return leaders, true
}

// leaderIDs is, by group, the leader every running node names (""
// where they differ or none is known): what a fault test compares before
// and after to see which groups' leadership moved.
func (c *cluster) leaderIDs() []string { return c.leaderIDsIn(c.statuses()) }

// leaderIDsIn is leaderIDs as the nodes sampled in sts see it.
func (c *cluster) leaderIDsIn(sts map[int]raftStatus) []string {
	out := make([]string, c.groupCount())
	for g := range out {
		for _, st := range sts {
			switch {
			case g >= len(st.groups) || st.groups[g].leaderID == "":
				out[g] = ""
			case out[g] == "":
				out[g] = st.groups[g].leaderID
			case out[g] != st.groups[g].leaderID:
				out[g] = ""
			}
			if out[g] == "" {
				break
			}
		}
	}
	return out
}

// statusesOf samples the nodes in among that run (every running node when
// among is empty).
func (c *cluster) statusesOf(among []int) map[int]raftStatus {
	sts := c.statuses()
	if len(among) > 0 {
		for i := range sts {
			if !slices.Contains(among, i) {
				delete(sts, i)
			}
		}
	}
	return sts
}

// preferredLeader is the node index that should lead group g once every
// voter runs: the voters (here every node of the cluster) sorted by ID,
// the one at g modulo their number (node/balance.go).
func (c *cluster) preferredLeader(g int) int {
	ids := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		ids[i] = n.id
	}
	slices.Sort(ids)
	return c.byID(ids[g%len(ids)])
}

// waitBalanced waits until every group is led by its preferred leader and
// every node agrees, as the balancer leaves a healthy cluster within
// seconds (after its start, a failover or a restart), and returns the
// leaders by group. A fault test starts from there, so that with as many
// groups as nodes a fault to one node hits exactly one group's leader.
// Every node must be running.
func (c *cluster) waitBalanced() []int {
	c.t.Helper()
	var leaders []int
	c.waitFor(clusterFormTimeout, "every group led by its preferred leader", func() (bool, string) {
		sts := c.statuses()
		desc := describeStatuses(c, sts)
		var ok bool
		if leaders, ok = c.agreedLeaders(sts); !ok || len(sts) != len(c.nodes) {
			return false, desc
		}
		for g, l := range leaders {
			if l != c.preferredLeader(g) {
				return false, desc
			}
		}
		return true, desc
	})
	return leaders
}

// shardVotersMissing checks every running node's CLUSTER SLOTS: one range
// per group, in group order, each the slots keyGroup gives the group and
// listing voters nodes (the group's leader and other voters; non-voters
// are not listed, nor a replica group 0's leader judges failed). It returns
// what is not so yet, "" when all is. (CLUSTER SHARDS merges the groups a
// node leads into one shard, so it cannot tell each group's voters.)
func (c *cluster) shardVotersMissing(voters int) string {
	groups := c.groupCount()
	for _, i := range c.live() {
		r, err := c.call(i, "CLUSTER", "SLOTS")
		if err != nil {
			return fmt.Sprintf("%s: CLUSTER SLOTS: %v", c.nodes[i].id, err)
		}
		if r.kind != '*' || len(r.elems) != groups {
			return fmt.Sprintf("%s: CLUSTER SLOTS lists %d ranges, want %d", c.nodes[i].id, len(r.elems), groups)
		}
		for g, e := range r.elems {
			lo, hi := groupSlots(g, groups)
			if len(e.elems) < 2 || e.elems[0].num != lo || e.elems[1].num != hi {
				c.t.Fatalf("%s: CLUSTER SLOTS lists %v as range %d; keyGroup gives group %d the slots %d-%d", c.nodes[i].id, e, g, g, lo, hi)
			}
			if n := len(e.elems) - 2; n != voters {
				return fmt.Sprintf("%s: group %d lists %d voters in CLUSTER SLOTS, want %d", c.nodes[i].id, g, n, voters)
			}
		}
	}
	return ""
}

// groupSlots is the first and last slot keyGroup gives group g of groups.
func groupSlots(g, groups int) (lo, hi int64) {
	lo, hi = -1, -1
	for s := range slots.Count {
		if s*groups/slots.Count == g {
			if lo < 0 {
				lo = int64(s)
			}
			hi = int64(s)
		}
	}
	return lo, hi
}

// requireOnlyGroupsMoved fails the test unless, after a fault to a node
// (before names each group's leader by ID, from leaderIDs, and moved the
// groups that node led), every group in moved has another leader and every
// other group the same one as before. It waits until the nodes in among
// (every running node when empty: a node cut off may not know the new
// leader) agree on every group's leader, and that leader is among them.
func requireOnlyGroupsMoved(t *testing.T, c *cluster, before []string, moved []int, among ...int) {
	t.Helper()
	var after []string
	c.waitFor(leaderTimeout, "the nodes to agree on every group's leader", func() (bool, string) {
		sts := c.statusesOf(among)
		_, ok := c.agreedLeaders(sts)
		after = c.leaderIDsIn(sts)
		return ok && !slices.Contains(after, ""), describeStatuses(c, sts)
	})
	for g := range before {
		switch {
		case slices.Contains(moved, g) && after[g] == before[g]:
			t.Errorf("group %d is still led by %s after the fault to it", g, before[g])
		case !slices.Contains(moved, g) && after[g] != before[g]:
			t.Errorf("group %d moved from %s to %s although the fault was to the leader of groups %v only", g, before[g], after[g], moved)
		}
	}
	t.Logf("leaders by group: %v before, %v after (only groups %v were to move)", before, after, moved)
}

// groupsLedIn lists the groups whose leader, in leaders (by ID, from
// leaderIDs), is node i.
func (c *cluster) groupsLedIn(leaders []string, i int) []int {
	var out []int
	for g, id := range leaders {
		if id == c.nodes[i].id {
			out = append(out, g)
		}
	}
	return out
}

// groupLines counts the lines of a node's log that contain msg and, with
// several groups, name group g (the node logs its groups' raft lines with
// group=N; one group's lines name none).
func groupLines(log, msg string, g, groups int) int {
	n := 0
	for _, line := range strings.Split(log, "\n") {
		if !strings.Contains(line, msg) {
			continue
		}
		if groups > 1 && !slices.Contains(strings.Fields(line), "group="+strconv.Itoa(g)) {
			continue
		}
		n++
	}
	return n
}
