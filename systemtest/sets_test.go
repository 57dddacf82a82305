package systemtest

import (
	"sort"
	"strings"
	"testing"
	"time"
)

// The set commands against redis-server 7 as the oracle, in RESP2 and
// RESP3, through a follower of a 3-node cluster, across a snapshot restart
// and under maxmemory. SMEMBERS's order is unspecified (data-types.md), so
// its members are compared sorted (setUnordered lines).

// setUnordered marks an oracle line whose reply's members may come in any
// order: the elements of every set, and of every array of bulk strings, are
// sorted before comparing (an EXEC's array keeps its order).
const setUnordered = 101

// setUn is an oracle line compared setUnordered.
func setUn(l string) oracleLine { return oracleLine{l, setUnordered} }

// wireSetSorted is wire with the members of setUnordered collections sorted.
func wireSetSorted(r reply) string {
	if r.null || len(r.elems) == 0 {
		return wire(r)
	}
	parts := make([]string, len(r.elems))
	bulks := true
	for i, e := range r.elems {
		parts[i] = wireSetSorted(e)
		bulks = bulks && e.kind == '$'
	}
	if r.kind == '~' || r.kind == '*' && bulks {
		sort.Strings(parts)
	}
	return string(r.kind) + "[" + strings.Join(parts, " ") + "]"
}

// setOracleCases run on keys that do not exist when each starts.
var setOracleCases = []oracleCase{
	{"set commands", false, []oracleLine{
		ex("SADD k a b c"), ex("SADD k a"), ex("SADD k d a d"), ex("SCARD k"), ex("SCARD nokey"),
		ex("SISMEMBER k a"), ex("SISMEMBER k z"), ex("SISMEMBER nokey a"), ex("SMISMEMBER k a z b a"), ex("SMISMEMBER nokey a b"),
		setUn("SMEMBERS k"), setUn("SMEMBERS nokey"), ex("SREM k a z a"), ex("SREM k a"), ex("SREM nokey a"), setUn("SMEMBERS k"),
		ex("SREM k b c d"), ex("EXISTS k"), ex("TYPE k"), ex("SCARD k"), setUn("SMEMBERS k"),
		ex("SADD j 3 1 2 10 -5"), setUn("SMEMBERS j"), ex("SISMEMBER j 10"), ex("SISMEMBER j 01"), ex("SADD j x"), setUn("SMEMBERS j"),
		ex("SISMEMBER j 10"), ex("SREM j 1 2 3 10 -5"), setUn("SMEMBERS j"), ex("sadd m A a"), ex("SMISMEMBER m a A b"), ex("TYPE m"),
	}},
	{"set arity", false, []oracleLine{
		ex("SADD k"), ex("SADD"), ex("SREM k"), ex("SISMEMBER k"), ex("SISMEMBER k a b"), ex("SMISMEMBER k"),
		ex("SCARD"), ex("SCARD k j"), ex("SMEMBERS"), ex("SMEMBERS k j"), ex("EXISTS k"),
	}},
	{"set wrongtype", false, []oracleLine{
		ex("SET j 123"), ex("SADD j a"), ex("SREM j a"), ex("SISMEMBER j a"), ex("SMISMEMBER j a"), ex("SCARD j"),
		ex("SMEMBERS j"), ex("GET j"), ex("SADD k a"), ex("GET k"), ex("INCR k"), ex("APPEND k x"), ex("STRLEN k"),
		ex("GETDEL k"), ex("GETEX k PERSIST"), ex("INCRBYFLOAT k 1"), ex("SET k v GET"), ex("GETSET k v"), ex("MGET k j"),
		ex("SADD k b"), ex("SET k v"), ex("TYPE k"), ex("GET k"), ex("SADD k a"),
	}},
	{"set keyspace", false, []oracleLine{
		ex("SADD k a b"), ex("SET j v"), ex("TYPE k"), ex("EXISTS k j"), ex("SCAN 0 TYPE set"), ex("SCAN 0 TYPE SET MATCH k"),
		ex("SCAN 0 TYPE string"), ex("KEYS k"), ex("DBSIZE"), ex("EXPIRE k 100"), {"TTL k", inS}, ex("SADD k c"), {"TTL k", inS},
		ex("SREM k a"), {"PTTL k", inMs}, ex("PERSIST k"), ex("TTL k"), ex("PEXPIREAT k {ms+100000}"), {"PEXPIRETIME k", atMs},
		ex("RENAME k m"), ex("EXISTS k"), setUn("SMEMBERS m"), {"TTL m", inS}, ex("RENAMENX m j"), ex("RENAME j m"), ex("TYPE m"),
		ex("SADD k x"), ex("EXPIRE k 0"), ex("EXISTS k"), ex("SCARD k"), ex("SADD k a"), ex("DEL k"), ex("SISMEMBER k a"),
		ex("SADD e a"), ex("TOUCH e"), ex("UNLINK e"), ex("DBSIZE"),
	}},
	{"set multi", false, []oracleLine{
		ex("MULTI"), ex("SADD k a b c"), ex("SISMEMBER k a"), setUn("SMEMBERS k"), ex("SREM k a b c"), ex("SCARD k"), ex("EXISTS k"),
		ex("SET j v"), ex("SADD j a"), ex("SMISMEMBER k a"), ex("SADD k z"), setUn("EXEC"), setUn("SMEMBERS k"),
		ex("MULTI"), ex("SADD k"), ex("SCARD k"), ex("EXEC"), ex("SCARD k"),
	}},
}

// TestSetCommandsAgainstRedis runs setOracleCases on Redcell and
// redis-server, in RESP2 and RESP3, and compares every reply.
func TestSetCommandsAgainstRedis(t *testing.T) {
	t.Parallel()
	rd := startRedis(t)
	n := startTestNode(t, "sets-oracle")
	rc := mustDial(t, n.addr())
	runOracleCases(t, rc, rd, setOracleCases)
}

// TestSetsAgainstCLKeys: a CL key is a string, so every set command
// answers WRONGTYPE on it and changes nothing (Redis has no CL keys: not
// in the oracle); INFO keyspace counts sets with the other keys.
func TestSetsAgainstCLKeys(t *testing.T) {
	t.Parallel()
	n := startTestNode(t, "sets-cl")
	c := mustDial(t, n.addr())
	freshBase(t, c)
	if v, ok := mustDo(t, c, "CL.THROTTLE", "cl", "5", "1", "60").ints(); !ok || v[0] != 0 {
		t.Fatalf("CL.THROTTLE: %v", v)
	}
	const wrongType = "WRONGTYPE Operation against a key holding the wrong kind of value"
	for _, args := range [][]string{{"SADD", "cl", "a"}, {"SREM", "cl", "a"}, {"SISMEMBER", "cl", "a"},
		{"SMISMEMBER", "cl", "a"}, {"SCARD", "cl"}, {"SMEMBERS", "cl"}} {
		expectReply(t, c, wantErr(wrongType), args...)
	}
	expectReply(t, c, wantStatus("string"), "TYPE", "cl")
	expectReply(t, c, wantInt(1), "SADD", "s", "a")
	expectReply(t, c, wantInt(1), "PEXPIRE", "s", "5000")
	if db0 := infoField(mustDo(t, c, "INFO", "keyspace").str, "db0"); !strings.HasPrefix(db0, "keys=2,expires=2,") {
		t.Errorf("INFO keyspace with a CL key and a set: db0:%s", db0)
	}
	expectReply(t, c, wantErr(wrongType), "CL.THROTTLE", "s", "5", "1", "60")
	expectReply(t, c, wantErr(wrongType), "TB.TAKE", "s", "5", "1", "60000")
}

// TestClusterSetsThroughFollower: set writes sent to a follower are
// forwarded to the leader and answer as on the leader (KindSet and
// KindInts replies travel in the forwarded results, also inside MULTI);
// every replica's READONLY reads then agree, an expiry set through the
// follower ends the set everywhere, and RAFT DIGEST agrees.
func TestClusterSetsThroughFollower(t *testing.T) {
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
		{[]string{"SADD", "s:a", "x", "y", "z", "x"}, ":3"},
		{[]string{"SADD", "s:a", "x"}, ":0"},
		{[]string{"SREM", "s:a", "y", "nope"}, ":1"},
		{[]string{"SISMEMBER", "s:a", "x"}, ":1"},
		{[]string{"SMISMEMBER", "s:a", "y", "z"}, "*[:0 :1]"},
		{[]string{"SCARD", "s:a"}, ":2"},
		{[]string{"SMEMBERS", "s:a"}, `*[$"x" $"z"]`},
		{[]string{"SADD", "s:e", "gone"}, ":1"},
		{[]string{"PEXPIRE", "s:e", "30500"}, ":1"},
		{[]string{"SET", "s:str", "v"}, "++OK"},
		{[]string{"SADD", "s:str", "a"}, "--WRONGTYPE Operation against a key holding the wrong kind of value"},
		{[]string{"MULTI"}, "++OK"},
		{[]string{"SADD", "s:m", "b", "a"}, "++QUEUED"},
		{[]string{"SMISMEMBER", "s:m", "a", "c"}, "++QUEUED"},
		{[]string{"SMEMBERS", "s:m"}, "++QUEUED"},
		{[]string{"SREM", "s:m", "a"}, "++QUEUED"},
		{[]string{"EXEC"}, `*[:2 *[:1 :0] *[$"a" $"b"] :1]`},
	} {
		if got := wire(mustDo(t, fc, s.args...)); got != s.want {
			t.Errorf("%v through the follower: %s, want %s", s.args, got, s.want)
		}
	}
	mustDo(t, fc, "HELLO", "3")
	if got := wire(mustDo(t, fc, "SMEMBERS", "s:a")); got != `~[$"x" $"z"]` {
		t.Errorf("SMEMBERS through the follower in RESP3: %s", got)
	}
	c.waitConverged(opTimeout)
	c.eachReadOnly(func(i int, nc *respConn) {
		for _, s := range []struct {
			args []string
			want string
		}{
			{[]string{"SMEMBERS", "s:a"}, `*[$"x" $"z"]`},
			{[]string{"SMEMBERS", "s:m"}, `*[$"b"]`},
			{[]string{"SISMEMBER", "s:e", "gone"}, ":1"},
			{[]string{"SCAN", "0", "TYPE", "set", "MATCH", "s:a"}, `*[$"0" *[$"s:a"]]`},
			{[]string{"TYPE", "s:m"}, "++set"},
		} {
			if got := wire(mustDo(t, nc, s.args...)); got != s.want {
				t.Errorf("node %d: %v: %s, want %s", i, s.args, got, s.want)
			}
		}
		expectReply(t, nc, wantInt(base/1e6+30500), "PEXPIRETIME", "s:e")
	})
	setClock(t, lc, base+31*second)
	expectReply(t, lc, wantInt(0), "DEL", "nokey") // an entry at the new now
	c.waitConverged(opTimeout)
	c.eachReadOnly(func(i int, nc *respConn) {
		expectReply(t, nc, wantInt(0), "SCARD", "s:e")
		expectReply(t, nc, wantInt(0), "EXISTS", "s:e")
	})
	c.compareReplicas("after the set commands")
}

// TestSetsSurviveSnapshotRestart: sets (a small one, one with an expiry,
// one of 300 members) are in the snapshot SAVE writes and read the same
// after SIGKILL and a restart from it.
func TestSetsSurviveSnapshotRestart(t *testing.T) {
	t.Parallel()
	n := startTestNode(t, "sets-snapshot")
	c := mustDial(t, n.addr())
	base := freshBase(t, c)
	expectReply(t, c, wantInt(2), "SADD", "small", "b", "a")
	expectReply(t, c, wantInt(1), "SADD", "x", "later")
	expectReply(t, c, wantInt(1), "PEXPIRE", "x", "123456")
	members := make([]string, 300)
	for i := range members {
		members[i] = strings.Repeat("m", i%40) + string(rune('a'+i%26)) + strings.Repeat("z", i/26)
	}
	expectReply(t, c, wantInt(300), append([]string{"SADD", "big"}, members...)...)
	expectReply(t, c, wantStatus("OK"), "SAVE")
	c = killAndRestoreSnapshot(t, n)
	setClock(t, c, base)
	if got := wire(mustDo(t, c, "SMEMBERS", "small")); got != `*[$"a" $"b"]` {
		t.Errorf("SMEMBERS after the restart: %s", got)
	}
	expectReply(t, c, wantInt(base/1e6+123456), "PEXPIRETIME", "x")
	expectReply(t, c, wantInt(300), "SCARD", "big")
	for _, m := range members {
		expectReply(t, c, wantInt(1), "SISMEMBER", "big", m)
	}
	expectReply(t, c, wantStatus("set"), "TYPE", "big")
}

// TestMaxmemoryRefusesSetGrowth: above maxmemory SADD answers OOM, on a
// new key and on an existing set (Redis's denyoom), while SREM, the reads,
// EXPIRE and DEL go on.
func TestMaxmemoryRefusesSetGrowth(t *testing.T) {
	t.Parallel()
	n := startTestNode(t, "sets-maxmemory")
	c := mustDial(t, n.addr())
	freshBase(t, c)
	expectReply(t, c, wantInt(2), "SADD", "old", "a", "b")
	expectReply(t, c, wantStatus("OK"), "CONFIG", "SET", "maxmemory", "1mb")
	const oom = "OOM command not allowed when used memory > 'maxmemory'."
	for deadline := time.Now().Add(5 * time.Second); ; {
		r := mustDo(t, c, "SADD", "new", "v")
		if r.kind == '-' {
			if r.str != oom {
				t.Fatalf("SADD of a new key above maxmemory: %q", r.str)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("new sets still accepted 5 s after maxmemory went below used memory: %v", r)
		}
		expectReply(t, c, wantInt(1), "DEL", "new")
	}
	expectReply(t, c, wantErr(oom), "SADD", "old", "c")
	expectReply(t, c, wantErr(oom), "SADD", "old", "a")
	expectReply(t, c, wantInt(1), "SREM", "old", "a")
	expectReply(t, c, wantInt(1), "SISMEMBER", "old", "b")
	expectReply(t, c, wantInt(1), "SCARD", "old")
	expectReply(t, c, wantInt(1), "EXPIRE", "old", "100")
	expectReply(t, c, wantInt(0), "EXISTS", "new")
	expectReply(t, c, wantInt(1), "DEL", "old")
	expectReply(t, c, wantStatus("OK"), "CONFIG", "SET", "maxmemory", "0")
}
