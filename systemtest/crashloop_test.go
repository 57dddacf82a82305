package systemtest

import (
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"
)

// crashRounds is how many kill -9s TestCrashLoop deals one data dir.
const crashRounds = 20

// TestCrashLoop kills one node with SIGKILL at a random moment under
// pipelined load (4 connections, 16 commands deep), crashRounds times,
// restarting it each time on the same data dir and port. After every restart
// every decision acknowledged in any round so far is in force, and none that
// was never sent: per key, acknowledged <= held <= sent, summed over the
// rounds. The clock is frozen at one instant for the whole test (re-frozen
// after each restart, before any load), and every decision takes one
// emission interval of a burst no test reaches, so nothing refills and
// CL.PEEK tells exactly how many decisions a key holds.
//
// The kill moment is a random number of acknowledged decisions into the
// round (1 to 2,000), from a seed that is logged; REDCELL_CRASH_SEED
// replays one.
func TestCrashLoop(t *testing.T) {
	t.Parallel()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("REDCELL_CRASH_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("REDCELL_CRASH_SEED: %v", err)
		}
		seed = v
	}
	t.Logf("seed %d (REDCELL_CRASH_SEED=%d replays it)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 0xc4a5))

	n := startTestNode(t, "crash-loop")
	c := mustDial(t, n.addr())
	origin := freshBase(t, c)
	c.close()
	var tally loadTally
	start := time.Now()
	for round := 1; round <= crashRounds; round++ {
		threshold := 1 + rng.Int64N(2000)
		load := startThrottleLoad(t, n.addr(), "crash", 4, 25, 16, threshold, seed+uint64(round))
		load.waitAcks(t, 30*time.Second)
		n.kill() // pipelines in flight on every connection
		load.wait(t, opTimeout+5*time.Second)
		load.checkReplies(t) // I/O errors end the workers; no error replies
		tally.add(load)
		if t.Failed() {
			t.FailNow()
		}

		n.mustRestart(t)
		c = mustDial(t, n.addr())
		// Every entry was stamped at the origin: replay brings the
		// replicated clock exactly there; freeze it there again before the
		// next round's load.
		if clk := replicatedClock(t, c); clk != origin {
			t.Fatalf("round %d: replicated clock after replay %d, want the origin %d", round, clk, origin)
		}
		setClock(t, c, origin)
		applied := verifyHeld(t, c, "round "+strconv.Itoa(round), tally.keys, tally.sent, tally.acked)
		c.close()
		sent, acked := tally.totals()
		t.Logf("round %d: killed once %d decisions of the round were acknowledged; so far %d sent, %d acknowledged, all in force; %d unacknowledged applied",
			round, threshold, sent, acked, applied)
		if t.Failed() {
			t.Fatalf("round %d lost acknowledged decisions (seed %d)", round, seed)
		}
	}
	t.Logf("%d rounds in %v", crashRounds, time.Since(start).Round(time.Millisecond))
}
