package systemtest

import (
	"strings"
	"testing"
	"time"
)

// The string commands against redis-server 7 as the oracle: the same lines
// on both, in RESP2 and RESP3, replies compared including each reply's
// type byte (so $-1, _ and *-1 differ). Redcell's clock is frozen and
// Redis's runs: times left are compared within a tolerance (the expiry
// test's helpers).

// wire renders a reply with the RESP type of every element, nils included.
func wire(r reply) string {
	if r.null {
		return "(nil" + string(r.kind) + ")"
	}
	if len(r.elems) > 0 {
		parts := make([]string, len(r.elems))
		for i, e := range r.elems {
			parts[i] = wire(e)
		}
		return string(r.kind) + "[" + strings.Join(parts, " ") + "]"
	}
	return string(r.kind) + r.String()
}

// stringOracleCases run on keys that do not exist when each starts.
var stringOracleCases = []oracleCase{
	{"get set", false, []oracleLine{
		ex("SET k v"), ex("GET k"), ex("GET nokey"), ex("STRLEN k"), ex("STRLEN nokey"), ex("APPEND k abc"), ex("GET k"),
		ex("APPEND j xyz"), ex("GET j"), ex("SETNX k z"), ex("SETNX n z"), ex("GET n"), ex("GETSET k w"), ex("GETSET m w"),
		ex("GETDEL k"), ex("GETDEL k"), ex("EXISTS k"), ex("TYPE j"), ex("SCAN 0 TYPE string MATCH j"), ex("KEYS j"),
	}},
	{"set options", false, []oracleLine{
		ex("SET k v NX"), ex("SET k v NX"), ex("SET k w XX"), ex("GET k"), ex("SET j v XX"), ex("EXISTS j"),
		ex("SET k v2 GET"), ex("SET j v GET"), ex("SET k v3 NX GET"), ex("SET k v4 XX GET"), ex("SET m v4 XX GET"), ex("GET k"),
		ex("SET k v EX 100"), {"TTL k", inS}, ex("SET k v KEEPTTL"), {"TTL k", inS}, ex("SET k v"), ex("TTL k"),
		ex("SET k v PX 5000"), {"PTTL k", inMs}, ex("SET k v EXAT {s+100}"), {"TTL k", inS},
		ex("SET k v PXAT {ms+100000}"), {"PTTL k", inMs}, {"PEXPIRETIME k", atMs},
		ex("SET k v EX 10 EX 20"), {"TTL k", inS}, ex("set k v nx nx"), ex("SET k v xx KeepTTL get"), {"TTL k", inS},
		ex("SET k v PXAT 9223372036854775807"), ex("PEXPIRETIME k"), ex("EXPIRETIME k"), ex("APPEND k w"), ex("PEXPIRETIME k"),
		ex("SET k v EXAT 9223372036854775"), ex("PEXPIRETIME k"), {"TTL k", inSAbs}, ex("SET k v KEEPTTL"), ex("PEXPIRETIME k"),
		ex("INCRBY j 1"), ex("SET j 2 KEEPTTL"), ex("GETEX j PXAT 9223372036854775807"), ex("PEXPIRETIME j"), ex("DEL j"),
		ex("SET k v EXAT 1"), ex("EXISTS k"), ex("SET j w PXAT 1 GET"), ex("EXISTS j"),
	}},
	{"set errors", false, []oracleLine{
		ex("SET k v NX XX"), ex("SET k v XX NX"), ex("SET k v EX 10 PX 10"), ex("SET k v EX 10 KEEPTTL"), ex("SET k v KEEPTTL EX 10"),
		ex("SET k v EX"), ex("SET k v EX 0"), ex("SET k v EX -1"), ex("SET k v PX 0"), ex("SET k v EX abc"), ex("SET k v EX abc NX XX"),
		ex("SET k v FOO"), ex("SET k v PERSIST"), ex("SET k v EX 9223372036854775807"), ex("SET k v PX 9223372036854775807"),
		ex("SET k v EXAT 9223372036854775807"), ex("SET k v EX +5"), ex("SET k v EX 010"), ex("SET k v EX 1.5"),
		ex("SETEX k 0 v"), ex("SETEX k abc v"), ex("SETEX k 9223372036854775807 v"), ex("PSETEX k 0 v"), ex("PSETEX k 9223372036854775807 v"),
		ex("SETEX k 100 v"), {"TTL k", inS}, ex("PSETEX k 5000 v"), {"PTTL k", inMs},
		ex("SET k"), ex("GET"), ex("SETEX k 10"), ex("GETSET k"), ex("SETNX k"), ex("STRLEN"), ex("GETDEL"), ex("APPEND k"),
	}},
	{"incr", false, []oracleLine{
		ex("SET n 10"), ex("INCR n"), ex("INCRBY n 5"), ex("DECR n"), ex("DECRBY n 3"), ex("INCRBY n -20"), ex("GET n"),
		ex("INCR j"), ex("DECR m"), ex("INCRBY n abc"), ex("INCRBY n +1"), ex("INCRBY n 01"), ex("INCRBY n 1.5"), ex("INCRBY n -0"),
		ex("SET n 9223372036854775807"), ex("INCR n"), ex("INCRBY n 0"), ex("SET n -9223372036854775808"), ex("DECR n"),
		ex("DECRBY n -9223372036854775808"), ex("INCRBY n -9223372036854775808"), ex("SET n 0"), ex("DECRBY n -9223372036854775807"), ex("GET n"),
		ex("SET n abc"), ex("INCR n"), ex("SET n 01"), ex("INCR n"), ex("SET n +1"), ex("INCR n"), ex("SET n -0"), ex("INCR n"),
		ex("SET n 1.5"), ex("INCR n"), ex("SET n 99999999999999999999"), ex("INCR n"), ex("SET n 1"),
		ex("EXPIRE n 100"), ex("INCR n"), {"TTL n", inS}, ex("APPEND n 5"), {"TTL n", inS}, ex("GET n"), ex("INCR n"),
		ex("INCR"), ex("INCRBY n"), ex("DECRBY n 1 2"),
	}},
	{"mget mset", false, []oracleLine{
		ex("MSET k 1 j 2"), ex("MGET k j nokey"), ex("MSET k"), ex("MSET k 1 j"), ex("MSETNX k 1 m 3"), ex("MGET m"),
		ex("MSETNX m 3 n 4"), ex("MGET m n"), ex("MSETNX e 1 e 2"), ex("GET e"), ex("MSET k 1 k 2"), ex("GET k"), ex("MGET nokey"),
		ex("MGET"), ex("MSETNX k"),
	}},
	{"getex", false, []oracleLine{
		ex("SET k v"), ex("GETEX k"), ex("GETEX k EX 100"), {"TTL k", inS}, ex("GETEX k PERSIST"), ex("TTL k"),
		ex("GETEX k PX 5000"), {"PTTL k", inMs}, ex("GETEX k EXAT {s+100}"), {"TTL k", inS}, ex("GETEX k PXAT {ms+100000}"), {"PTTL k", inMs},
		ex("GETEX nokey EX abc"), ex("GETEX k EX abc"), ex("GETEX k EX 0"), ex("GETEX k EX 9223372036854775807"),
		ex("GETEX k PX 9223372036854775807"), ex("GETEX k EX 10 PERSIST"), ex("GETEX k PERSIST EX 10"), ex("GETEX k KEEPTTL"),
		ex("GETEX k NX"), ex("GETEX k EX"), {"PTTL k", inMs}, ex("GETEX k EXAT 1"), ex("EXISTS k"), ex("GETEX"),
	}},
	{"expiry on strings", false, []oracleLine{
		ex("SET k v"), ex("EXPIRE k 100"), {"TTL k", inS}, ex("PERSIST k"), ex("TTL k"), ex("EXPIRE k 100 NX"),
		ex("SET k w KEEPTTL"), {"PTTL k", inMs}, ex("PEXPIRE k 0"), ex("GET k"), ex("EXISTS k"),
	}},
	{"incrbyfloat", false, []oracleLine{
		ex("SET k 0.1"), ex("INCRBYFLOAT k 0.2"), ex("INCRBYFLOAT k 0x10"), ex("INCRBYFLOAT k .5"), ex("INCRBYFLOAT k 5."),
		ex("INCRBYFLOAT k +1"), ex("INCRBYFLOAT k 0x1p3"), ex("INCRBYFLOAT k 0x1.8"), ex("INCRBYFLOAT k 0x.8"), ex("INCRBYFLOAT k -1E2"),
		ex("INCRBYFLOAT k 1e5000"), ex("INCRBYFLOAT k 1e-5000"), ex("INCRBYFLOAT k inf"), ex("INCRBYFLOAT k -Infinity"),
		ex("INCRBYFLOAT k nan"), ex("INCRBYFLOAT k 1_0"), ex("INCRBYFLOAT k 0b1"), ex("INCRBYFLOAT k 1e"), ex("INCRBYFLOAT k 1.2.3"),
		ex("INCRBYFLOAT k 0x"), ex("INCRBYFLOAT k 1.5p3"), ex("INCRBYFLOAT k abc"), ex("GET k"),
		ex("INCRBYFLOAT j 1e308"), ex("INCRBYFLOAT j 1e308"), ex("INCRBYFLOAT m 1.18e4932"), ex("INCRBYFLOAT m 1.18e4932"),
		ex("INCRBYFLOAT n 123456789012345678901234567890"), ex("INCRBYFLOAT n 0.1"), ex("INCRBYFLOAT e -0"),
		ex("INCRBYFLOAT e 5e-18"), ex("INCRBYFLOAT e 1e-17"), ex("INCRBYFLOAT e 3e-4950"), ex("INCRBYFLOAT e 0.7"), ex("INCRBYFLOAT e -0.7"),
		ex("SET k inf"), ex("INCRBYFLOAT k 1"), ex("SET k 1.5e3"), ex("INCRBYFLOAT k 0"), ex("INCRBYFLOAT k -1500"),
		ex("SET k 10"), ex("EXPIRE k 100"), ex("INCRBYFLOAT k 2.5"), {"TTL k", inS}, ex("SET k abc"), ex("INCRBYFLOAT k 1"),
		ex("SET k 1"), ex("INCRBYFLOAT k 1.0000000000000000001"), ex("INCRBYFLOAT k 0.3333333333333333333333"), ex("INCRBYFLOAT k"),
	}},
	{"multi", false, []oracleLine{
		ex("MULTI"), ex("SET k v"), ex("INCR k"), ex("GET k"), ex("SET k 5 GET"), ex("INCRBY k 5"), ex("SET k v EX 0"),
		ex("MGET k nokey"), ex("GETDEL k"), ex("EXEC"),
	}},
}

// TestStringCommandsAgainstRedis runs stringOracleCases on Redcell and
// redis-server, in RESP2 and RESP3, and compares every reply.
func TestStringCommandsAgainstRedis(t *testing.T) {
	t.Parallel()
	rd := startRedis(t)
	n := startTestNode(t, "strings-oracle")
	rc := mustDial(t, n.addr())
	runOracleCases(t, rc, rd, stringOracleCases)
}

// TestClusterStringsThroughFollower: string writes sent to a follower are
// forwarded to the leader and answer as on the leader (bulk, nil, arrays
// with nils travel in the forwarded results); every replica's READONLY
// reads then agree, the expiry set through SET EX ends the key everywhere,
// and RAFT DIGEST agrees.
func TestClusterStringsThroughFollower(t *testing.T) {
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
		{[]string{"SET", "s:a", "hello"}, "++OK"},
		{[]string{"SET", "s:a", "x", "NX"}, "(nil$)"},
		{[]string{"SET", "s:a", "world", "GET"}, `$"hello"`},
		{[]string{"GETSET", "s:none", "v"}, "(nil$)"},
		{[]string{"INCRBY", "s:n", "41"}, ":41"},
		{[]string{"INCR", "s:n"}, ":42"},
		{[]string{"INCR", "s:a"}, "--ERR value is not an integer or out of range"},
		{[]string{"APPEND", "s:a", "!"}, ":6"},
		{[]string{"SET", "s:e", "gone", "PX", "30500"}, "++OK"},
		{[]string{"MSET", "s:m1", "1", "s:m2", "2"}, "++OK"},
		{[]string{"GETDEL", "s:none"}, `$"v"`},
		{[]string{"GETEX", "s:m1", "EX", "100"}, `$"1"`},
		{[]string{"MGET", "s:a", "s:none", "s:n"}, `*[$"world!" (nil$) $"42"]`},
	} {
		if got := wire(mustDo(t, fc, s.args...)); got != s.want {
			t.Errorf("%v through the follower: %s, want %s", s.args, got, s.want)
		}
	}
	c.waitConverged(opTimeout)
	c.eachReadOnly(func(i int, nc *respConn) {
		if got := wire(mustDo(t, nc, "MGET", "s:a", "s:n", "s:e", "s:m2", "s:none")); got != `*[$"world!" $"42" $"gone" $"2" (nil$)]` {
			t.Errorf("node %d: MGET %s", i, got)
		}
		expectReply(t, nc, wantInt(base/1e6+30500), "PEXPIRETIME", "s:e")
		expectReply(t, nc, wantInt(base/1e6+100000), "PEXPIRETIME", "s:m1")
	})
	setClock(t, lc, base+31*second)
	expectReply(t, lc, wantInt(0), "DEL", "nokey") // an entry at the new now
	c.waitConverged(opTimeout)
	c.eachReadOnly(func(i int, nc *respConn) {
		if got := wire(mustDo(t, nc, "GET", "s:e")); got != "(nil$)" {
			t.Errorf("node %d: GET of the expired key: %s", i, got)
		}
	})
	c.compareReplicas("after the string commands")
}

// TestStringsSurviveSnapshotRestart: strings (an empty one, one with an
// expiry, one at PXAT's maximum, a counter) are in the snapshot SAVE writes and read the same after
// SIGKILL and a restart from it.
func TestStringsSurviveSnapshotRestart(t *testing.T) {
	t.Parallel()
	n := startTestNode(t, "strings-snapshot")
	c := mustDial(t, n.addr())
	base := freshBase(t, c)
	expectReply(t, c, wantStatus("OK"), "SET", "v", "value")
	expectReply(t, c, wantStatus("OK"), "SET", "empty", "")
	expectReply(t, c, wantStatus("OK"), "SET", "x", "later", "PX", "123456")
	expectReply(t, c, wantInt(7), "INCRBY", "n", "7")
	expectReply(t, c, wantStatus("OK"), "SET", "w", "far", "PXAT", "9223372036854775807")
	expectReply(t, c, wantStatus("OK"), "SAVE")
	c = killAndRestoreSnapshot(t, n)
	setClock(t, c, base)
	if got := wire(mustDo(t, c, "MGET", "v", "empty", "x", "n")); got != `*[$"value" $"" $"later" $"7"]` {
		t.Errorf("MGET after the restart: %s", got)
	}
	expectReply(t, c, wantInt(base/1e6+123456), "PEXPIRETIME", "x")
	expectReply(t, c, wantInt(9223372036854775807), "PEXPIRETIME", "w")
	expectReply(t, c, wantStatus("string"), "TYPE", "empty")
	expectReply(t, c, wantInt(8), "INCR", "n")
}

// TestMaxmemoryRefusesNewStrings: above maxmemory every string command that
// would create a key answers OOM (MSET when any of its keys is new), and so
// does every one that may grow an existing value by what the client chooses
// (SET, APPEND, GETSET, MSET), as Redis refuses its denyoom commands; INCR
// of an existing counter, EXPIRE and DEL go on.
func TestMaxmemoryRefusesNewStrings(t *testing.T) {
	t.Parallel()
	n := startTestNode(t, "strings-maxmemory")
	c := mustDial(t, n.addr())
	freshBase(t, c)
	expectReply(t, c, wantStatus("OK"), "SET", "old", "v")
	expectReply(t, c, wantInt(1), "INCR", "count")
	expectReply(t, c, wantStatus("OK"), "CONFIG", "SET", "maxmemory", "1mb")
	const oom = "OOM command not allowed when used memory > 'maxmemory'."
	for deadline := time.Now().Add(5 * time.Second); ; {
		r := mustDo(t, c, "SET", "new", "v")
		if r.kind == '-' {
			if r.str != oom {
				t.Fatalf("SET of a new key above maxmemory: %q", r.str)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("new strings still accepted 5 s after maxmemory went below used memory: %v", r)
		}
		expectReply(t, c, wantInt(1), "DEL", "new")
	}
	for _, args := range [][]string{{"SETNX", "new", "v"}, {"SETEX", "new", "10", "v"}, {"GETSET", "new", "v"}, {"APPEND", "new", "v"},
		{"INCR", "new"}, {"DECRBY", "new", "2"}, {"MSET", "old", "w", "new", "v"}, {"MSETNX", "new", "v"}} {
		expectReply(t, c, wantErr(oom), args...)
	}
	for _, args := range [][]string{{"SET", "old", "w"}, {"APPEND", "old", "w"}, {"GETSET", "old", "w"}, {"MSET", "old", "x", "count", "5"}} {
		expectReply(t, c, wantErr(oom), args...)
	}
	expectReply(t, c, wantInt(2), "INCR", "count")
	expectReply(t, c, wantInt(1), "EXPIRE", "old", "100")
	expectReply(t, c, wantBulk("v"), "GET", "old")
	expectReply(t, c, wantInt(0), "EXISTS", "new")
	expectReply(t, c, wantStatus("OK"), "CONFIG", "SET", "maxmemory", "0")
}
