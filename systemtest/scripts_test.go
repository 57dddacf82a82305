package systemtest

import (
	"strings"
	"testing"
)

// Lua scripts against redis-server 7 as the oracle, in RESP2 and RESP3; the
// script cache through a follower of a 3-node cluster, across a leader kill
// and a whole-cluster restart; scripts in snapshots.

// scriptOracleCases: «…» is one argument (a script's body).
var scriptOracleCases = []oracleCase{
	{"script commands", false, []oracleLine{
		ex("EVAL «return 1» 0"), ex("EVAL «return KEYS[1] .. ARGV[1]» 1 k v"), ex("EVAL «return #KEYS + #ARGV» 2 a b c d e"),
		ex("EVAL «return 1» x"), ex("EVAL «return 1» -1"), ex("EVAL «return 1» 2 a"), ex("EVAL «return 1»"), ex("EVAL"),
		ex("SCRIPT LOAD «return redis.call('INCRBY', KEYS[1], ARGV[1])»"),
		ex("EVALSHA 8cd00688c05c46bde4a2e60658ef20a2e5c0b248 1 c 5"), ex("EVALSHA 8CD00688C05C46BDE4A2E60658EF20A2E5C0B248 1 c 2"),
		ex("EVALSHA_RO 8cd00688c05c46bde4a2e60658ef20a2e5c0b248 1 c 2"), ex("GET c"),
		ex("SCRIPT EXISTS 8cd00688c05c46bde4a2e60658ef20a2e5c0b248 8CD00688C05C46BDE4A2E60658EF20A2E5C0B248 ffffffffffffffffffffffffffffffffffffffff x"),
		ex("EVALSHA ffffffffffffffffffffffffffffffffffffffff 0"), ex("EVALSHA abc 0"), ex("EVALSHA_RO abc 0"),
		ex("SCRIPT FLUSH"), ex("SCRIPT EXISTS 8cd00688c05c46bde4a2e60658ef20a2e5c0b248"), ex("EVALSHA 8cd00688c05c46bde4a2e60658ef20a2e5c0b248 1 c 5"),
		ex("SCRIPT FLUSH ASYNC"), ex("SCRIPT FLUSH SYNC"), ex("SCRIPT FLUSH x"), ex("SCRIPT KILL"), ex("SCRIPT x"), ex("SCRIPT"),
		ex("SCRIPT LOAD"), ex("SCRIPT EXISTS"), ex("EVAL «return 'a'» 0"), ex("SCRIPT EXISTS 1f0ac8ecafc2b4a2efd3a24c1ef4b4f5c36fd1a9"),
	}},
	{"script replies", false, []oracleLine{
		ex("EVAL «return 3.99» 0"), ex("EVAL «return -3.99» 0"), ex("EVAL «return 'x'» 0"), ex("EVAL «return true» 0"),
		ex("EVAL «return false» 0"), ex("EVAL «return nil» 0"), ex("EVAL «return {1, 'two', {3, false}, nil, 5}» 0"),
		ex("EVAL «return {ok='fine'}» 0"), ex("EVAL «return {err='ERR bad thing'}» 0"), ex("EVAL «return {err='nope'}» 0"),
		ex("EVAL «return redis.error_reply('MY error')» 0"), ex("EVAL «return redis.status_reply('DONE')» 0"),
		ex("EVAL «return {}» 0"), ex("EVAL «return redis.sha1hex('')» 0"), ex("EVAL «return redis.sha1hex('abc')» 0"),
		ex("EVAL «redis.setresp(3); return {double=3.5}» 0"), ex("EVAL «redis.setresp(3); return {map={a=1}}» 0"),
		ex("EVAL «redis.setresp(3); return true» 0"), ex("EVAL «redis.setresp(3); return false» 0"),
		ex("EVAL «return tostring(1e15) .. ' ' .. tostring(0.1) .. ' ' .. tostring(1/3)» 0"),
		ex("EVAL «return #redis.call('TIME')» 0"), ex("EVAL «return {redis.REDIS_VERSION, redis.REDIS_VERSION_NUM, type(loadstring), type(print)}» 0"),
	}},
	{"script calls", false, []oracleLine{
		ex("EVAL «redis.call('SET', KEYS[1], 'v'); return redis.call('GET', KEYS[1])» 1 k"),
		ex("EVAL «return redis.call('GET', 'nokey')» 0"), ex("EVAL «return redis.call('INCR', 'k')» 0"),
		ex("EVAL «return redis.pcall('INCR', 'k')» 0"), ex("EVAL «local r = redis.pcall('INCR', 'k'); return r.err» 0"),
		ex("EVAL «return redis.call('HSET', 'h', 'a', 1, 'b', 2)» 0"), ex("EVAL «return redis.call('HGETALL', 'h')» 0"),
		ex("EVAL «redis.call('HSET', 'h1', 'f', 'v'); redis.setresp(3); return redis.call('HGETALL', 'h1')» 0"),
		ex("EVAL «return redis.call('ZADD', 'z', 1, 'a', 2.5, 'b')» 0"), ex("EVAL «return redis.call('ZRANGE', 'z', 0, -1, 'WITHSCORES')» 0"),
		ex("EVAL «redis.setresp(3); return redis.call('ZSCORE', 'z', 'b')» 0"), ex("EVAL «return redis.call('ZSCORE', 'z', 'b')» 0"),
		ex("EVAL «return redis.call('RPUSH', 'l', 'x', 'y')» 0"), ex("EVAL «return redis.call('LRANGE', 'l', 0, -1)» 0"),
		ex("EVAL «return redis.call('EXPIRE', 'l', 100)» 0"), ex("EVAL «return redis.call('TTL', 'l')» 0"),
		ex("EVAL «return redis.call('SET', 'k2', 'v', 'NX')» 0"), ex("EVAL «return redis.call('SET', 'k2', 'v', 'NX')» 0"),
		ex("EVAL «return redis.call('PING')» 0"), ex("EVAL «return redis.call('ECHO', 'hi')» 0"),
		ex("EVAL «return redis.call('nosuchcommand')» 0"), ex("EVAL «return redis.call('GET')» 0"),
		ex("EVAL «return redis.call('SET', 'k', {})» 0"), ex("EVAL «return redis.call()» 0"),
		ex("EVAL «return redis.call('INCRBY', 'n', 1.9)» 0"), ex("EVAL «return redis.call('EVAL', 'return 1', 0)» 0"),
		ex("EVAL «return redis.call('MULTI')» 0"), ex("EVAL_RO «return redis.call('SET', 'k', 'v')» 0"),
		ex("EVAL_RO «return redis.call('GET', 'k2')» 0"), ex("EVAL «redis.call('SET', 'w', 1); return redis.call('NOPE')» 0"), ex("GET w"),
		ex("EVAL «return x» 0"), ex("EVAL «y = 1» 0"), ex("EVAL «error('boom')» 0"), ex("EVAL «error({err='ERR table'})» 0"),
		ex("MULTI"), ex("EVAL «return redis.call('INCR', 'm')» 0"), ex("EVAL «return redis.call('INCR', 'm')» 0"), ex("EXEC"),
	}},
	{"script shebangs", false, []oracleLine{
		ex("SET k v"), ex("EVAL «#!lua flags=no-writes\nreturn redis.call('GET', KEYS[1])» 1 k"),
		ex("EVAL «#!lua flags=no-writes\nreturn redis.call('SET', KEYS[1], 'w')» 1 k"), ex("GET k"),
		ex("EVAL «#!lua flags=no-writes,allow-oom\nreturn redis.pcall('DEL', 'k')» 0"),
		ex("EVAL «#!lua\nreturn redis.call('SET', 'k', 'x')» 0"), ex("GET k"),
		ex("EVAL «#!lua flags=bogus\nreturn 1» 0"), ex("EVAL «#!lua x=y\nreturn 1» 0"), ex("EVAL «#!python\nreturn 1» 0"),
		ex("MULTI"), ex("EVAL «#!lua flags=no-writes\nreturn redis.call('GET', 'k')» 0"), ex("INCR n"), ex("EXEC"),
	}},
}

// TestScriptsAgainstRedis runs scriptOracleCases on Redcell and
// redis-server, in RESP2 and RESP3, and compares every reply.
func TestScriptsAgainstRedis(t *testing.T) {
	t.Parallel()
	rd := startRedis(t)
	n := startTestNode(t, "scripts-oracle")
	rc := mustDial(t, n.addr())
	runOracleCases(t, rc, rd, scriptOracleCases)
}

// TestNoWritesScriptIsARead: EVAL of a script whose shebang says
// flags=no-writes is answered as a read, on one node and through a
// follower, without a log entry (the leader's commit index does not move).
func TestNoWritesScriptIsARead(t *testing.T) {
	c := startCluster(t, 3)
	leader := c.waitLeader()
	lc := mustDial(t, c.nodes[leader].addr())
	expectReply(t, lc, wantStatus("OK"), "SET", "k", "v")
	c.waitConverged(opTimeout)
	commit := func() string { return infoField(mustDo(t, lc, "INFO", "raft").str, "raft_commit_index") }
	before := commit()
	body := "#!lua flags=no-writes\nreturn redis.call('GET', KEYS[1])"
	for i := range 3 {
		nc := mustDial(t, c.nodes[(leader+i)%3].addr())
		expectReply(t, nc, wantBulk("v"), "EVAL", body, "1", "k")
	}
	if after := commit(); after != before {
		t.Errorf("EVAL of a no-writes script moved the commit index from %s to %s", before, after)
	}
	expectReply(t, lc, wantInt(1), "EVAL", "#!lua\nreturn redis.call('INCR', 'n')", "0")
	if after := commit(); after == before {
		t.Errorf("EVAL of a script that writes left the commit index at %s", before)
	}
}

const (
	takeScript = `local v = tonumber(redis.call('GET', KEYS[1]) or '0')
if v + tonumber(ARGV[1]) > tonumber(ARGV[2]) then return 0 end
redis.call('INCRBY', KEYS[1], ARGV[1])
return 1`
	peekScript = `return redis.call('GET', KEYS[1])`
)

// TestClusterScriptCache: the script cache is replicated state. A script
// loaded through a follower is answered by EVALSHA through every node,
// EVALSHA_RO answers from each replica's own state (READONLY), and after
// the leader is killed, and after the whole cluster restarts, EVALSHA still
// finds it everywhere; every replica's digest agrees.
func TestClusterScriptCache(t *testing.T) {
	c := startCluster(t, 3)
	leader := c.waitLeader()
	fc := mustDial(t, c.nodes[(leader+1)%3].addr())
	take := mustDo(t, fc, "SCRIPT", "LOAD", takeScript).str
	peek := mustDo(t, fc, "SCRIPT", "LOAD", peekScript).str
	if len(take) != 40 || len(peek) != 40 {
		t.Fatalf("SCRIPT LOAD through a follower: %q %q", take, peek)
	}
	admitted := 0
	for i := range 12 {
		nc := mustDial(t, c.nodes[i%3].addr())
		r := mustDo(t, nc, "EVALSHA", take, "1", "tokens", "1", "10")
		admitted += int(r.num)
	}
	if admitted != 10 {
		t.Fatalf("the scripted limit of 10 admitted %d of 12", admitted)
	}
	c.waitConverged(opTimeout)
	c.eachReadOnly(func(i int, nc *respConn) {
		expectReply(t, nc, wantBulk("10"), "EVALSHA_RO", peek, "1", "tokens")
		if got := wire(mustDo(t, nc, "SCRIPT", "EXISTS", take, peek, strings.Repeat("0", 40))); got != "*[:1 :1 :0]" {
			t.Errorf("node %d: SCRIPT EXISTS %s", i, got)
		}
	})
	c.compareReplicas("after scripted decisions")

	c.kill(leader)
	next := c.waitLeader()
	nc := mustDial(t, c.nodes[next].addr())
	expectReply(t, nc, wantInt(0), "EVALSHA", take, "1", "tokens", "1", "10")
	expectReply(t, nc, wantInt(1), "EVALSHA", take, "1", "other", "1", "10")
	c.restart(leader)
	c.waitConverged(opTimeout)
	c.compareReplicas("after a leader kill")

	c.killAll()
	for i := range c.nodes {
		c.restart(i)
	}
	c.waitLeader()
	c.waitConverged(opTimeout)
	c.eachReadOnly(func(i int, nc *respConn) {
		expectReply(t, nc, wantBulk("10"), "EVALSHA_RO", peek, "1", "tokens")
		expectReply(t, nc, wantBulk("1"), "EVALSHA_RO", peek, "1", "other")
	})
	c.compareReplicas("after a whole-cluster restart")
}

// TestScriptCacheSurvivesSnapshotRestart: Redis forgets its scripts on a
// restart; Redcell keeps them in its snapshots. A script loaded before
// SAVE answers EVALSHA after SIGKILL and a restart from that snapshot.
func TestScriptCacheSurvivesSnapshotRestart(t *testing.T) {
	t.Parallel()
	n := startTestNode(t, "scripts-snapshot")
	c := mustDial(t, n.addr())
	sha := mustDo(t, c, "SCRIPT", "LOAD", takeScript).str
	expectReply(t, c, wantInt(1), "EVALSHA", sha, "1", "t", "3", "5")
	expectReply(t, c, wantStatus("OK"), "SAVE")
	c = killAndRestoreSnapshot(t, n)
	expectReply(t, c, wantInt(0), "EVALSHA", sha, "1", "t", "3", "5")
	expectReply(t, c, wantInt(1), "EVALSHA", sha, "1", "t", "2", "5")
	expectReply(t, c, wantBulk("5"), "GET", "t")
}

// multiLimitScript is the README's atomic multi-limit: it checks every
// limit in KEYS with CL.PEEK (ARGV holds max_burst, count, period and
// quantity per key) and takes from all of them with CL.THROTTLE only when
// none is limited; it answers {0, -1} when it took, or {i, retry_after} for
// the first limit i that refused, having taken from none.
const multiLimitScript = `for i, key in ipairs(KEYS) do
  local a = 4 * (i - 1)
  local r = redis.call('CL.PEEK', key, ARGV[a+1], ARGV[a+2], ARGV[a+3], ARGV[a+4])
  if r[1] == 1 then return {i, r[4]} end
end
for i, key in ipairs(KEYS) do
  local a = 4 * (i - 1)
  redis.call('CL.THROTTLE', key, ARGV[a+1], ARGV[a+2], ARGV[a+3], ARGV[a+4])
end
return {0, -1}`

// TestScriptTakesFromSeveralLimitsAtomically: a per-user limit (5 a
// minute) and a global one (8 a minute) checked by one script: a request
// refused by either takes from neither, so a user stopped by the global
// limit keeps its own allowance and the global limit counts only admitted
// requests.
func TestScriptTakesFromSeveralLimitsAtomically(t *testing.T) {
	t.Parallel()
	n := startTestNode(t, "scripts-multilimit")
	c := mustDial(t, n.addr())
	freshBase(t, c)
	sha := mustDo(t, c, "SCRIPT", "LOAD", multiLimitScript).str
	take := func(user string) string {
		return wire(mustDo(t, c, "EVALSHA", sha, "2", "user:"+user, "global", "4", "5", "60", "1", "7", "8", "60", "1"))
	}
	for i := range 5 {
		if got := take("a"); got != "*[:0 :-1]" {
			t.Fatalf("user a, request %d: %s", i+1, got)
		}
	}
	if got := take("a"); !strings.HasPrefix(got, "*[:1 :") {
		t.Fatalf("user a, request 6: %s, want refused by limit 1", got)
	}
	for i := range 3 {
		if got := take("b"); got != "*[:0 :-1]" {
			t.Fatalf("user b, request %d: %s", i+1, got)
		}
	}
	if got := take("b"); !strings.HasPrefix(got, "*[:2 :") {
		t.Fatalf("user b, request 4: %s, want refused by the global limit", got)
	}
	// b took 3 of its 5, untouched by the refused request: a peek allows a
	// fourth and leaves 1 (redis-cell's remaining counts the request
	// itself); the global limit holds 8 admissions, a's 5 and b's 3.
	if v, ok := mustDo(t, c, "CL.PEEK", "user:b", "4", "5", "60").ints(); !ok || v[0] != 0 || v[2] != 1 {
		t.Errorf("user b's own limit after a refusal by the global one: %v, want allowed with 1 remaining", v)
	}
	if v, ok := mustDo(t, c, "CL.PEEK", "global", "7", "8", "60").ints(); !ok || v[0] != 1 || v[2] != 0 {
		t.Errorf("the global limit after 8 admissions: %v, want limited with 0 remaining", v)
	}
}

// TestScriptBudgets: a script that loops forever, one that doubles a string
// forever and one that fills a table forever each stop with their budget's
// error; what they wrote before stands, identically on every replica; and
// the cluster goes on deciding for every other client meanwhile and after.
func TestScriptBudgets(t *testing.T) {
	c := startCluster(t, 3, "--script-max-instructions", "2000000")
	leader := c.waitLeader()
	lc := mustDial(t, c.nodes[leader].addr())
	for _, s := range []struct{ name, body, want string }{
		{"loop", "redis.call('INCR', KEYS[1]) while true do end", "ERR script exceeded its budget of 2000000 instructions"},
		{"string", "redis.call('INCR', KEYS[1]) local s = 'x' while true do s = s .. s end", "ERR script exceeded its memory budget"},
		{"table", "redis.call('INCR', KEYS[1]) local t = {} local i = 0 while true do i = i + 1 t[i] = i end", "ERR script exceeded"},
		{"pcall", "redis.call('INCR', KEYS[1]) while true do pcall(function() while true do end end) end", "ERR script exceeded its budget"},
	} {
		done := doAsync(c.nodes[leader].addr(), "EVAL", s.body, "1", "runaway")
		// Another client decides while the script runs and after it.
		for i := range 3 {
			if v, ok := mustDo(t, lc, "CL.THROTTLE", "other:"+s.name, "100", "100", "60").ints(); !ok || v[0] != 0 {
				t.Fatalf("%s: decision %d beside the script: %v", s.name, i, v)
			}
		}
		r := <-done
		if !r.isErr() || !strings.HasPrefix(r.str, s.want) {
			t.Errorf("%s: %s, want an error starting %q", s.name, wire(r), s.want)
		}
	}
	expectReply(t, lc, wantBulk("4"), "GET", "runaway") // each script's INCR stands
	c.waitConverged(opTimeout)
	c.eachReadOnly(func(i int, nc *respConn) { expectReply(t, nc, wantBulk("4"), "GET", "runaway") })
	c.compareReplicas("after scripts stopped by their budgets")
}
