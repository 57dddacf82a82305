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
