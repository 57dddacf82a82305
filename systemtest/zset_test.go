package systemtest

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// The sorted-set commands against redis-server 7 as the oracle, as the
// string family's are (strings_test.go): the same lines on both, in RESP2
// and RESP3, every reply compared with the RESP type of each element.

// zsetOracleCases run on an empty keyspace (FLUSHALL before each).
var zsetOracleCases = []oracleCase{
	{"zadd and reads", false, []oracleLine{
		ex("ZADD z 0.1 m"), ex("ZSCORE z m"), ex("ZADD z 1 a 2 b 3 c -0 zero 0 zz inf i -inf ni"), ex("ZRANGE z 0 -1 WITHSCORES"),
		ex("ZRANGE z 0 -1"), ex("ZRANGE z -3 -1 REV WITHSCORES"), ex("ZCARD z"), ex("ZCARD nokey"), ex("ZCOUNT z -inf +inf"),
		ex("ZCOUNT z (0 3"), ex("ZCOUNT z (3 (3"), ex("ZCOUNT z 3 3"), ex("ZCOUNT z 5 1"), ex("ZCOUNT nokey 0 1"),
		ex("ZSCORE z zero"), ex("ZSCORE z i"), ex("ZSCORE z ni"), ex("ZSCORE z nope"), ex("ZSCORE nokey m"),
		ex("ZRANK z c"), ex("ZRANK z ni"), ex("ZRANK z nope"), ex("ZRANK nokey a"), ex("TYPE z"), ex("SCAN 0 TYPE zset"),
		ex("SCAN 0 TYPE ZSET MATCH z"), ex("SCAN 0 TYPE string"), ex("KEYS *"), ex("DBSIZE"), ex("EXISTS z"),
	}},
	{"zadd options", false, []oracleLine{
		ex("ZADD z 1 a 2 b 3 c"), ex("ZADD z NX XX 1 a"), ex("ZADD z NX GT 1 a"), ex("ZADD z LT NX 1 a"), ex("ZADD z GT LT 1 a"),
		ex("ZADD z INCR 1 a 2 b"), ex("ZADD z 1"), ex("ZADD z 1 a 2"), ex("ZADD z NX"), ex("ZADD z nan a"), ex("ZADD z 1e400 a"),
		ex("ZADD z 1e-400 a"), ex("ZADD z 1 a x b"), ex("ZADD z 0x10 hx"), ex("ZSCORE z hx"), ex("ZADD z INCR 1 a"),
		ex("ZADD z INCR NX 1 a"), ex("ZADD z INCR XX 1 newm"), ex("ZADD z INCR GT -1 a"), ex("ZADD z INCR LT -1 a"),
		ex("ZADD z INCR GT 0 a"), ex("ZADD z INCR XX 0 a"), ex("ZADD z INCR inf i"), ex("ZADD z INCR -inf i"), ex("ZSCORE z i"),
		ex("ZINCRBY z 2 b"), ex("ZINCRBY z nx b"), ex("ZINCRBY z x b"), ex("ZINCRBY z 1 new"), ex("ZINCRBY z inf new"),
		ex("ZADD z CH 5 a 6 newer 3 c"), ex("ZADD z GT CH 1 a 10 b"), ex("ZADD z LT CH 1 a 10 b"), ex("ZADD z XX 1 nothere"),
		ex("ZADD z XX CH 7 a 8 nothere"), ex("ZADD z NX CH 7 a 8 nothere"), ex("ZADD z 1 dup 2 dup"), ex("ZSCORE z dup"),
		ex("ZADD nokey XX 1 a"), ex("ZADD nokey XX INCR 1 a"), ex("EXISTS nokey"), ex("zadd z gt xx ch 100 a"),
		ex("ZADD z 0x1p3 p 0x1.8 q 0x.8p1 r"), ex("ZADD z 1_0 s"), ex("ZADD z +5 plus5 .5 half 5. five 1E2 e2"), ex("ZADD z INF x -Infinity y infinity w"),
		ex("ZADD z 0x e"), ex("ZADD z 1e e"), ex("ZRANGE z 0 -1 WITHSCORES"),
		ex("ZADD m -0 a"), ex("ZSCORE m a"), ex("ZADD m 0 a"), ex("ZADD m INCR -0 a"), ex("ZADD m INCR -0 new"), ex("ZSCORE m new"),
		ex("ZADD m 0 b -0 c"), ex("ZADD m 1.5e-310 d 123456789012345678 e 1e21 f 1e-5 g"), ex("ZRANGE m 0 -1 WITHSCORES"),
		ex("ZADD"), ex("ZADD z"), ex("ZINCRBY z 1"), ex("ZADD z INCR"),
	}},
	{"zrange", false, []oracleLine{
		ex("ZADD z 1 a 2 b 3 c 4 d 5 e 5 f"), ex("ZRANGE z (1 5 BYSCORE LIMIT 0 -1"), ex("ZRANGE z (1 5 BYSCORE LIMIT 1 2 WITHSCORES"),
		ex("ZRANGE z 5 (1 BYSCORE REV"), ex("ZRANGE z 5 (1 BYSCORE REV LIMIT 1 1"), ex("ZRANGE z (1 5 BYSCORE REV"),
		ex("ZRANGE z -inf +inf BYSCORE LIMIT -1 2"), ex("ZRANGE z -inf +inf BYSCORE LIMIT 2 -5"), ex("ZRANGE z -inf +inf BYSCORE LIMIT 100 1"),
		ex("ZRANGE z -inf +inf BYSCORE LIMIT 5 0"), ex("ZRANGE z -inf +inf BYSCORE LIMIT 5 1"), ex("ZRANGE z 0 -1 LIMIT 0 1"),
		ex("ZRANGE z - + BYLEX WITHSCORES"), ex("ZRANGE z - + BYLEX"), ex("ZRANGE z [a (c BYLEX"), ex("ZRANGE z + - BYLEX REV"),
		ex("ZRANGE z (c [a BYLEX REV"), ex("ZRANGE z a c BYLEX"), ex("ZRANGE z - + BYLEX LIMIT 1 2"), ex("ZRANGE z + - BYLEX"),
		ex("ZRANGE z [f [a BYLEX"), ex("ZRANGE z [b [b BYLEX"), ex("ZRANGE z (b [b BYLEX"), ex("ZRANGE z [e + BYLEX"),
		ex("ZRANGE z 0 1 BYSCORE BYLEX"), ex("ZRANGE z 0 1 REV REV"), ex("ZRANGE z 0 1 FOO"), ex("ZRANGE z 0 1 LIMIT x 1 FOO"),
		ex("ZRANGE z 0 1 FOO LIMIT x 1"), ex("ZRANGE z 0 1 LIMIT 0"), ex("ZRANGE z x 1"), ex("ZRANGE z 0 1 WITHSCORES BYLEX LIMIT 0 1"),
		ex("ZRANGE z 100 200"), ex("ZRANGE z -100 -50"), ex("ZRANGE z 2 1"), ex("ZRANGE z -1 -1 REV"), ex("ZRANGE z 1 100 REV WITHSCORES"),
		ex("ZRANGE z -100 100"), ex("ZRANGE z 0 -1 withscores rev"), ex("ZRANGE z 0 -1 LIMIT 2 -1"), ex("ZRANGE z 0 -1 REV LIMIT -2 -1 WITHSCORES"), ex("ZRANGE nokey 0 -1"), ex("ZRANGE nokey 0 -1 WITHSCORES"),
		ex("ZRANGEBYSCORE z -inf +inf WITHSCORES"), ex("ZRANGEBYSCORE z -inf +inf BYSCORE"), ex("ZRANGEBYSCORE z -inf +inf REV"),
		ex("ZRANGEBYSCORE z (1 +inf LIMIT 1 1"), ex("ZRANGEBYSCORE z 1e400 -1e400"), ex("ZRANGEBYSCORE z -1e400 1e400"),
		ex("ZRANGEBYSCORE z ( 2"), ex("ZRANGEBYSCORE z 0x 2"), ex("ZRANGEBYSCORE z 1e 2"), ex("ZRANGEBYSCORE z -infinity +Infinity"),
		ex("ZRANGEBYSCORE z -infinityx 5"), ex("ZRANGEBYSCORE z nan 5"), ex("ZRANGEBYSCORE z .5 2.e0"), ex("ZRANGEBYSCORE z 0x1p-2 0x2"),
		ex("ZREVRANGEBYSCORE z +inf -inf WITHSCORES LIMIT 0 3"), ex("ZREVRANGEBYSCORE z -inf +inf"), ex("ZREVRANGEBYSCORE z 3 x"),
		ex("ZREVRANGEBYSCORE z (5 (1"), ex("ZREVRANGEBYSCORE z 5 1 REV"), ex("ZREVRANGEBYSCORE z 5 1 LIMIT 1"),
		ex("ZADD mixed 1 b 2 a 3 d 4 c"), ex("ZRANGE mixed [a [c BYLEX"), ex("ZRANGE mixed [b [z BYLEX"), ex("ZRANGE mixed [c [a BYLEX REV"),
		ex("ZRANGE mixed [a + BYLEX"), ex("ZRANGE mixed - [b BYLEX REV"),
		ex("ZRANGE z"), ex("ZRANGE z 0"), ex("ZRANGEBYSCORE z 0"),
	}},
	{"removal", false, []oracleLine{
		ex("ZADD z 1 a 2 b 3 c 4 d 5 e -1 n"), ex("ZREM z a nope b"), ex("ZREM z nope"), ex("ZREM nokey a"), ex("ZREM z"),
		ex("ZREMRANGEBYSCORE z -inf (0"), ex("ZRANGE z 0 -1 WITHSCORES"), ex("ZREMRANGEBYSCORE z 10 20"), ex("ZREMRANGEBYSCORE z (4 4"),
		ex("ZREMRANGEBYRANK z 1 1"), ex("ZRANGE z 0 -1 WITHSCORES"), ex("ZREMRANGEBYRANK z x 2"), ex("ZREMRANGEBYSCORE z x 2"),
		ex("ZREMRANGEBYRANK z 5 10"), ex("ZREMRANGEBYRANK z -1 -2"), ex("ZREMRANGEBYRANK z +1 2"), ex("ZREMRANGEBYRANK nokey 0 -1"),
		ex("ZREMRANGEBYSCORE nokey 0 1"), ex("ZREMRANGEBYRANK z -100 -1"), ex("EXISTS z"),
		ex("ZADD y 1 a 2 b"), ex("ZREM y a b"), ex("EXISTS y"), ex("ZADD y 1 a 2 b"), ex("ZREMRANGEBYSCORE y -inf +inf"), ex("EXISTS y"),
		ex("ZADD y 1 a 2 b 3 c"), ex("ZREMRANGEBYSCORE y 2 2"), ex("ZRANGE y 0 -1"), ex("ZREM y a c"), ex("TYPE y"),
	}},
	{"wrong type", false, []oracleLine{
		ex("SET s v"), ex("ZADD s 1 a"), ex("ZADD s XX 1 a"), ex("ZADD s nan a"), ex("ZCARD s"), ex("ZRANGE s 0 -1"), ex("ZRANGE s 0 1 FOO"),
		ex("ZSCORE s a"), ex("ZRANK s a"), ex("ZREM s a"), ex("ZCOUNT s 0 1"), ex("ZCOUNT s x 1"), ex("ZREMRANGEBYSCORE s 0 1"),
		ex("ZREMRANGEBYRANK s 0 1"), ex("ZINCRBY s 1 a"), ex("ZRANGEBYSCORE s 0 1"), ex("GET s"),
		ex("ZADD z 1 a"), ex("GET z"), ex("INCR z"), ex("APPEND z x"), ex("SET z v"), ex("TYPE z"),
	}},
	{"expiry and rename", false, []oracleLine{
		ex("ZADD z 1 a 2 b"), ex("EXPIRE z 100"), {"TTL z", inS}, ex("ZADD z 3 c"), {"TTL z", inS}, ex("ZREM z c"), {"PTTL z", inMs},
		ex("PERSIST z"), ex("TTL z"), ex("RENAME z y"), ex("ZRANGE y 0 -1 WITHSCORES"), ex("EXISTS z"), ex("PEXPIRE y 100000"),
		ex("RENAMENX y z"), {"PTTL z", inMs}, ex("ZREMRANGEBYRANK z 0 -1"), ex("EXISTS z"), ex("TTL z"),
		ex("ZADD z 1 a"), ex("PEXPIRE z 0"), ex("ZCARD z"), ex("EXISTS z"),
	}},
	{"encodings", false, []oracleLine{
		// Redis keeps -0 in a skiplist and stores 0 in a listpack: a set
		// becomes a skiplist with a member over 64 bytes or a 129th one.
		ex("ZADD big -0 " + long65), ex("ZSCORE big " + long65), ex("ZADD big -0 a"), ex("ZSCORE big a"), ex("ZADD big 1 b"),
		ex("ZADD big -0 b"), ex("ZSCORE big b"), ex("ZINCRBY big -0 c"), ex("ZRANGE big 0 -1 WITHSCORES"),
		ex("ZADD small -0 a 0 " + long65), ex("ZRANGE small 0 -1 WITHSCORES"), ex("ZADD small -0 n"), ex("ZREM small " + long65),
		ex("ZADD small -0 n2"), ex("ZSCORE small n2"), ex("RENAME small moved"), ex("ZADD moved -0 n3"), ex("ZSCORE moved n3"),
		ex("ZADD many " + zsetPairs("-0", "m", 200)), ex("ZRANGE many 120 140 WITHSCORES"),
		ex("ZADD few " + zsetPairs("1", "f", 128)), ex("ZADD few -0 last"), ex("ZSCORE few last"),
		ex("ZADD few2 " + zsetPairs("1", "f", 127)), ex("ZADD few2 -0 last"), ex("ZSCORE few2 last"), ex("ZADD few2 -0 f001"),
		ex("ZSCORE few2 f001"), ex("ZADD few2 -0 last2"), ex("ZSCORE few2 last2"),
	}},
	{"multi", false, []oracleLine{
		ex("MULTI"), ex("ZADD z 1 a 2 b"), ex("ZINCRBY z 1.5 a"), ex("ZRANGE z 0 -1 WITHSCORES"), ex("ZSCORE z a"),
		ex("ZADD z NX XX 1 a"), ex("ZREMRANGEBYSCORE z -inf 2"), ex("ZCARD z"), ex("EXEC"),
		ex("MULTI"), ex("ZADD z 1"), ex("ZCARD z"), ex("EXEC"),
	}},
}

// long65 is a member one byte longer than Redis's listpacks take.
var long65 = strings.Repeat("x", 65)

// zsetPairs is n pairs of score and member prefix+i, for ZADD.
func zsetPairs(score, prefix string, n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "%s %s%03d ", score, prefix, i)
	}
	return strings.TrimSpace(b.String())
}

// zsetOracleArgs are lines whose arguments cannot be written as fields: an
// empty string, leading or trailing space, a NUL.
var zsetOracleArgs = [][]string{
	{"ZADD", "e", "1", "a"}, {"ZADD", "e", "", "b"}, {"ZADD", "e", " 1", "b"}, {"ZADD", "e", "1 ", "b"}, {"ZADD", "e", "1\x00", "b"},
	{"ZCOUNT", "e", "", "5"}, {"ZCOUNT", "e", " 1", "5"}, {"ZCOUNT", "e", "1 ", "5"}, {"ZCOUNT", "e", "1\x00x", "5"}, {"ZCOUNT", "e", "(", "5"},
	{"ZADD", "e", "2", ""}, {"ZSCORE", "e", ""}, {"ZRANGE", "e", "", "+", "BYLEX"}, {"ZRANGE", "e", "[", "+", "BYLEX"},
	{"ZRANGE", "e", "-\x00x", "+", "BYLEX"}, {"ZRANGE", "e", "-x", "+", "BYLEX"}, {"ZRANGE", "e", "(", "[\x00", "BYLEX"},
	{"ZRANGE", "e", "0", "-1", "WITHSCORES"},
}

// TestZsetCommandsAgainstRedis runs zsetOracleCases on Redcell and
// redis-server, in RESP2 and RESP3, and compares every reply.
func TestZsetCommandsAgainstRedis(t *testing.T) {
	t.Parallel()
	rd := startRedis(t)
	n := startTestNode(t, "zset-oracle")
	rc := mustDial(t, n.addr())
	runOracleCases(t, rc, rd, zsetOracleCases)
	// Argument vectors a line cannot spell (spaces, a NUL).
	for _, proto := range []string{"2", "3"} {
		mustDo(t, rc, "HELLO", proto)
		mustDo(t, rd, "HELLO", proto)
		for _, c := range []*respConn{rc, rd} {
			mustDo(t, c, "FLUSHALL")
		}
		for _, args := range zsetOracleArgs {
			gotRC, gotRD := mustDo(t, rc, args...), mustDo(t, rd, args...)
			if wire(gotRC) != wire(gotRD) {
				t.Errorf("RESP%s %q: Redcell %s, Redis %s", proto, args, wire(gotRC), wire(gotRD))
			}
		}
	}
	// INFO keyspace counts sorted sets as keys (its avg_ttl is compared
	// with Redis's elsewhere: scan_test.go).
	mustDo(t, rc, "FLUSHALL")
	expectReply(t, rc, wantInt(2), "ZADD", "z", "1", "a", "2", "b")
	expectReply(t, rc, wantInt(1), "ZADD", "y", "1", "a")
	if info := mustDo(t, rc, "INFO", "keyspace"); !strings.Contains(info.str, "db0:keys=2,expires=0,") {
		t.Errorf("INFO keyspace with two sorted sets: %q", info.str)
	}
}

// TestClusterZsetsThroughFollower: sorted-set writes sent to a follower
// are forwarded to the leader and answer as on the leader (integers,
// doubles, nils, scored arrays travel in forwarded results); every
// replica's READONLY reads then agree, the sliding-log pipeline works
// through the follower, and RAFT DIGEST agrees.
func TestClusterZsetsThroughFollower(t *testing.T) {
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
		{[]string{"ZADD", "z:a", "1", "one", "2", "two", "0.1", "tenth"}, ":3"},
		{[]string{"ZADD", "z:a", "INCR", "1", "one"}, `$"2"`},
		{[]string{"ZADD", "z:a", "NX", "INCR", "1", "one"}, "(nil$)"},
		{[]string{"ZINCRBY", "z:a", "inf", "tenth"}, `$"inf"`},
		{[]string{"ZINCRBY", "z:a", "-inf", "tenth"}, "--ERR resulting score is not a number (NaN)"},
		{[]string{"ZADD", "z:a", "NX", "XX", "1", "one"}, "--ERR XX and NX options at the same time are not compatible"},
		{[]string{"ZREM", "z:a", "two", "none"}, ":1"},
		{[]string{"SET", "z:s", "v"}, "++OK"},
		{[]string{"ZADD", "z:s", "1", "a"}, "--WRONGTYPE Operation against a key holding the wrong kind of value"},
		{[]string{"ZADD", "z:log", "1000", "r1", "2000", "r2", "3000", "r3"}, ":3"},
		{[]string{"ZREMRANGEBYSCORE", "z:log", "-inf", "1500"}, ":1"},
		{[]string{"ZREMRANGEBYRANK", "z:log", "-1", "-1"}, ":1"},
		{[]string{"ZRANGE", "z:a", "0", "-1", "WITHSCORES"}, `*[$"one" $"2" $"tenth" $"inf"]`},
		{[]string{"ZSCORE", "z:a", "one"}, `$"2"`},
		{[]string{"ZCARD", "z:log"}, ":1"},
	} {
		if got := wire(mustDo(t, fc, s.args...)); got != s.want {
			t.Errorf("%v through the follower: %s, want %s", s.args, got, s.want)
		}
	}
	// The sliding log's pipeline, as a rate limiter sends it.
	for i := 0; i < 3; i++ {
		now := base/1e6 + int64(i)*1000 + 5000
		fc.send("ZADD", "z:rl", itoa(now), "req"+itoa(int64(i)))
		fc.send("ZREMRANGEBYSCORE", "z:rl", "-inf", itoa(now-1500))
		fc.send("ZCARD", "z:rl")
		fc.send("EXPIRE", "z:rl", "60")
		if err := fc.flush(); err != nil {
			t.Fatal(err)
		}
		for j, want := range []string{":1", ":" + itoa(int64(i/2)), ":" + itoa(int64(min(i+1, 2))), ":1"} {
			r, err := fc.read()
			if err != nil {
				t.Fatal(err)
			}
			if got := wire(r); got != want {
				t.Errorf("sliding-log pipeline %d, reply %d: %s, want %s", i, j, got, want)
			}
		}
	}
	c.waitConverged(opTimeout)
	c.eachReadOnly(func(i int, nc *respConn) {
		mustDo(t, nc, "HELLO", "3")
		if got := wire(mustDo(t, nc, "ZRANGE", "z:a", "0", "-1", "WITHSCORES")); got != `*[*[$"one" ,"2"] *[$"tenth" ,"inf"]]` {
			t.Errorf("node %d: ZRANGE WITHSCORES in RESP3: %s", i, got)
		}
		if got := wire(mustDo(t, nc, "ZRANGE", "z:rl", "0", "-1")); got != `*[$"req1" $"req2"]` {
			t.Errorf("node %d: the sliding log: %s", i, got)
		}
		expectReply(t, nc, wantStatus("zset"), "TYPE", "z:rl")
	})
	c.compareReplicas("after the sorted-set commands")
}

// TestZsetsSurviveSnapshotRestart: sorted sets (one with an expiry, one
// with infinite and negative-zero scores, a large one) are in the snapshot
// SAVE writes and read the same after SIGKILL and a restart from it.
func TestZsetsSurviveSnapshotRestart(t *testing.T) {
	t.Parallel()
	n := startTestNode(t, "zset-snapshot")
	c := mustDial(t, n.addr())
	base := freshBase(t, c)
	expectReply(t, c, wantInt(4), "ZADD", "z", "1", "a", "-inf", "b", "inf", "c", "-0", "d")
	expectReply(t, c, wantInt(2), "ZADD", "x", "0.1", "m", "0.2", "n")
	expectReply(t, c, wantInt(1), "PEXPIRE", "x", "123456")
	big := []string{"ZADD", "big"}
	for i := 0; i < 500; i++ {
		big = append(big, itoa(int64(i%37)), "member-"+itoa(int64(i)))
	}
	expectReply(t, c, wantInt(500), big...)
	want := wire(mustDo(t, c, "ZRANGE", "big", "0", "-1", "WITHSCORES"))
	expectReply(t, c, wantStatus("OK"), "SAVE")
	c = killAndRestoreSnapshot(t, n)
	setClock(t, c, base)
	if got := wire(mustDo(t, c, "ZRANGE", "z", "0", "-1", "WITHSCORES")); got != `*[$"b" $"-inf" $"d" $"0" $"a" $"1" $"c" $"inf"]` {
		t.Errorf("ZRANGE after the restart: %s", got)
	}
	expectReply(t, c, wantBulk("0.10000000000000001"), "ZSCORE", "x", "m")
	expectReply(t, c, wantInt(base/1e6+123456), "PEXPIRETIME", "x")
	expectReply(t, c, wantInt(500), "ZCARD", "big")
	if got := wire(mustDo(t, c, "ZRANGE", "big", "0", "-1", "WITHSCORES")); got != want {
		t.Errorf("the 500-member set after the restart differs")
	}
	expectReply(t, c, wantStatus("zset"), "TYPE", "z")
	expectReply(t, c, wantInt(1), "ZADD", "z", "2", "e")
}

// TestMaxmemoryRefusesZadd: above maxmemory ZADD and ZINCRBY answer OOM on
// a new key and on an existing one (Redis's denyoom), while ZREM,
// ZREMRANGEBYSCORE, ZCARD and EXPIRE go on.
func TestMaxmemoryRefusesZadd(t *testing.T) {
	t.Parallel()
	n := startTestNode(t, "zset-maxmemory")
	c := mustDial(t, n.addr())
	freshBase(t, c)
	expectReply(t, c, wantInt(3), "ZADD", "old", "1", "a", "2", "b", "3", "c")
	expectReply(t, c, wantStatus("OK"), "CONFIG", "SET", "maxmemory", "1mb")
	const oom = "OOM command not allowed when used memory > 'maxmemory'."
	for deadline := time.Now().Add(5 * time.Second); ; {
		r := mustDo(t, c, "ZADD", "new", "1", "a")
		if r.kind == '-' {
			if r.str != oom {
				t.Fatalf("ZADD of a new key above maxmemory: %q", r.str)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("new sorted sets still accepted 5 s after maxmemory went below used memory: %v", r)
		}
		expectReply(t, c, wantInt(1), "DEL", "new")
	}
	for _, args := range [][]string{{"ZINCRBY", "new", "1", "a"}, {"ZADD", "old", "4", "d"}, {"ZINCRBY", "old", "1", "a"}, {"ZADD", "old", "XX", "5", "a"}} {
		expectReply(t, c, wantErr(oom), args...)
	}
	expectReply(t, c, wantInt(1), "ZREM", "old", "a")
	expectReply(t, c, wantInt(1), "ZREMRANGEBYSCORE", "old", "-inf", "2")
	expectReply(t, c, wantInt(1), "ZCARD", "old")
	expectReply(t, c, wantInt(1), "EXPIRE", "old", "100")
	expectReply(t, c, wantInt(0), "EXISTS", "new")
	expectReply(t, c, wantStatus("OK"), "CONFIG", "SET", "maxmemory", "0")
}
