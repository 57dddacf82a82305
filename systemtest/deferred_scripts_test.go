package systemtest

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestRunawayScriptLetsOthersDecide: a script that loops forever, sent
// through a follower, costs the log only the apply slice: the leader runs
// it beside the state machine (fsm/deferred.go) while another client's
// decisions go on, many of them before the script's budget error comes
// back; its write before the loop stands, on every replica. In the log
// with its whole budget it would hold every decision behind it until the
// error.
func TestRunawayScriptLetsOthersDecide(t *testing.T) {
	c := startCluster(t, 3)
	leader := c.waitLeader()
	follower := (leader + 1) % 3
	lc := mustDial(t, c.nodes[leader].addr())
	done := doAsync(c.nodes[follower].addr(), "EVAL", "redis.call('INCR', KEYS[1]) while true do end", "1", "runaway")
	// Decide until the script's answer is back; count the decisions.
	decided := 0
	start := time.Now()
	var slowest time.Duration
	var r reply
loop:
	for {
		select {
		case r = <-done:
			break loop
		default:
		}
		t0 := time.Now()
		if v, ok := mustDo(t, lc, "CL.THROTTLE", "other", "1000000", "1000000", "60").ints(); !ok || v[0] != 0 {
			t.Fatalf("decision %d beside the script: %v", decided, v)
		}
		slowest = max(slowest, time.Since(t0))
		decided++
	}
	ran := time.Since(start)
	t.Logf("%d decisions in the %v the script took, the slowest %v", decided, ran, slowest)
	if !r.isErr() || !strings.HasPrefix(r.str, "ERR script exceeded its budget of 10000000 instructions") {
		t.Fatalf("the runaway script: %s", wire(r))
	}
	// Held by the script, a decision would wait until its error; beside
	// it, each takes what a decision takes on a machine with one core
	// busy. The bound is relative, so a slow machine slows both.
	if decided < 3 || slowest > ran/3 {
		t.Errorf("%d decisions while the runaway script ran %v, the slowest %v: the log was held", decided, ran, slowest)
	}
	expectReply(t, lc, wantBulk("1"), "GET", "runaway")
	c.waitConverged(opTimeout)
	c.eachReadOnly(func(i int, nc *respConn) { expectReply(t, nc, wantBulk("1"), "GET", "runaway") })
	c.compareReplicas("after a runaway script ran beside the log")
}

// TestLongScriptUnderContentionIsExact: a script that runs long before it
// increments a key, while another client increments the same key through
// another node: the script's effects find the key changed and it runs
// again (or, past its tries, in the log), so no increment is lost or
// doubled, and the script's reply is a value the key had.
func TestLongScriptUnderContentionIsExact(t *testing.T) {
	c := startCluster(t, 3)
	leader := c.waitLeader()
	lc := mustDial(t, c.nodes[leader].addr())
	fc := mustDial(t, c.nodes[(leader+2)%3].addr())
	const body = "for i = 1, 150000 do end return redis.call('INCR', KEYS[1])"
	const others = 40
	for round := range 3 {
		key := "contended:" + strconv.Itoa(round)
		done := doAsync(c.nodes[leader].addr(), "EVAL", body, "1", key)
		for range others {
			mustDo(t, fc, "INCR", key)
		}
		r := <-done
		if r.kind != ':' || r.num < 1 || r.num > others+1 {
			t.Fatalf("round %d: the script answered %s", round, wire(r))
		}
		expectReply(t, lc, wantBulk(strconv.Itoa(others+1)), "GET", key)
	}
	c.waitConverged(opTimeout)
	c.compareReplicas("after long scripts under contention")
}

// doAsync sends one command on a connection of its own and delivers the
// reply (or the error, as an error reply) on the channel: a command whose
// answer the test waits for while it does other things.
func doAsync(addr string, args ...string) <-chan reply {
	done := make(chan reply, 1)
	go func() {
		oc, err := dialRESP(addr)
		if err != nil {
			done <- reply{kind: '-', str: err.Error()}
			return
		}
		defer oc.close()
		r, err := oc.do(args...)
		if err != nil {
			r = reply{kind: '-', str: err.Error()}
		}
		done <- r
	}()
	return done
}
