package systemtest

import (
	"fmt"
	"strconv"
	"testing"
	"time"
)

// Real rate-limit libraries, unchanged, against Redcell (the libraries and
// their configurations are in clients_ratelimit_libs_test.go, those that
// keep their algorithm in a Lua script in clients_ratelimit_scripted_test.go;
// the README's "Coming from a Redis rate limiter" shows the same
// configurations). Each must enforce its limit exactly on one node and
// through a follower of a 3-node cluster, and a leader kill in the middle
// of a run must admit nothing extra. Windows that live in Redcell's key
// expiry, and redis_rate's GCRA, which reads redis.call('TIME') (on Redcell
// the log entry's instant), are moved with DEBUG CLOCK; envoy's windows are
// days of its own wall clock, and a round that crosses one runs again;
// limits' moving window is its driver's wall clock, within a round.

// TestRateLimitLibraries: each library on one node admits exactly its limit,
// and its window follows Redcell's clock as the library expects of Redis.
// The same limit check runs against redis-server first, so that what it
// expects is what the library does on Redis.
func TestRateLimitLibraries(t *testing.T) {
	n := sharedNode(t)
	c := mustDial(t, n.addr())
	redisAddr := startRedisServer(t)
	rc := mustDial(t, redisAddr)
	for _, l := range rateLimitLibs {
		t.Run(l.name, func(t *testing.T) {
			onRedis := l.open(t, redisAddr)
			// Identifiers start with the library's name: the variants of
			// one library count in the same keys.
			inOneWallWindow(t, l.wallWindow, l.name+"-redis", func(id string) []string {
				return checkExactLimit(onRedis, id, onRedis.counter(rc))
			})
			base := freshBase(t, c)
			lib := l.open(t, n.addr())
			tag := strconv.FormatInt(base/second, 10)
			inOneWallWindow(t, l.wallWindow, l.name+"-exact-"+tag, func(id string) []string {
				problems := checkExactLimit(lib, id, lib.counter(c))
				if l.name == "envoy-ratelimit" {
					// INCRBY and EXPIRE 86400 pipelined; the clock is frozen.
					if r := mustDo(t, c, "TTL", lib.counterKey(id)); r.kind != ':' || r.num != envoyDaySeconds {
						problems = append(problems, fmt.Sprintf("TTL %s: %v, want %d", lib.counterKey(id), r, envoyDaySeconds))
					}
				}
				return problems
			})
			if l.window != nil {
				l.window(t, c, lib, base, l.name+"-window-"+tag)
			}
		})
	}
}

// TestClusterRateLimitLibraries: each library attached to a follower of a
// 3-node cluster admits exactly its limit; then the leader is killed with
// half the limit admitted and a request in flight, and counting every
// admission the library reports across the failover (retrying after its
// errors), no more than the limit is admitted, no acknowledged increment is
// lost, and the library goes on working against the new leader.
func TestClusterRateLimitLibraries(t *testing.T) {
	c := startCluster(t, 3)
	for _, l := range rateLimitLibs {
		t.Run(l.name, func(t *testing.T) {
			inOneWallWindow(t, l.wallWindow, l.name+"-run", func(id string) []string {
				return clusterRateLimitRound(t, c, l.open, id)
			})
		})
	}
}

// clusterRateLimitRound attaches a library to a follower, checks the limit
// through it, kills the leader in the middle of a second run, and brings the
// killed node back (so the next round has three nodes again).
func clusterRateLimitRound(t *testing.T, c *cluster, open func(*testing.T, string) *rateLimitLib, id string) []string {
	t.Helper()
	follower := (c.waitLeader() + 1) % len(c.nodes)
	leader, _ := leaderOtherThan(t, c, follower)
	freezeClusterClock(t, c, leader)
	lib := open(t, c.nodes[follower].addr())
	fc := mustDial(t, c.nodes[follower].addr())

	problems := clusterExactLimit(t, c, lib, id+"-follower", lib.counter(fc))
	killed, kp := runAcrossLeaderKill(t, c, lib, follower, id+"-kill", lib.counter(fc))
	problems = append(problems, kp...)
	// The library goes on against the new leader, exactly.
	problems = append(problems, clusterExactLimit(t, c, lib, id+"-after", lib.counter(fc))...)

	if killed >= 0 {
		c.restart(killed)
	}
	c.waitFormed(len(c.nodes))
	c.compareReplicas(lib.name + " after the round")
	return problems
}

// clusterExactLimit is checkExactLimit through a cluster. A check that
// failed while leadership changed (on a busy machine a stalled leader steps
// down) runs again, up to twice, with a new identifier: the library's errors
// then stand for failover replies, and a "may or may not have been applied"
// one leaves the count ambiguous. A failure within one term is reported.
func clusterExactLimit(t *testing.T, c *cluster, lib *rateLimitLib, id string, counter func(string) (int64, error)) []string {
	t.Helper()
	term := func() int64 {
		st, err := c.status(c.waitLeader())
		if err != nil {
			t.Fatalf("INFO raft of the leader: %v", err)
		}
		return st.term
	}
	for attempt := 0; ; attempt++ {
		runID := id
		if attempt > 0 {
			runID = fmt.Sprintf("%s-again%d", id, attempt)
		}
		before := term()
		problems := checkExactLimit(lib, runID, counter)
		if len(problems) == 0 {
			return nil
		}
		after := term()
		if after == before || attempt == 2 {
			return problems
		}
		t.Logf("leadership changed during %s's check (term %d, then %d): %v; checking again", lib.name, before, after, problems)
	}
}

// leaderOtherThan returns the ready leader and the term it leads, first
// moving leadership off node keep (RAFT TRANSFER) when keep leads: the
// library attached to keep must outlive the leader's kill.
func leaderOtherThan(t *testing.T, c *cluster, keep int) (int, int64) {
	t.Helper()
	for attempt := 0; ; attempt++ {
		if attempt == 5 {
			t.Fatalf("no stable leader other than %s after %d attempts", c.nodes[keep].id, attempt)
		}
		l := c.waitLeader()
		if l == keep {
			other := (keep + 1) % len(c.nodes)
			if r, err := c.call(l, "RAFT", "TRANSFER", c.nodes[other].id); err != nil || r.isErr() {
				t.Fatalf("RAFT TRANSFER %s: %v %v", c.nodes[other].id, r, err)
			}
			c.waitLeader(other)
			continue
		}
		if st, err := c.status(l); err == nil && st.state == "leader" && st.ready {
			return l, st.term
		}
	}
}

// freezeClusterClock freezes every running node's clock at one instant after
// the replicated clock (read on node at): a restarted node's clock is real
// again, and whichever node leads stamps entries with its own.
func freezeClusterClock(t *testing.T, c *cluster, at int) int64 {
	t.Helper()
	base := freshBase(t, mustDial(t, c.nodes[at].addr()))
	for _, i := range c.live() {
		if i != at {
			setClock(t, mustDial(t, c.nodes[i].addr()), base)
		}
	}
	return base
}

// counterOn reads a library's counter (an integer string, 0 when missing)
// through conn.
func counterOn(conn *respConn) func(key string) (int64, error) {
	return func(key string) (int64, error) {
		r, err := conn.do("GET", key)
		switch {
		case err != nil:
			return 0, err
		case r.null:
			return 0, nil
		case r.kind != '$':
			return 0, fmt.Errorf("GET %s: %v", key, r)
		}
		return strconv.ParseInt(r.str, 10, 64)
	}
}

// checkExactLimit sends limit+2 requests for id: the first limit must be
// admitted and the next two refused, without an error, each with the
// remaining count the library read, and the library's state must have
// counted all of them (the admitted ones only, for a library whose state
// counts admissions only).
func checkExactLimit(lib *rateLimitLib, id string, counter func(string) (int64, error)) []string {
	var problems []string
	for i := 1; i <= rateLimitLimit+2; i++ {
		r := lib.hit(id)
		if r.errText != "" {
			return append(problems, fmt.Sprintf("%s, %s: request %d: error %s", lib.name, id, i, r.errText))
		}
		if want := i <= rateLimitLimit; r.admitted != want {
			problems = append(problems, fmt.Sprintf("%s, %s: request %d of a limit of %d: admitted %v, want %v",
				lib.name, id, i, rateLimitLimit, r.admitted, want))
		}
		if want := int64(max(rateLimitLimit-i, 0)); r.remaining != want {
			problems = append(problems, fmt.Sprintf("%s, %s: request %d of a limit of %d: remaining %d, want %d",
				lib.name, id, i, rateLimitLimit, r.remaining, want))
		}
	}
	key := lib.counterKey(id)
	if v, err := counter(id); err != nil || v != lib.stateAfter(rateLimitLimit, 2) {
		problems = append(problems, fmt.Sprintf("%s, %s: counter %s = %d, %v; want %d", lib.name, id, key, v, err, lib.stateAfter(rateLimitLimit, 2)))
	}
	return problems
}

// runAcrossLeaderKill sends requests for id until half the limit is
// admitted, kills the leader with the next request in flight, and goes on
// (retrying after each error the library reports) until the library has
// refused twice after the kill. Every admission counts: the total must not
// exceed the limit, and may fall short of it only by requests whose outcome
// the library reported as an error (TRYAGAIN "outcome unknown" may have
// been applied). The counter must hold every request the library got a
// decision for (every admission, for a library that counts only those),
// plus at most the errored ones (and the one in flight at the kill, for a
// library whose client retries TRYAGAIN unseen). The library is attached to
// node follower, which the kill spares; it returns the killed node (-1 if
// the run failed before the kill).
func runAcrossLeaderKill(t *testing.T, c *cluster, lib *rateLimitLib, follower int, id string, counter func(string) (int64, error)) (int, []string) {
	t.Helper()
	var admitted, refused, failed, refusedAfter int
	var errs errorCounts
	count := func(r hitResult, afterKill bool) {
		switch {
		case r.errText != "":
			failed++
			errs.add(r.errText)
		case r.admitted:
			admitted++
		default:
			refused++
			if afterKill {
				refusedAfter++
			}
		}
	}
	// Before the kill, errors are counted as after it (a stalled leader on
	// a busy machine may step down by itself), up to a few.
	for admitted < rateLimitLimit/2 {
		r := lib.hit(id)
		count(r, false)
		switch {
		case r.errText != "" && failed > 3:
			return -1, []string{fmt.Sprintf("%s, %s: %d errors before the kill (%s)", lib.name, id, failed, errs.String())}
		case r.errText != "":
			time.Sleep(pollEvery) // a client's pause before retrying after a failover error
		case !r.admitted:
			return -1, []string{fmt.Sprintf("%s, %s: refused after %d admissions, before the kill", lib.name, id, admitted)}
		}
	}
	leader, term := leaderOtherThan(t, c, follower)
	start := time.Now()
	killed := make(chan struct{})
	go func() { // the killer: SIGKILL by PID, racing the request below
		c.kill(leader)
		close(killed)
	}()
	count(lib.hit(id), false)
	<-killed
	deadline := start.Add(2 * time.Minute)
	for refusedAfter < 2 {
		if time.Now().After(deadline) {
			return leader, []string{fmt.Sprintf("%s, %s: no two refusals within %v of the kill: admitted %d, refused %d, errors %d (%s)",
				lib.name, id, deadline.Sub(start), admitted, refused, failed, errs.String())}
		}
		r := lib.hit(id)
		count(r, true)
		if r.errText != "" {
			time.Sleep(pollEvery) // a client's pause before retrying after a failover error
		}
	}
	t.Logf("%s across the kill of leader %s: admitted %d of %d, refused %d, errors %d (%s); %v from the kill to the end",
		lib.name, c.nodes[leader].id, admitted, rateLimitLimit, refused, failed, errs.String(), time.Since(start).Round(time.Millisecond))

	var problems []string
	if admitted > rateLimitLimit {
		problems = append(problems, fmt.Sprintf("%s, %s: admitted %d across the leader kill, over the limit of %d", lib.name, id, admitted, rateLimitLimit))
	}
	// unseen is the requests whose outcome was unknown and the library's
	// client retried without reporting it: at most the one in flight at
	// the kill.
	unseen := 0
	if lib.retriesUnknownOutcome {
		unseen = 1
	}
	if admitted < rateLimitLimit-failed-unseen {
		problems = append(problems, fmt.Sprintf("%s, %s: admitted %d across the leader kill with %d errors (%d unseen): fewer than the limit %d less the errors",
			lib.name, id, admitted, failed, unseen, rateLimitLimit))
	}
	key := lib.counterKey(id)
	v, err := counter(id)
	decided := lib.stateAfter(admitted, refused)
	if most := decided + int64(failed+unseen); err != nil || v < decided || v > most {
		problems = append(problems, fmt.Sprintf("%s, %s: counter %s = %d, %v after %d decisions and %d errors (%d unseen): want between %d and %d",
			lib.name, id, key, v, err, admitted+refused, failed, unseen, decided, most))
	}
	// The run went through a leader change: the node killed led term term
	// a moment before, and a later term leads now.
	if st, err := c.status(c.waitLeader()); err != nil || st.term <= term {
		problems = append(problems, fmt.Sprintf("%s, %s: after killing %s, the leader of term %d: term %d, %v; want a later term",
			lib.name, id, c.nodes[leader].id, term, st.term, err))
	}
	return leader, problems
}

// checkElasticExpiry: limits' fixed window with elastic expiry (INCRBY, then
// EXPIRE on every hit) on Redcell's clock. Every hit, refused ones too,
// pushes the window's end to a full window after it, so a client that keeps
// knocking stays refused past the first window's end; a window of silence
// opens it again.
func checkElasticExpiry(t *testing.T, c *respConn, lib *rateLimitLib, base int64, id string) {
	t.Helper()
	key := lib.counterKey(id)
	expect := func(at int64, want bool, ttl int64) {
		t.Helper()
		setClock(t, c, base+at*second)
		r := lib.hit(id)
		if r.errText != "" || r.admitted != want {
			t.Fatalf("python-limits at +%ds: admitted %v, error %q; want admitted %v", at, r.admitted, r.errText, want)
		}
		expectReply(t, c, wantInt(ttl), "TTL", key)
	}
	for i := 0; i < rateLimitLimit; i++ {
		expect(0, true, limitsWindowSeconds)
	}
	expect(0, false, limitsWindowSeconds)
	expect(50, false, limitsWindowSeconds)
	// A plain fixed window's key would have expired at +60 s.
	expect(100, false, limitsWindowSeconds)
	// A full window after the last hit (it expires when the clock is past
	// its instant), the key is gone and the count starts again.
	expect(100+limitsWindowSeconds+1, true, limitsWindowSeconds)
	expectReply(t, c, wantBulk("1"), "GET", key)
}

// checkFlexibleWindow: RateLimiterRedisNonAtomic reads the count and PTTL in
// MULTI/EXEC and writes SET ... EX (first hit) or SET + PEXPIRE (later
// ones); RateLimiterRedis does SET NX EX, INCRBY and PTTL in one script.
// Either's msBeforeNext is the PTTL it read, exact on a frozen clock, and
// the window ends when Redcell's clock passes the key's expiry.
func checkFlexibleWindow(t *testing.T, c *respConn, lib *rateLimitLib, base int64, id string) {
	t.Helper()
	const window = flexibleDurationSeconds * 1000
	expect := func(atMS int64, want bool, msBeforeNext int64) {
		t.Helper()
		setClock(t, c, base+atMS*int64(time.Millisecond))
		r := lib.hit(id)
		if r.errText != "" || r.admitted != want || r.msBeforeNext != msBeforeNext {
			t.Fatalf("%s at +%d ms: admitted %v, msBeforeNext %d, error %q; want admitted %v, msBeforeNext %d",
				lib.name, atMS, r.admitted, r.msBeforeNext, r.errText, want, msBeforeNext)
		}
	}
	for i := 0; i < rateLimitLimit; i++ {
		expect(0, true, window)
	}
	expect(0, false, window)
	expect(window/2, false, window/2)
	expectReply(t, c, wantInt(window/2), "PTTL", lib.counterKey(id))
	// 1 ms past the expiry instant the key is gone (at the instant itself
	// PTTL answers 0, which the non-atomic library takes for a key without
	// an expiry: it would start a new window with the old count).
	expect(window+1, true, window)
	expectReply(t, c, wantBulk("1"), "GET", lib.counterKey(id))
}

// inOneWallWindow runs round with identifier id and reports its problems.
// For a library whose keys name a window of its own wall clock (window not
// nil), a round that crossed a window's end proves nothing (its counts were
// split between two keys) and runs once more, with a new identifier.
func inOneWallWindow(t *testing.T, window func() int64, id string, round func(id string) []string) {
	t.Helper()
	for attempt := 0; ; attempt++ {
		var w int64
		if window != nil {
			w = window()
		}
		roundID := id
		if attempt > 0 {
			roundID = fmt.Sprintf("%s-again%d", id, attempt)
		}
		problems := round(roundID)
		if window != nil && window() != w && attempt == 0 {
			t.Logf("round %s crossed a window of the library's wall clock; running it again", roundID)
			continue
		}
		for _, p := range problems {
			t.Error(p)
		}
		return
	}
}
