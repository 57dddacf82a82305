package systemtest

import (
	"fmt"
	"testing"
	"time"
)

// TestKillNineDurability checks the promise that no decision is acknowledged
// before it is durable: acknowledged decisions survive kill -9 and are in
// force after the restart, at the same injected instant.
func TestKillNineDurability(t *testing.T) {
	t.Parallel()
	t.Run("acknowledged_decisions", testKillNineAcknowledged)
	t.Run("kill_under_pipelined_load", testKillNineUnderLoad)
}

// Keys of the first variant: max_burst 4 (limit 5), 1 per 10 s.
const (
	durKeys    = 300
	durDrained = 150 // the first 150 are drained, the rest give one token
)

func durKey(i int) string { return fmt.Sprintf("dur:%03d", i) }

func testKillNineAcknowledged(t *testing.T) {
	t.Parallel()
	n := startTestNode(t, "kill9-acked")
	c := mustDial(t, n.addr())
	origin := freshBase(t, c)

	// Drain keys 0..149 (five allowed calls, then limited) and take one token
	// from 150..299, ten keys per pipeline, checking every acknowledgement.
	for lo := 0; lo < durKeys; lo += 10 {
		var wants []want
		var sent []string
		for i := lo; i < lo+10; i++ {
			if i < durDrained {
				for j := int64(1); j <= 5; j++ {
					c.send("CL.THROTTLE", durKey(i), "4", "1", "10")
					wants = append(wants, wantInts(0, 5, 5-j, -1, 10*j))
					sent = append(sent, durKey(i))
				}
				c.send("CL.THROTTLE", durKey(i), "4", "1", "10")
				wants = append(wants, wantInts(1, 5, 0, 10, 50))
			} else {
				c.send("CL.THROTTLE", durKey(i), "4", "1", "10")
				wants = append(wants, wantInts(0, 5, 4, -1, 10))
			}
			sent = append(sent, durKey(i))
		}
		for j, r := range readN(t, c, len(wants)) {
			if !wants[j].matches(r) {
				t.Fatalf("before the kill: CL.THROTTLE %s 4 1 10: got %v, want %v", sent[j], r, wants[j])
			}
		}
	}
	// Right after the last acknowledgement: kill -9, restart on the same
	// data directory and port.
	n.kill()
	n.mustRestart(t)
	c = mustDial(t, n.addr())

	// Every entry was stamped at the origin; replaying them brings the
	// replicated clock exactly there.
	if clk := replicatedClock(t, c); clk != origin {
		t.Errorf("replicated clock after replay: got %d, want the origin %d", clk, origin)
	}
	setClock(t, c, origin)
	expectReply(t, c, wantInt(durKeys), "DBSIZE")
	for i := 0; i < durKeys; i++ {
		k := durKey(i)
		// drained: TAT = origin + 50 s; one token: TAT = origin + 10 s.
		checks := []struct {
			args []string
			want want
		}{
			{argv("CL.PEEK", k, "4", "1", "10", "0"), wantInts(0, 5, 0, -1, 50)},
			{argv("CL.PEEK", k, "4", "1", "10"), wantInts(1, 5, 0, 10, 50)},
			{argv("PTTL", k), wantInt(50000)},
			{argv("CL.THROTTLE", k, "4", "1", "10", "0"), wantInts(0, 5, 0, -1, 50)},
		}
		if i >= durDrained {
			checks[0].want = wantInts(0, 5, 4, -1, 10)
			checks[1].want = wantInts(0, 5, 3, -1, 20)
			checks[2].want = wantInt(10000)
			checks[3].want = wantInts(0, 5, 4, -1, 10)
		}
		for _, ch := range checks {
			c.send(ch.args...)
		}
		for j, r := range readN(t, c, len(checks)) {
			if !checks[j].want.matches(r) {
				t.Errorf("after kill -9 and restart: %s: got %v, want %v", quoteArgs(checks[j].args), r, checks[j].want)
			}
		}
	}
	// The restarted node still decides: a drained key stays limited, a
	// one-token key gives its next token.
	expectReply(t, c, wantInts(1, 5, 0, 10, 50), "CL.THROTTLE", durKey(0), "4", "1", "10")
	expectReply(t, c, wantInts(0, 5, 3, -1, 20), "CL.THROTTLE", durKey(durKeys-1), "4", "1", "10")
}

func testKillNineUnderLoad(t *testing.T) {
	t.Parallel()
	n := startTestNode(t, "kill9-load")
	c := mustDial(t, n.addr())
	origin := freshBase(t, c)
	const seed = 20240917
	load := startThrottleLoad(t, n.addr(), "load", 4, 25, 16, 3000, seed)
	load.waitAcks(t, 30*time.Second)
	n.kill() // while pipelines are in flight
	load.wait(t, opTimeout+5*time.Second)
	sent, acked := load.totals()
	load.checkReplies(t) // no error replies expected before a kill
	t.Logf("load (seed %d): %d decisions sent, %d acknowledged before kill -9", seed, sent, acked)

	n.mustRestart(t)
	c = mustDial(t, n.addr())
	if clk := replicatedClock(t, c); clk != origin {
		t.Errorf("replicated clock after replay: got %d, want the origin %d", clk, origin)
	}
	setClock(t, c, origin)
	applied := load.verifyState(t, c)
	t.Logf("%d of %d unacknowledged decisions were applied", applied, sent-acked)
}
