package systemtest

import (
	"strings"
	"testing"
	"time"
)

// The list commands against redis-server 7 as the oracle, in RESP2 and
// RESP3 (TestListCommandsAgainstRedis), through a follower of a 3-node
// cluster, across a snapshot restart and under maxmemory.

// listOracleCases run on keys that do not exist when each starts.
var listOracleCases = []oracleCase{
	{"push and pop", false, []oracleLine{
		ex("LPUSH k a b c"), ex("RPUSH k d e"), ex("LRANGE k 0 -1"), ex("LLEN k"), ex("LPUSHX j a"), ex("RPUSHX j a"),
		ex("EXISTS j"), ex("LPUSHX k x y"), ex("RPUSHX k z"), ex("LRANGE k 0 -1"), ex("LPOP k"), ex("RPOP k"),
		ex("LPOP k 2"), ex("RPOP k 2"), ex("LPOP k 0"), ex("RPOP k 0"), ex("LLEN k"), ex("LPOP k 10"), ex("EXISTS k"),
		ex("LPOP k"), ex("RPOP k"), ex("LPOP k 0"), ex("RPOP k 3"), ex("LPOP nokey 1"), ex("RPUSH k only"), ex("RPOP k 5"),
		ex("TYPE k"), ex("RPUSH k 1700000000123 1700000000456"), ex("LPOP k 1"), ex("RPOP k"), ex("TYPE k"),
		ex("rpush k a"), ex("Lpop K"), ex("lpop k"),
	}},
	{"range and index", false, []oracleLine{
		ex("RPUSH k a b c d e f"), ex("LRANGE k 0 0"), ex("LRANGE k -2 -1"), ex("LRANGE k 2 100"), ex("LRANGE k -100 1"),
		ex("LRANGE k 4 2"), ex("LRANGE k 6 10"), ex("LRANGE k -1 -2"), ex("LRANGE k 0 -7"), ex("LRANGE nokey 0 -1"),
		ex("LRANGE k -9223372036854775808 9223372036854775807"), ex("LRANGE k 9223372036854775807 -9223372036854775808"),
		ex("LINDEX k 0"), ex("LINDEX k -1"), ex("LINDEX k 5"), ex("LINDEX k 6"), ex("LINDEX k -6"), ex("LINDEX k -7"),
		ex("LINDEX k 9223372036854775807"), ex("LINDEX k -9223372036854775808"), ex("LINDEX nokey 0"), ex("LINDEX nokey abc"),
		ex("LINDEX k abc"), ex("LINDEX k 1.5"), ex("LINDEX k +1"), ex("LINDEX k 01"), ex("LINDEX k -0"),
	}},
	{"trim", false, []oracleLine{
		ex("RPUSH k a b c d e f g h"), ex("LTRIM k 1 -2"), ex("LRANGE k 0 -1"), ex("LTRIM k -3 100"), ex("LRANGE k 0 -1"),
		ex("LTRIM k 0 0"), ex("LRANGE k 0 -1"), ex("LTRIM k 0 -1"), ex("LLEN k"), ex("LTRIM k 1 0"), ex("EXISTS k"),
		ex("LTRIM nokey 0 1"), ex("EXISTS nokey"), ex("RPUSH k a b"), ex("LTRIM k 5 10"), ex("EXISTS k"),
		ex("RPUSH k a b"), ex("LTRIM k -9223372036854775808 9223372036854775807"), ex("LRANGE k 0 -1"),
		ex("LPUSH j 5 4 3 2 1"), ex("LPUSH j 0"), ex("LTRIM j 0 2"), ex("LRANGE j 0 -1"), ex("LINDEX j -1"),
	}},
	{"rem and set", false, []oracleLine{
		ex("RPUSH k a b a c a d a"), ex("LREM k 2 a"), ex("LRANGE k 0 -1"), ex("LREM k -1 a"), ex("LRANGE k 0 -1"),
		ex("RPUSH k a a"), ex("LREM k 0 a"), ex("LRANGE k 0 -1"), ex("LREM k 0 zz"), ex("LREM k 1 b"), ex("LREM k -5 c"),
		ex("LREM k 0 d"), ex("EXISTS k"), ex("LREM nokey 0 a"), ex("RPUSH k x y x"),
		ex("LREM k -9223372036854775808 x"), ex("LRANGE k 0 -1"), ex("LREM k 9223372036854775807 y"), ex("EXISTS k"),
		ex("RPUSH k a b c"), ex("LSET k 0 x"), ex("LSET k -1 z"), ex("LSET k 1 longer-than-before"), ex("LRANGE k 0 -1"),
		ex("LSET k 3 v"), ex("LSET k -4 v"), ex("LSET k abc v"), ex("LSET nokey 0 v"), ex("LSET nokey abc v"),
		ex("LSET k 9223372036854775807 v"), ex("LRANGE k 0 -1"),
	}},
	{"errors", false, []oracleLine{
		ex("LPUSH k"), ex("RPUSH"), ex("LPUSHX k"), ex("RPUSHX"), ex("LPOP"), ex("LPOP k 1 2"), ex("RPOP k 1 2"),
		ex("LPOP k -1"), ex("LPOP k abc"), ex("RPOP k 01"), ex("LPOP k 1.5"), ex("LPOP nokey -1"),
		ex("LLEN"), ex("LLEN k j"), ex("LINDEX k"), ex("LINDEX k 0 1"), ex("LRANGE k 0"), ex("LRANGE k a 1"),
		ex("LRANGE k 0 b"), ex("LRANGE k 0 1 2"), ex("LTRIM k 0"), ex("LTRIM k a 0"), ex("LTRIM k 0 +1"),
		ex("LREM k 0"), ex("LREM k a b"), ex("LREM k 1.0 b"), ex("LSET k 0"), ex("LSET k 0 a b"),
	}},
	{"wrong type", false, []oracleLine{
		ex("SET k v"), ex("LPUSH k a"), ex("RPUSH k a"), ex("LPUSHX k a"), ex("RPUSHX k a"), ex("LPOP k"), ex("RPOP k"),
		ex("LPOP k 0"), ex("RPOP k 2"), ex("LLEN k"), ex("LINDEX k 0"), ex("LINDEX k abc"), ex("LRANGE k 0 -1"),
		ex("LTRIM k 0 -1"), ex("LREM k 0 a"), ex("LSET k 0 a"), ex("LSET k abc a"), ex("GET k"),
		ex("LRANGE k a 0"), ex("LPOP k -1"), ex("LREM k x a"),
		ex("RPUSH j a b"), ex("GET j"), ex("INCR j"), ex("APPEND j x"), ex("STRLEN j"), ex("GETDEL j"), ex("SET j v GET"),
		ex("MGET j k"), ex("LRANGE j 0 -1"), ex("SET j v"), ex("TYPE j"), ex("GET j"),
	}},
	{"keyspace", false, []oracleLine{
		ex("RPUSH k a b"), ex("LPUSH j c"), ex("SET m v"), ex("TYPE k"), ex("EXISTS k j m nokey"),
		ex("SCAN 0 TYPE list MATCH k"), ex("SCAN 0 TYPE LIST MATCH j"), ex("SCAN 0 TYPE list MATCH m"), ex("SCAN 0 TYPE string MATCH k"),
		ex("KEYS k"), ex("DBSIZE"), ex("DEL k j"), ex("TYPE k"), ex("DBSIZE"),
	}},
	{"expiry and rename", false, []oracleLine{
		ex("RPUSH k a b c"), ex("EXPIRE k 100"), {"TTL k", inS}, ex("LPUSH k z"), {"TTL k", inS}, ex("RPOP k"),
		ex("LTRIM k 0 1"), ex("LSET k 0 y"), ex("LREM k 0 a"), {"PTTL k", inMs}, ex("PERSIST k"), ex("TTL k"),
		ex("PEXPIRE k 5000 NX"), {"PTTL k", inMs}, ex("EXPIREAT k {s+200}"), {"TTL k", inS}, {"EXPIRETIME k", atS},
		ex("RENAME k j"), ex("EXISTS k"), ex("LRANGE j 0 -1"), {"TTL j", inS}, ex("RENAMENX j k"), ex("LLEN k"),
		ex("RPUSH m x"), ex("RENAMENX k m"), ex("RENAME k m"), ex("LRANGE m 0 -1"), ex("PEXPIRE m 0"), ex("EXISTS m"),
		ex("RPUSH m x"), ex("SET m v KEEPTTL"), ex("TYPE m"),
	}},
	{"multi", false, []oracleLine{
		ex("MULTI"), ex("RPUSH k a b c"), ex("LPOP k"), ex("LRANGE k 0 -1"), ex("LPOP k 5"), ex("LPOP k 5"), ex("LINDEX k 0"),
		ex("RPUSH k x"), ex("LSET k 5 y"), ex("LSET k 0 y"), ex("LLEN k"), ex("LTRIM k 1 0"), ex("EXISTS k"), ex("EXEC"),
		ex("MULTI"), ex("LPUSH k a"), ex("LPOP k 1 2"), ex("EXEC"),
	}},
}

// TestListCommandsAgainstRedis runs listOracleCases on Redcell and
// redis-server, in RESP2 and RESP3, and compares every reply with its
// type bytes.
func TestListCommandsAgainstRedis(t *testing.T) {
	t.Parallel()
	rd := startRedis(t)
	n := startTestNode(t, "lists-oracle")
	rc := mustDial(t, n.addr())
	runOracleCases(t, rc, rd, listOracleCases)
	// INFO keyspace counts list keys (Redcell's own line; not compared).
	mustDo(t, rc, "FLUSHALL")
	expectReply(t, rc, wantInt(3), "RPUSH", "l1", "a", "b", "c")
	expectReply(t, rc, wantInt(1), "LPUSH", "l2", "a")
	if info := mustDo(t, rc, "INFO", "keyspace").String(); !strings.Contains(info, "db0:keys=2,") {
		t.Errorf("INFO keyspace with two lists: %q", info)
	}
	// CL keys are strings (Redis has none to compare with): WRONGTYPE to
	// list commands, and CL.THROTTLE on a list is WRONGTYPE too.
	const wrongType = "WRONGTYPE Operation against a key holding the wrong kind of value"
	mustDo(t, rc, "CL.THROTTLE", "cl", "5", "1", "60")
	for _, args := range [][]string{{"LPUSH", "cl", "a"}, {"RPUSHX", "cl", "a"}, {"LPOP", "cl", "0"}, {"LLEN", "cl"},
		{"LINDEX", "cl", "abc"}, {"LRANGE", "cl", "0", "-1"}, {"LTRIM", "cl", "0", "1"}, {"LREM", "cl", "0", "a"},
		{"LSET", "cl", "0", "a"}, {"CL.THROTTLE", "l1", "5", "1", "60"}, {"CL.PEEK", "l2", "5", "1", "60"}} {
		expectReply(t, rc, wantErr(wrongType), args...)
	}
	expectReply(t, rc, wantStatus("string"), "TYPE", "cl")
	expectReply(t, rc, wantInt(3), "LLEN", "l1")
}

// TestClusterListsThroughFollower: list writes sent to a follower are
// forwarded to the leader and answer as on the leader (arrays, nil arrays
// and bulks travel in the forwarded results); every replica's READONLY
// reads then agree, and RAFT DIGEST agrees.
func TestClusterListsThroughFollower(t *testing.T) {
	c := startCluster(t, 3)
	leader := c.waitLeader()
	lc := mustDial(t, c.nodes[leader].addr())
	base := ceilSecond(max(replicatedClock(t, lc)+second, time.Now().UnixNano()))
	setClock(t, lc, base)
	fc := mustDial(t, c.nodes[(leader+1)%3].addr())
	for _, s := range []struct {
		args []string
		want string
	}{
		{[]string{"LPUSH", "l:a", "3", "2", "1"}, ":3"},
		{[]string{"RPUSH", "l:a", "4", "5", "6"}, ":6"},
		{[]string{"LPUSHX", "l:none", "x"}, ":0"},
		{[]string{"LPOP", "l:a"}, `$"1"`},
		{[]string{"RPOP", "l:a", "2"}, `*[$"6" $"5"]`},
		{[]string{"LPOP", "l:none", "2"}, "(nil*)"},
		{[]string{"LPOP", "l:none"}, "(nil$)"},
		{[]string{"LTRIM", "l:a", "0", "1"}, "++OK"},
		{[]string{"LSET", "l:a", "-1", "three"}, "++OK"},
		{[]string{"LSET", "l:a", "5", "x"}, "--ERR index out of range"},
		{[]string{"RPUSH", "l:a", "2", "2"}, ":4"},
		{[]string{"LREM", "l:a", "-1", "2"}, ":1"},
		{[]string{"LRANGE", "l:a", "0", "-1"}, `*[$"2" $"three" $"2"]`},
		{[]string{"LINDEX", "l:a", "-2"}, `$"three"`},
		{[]string{"LLEN", "l:a"}, ":3"},
		{[]string{"RPUSH", "l:e", "x"}, ":1"},
		{[]string{"PEXPIRE", "l:e", "30500"}, ":1"},
	} {
		if got := wire(mustDo(t, fc, s.args...)); got != s.want {
			t.Errorf("%v through the follower: %s, want %s", s.args, got, s.want)
		}
	}
	c.waitConverged(opTimeout)
	c.eachReadOnly(func(i int, nc *respConn) {
		if got := wire(mustDo(t, nc, "LRANGE", "l:a", "0", "-1")); got != `*[$"2" $"three" $"2"]` {
			t.Errorf("node %d: LRANGE %s", i, got)
		}
		expectReply(t, nc, wantInt(1), "LLEN", "l:e")
		expectReply(t, nc, wantStatus("list"), "TYPE", "l:a")
		expectReply(t, nc, wantInt(base/1e6+30500), "PEXPIRETIME", "l:e")
	})
	setClock(t, lc, base+31*second)
	expectReply(t, lc, wantInt(0), "DEL", "nokey") // an entry at the new now
	c.waitConverged(opTimeout)
	c.eachReadOnly(func(i int, nc *respConn) {
		expectReply(t, nc, wantInt(0), "LLEN", "l:e")
	})
	c.compareReplicas("after the list commands")
}

// TestListsSurviveSnapshotRestart: lists (one with elements of one- and
// three-byte lengths, one with an expiry, one at PXAT's maximum) are in
// the snapshot SAVE writes and read the same after SIGKILL and a restart
// from it.
func TestListsSurviveSnapshotRestart(t *testing.T) {
	t.Parallel()
	n := startTestNode(t, "lists-snapshot")
	c := mustDial(t, n.addr())
	base := freshBase(t, c)
	long := strings.Repeat("z", 20000)
	expectReply(t, c, wantInt(3), "RPUSH", "l", "a", long, "c")
	expectReply(t, c, wantInt(2), "LPUSH", "x", "1", "2")
	expectReply(t, c, wantInt(1), "PEXPIRE", "x", "123456")
	expectReply(t, c, wantInt(1), "RPUSH", "w", "far")
	expectReply(t, c, wantInt(1), "PEXPIREAT", "w", "9223372036854775807")
	expectReply(t, c, wantStatus("OK"), "SAVE")
	c = killAndRestoreSnapshot(t, n)
	setClock(t, c, base)
	if got := wire(mustDo(t, c, "LRANGE", "l", "0", "-1")); got != `*[$"a" $"`+long+`" $"c"]` {
		t.Errorf("LRANGE after the restart: %.100s", got)
	}
	if got := wire(mustDo(t, c, "LRANGE", "x", "0", "-1")); got != `*[$"2" $"1"]` {
		t.Errorf("LRANGE x after the restart: %s", got)
	}
	expectReply(t, c, wantInt(base/1e6+123456), "PEXPIRETIME", "x")
	expectReply(t, c, wantInt(9223372036854775807), "PEXPIRETIME", "w")
	expectReply(t, c, wantStatus("list"), "TYPE", "l")
	expectReply(t, c, wantBulk("c"), "RPOP", "l")
	expectReply(t, c, wantInt(3), "LPUSH", "l", "new")
}

// TestMaxmemoryRefusesListGrowth: above maxmemory LPUSH, RPUSH, their X
// forms and LSET answer OOM, on a new key and on an existing list alike
// (Redis's denyoom commands); reads, pops, LTRIM, LREM, EXPIRE and DEL go
// on.
func TestMaxmemoryRefusesListGrowth(t *testing.T) {
	t.Parallel()
	n := startTestNode(t, "lists-maxmemory")
	c := mustDial(t, n.addr())
	freshBase(t, c)
	expectReply(t, c, wantInt(4), "RPUSH", "old", "a", "b", "c", "d")
	expectReply(t, c, wantStatus("OK"), "CONFIG", "SET", "maxmemory", "1mb")
	const oom = "OOM command not allowed when used memory > 'maxmemory'."
	for deadline := time.Now().Add(5 * time.Second); ; {
		r := mustDo(t, c, "RPUSH", "new", "v")
		if r.kind == '-' {
			if r.str != oom {
				t.Fatalf("RPUSH of a new key above maxmemory: %q", r.str)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("new lists still accepted 5 s after maxmemory went below used memory: %v", r)
		}
		expectReply(t, c, wantInt(1), "DEL", "new")
	}
	for _, args := range [][]string{{"LPUSH", "new", "v"}, {"RPUSHX", "new", "v"}, {"LPUSH", "old", "v"}, {"RPUSH", "old", "v"},
		{"LPUSHX", "old", "v"}, {"RPUSHX", "old", "v"}, {"LSET", "old", "0", "v"}} {
		expectReply(t, c, wantErr(oom), args...)
	}
	expectReply(t, c, wantBulk("a"), "LPOP", "old")
	expectReply(t, c, wantInt(1), "LREM", "old", "0", "d")
	expectReply(t, c, wantStatus("OK"), "LTRIM", "old", "0", "0")
	expectReply(t, c, wantInt(1), "LLEN", "old")
	expectReply(t, c, wantBulk("b"), "LINDEX", "old", "0")
	expectReply(t, c, wantInt(1), "EXPIRE", "old", "100")
	expectReply(t, c, wantInt(1), "DEL", "old")
	expectReply(t, c, wantStatus("OK"), "CONFIG", "SET", "maxmemory", "0")
}
