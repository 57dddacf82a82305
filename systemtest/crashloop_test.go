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
		applied := verifyHeld(t, c, "round "+strconv.Itoa(round), 1, tally.keys, tally.sent, tally.acked)
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

// clusterCrashRounds is how many kill -9s TestClusterCrashLoop deals (each
// round, restart and rejoin included, took about a second on the 2-core
// development machine).
const clusterCrashRounds = 20

// TestClusterCrashLoop kills a random node of a three-node cluster (leader
// or follower, by a logged seed) with SIGKILL, at a random moment, while
// two loads run on the other two nodes' client ports:
//
//   - pipelined CL.THROTTLE (throttleLoadOn: 4 connections, 16 commands
//     deep, one day per decision with the real clock, so nothing refills),
//     killed 1 to 2,000 acknowledged decisions into the round;
//   - limiter calls of every family on keys of 100 units that do not refill
//     (decisionLoad: CL.THROTTLE key 99 1 86400 and the TB/SL equivalents,
//     three clients per node, one request at a time each).
//
// The cluster must go on deciding (500 more pipelined decisions and 200
// more of every family), then the node restarts on its data dir and
// rejoins. After every round, the decisions of every round so far are
// checked against the state read through the leader: for the pipelined
// keys acknowledged <= held <= sent summed over the rounds; for the
// limiter keys no more than 100 allowed, no unit given twice, every
// acknowledged decision in force and none that an error reply said did
// not happen.
func TestClusterCrashLoop(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("REDCELL_CRASH_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("REDCELL_CRASH_SEED: %v", err)
		}
		seed = v
	}
	t.Logf("seed %d (REDCELL_CRASH_SEED=%d replays it)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 0xc1a5))

	c := startCluster(t, 3)
	start := time.Now()
	var loads []*decisionLoad
	var tally loadTally
	for round := 1; round <= clusterCrashRounds; round++ {
		victim := rng.IntN(len(c.nodes))
		var others []int
		for i := range c.nodes {
			if i != victim {
				others = append(others, i)
			}
		}
		wasLeader := c.waitLeader() == victim
		load := startDecisionLoad(t, c, "crash"+strconv.Itoa(round), others, 3, loadReadTimout)
		loads = append(loads, load)
		piped := startThrottleLoadOn(t, []string{c.nodes[others[0]].addr(), c.nodes[others[1]].addr()}, 86400,
			"ccrash", 4, 25, 16, 1+rng.Int64N(2000), seed+uint64(round))
		at := 1 + rng.IntN(300)
		load.waitDecisions(t, at, 30*time.Second)
		piped.waitAcks(t, 30*time.Second)
		c.kill(victim)                                // pipelines in flight
		load.waitDecisions(t, at+200, 30*time.Second) // decisions go on without it
		piped.waitAckCount(t, piped.threshold+500, 30*time.Second)
		load.halt()
		piped.stop()
		piped.wait(t, opTimeout+5*time.Second)
		piped.checkReplies(t, "TRYAGAIN ", "CLUSTERDOWN ")
		tally.add(piped)
		allowed, limited, unknown, failed := load.totals()

		c.restart(victim)
		c.waitFormed(3)
		c.waitLoaded(victim) // the next round's clients may be on it
		leader := c.waitLeader()
		for _, l := range loads {
			l.verify(t, c, leader)
		}
		rc := mustDial(t, c.nodes[leader].addr())
		applied := verifyHeld(t, rc, "round "+strconv.Itoa(round), 86400, tally.keys, tally.sent, tally.acked)
		rc.close()
		sent, acked := tally.totals()
		t.Logf("round %d: killed %s (leader: %v); limiter load %d allowed, %d limited, %d unknown, %d refused; pipelined so far %d sent, %d acknowledged, %d unacknowledged applied; every round so far in force",
			round, c.nodes[victim].id, wasLeader, allowed, limited, unknown, failed, sent, acked, applied)
		if t.Failed() {
			t.Fatalf("round %d (seed %d)", round, seed)
		}
	}
	c.compareReplicas("after the crash loop")
	t.Logf("%d rounds in %v", clusterCrashRounds, time.Since(start).Round(time.Millisecond))
}

// waitDecisions waits until the load has had n successful decisions (allowed
// or limited) in all, failing the test after timeout.
func (l *decisionLoad) waitDecisions(t testing.TB, n int, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		l.mu.Lock()
		got := len(l.successes)
		l.mu.Unlock()
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d decisions after %v", got, n, timeout)
		}
		<-time.After(pollEvery)
	}
}

// waitLoaded waits until node i has loaded what it must replay after a
// restart (INFO persistence loading:0): until then it answers LOADING.
func (c *cluster) waitLoaded(i int) {
	c.t.Helper()
	c.waitFor(leaderTimeout, c.nodes[i].id+" loaded", func() (bool, string) {
		r, err := c.call(i, "INFO", "persistence")
		if err != nil {
			return false, err.Error()
		}
		v := infoField(r.str, "loading")
		return v == "0", "loading:" + v
	})
}
