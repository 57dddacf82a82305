package systemtest

import (
	"fmt"
	"testing"
	"time"
)

// INCREX (Redis 8.8) end to end: Redis 8.8 cannot be installed here, so the
// spec's rules and examples (data-types.md "INCREX") are the oracle. The
// rules one by one are fsm/increx_test.go's; these tests run the spec's
// examples through the real server: forwarded from a follower of a 3-node
// cluster, inside MULTI, in both protocols, and expiring on the injected
// replicated clock (DEBUG CLOCK), never by sleeping.

// increxWindowCounter is the spec's window-counter example.
var increxWindowCounter = []string{"INCREX", "rl:{user}", "BYINT", "1", "UBOUND", "100", "EX", "60", "ENX"}

// TestClusterIncrExThroughFollower: the window counter sent to a follower
// admits exactly 100 calls in a 60 s window started by the first, answers
// [100, 0] after, and starts a new window once the first expires on every
// replica; BYFLOAT answers bulk strings in RESP2 and doubles in RESP3;
// inside MULTI the replies keep their order and kinds; the replicas agree.
func TestClusterIncrExThroughFollower(t *testing.T) {
	c := startCluster(t, 3)
	leader := c.waitLeader()
	lc := mustDial(t, c.nodes[leader].addr())
	base := ceilSecond(max(replicatedClock(t, lc)+second, time.Now().UnixNano()))
	setClock(t, lc, base)
	fc := mustDial(t, c.nodes[(leader+1)%3].addr())
	for i := 1; i <= 100; i++ {
		if got, want := wire(mustDo(t, fc, increxWindowCounter...)), fmt.Sprintf("*[:%d :1]", i); got != want {
			t.Fatalf("call %d of the window through the follower: %s, want %s", i, got, want)
		}
	}
	for _, s := range []struct {
		args []string
		want string
	}{
		{increxWindowCounter, "*[:100 :0]"},
		{increxWindowCounter, "*[:100 :0]"},
		{[]string{"INCREX", "f", "BYFLOAT", "1.5"}, `*[$"1.5" $"1.5"]`},
		{[]string{"INCREX", "f", "BYFLOAT", "0.25", "UBOUND", "1.6", "SATURATE"}, `*[$"1.6" $"0.1"]`},
		{[]string{"INCREX", "f", "BYINT", "1"}, "--ERR value is not an integer or out of range"},
		{[]string{"INCREX", "n", "BYINT", "1.5"}, "--ERR value is not an integer or out of range"},
		{[]string{"INCREX", "n", "LBOUND", "5", "UBOUND", "4"}, "--ERR LBOUND must be less than or equal to UBOUND"},
		{[]string{"INCREX", "n", "ENX"}, "--ERR syntax error"},
		{[]string{"INCREX", "n", "PERSIST", "EX", "5"}, "--ERR syntax error"},
		{[]string{"INCREX", "n", "BYFLOAT", "inf"}, "--ERR increment would produce NaN or Infinity"},
		{[]string{"SADD", "set", "a"}, ":1"},
		{[]string{"INCREX", "set"}, "--WRONGTYPE Operation against a key holding the wrong kind of value"},
		{[]string{"MULTI"}, "++OK"},
		{[]string{"INCREX", "m"}, "++QUEUED"},
		{[]string{"INCREX", "m", "BYINT", "5", "UBOUND", "3"}, "++QUEUED"},
		{[]string{"INCREX", "m", "BYINT", "5", "UBOUND", "3", "SATURATE"}, "++QUEUED"},
		{[]string{"INCREX", "m", "BYFLOAT", "0.5", "PX", "30500"}, "++QUEUED"},
		{[]string{"INCREX", "m", "BYINT", "1"}, "++QUEUED"},
		{[]string{"GET", "m"}, "++QUEUED"},
		{[]string{"EXEC"}, `*[*[:1 :1] *[:1 :0] *[:3 :2] *[$"3.5" $"0.5"] --ERR value is not an integer or out of range $"3.5"]`},
	} {
		if got := wire(mustDo(t, fc, s.args...)); got != s.want {
			t.Errorf("%v through the follower: %s, want %s", s.args, got, s.want)
		}
	}
	mustDo(t, fc, "HELLO", "3")
	for _, s := range []struct {
		args []string
		want string
	}{
		{[]string{"INCREX", "f", "BYFLOAT", "-0.6"}, `*[,"1" ,"-0.6"]`},
		{[]string{"INCREX", "f", "BYFLOAT", "1", "UBOUND", "1.5"}, `*[,"1" ,"0"]`},
		{increxWindowCounter, "*[:100 :0]"},
		{[]string{"MULTI"}, "++OK"},
		{[]string{"INCREX", "f", "BYFLOAT", "0.5"}, "++QUEUED"},
		{[]string{"INCREX", "rl:{user}", "BYINT", "-1"}, "++QUEUED"},
		{[]string{"EXEC"}, `*[*[,"1.5" ,"0.5"] *[:99 :-1]]`},
	} {
		if got := wire(mustDo(t, fc, s.args...)); got != s.want {
			t.Errorf("RESP3 %v through the follower: %s, want %s", s.args, got, s.want)
		}
	}
	c.waitConverged(opTimeout)
	c.eachReadOnly(func(i int, nc *respConn) {
		if got := wire(mustDo(t, nc, "MGET", "rl:{user}", "f", "m")); got != `*[$"99" $"1.5" $"3.5"]` {
			t.Errorf("node %d: MGET %s", i, got)
		}
		expectReply(t, nc, wantInt(base/1e6+60000), "PEXPIRETIME", "rl:{user}")
		expectReply(t, nc, wantInt(base/1e6+30500), "PEXPIRETIME", "m")
		expectReply(t, nc, wantInt(-1), "PTTL", "f")
	})
	// The window ends on every replica at base + 60 s; the next call
	// starts a new one.
	setClock(t, lc, base+60*second+time.Millisecond.Nanoseconds())
	expectReply(t, lc, wantInt(0), "DEL", "nokey") // an entry at the new now
	c.waitConverged(opTimeout)
	c.eachReadOnly(func(i int, nc *respConn) {
		expectReply(t, nc, wantInt(0), "EXISTS", "rl:{user}", "m")
	})
	if got := wire(mustDo(t, fc, increxWindowCounter...)); got != "*[:1 :1]" {
		t.Errorf("the first call of the next window: %s", got)
	}
	expectReply(t, lc, wantInt(60000), "PTTL", "rl:{user}")
	c.waitConverged(opTimeout)
	c.compareReplicas("after INCREX")
}

// TestIncrExExpiryOnInjectedClock: INCREX's expiry options on the
// replicated clock, moved with DEBUG CLOCK: EX and ENX start a window once,
// no option keeps the TTL, PERSIST removes it, a skipped call leaves the TTL
// as it was, and a key is gone for INCREX (which starts again at 0) the
// millisecond after its expiry.
func TestIncrExExpiryOnInjectedClock(t *testing.T) {
	t.Parallel()
	n := startTestNode(t, "increx-expiry")
	c := mustDial(t, n.addr())
	base := freshBase(t, c)
	at := func(ms int64) { setClock(t, c, base+ms*1e6) }
	steps := []struct {
		atMs int64
		args []string
		want string
	}{
		{0, increxWindowCounter, "*[:1 :1]"},
		{0, []string{"PTTL", "rl:{user}"}, ":60000"},
		{30000, increxWindowCounter, "*[:2 :1]"},
		{30000, []string{"PTTL", "rl:{user}"}, ":30000"}, // ENX: the window was not pushed back
		{30000, []string{"INCREX", "rl:{user}"}, "*[:3 :1]"},
		{30000, []string{"PTTL", "rl:{user}"}, ":30000"}, // no option: the TTL stays
		{30000, []string{"INCREX", "rl:{user}", "UBOUND", "3", "PERSIST"}, "*[:3 :0]"},
		{30000, []string{"PTTL", "rl:{user}"}, ":30000"}, // skipped: the TTL untouched
		{60000, []string{"GET", "rl:{user}"}, `$"3"`},
		{60001, []string{"GET", "rl:{user}"}, "(nil$)"},
		{60001, increxWindowCounter, "*[:1 :1]"},
		{60001, []string{"PEXPIRETIME", "rl:{user}"}, fmt.Sprintf(":%d", base/1e6+120001)},
		{60001, []string{"INCREX", "rl:{user}", "PERSIST"}, "*[:2 :1]"},
		{60001, []string{"TTL", "rl:{user}"}, ":-1"},
		{60001, []string{"INCREX", "rl:{user}", "PX", "500"}, "*[:3 :1]"},
		{60501, []string{"INCREX", "rl:{user}", "BYFLOAT", "0.5"}, `*[$"3.5" $"0.5"]`},
		{60502, []string{"INCREX", "rl:{user}", "BYFLOAT", "0.5"}, `*[$"0.5" $"0.5"]`},
		{60502, []string{"INCREX", "gone", "PXAT", fmt.Sprint(base/1e6 + 60000)}, "*[:1 :1]"},
		{60502, []string{"EXISTS", "gone"}, ":0"},
		{60502, []string{"INCREX", "x", "PX", "9223372036854775000"}, "--ERR invalid expire time in 'increx' command"},
	}
	for _, s := range steps {
		at(s.atMs)
		if got := wire(mustDo(t, c, s.args...)); got != s.want {
			t.Errorf("at +%d ms, %v: %s, want %s", s.atMs, s.args, got, s.want)
		}
	}
}
