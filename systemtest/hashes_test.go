package systemtest

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// The hash commands against redis-server 7 as the oracle, as the string
// commands are (strings_test.go): the same lines on both, in RESP2 and
// RESP3, replies compared with every element's type byte. A small hash
// answers HGETALL, HKEYS and HVALS in insertion order on both (Redis's
// listpack, Redcell's encoding), so those replies are compared exactly; a
// hash Redis has turned into a hashtable (more than 128 fields, or a value
// longer than 64 bytes) answers in its own order, and those lines compare
// the elements (pairs for HGETALL) sorted.

// unordered compares a reply's elements (HGETALL's pairs) as a multiset.
const unordered = 100

func unord(l string) oracleLine { return oracleLine{l, unordered} }

// sortedWire is wire with the elements, or HGETALL's field/value pairs
// (pairs true), sorted.
func sortedWire(r reply, pairs bool) string {
	if r.null || len(r.elems) == 0 {
		return wire(r)
	}
	step := 1
	if pairs {
		step = 2
	}
	var parts []string
	for i := 0; i+step <= len(r.elems); i += step {
		s := wire(r.elems[i])
		if pairs {
			s += " " + wire(r.elems[i+1])
		}
		parts = append(parts, s)
	}
	slices.Sort(parts)
	return string(r.kind) + "[" + strings.Join(parts, " ") + "]"
}

// manyFields is HSET k with n fields f0..f{n-1} (value vN), enough past
// 128 to make Redis's listpack a hashtable.
func manyFields(key string, n int) string {
	var b strings.Builder
	b.WriteString("HSET " + key)
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, " f%d v%d", i, i)
	}
	return b.String()
}

// hashOracleCases run on keys that do not exist when each starts.
var hashOracleCases = []oracleCase{
	{"basics", false, []oracleLine{
		ex("HSET k a 1 b 2"), ex("HGET k a"), ex("HGET k z"), ex("HGET nokey a"), ex("HLEN k"), ex("HLEN nokey"),
		ex("HEXISTS k a"), ex("HEXISTS k z"), ex("HEXISTS nokey a"), ex("HMGET k a z b"), ex("HMGET nokey a b"), ex("HMGET k a"),
		ex("HGETALL k"), ex("HGETALL nokey"), ex("HKEYS k"), ex("HVALS k"), ex("HKEYS nokey"), ex("HVALS nokey"),
		ex("HSET k a 3 c 4"), ex("HGETALL k"), ex("HSET k a 3"), ex("HSET k d 1 d 2"), ex("HGET k d"), ex("hmset k e 5 f 6"),
		ex("HGETALL k"), ex("HSETNX k a x"), ex("HSETNX k g 7"), ex("HSETNX j a b"), ex("HGETALL j"), ex("HDEL k a z"),
		ex("HDEL k zz"), ex("HKEYS k"), ex("HDEL k b c d e f g"), ex("EXISTS k"), ex("HGETALL k"), ex("HLEN k"), ex("TYPE j"),
		ex("TYPE k"), ex("SCAN 0 TYPE hash"), ex("SCAN 0 TYPE HASH MATCH j"), ex("SCAN 0 TYPE string"), ex("KEYS j"), ex("DBSIZE"),
		ex("HSET k {empty} {empty}"), ex("HGET k {empty}"), ex("HEXISTS k {empty}"), ex("HGETALL k"), ex("HLEN k"),
		ex("HSET k bin\x00\xff v\x00"), ex("HGET k bin\x00\xff"), ex("HDEL k {empty} bin\x00\xff"), ex("EXISTS k"),
		ex("HDEL nokey a"), ex("EXISTS nokey"), ex("HDEL j a a"), ex("EXISTS j"),
	}},
	{"arity", false, []oracleLine{
		ex("HSET k"), ex("HSET k a"), ex("HSET k a 1 b"), ex("HMSET k a"), ex("HMSET k a 1 b"), ex("HSETNX k a"),
		ex("HSETNX k a b c"), ex("HGET k"), ex("HGET k a b"), ex("HMGET k"), ex("HGETALL"), ex("HGETALL k j"), ex("HDEL k"),
		ex("HEXISTS k"), ex("HLEN"), ex("HKEYS"), ex("HVALS k j"), ex("HINCRBY k a"), ex("HINCRBY k a 1 2"),
		ex("HINCRBYFLOAT k a"), ex("EXISTS k"),
	}},
	{"wrong type", false, []oracleLine{
		ex("SET s x"), ex("HSET s a 1"), ex("HMSET s a 1"), ex("HSETNX s a 1"), ex("HGET s a"), ex("HMGET s a b"),
		ex("HGETALL s"), ex("HDEL s a"), ex("HEXISTS s a"), ex("HLEN s"), ex("HKEYS s"), ex("HVALS s"),
		ex("HINCRBY s a 1"), ex("HINCRBYFLOAT s a 1"), ex("HINCRBY s a x"), ex("HINCRBYFLOAT s a abc"),
		ex("HINCRBYFLOAT s a inf"), ex("HSET s a"), ex("GET s"),
		ex("HSET k a 1"), ex("GET k"), ex("INCR k"), ex("APPEND k x"), ex("STRLEN k"), ex("GETDEL k"), ex("SET k v GET"),
		ex("GETSET k v"), ex("MGET k s"), ex("INCRBYFLOAT k 1"), ex("GETEX k PERSIST"), ex("SETNX k v"), ex("HGETALL k"),
		ex("SET k v"), ex("TYPE k"), ex("HGET k a"),
	}},
	{"hincrby", false, []oracleLine{
		ex("HINCRBY k a 5"), ex("HINCRBY k a -7"), ex("HINCRBY k a 0"), ex("HINCRBY k a +1"), ex("HINCRBY k a 01"),
		ex("HINCRBY k a 1.5"), ex("HINCRBY k a -0"), ex("HINCRBY k a x"), ex("HINCRBY k a 9223372036854775808"),
		ex("HINCRBY nokey a x"), ex("EXISTS nokey"),
		ex("HSET k m 9223372036854775807"), ex("HINCRBY k m 1"), ex("HINCRBY k m -1"), ex("HINCRBY k m 0"),
		ex("HSET k n -9223372036854775808"), ex("HINCRBY k n -1"), ex("HINCRBY k n 9223372036854775807"),
		ex("HSET k s abc"), ex("HINCRBY k s 1"), ex("HSET k s 1.5"), ex("HINCRBY k s 1"), ex("HSET k s 01"), ex("HINCRBY k s 1"),
		ex("HSET k s +1"), ex("HINCRBY k s 1"), ex("HSET k s -0"), ex("HINCRBY k s 1"), ex("HSET k s {empty}"), ex("HINCRBY k s 1"),
		ex("HSET k s 99999999999999999999"), ex("HINCRBY k s 1"), ex("HGETALL k"),
		ex("HINCRBY j f 1"), ex("HINCRBY j f -9223372036854775808"), ex("HINCRBY j f -2"), ex("HGETALL j"),
	}},
	{"hincrbyfloat", false, []oracleLine{
		ex("HINCRBYFLOAT k f 0.1"), ex("HINCRBYFLOAT k f 0.2"), ex("HINCRBYFLOAT k f 0x10"), ex("HINCRBYFLOAT k f .5"),
		ex("HINCRBYFLOAT k f 5."), ex("HINCRBYFLOAT k f +1"), ex("HINCRBYFLOAT k f 0x1p3"), ex("HINCRBYFLOAT k f -1E2"),
		ex("HINCRBYFLOAT k f 1e5000"), ex("HINCRBYFLOAT k f 1e-5000"), ex("HINCRBYFLOAT k f inf"), ex("HINCRBYFLOAT k f -Infinity"),
		ex("HINCRBYFLOAT k f nan"), ex("HINCRBYFLOAT k f abc"), ex("HINCRBYFLOAT k f 1.5p3"), ex("HINCRBYFLOAT k f {empty}"),
		ex("HINCRBYFLOAT k f 1e"), ex("HGET k f"),
		ex("HSET k g 1.5e3"), ex("HINCRBYFLOAT k g 0"), ex("HINCRBYFLOAT k g -1500"), ex("HSET k h abc"), ex("HINCRBYFLOAT k h 1"),
		ex("HSET k i inf"), ex("HINCRBYFLOAT k i 1"), ex("HSET k i {empty}"), ex("HINCRBYFLOAT k i 1"), ex("HSET k i 0x10"),
		ex("HINCRBYFLOAT k i 1"), ex("HSET k n 10"), ex("HINCRBYFLOAT k n 2.5"), ex("HINCRBYFLOAT k n 1.0000000000000000001"),
		ex("HINCRBYFLOAT k n 0.3333333333333333333333"), ex("HINCRBY k n 1"), ex("HSET k n 3"), ex("HINCRBYFLOAT k n 0.7"),
		ex("HINCRBY k n 1"), ex("HINCRBYFLOAT e f -0"), ex("HGET e f"), ex("HINCRBYFLOAT e f 5e-18"), ex("HINCRBYFLOAT e f 3e-4950"),
		ex("HINCRBYFLOAT nokey f abc"), ex("HINCRBYFLOAT nokey f inf"), ex("EXISTS nokey"), ex("HGETALL k"),
		ex("HINCRBYFLOAT j f 1.18e4932"), ex("HINCRBYFLOAT j f 1.18e4932"), ex("HINCRBYFLOAT m g 1e4932"), ex("HGET m g"),
		ex("HINCRBYFLOAT m g 0x1p16383"), ex("HLEN m"),
	}},
	{"expiry and rename", false, []oracleLine{
		ex("HSET k a 1"), ex("EXPIRE k 100"), {"TTL k", inS}, ex("HSET k b 2"), {"TTL k", inS}, ex("HINCRBY k a 1"),
		{"TTL k", inS}, ex("HINCRBYFLOAT k a 1.5"), {"PTTL k", inMs}, ex("HDEL k a"), {"TTL k", inS}, ex("HSETNX k c 3"),
		{"TTL k", inS}, ex("PERSIST k"), ex("TTL k"), ex("EXPIRE k 100 NX"), {"EXPIRETIME k", atS}, ex("PEXPIREAT k 9223372036854775807"),
		ex("PEXPIRETIME k"), ex("HSET k d 4"), ex("PEXPIRETIME k"), ex("RENAME k j"), ex("HGETALL j"), ex("TYPE j"),
		ex("PEXPIRETIME j"), ex("RENAMENX j m"), ex("HDEL m b c d"), ex("EXISTS m"), ex("TTL m"), ex("HSET m x 1"), ex("TTL m"),
		ex("EXPIRE m 0"), ex("EXISTS m"), ex("HSET n a 1"), ex("PEXPIRE n 100000"), ex("HDEL n a"), ex("HSET n a 1"), ex("TTL n"),
	}},
	{"multi", false, []oracleLine{
		ex("MULTI"), ex("HSET k a 1"), ex("HINCRBY k a 2"), ex("HGET k a"), ex("HINCRBYFLOAT k b 1.5"), ex("HMGET k a b c"),
		ex("HGETALL k"), ex("HINCRBY k b 1"), ex("HSETNX k a 9"), ex("HDEL k a b"), ex("HLEN k"), ex("TYPE k"), ex("EXEC"),
		ex("MULTI"), ex("HSET k a"), ex("HGET k a"), ex("EXEC"),
	}},
	{"token bucket", false, []oracleLine{
		// The rate limiter: read the bucket, refill, take a token.
		ex("HMGET k tokens ts"), ex("HSET k tokens 10 ts 1000"), ex("EXPIRE k 100"), ex("HINCRBY k tokens -1"),
		ex("HMGET k tokens ts"), ex("HINCRBYFLOAT k tokens 0.5"), ex("HINCRBYFLOAT k tokens -1.25"), ex("HSET k ts 1010"),
		ex("HMGET k tokens ts nothing"), ex("HGETALL k"), {"TTL k", inS},
	}},
	{"large", false, []oracleLine{
		ex(manyFields("k", 200)), ex("HLEN k"), ex("HGET k f150"), ex("HMGET k f0 f199 f200 f7"), ex("HEXISTS k f199"),
		unord("HGETALL k"), unord("HKEYS k"), unord("HVALS k"), ex(manyFields("k", 201)), ex("HDEL k f0 f1 f2 nope"),
		ex("HLEN k"), ex("HINCRBY k f3 10"), ex("HGET k f3"),
		ex("HSET j a 1 long " + strings.Repeat("x", 100)), ex("HSET j b 2"), unord("HGETALL j"), ex("HGET j long"),
	}},
}

// TestHashCommandsAgainstRedis runs hashOracleCases on Redcell and
// redis-server, in RESP2 and RESP3, and compares every reply.
func TestHashCommandsAgainstRedis(t *testing.T) {
	t.Parallel()
	rd := startRedis(t)
	n := startTestNode(t, "hashes-oracle")
	rc := mustDial(t, n.addr())
	runOracleCases(t, rc, rd, hashOracleCases)
	// INFO keyspace counts hashes as keys.
	mustDo(t, rc, "FLUSHALL")
	mustDo(t, rc, "HSET", "h1", "a", "1")
	mustDo(t, rc, "HSET", "h2", "a", "1")
	mustDo(t, rc, "EXPIRE", "h2", "100")
	if info := mustDo(t, rc, "INFO", "keyspace"); !strings.Contains(info.str, "db0:keys=2,expires=1,") {
		t.Errorf("INFO keyspace with two hashes, one expiring: %q", info.str)
	}
	// A CL key is a string: the hash commands answer WRONGTYPE on it.
	mustDo(t, rc, "CL.THROTTLE", "cl", "5", "1", "60")
	for _, args := range [][]string{{"HGET", "cl", "a"}, {"HSET", "cl", "a", "1"}, {"HINCRBY", "cl", "a", "1"}, {"HGETALL", "cl"}, {"HLEN", "cl"}} {
		expectReply(t, rc, wantErr("WRONGTYPE Operation against a key holding the wrong kind of value"), args...)
	}
	expectReply(t, rc, wantErr("WRONGTYPE Operation against a key holding the wrong kind of value"), "CL.THROTTLE", "h1", "5", "1", "60")
}

// TestClusterHashesThroughFollower: hash writes sent to a follower are
// forwarded to the leader and answer as on the leader (maps, arrays with
// nils and errors travel in the forwarded results); every replica's
// READONLY reads then agree, the hash's expiry ends it everywhere, and
// RAFT DIGEST agrees.
func TestClusterHashesThroughFollower(t *testing.T) {
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
		{[]string{"HSET", "h:a", "tokens", "10", "ts", "1000"}, ":2"},
		{[]string{"HINCRBY", "h:a", "tokens", "-1"}, ":9"},
		{[]string{"HINCRBYFLOAT", "h:a", "tokens", "0.5"}, `$"9.5"`},
		{[]string{"HINCRBY", "h:a", "tokens", "1"}, "--ERR hash value is not an integer"},
		{[]string{"HMSET", "h:b", "x", "1"}, "++OK"},
		{[]string{"HSETNX", "h:b", "x", "2"}, ":0"},
		{[]string{"HDEL", "h:b", "x", "y"}, ":1"},
		{[]string{"HSET", "h:e", "f", "v"}, ":1"},
		{[]string{"PEXPIRE", "h:e", "30500"}, ":1"},
		{[]string{"HMGET", "h:a", "tokens", "none", "ts"}, `*[$"9.5" (nil$) $"1000"]`},
		{[]string{"HGETALL", "h:a"}, `*[$"tokens" $"9.5" $"ts" $"1000"]`},
		{[]string{"HSET", "h:a"}, "--ERR wrong number of arguments for 'hset' command"},
	} {
		if got := wire(mustDo(t, fc, s.args...)); got != s.want {
			t.Errorf("%v through the follower: %s, want %s", s.args, got, s.want)
		}
	}
	c.waitConverged(opTimeout)
	c.eachReadOnly(func(i int, nc *respConn) {
		if got := wire(mustDo(t, nc, "HGETALL", "h:a")); got != `*[$"tokens" $"9.5" $"ts" $"1000"]` {
			t.Errorf("node %d: HGETALL %s", i, got)
		}
		expectReply(t, nc, wantInt(0), "EXISTS", "h:b")
		expectReply(t, nc, wantInt(2), "HLEN", "h:a")
		expectReply(t, nc, wantStatus("hash"), "TYPE", "h:e")
		expectReply(t, nc, wantInt(base/1e6+30500), "PEXPIRETIME", "h:e")
	})
	setClock(t, lc, base+31*second)
	expectReply(t, lc, wantInt(0), "DEL", "nokey") // an entry at the new now
	c.waitConverged(opTimeout)
	c.eachReadOnly(func(i int, nc *respConn) {
		if got := wire(mustDo(t, nc, "HGET", "h:e", "f")); got != "(nil$)" {
			t.Errorf("node %d: HGET of the expired hash: %s", i, got)
		}
	})
	c.compareReplicas("after the hash commands")
}

// TestHashesSurviveSnapshotRestart: hashes (one with an empty field and
// value, one with an expiry, one at PXAT's maximum, a large one) are in the
// snapshot SAVE writes and read the same after SIGKILL and a restart from
// it, fields in the same order.
func TestHashesSurviveSnapshotRestart(t *testing.T) {
	t.Parallel()
	n := startTestNode(t, "hashes-snapshot")
	c := mustDial(t, n.addr())
	base := freshBase(t, c)
	expectReply(t, c, wantInt(3), "HSET", "h", "b", "2", "", "", "a", "1")
	expectReply(t, c, wantInt(1), "HSET", "x", "tokens", "7")
	expectReply(t, c, wantInt(1), "PEXPIRE", "x", "123456")
	expectReply(t, c, wantInt(1), "HSET", "w", "f", "v")
	expectReply(t, c, wantInt(1), "PEXPIREAT", "w", "9223372036854775807")
	big := []string{"HSET", "big"}
	for i := 0; i < 1000; i++ {
		big = append(big, fmt.Sprintf("field:%d", i), strings.Repeat("v", i%70))
	}
	expectReply(t, c, wantInt(1000), big...)
	expectReply(t, c, wantStatus("OK"), "SAVE")
	c = killAndRestoreSnapshot(t, n)
	setClock(t, c, base)
	if got := wire(mustDo(t, c, "HGETALL", "h")); got != `*[$"b" $"2" $"" $"" $"a" $"1"]` {
		t.Errorf("HGETALL after the restart: %s", got)
	}
	expectReply(t, c, wantInt(base/1e6+123456), "PEXPIRETIME", "x")
	expectReply(t, c, wantInt(9223372036854775807), "PEXPIRETIME", "w")
	expectReply(t, c, wantStatus("hash"), "TYPE", "x")
	expectReply(t, c, wantInt(8), "HINCRBY", "x", "tokens", "1")
	expectReply(t, c, wantInt(1000), "HLEN", "big")
	expectReply(t, c, wantBulk(strings.Repeat("v", 999%70)), "HGET", "big", "field:999")
	if got := mustDo(t, c, "HKEYS", "big"); len(got.elems) != 1000 || got.elems[0].str != "field:0" || got.elems[999].str != "field:999" {
		t.Errorf("HKEYS big after the restart: %d fields", len(got.elems))
	}
}

// TestMaxmemoryRefusesNewHashes: above maxmemory every hash write that may
// add a field (HSET, HMSET, HSETNX, HINCRBY, HINCRBYFLOAT) answers OOM, on
// a new hash and on a live one (Redis's denyoom), while HDEL, reads, EXPIRE
// and DEL go on.
func TestMaxmemoryRefusesNewHashes(t *testing.T) {
	t.Parallel()
	n := startTestNode(t, "hashes-maxmemory")
	c := mustDial(t, n.addr())
	freshBase(t, c)
	expectReply(t, c, wantInt(2), "HSET", "bucket", "tokens", "10", "ts", "1")
	expectReply(t, c, wantStatus("OK"), "CONFIG", "SET", "maxmemory", "1mb")
	const oom = "OOM command not allowed when used memory > 'maxmemory'."
	for deadline := time.Now().Add(5 * time.Second); ; {
		r := mustDo(t, c, "HSET", "new", "f", "v")
		if r.kind == '-' {
			if r.str != oom {
				t.Fatalf("HSET of a new key above maxmemory: %q", r.str)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("new hashes still accepted 5 s after maxmemory went below used memory: %v", r)
		}
		expectReply(t, c, wantInt(1), "DEL", "new")
	}
	for _, args := range [][]string{{"HMSET", "new", "f", "v"}, {"HSETNX", "new", "f", "v"}, {"HINCRBY", "new", "f", "1"},
		{"HINCRBYFLOAT", "new", "f", "1.5"}, {"HSET", "bucket", "ts", "2"}, {"HMSET", "bucket", "x", "1"}, {"HSETNX", "bucket", "y", "1"},
		{"HINCRBY", "bucket", "tokens", "-1"}, {"HINCRBY", "bucket", "other", "1"}, {"HINCRBYFLOAT", "bucket", "tokens", "-0.5"}} {
		expectReply(t, c, wantErr(oom), args...)
	}
	expectReply(t, c, wantInt(1), "HDEL", "bucket", "ts")
	expectReply(t, c, wantInt(1), "EXPIRE", "bucket", "100")
	expectReply(t, c, wantBulk("10"), "HGET", "bucket", "tokens")
	expectReply(t, c, wantInt(1), "HLEN", "bucket")
	expectReply(t, c, wantInt(0), "EXISTS", "new")
	expectReply(t, c, wantStatus("OK"), "CONFIG", "SET", "maxmemory", "0")
}
