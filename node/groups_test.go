package node

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redcell/redcell/group"
	"github.com/redcell/redcell/request"
	"github.com/redcell/redcell/slots"
)

// groupKeys returns n keys spread over every group of an even map of
// groups groups, with the group each lands in.
func groupKeys(n, groups int) (keys []string, owner map[string]int) {
	m := evenSlotMap(groups)
	owner = map[string]int{}
	for i := range n {
		k := fmt.Sprintf("key:%d", i)
		keys = append(keys, k)
		owner[k] = int(m.group(slots.KeySlotString(k)))
	}
	return keys, owner
}

// groupDBSize is how many live keys group g of n holds, read from its own
// state machine.
func groupDBSize(t *testing.T, n *Node, g int) int64 {
	t.Helper()
	reqs := []request.Request{{Code: request.DBSize}}
	res := make([]request.Result, 1)
	if err := n.groups[g].local.ReadLocal(reqs, res); err != nil {
		t.Fatal(err)
	}
	return res[0].Ints[0]
}

// A node bootstrapped with four groups keeps each key in the group that
// owns its slot; a pipeline over every group is answered in its order;
// DEL, EXISTS and MGET across groups are split and merged; DBSIZE, KEYS,
// SCAN, FLUSHALL and the script cache cover every group; an atomic unit
// across slots is refused with CROSSSLOT, and one within a slot works.
func TestGroupsSplitTheKeyspace(t *testing.T) {
	const groups = 4
	dir := t.TempDir()
	n := mustOpen(t, dir, func(c *Config) { c.Groups = groups })
	waitCond(t, 10*time.Second, "every group to lead", func() bool {
		for _, lg := range n.groups {
			if !lg.group.Ready() {
				return false
			}
		}
		return true
	})
	if len(n.groups) != groups {
		t.Fatalf("%d groups, want %d", len(n.groups), groups)
	}
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: n.Addr.String(), Protocol: 2, MaxRetries: -1})
	defer rdb.Close()

	keys, owner := groupKeys(60, groups)
	pipe := rdb.Pipeline()
	for i, k := range keys {
		pipe.Set(ctx, k, i, 0)
		pipe.Incr(ctx, k)
	}
	cmds, err := pipe.Exec(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := range keys {
		if got := cmds[2*i+1].(*redis.IntCmd).Val(); got != int64(i+1) {
			t.Fatalf("INCR %s = %d, want %d (a pipeline's answers out of order?)", keys[i], got, i+1)
		}
	}
	perGroup := make([]int64, groups)
	for _, k := range keys {
		perGroup[owner[k]]++
	}
	for g := range groups {
		if perGroup[g] == 0 {
			t.Fatalf("no test key in group %d", g)
		}
		if got := groupDBSize(t, n, g); got != perGroup[g] {
			t.Errorf("group %d holds %d keys, want %d", g, got, perGroup[g])
		}
	}
	if got := rdb.DBSize(ctx).Val(); got != int64(len(keys)) {
		t.Errorf("DBSIZE = %d, want %d", got, len(keys))
	}
	info := rdb.Info(ctx, "raft", "keyspace").Val()
	for _, want := range []string{"raft_groups:4\r\n", "raft_groups_leading:4\r\n", "raft_group3:state=leader,ready=1,", fmt.Sprintf("db0:keys=%d,", len(keys))} {
		if !strings.Contains(info, want) {
			t.Errorf("INFO lacks %q:\n%s", want, info)
		}
	}
	got, err := rdb.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	want := slices.Clone(keys)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("KEYS * = %d keys, want %d", len(got), len(want))
	}
	var scanned []string
	var cursor uint64
	for range 1000 {
		page, next, err := rdb.Scan(ctx, cursor, "key:*", 7).Result()
		if err != nil {
			t.Fatal(err)
		}
		scanned = append(scanned, page...)
		if cursor = next; cursor == 0 {
			break
		}
	}
	slices.Sort(scanned)
	if !slices.Equal(scanned, want) {
		t.Errorf("SCAN walked %d keys (%d distinct), want each of %d once", len(scanned), len(slices.Compact(slices.Clone(scanned))), len(want))
	}

	mget := []string{keys[0], "missing", keys[1], keys[2], keys[3]}
	vals, err := rdb.MGet(ctx, mget...).Result()
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(vals) != "[1 <nil> 2 3 4]" {
		t.Errorf("MGET across groups = %v", vals)
	}
	if n := rdb.Exists(ctx, keys[0], keys[1], "missing", keys[2]).Val(); n != 3 {
		t.Errorf("EXISTS across groups = %d, want 3", n)
	}
	if n := rdb.Del(ctx, keys[0], keys[1], "missing").Val(); n != 2 {
		t.Errorf("DEL across groups = %d, want 2", n)
	}

	crossslot := "CROSSSLOT Keys in request don't hash to the same slot"
	for what, err := range map[string]error{
		"MSET":     rdb.MSet(ctx, "a", 1, "b", 2).Err(),
		"EVAL":     rdb.Eval(ctx, "return 1", []string{"a", "b"}).Err(),
		"RENAME":   rdb.Rename(ctx, keys[2], keys[3]).Err(),
		"WATCH":    rdb.Do(ctx, "WATCH", "a", "b").Err(),
		"EXEC":     execOf(ctx, rdb, "a", "b"),
		"CL.THROT": rdb.Do(ctx, "CL.THROTTLE", "a", "1", "1", "1").Err(), // one key: never cross
	} {
		if what == "CL.THROT" {
			if err != nil {
				t.Errorf("CL.THROTTLE: %v", err)
			}
			continue
		}
		if err == nil || err.Error() != crossslot {
			t.Errorf("%s across slots: %v, want %s", what, err, crossslot)
		}
	}
	if err := rdb.MSet(ctx, "{t}a", 1, "{t}b", 2).Err(); err != nil {
		t.Errorf("MSET within a slot: %v", err)
	}
	if err := execOf(ctx, rdb, "{t}a", "{t}b"); err != nil {
		t.Errorf("MULTI/EXEC within a slot: %v", err)
	}

	sha, err := rdb.ScriptLoad(ctx, "return redis.call('INCR', KEYS[1])").Result()
	if err != nil {
		t.Fatal(err)
	}
	if ex := rdb.ScriptExists(ctx, sha, "0000000000000000000000000000000000000000").Val(); fmt.Sprint(ex) != "[true false]" {
		t.Errorf("SCRIPT EXISTS = %v", ex)
	}
	for _, k := range keys[4:12] { // keys in every group: the script is cached in each
		if err := rdb.EvalSha(ctx, sha, []string{k}).Err(); err != nil {
			t.Errorf("EVALSHA on %s (group %d): %v", k, owner[k], err)
		}
	}
	if err := rdb.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if got := rdb.DBSize(ctx).Val(); got != 0 {
		t.Errorf("DBSIZE after FLUSHALL = %d", got)
	}
	rdb.Close()

	// The count is kept: a restart without --groups runs four, and one
	// that names another count is refused.
	mustClose(t, n)
	if _, err := openNode(t, dir, func(c *Config) { c.Groups = 2 }); !errors.Is(err, ErrGroupsDiffer) {
		t.Fatalf("reopening with --groups 2: %v, want ErrGroupsDiffer", err)
	}
	n = mustOpen(t, dir, nil)
	defer mustClose(t, n)
	if len(n.groups) != groups {
		t.Fatalf("after a restart: %d groups, want %d", len(n.groups), groups)
	}
}

// execOf runs MULTI, SET k1, SET k2, EXEC and returns EXEC's error.
func execOf(ctx context.Context, rdb *redis.Client, k1, k2 string) error {
	_, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, k1, 1, 0)
		p.Set(ctx, k2, 1, 0)
		return nil
	})
	return err
}

// leadsOneEach reports whether each node leads exactly one group.
func leadsOneEach(nodes []*Node) bool {
	for _, nd := range nodes {
		led := 0
		for _, lg := range nd.groups {
			if lg.group.IsLeader() {
				led++
			}
		}
		if led != 1 {
			return false
		}
	}
	return true
}

// A node that joins a cluster of several groups, started with its count,
// joins every group and is promoted in each; the
// leaders spread, one group to each node; every node serves every key,
// whichever node leads its group; a node's loss leaves every group
// deciding, and once it is back it leads its group again.
func TestClusterOfGroups(t *testing.T) {
	const groups = 3
	dirs := []string{t.TempDir(), t.TempDir(), t.TempDir()}
	first := mustOpen(t, dirs[0], func(c *Config) { fastRaft(c); c.NodeID = "n1"; c.Bootstrap = true; c.Groups = groups })
	nodes := []*Node{first}
	for i := 2; i <= 3; i++ {
		nodes = append(nodes, mustOpen(t, dirs[i-1], func(c *Config) {
			fastRaft(c)
			c.NodeID = fmt.Sprintf("n%d", i)
			c.Join = first.Addr.String()
			c.Groups = groups
		}))
	}
	t.Cleanup(func() {
		for _, nd := range nodes {
			if nd != nil {
				nd.Close()
			}
		}
	})
	for _, nd := range nodes {
		if len(nd.groups) != groups {
			t.Fatalf("%s runs %d groups, want %d", nd.ID, len(nd.groups), groups)
		}
	}
	waitCond(t, 30*time.Second, "every node a voter of every group", func() bool {
		for _, lg := range first.groups {
			ms, err := lg.group.Members()
			if err != nil || len(ms) != 3 {
				return false
			}
			for _, m := range ms {
				if m.Suffrage != group.Voter {
					return false
				}
			}
		}
		return true
	})

	waitCond(t, 30*time.Second, "each node to lead one group", func() bool { return leadsOneEach(nodes) })

	ctx := context.Background()
	keys, _ := groupKeys(30, groups)
	clients := make([]*redis.Client, len(nodes))
	for i, nd := range nodes {
		clients[i] = redis.NewClient(&redis.Options{Addr: nd.Addr.String(), Protocol: 2, MaxRetries: -1})
		defer clients[i].Close()
	}
	for i, k := range keys {
		if err := clients[i%3].Set(ctx, k, i, 0).Err(); err != nil {
			t.Fatalf("SET %s through %s: %v", k, nodes[i%3].ID, err)
		}
	}
	for i, k := range keys {
		if v, err := clients[(i+1)%3].Get(ctx, k).Int(); err != nil || v != i {
			t.Fatalf("GET %s through %s = %d, %v; want %d", k, nodes[(i+1)%3].ID, v, err, i)
		}
	}
	if n := clients[2].DBSize(ctx).Val(); n != int64(len(keys)) {
		t.Fatalf("DBSIZE = %d, want %d", n, len(keys))
	}

	// Stop the node that leads group 0: every group still decides, through
	// the survivors.
	victim := -1
	for i, nd := range nodes {
		if nd.groups[0].group.IsLeader() {
			victim = i
		}
	}
	if victim < 0 {
		t.Fatal("no leader of group 0")
	}
	port := nodes[victim].Addr.(*net.TCPAddr).Port
	mustClose(t, nodes[victim])
	nodes[victim] = nil
	survivor := clients[(victim+1)%3]
	for i, k := range keys {
		if v, err := survivor.Incr(ctx, k).Result(); err != nil || v != int64(i+1) {
			t.Fatalf("INCR %s after losing %s = %d, %v; want %d", k, fmt.Sprint("n", victim+1), v, err, i+1)
		}
	}

	// Back with its data, the node leads its group again.
	nodes[victim] = mustOpen(t, dirs[victim], func(c *Config) { fastRaft(c); c.Port = port })
	waitCond(t, 30*time.Second, "each node to lead one group again", func() bool { return leadsOneEach(nodes) })
	for i, k := range keys {
		if v, err := clients[(i+2)%3].Get(ctx, k).Int(); err != nil || v != i+1 {
			t.Fatalf("GET %s after the restart = %d, %v; want %d", k, v, err, i+1)
		}
	}
}

// A node started with another group count than the cluster's is not added:
// the member it joins through refuses it and says which count to start
// with, and the node stops with that.
func TestJoinWithAnotherGroupCountIsRefused(t *testing.T) {
	first := mustOpen(t, t.TempDir(), func(c *Config) { fastRaft(c); c.NodeID = "n1"; c.Bootstrap = true; c.Groups = 2 })
	defer mustClose(t, first)
	waitCond(t, 10*time.Second, "the first node to lead", func() bool { return first.base.group.Ready() })
	joiner := mustOpen(t, t.TempDir(), func(c *Config) {
		fastRaft(c)
		c.NodeID = "n2"
		c.Join = first.Addr.String()
		c.JoinTimeout = 5 * time.Second
	})
	defer joiner.Close()
	select {
	case err := <-joiner.Fatal():
		if err == nil || !strings.Contains(err.Error(), "runs 1 Raft groups and this cluster 2; start it with --groups 2") {
			t.Fatalf("the joiner stopped with %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the joiner was neither added nor stopped")
	}
	if ms, _ := first.base.group.Members(); len(ms) != 1 {
		t.Fatalf("the cluster has %d members, want the first alone", len(ms))
	}
}
