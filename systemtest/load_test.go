package systemtest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// throttleLoad drives pipelined CL.THROTTLE traffic from several
// connections while a test kills or stops the node, and keeps, per key, how
// many decisions were sent and how many were acknowledged as allowed. With
// the clock frozen and a burst far larger than the traffic, every decision is
// allowed and consumes exactly one emission interval (1 s), so after a
// restart CL.PEEK with quantity 0 tells how many decisions a key holds:
// reset_after = n seconds, remaining = limit - n. Durability requires
// acked <= n <= sent for every key.
type throttleLoad struct {
	workers   []*loadWorker
	conns     []*respConn
	period    int64 // seconds per decision: 1 with a frozen clock (startThrottleLoad)
	acks      atomic.Int64
	threshold int64
	reached   chan struct{}
	once      sync.Once
	wg        sync.WaitGroup
}

// Parameters of the load: 1 per second, a burst no test reaches.
const (
	loadBurst = 1_000_000
	loadLimit = loadBurst + 1
)

// loadBurstFor is the burst used with period seconds per decision: 1,000,000
// at one second, less at longer periods, where burst × period must stay
// within CL.THROTTLE's range (int64 nanoseconds): 50,000 at a day.
func loadBurstFor(period int64) int64 {
	if period == 1 {
		return loadBurst
	}
	return 50_000
}

// loadWorker is one connection's share of the load. Its fields belong to its
// goroutine until throttleLoad.wait returns.
type loadWorker struct {
	keys   []string
	sent   []int64 // per key: decisions written to the socket
	acked  []int64 // per key: allowed replies received
	errs   []string
	bad    []string // replies that are neither allowed decisions nor errors
	torn   error    // a reply cut off in the middle
	endErr error    // the I/O error that ended the worker
	rounds int
}

// startThrottleLoad connects nWorkers clients to addr, each owning
// keysPerWorker keys, and starts sending pipelines of depth commands to
// random keys of its own. reached is closed once threshold decisions were
// acknowledged in total.
func startThrottleLoad(t testing.TB, addr, prefix string, nWorkers, keysPerWorker, depth int, threshold int64, seed uint64) *throttleLoad {
	t.Helper()
	return startThrottleLoadOn(t, []string{addr}, 1, prefix, nWorkers, keysPerWorker, depth, threshold, seed)
}

// startThrottleLoadOn is startThrottleLoad with its workers spread over
// addrs (round robin) and period seconds per decision. A period of a day
// (86400) makes the load usable with the real clock, as on a cluster whose
// nodes restart with their own clocks: nothing refills within a test, and
// verifyHeld counts a key's decisions in days.
func startThrottleLoadOn(t testing.TB, addrs []string, period int64, prefix string, nWorkers, keysPerWorker, depth int, threshold int64, seed uint64) *throttleLoad {
	t.Helper()
	l := &throttleLoad{threshold: threshold, reached: make(chan struct{}), period: period}
	for w := 0; w < nWorkers; w++ {
		c, err := dialRESP(addrs[w%len(addrs)])
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.close)
		l.conns = append(l.conns, c)
		lw := &loadWorker{sent: make([]int64, keysPerWorker), acked: make([]int64, keysPerWorker)}
		for k := 0; k < keysPerWorker; k++ {
			lw.keys = append(lw.keys, fmt.Sprintf("%s:%d:%d", prefix, w, k))
		}
		l.workers = append(l.workers, lw)
		l.wg.Add(1)
		go l.run(lw, c, depth, rand.New(rand.NewPCG(seed, uint64(w))))
	}
	return l
}

func (l *throttleLoad) run(w *loadWorker, c *respConn, depth int, rng *rand.Rand) {
	defer l.wg.Done()
	limit := loadBurstFor(l.period) + 1
	burst, period := strconv.FormatInt(limit-1, 10), strconv.FormatInt(l.period, 10)
	batch := make([]int, depth)
	for {
		w.rounds++
		for i := range batch {
			k := rng.IntN(len(w.keys))
			batch[i] = k
			w.sent[k]++ // counted before it can reach the server
			c.send("CL.THROTTLE", w.keys[k], burst, "1", period)
		}
		if err := c.flush(); err != nil {
			w.endErr = err
			return
		}
		for _, k := range batch {
			r, err := c.read()
			if err != nil {
				if errors.Is(err, errTornReply) {
					w.torn = err
				}
				w.endErr = err
				return
			}
			switch v, ok := r.ints(); {
			case ok && len(v) == 5 && v[0] == 0 && v[1] == limit:
				w.acked[k]++
				if l.acks.Add(1) == l.threshold {
					l.once.Do(func() { close(l.reached) })
				}
			case r.isErr():
				w.errs = append(w.errs, r.str)
			default:
				w.bad = append(w.bad, fmt.Sprintf("%s: %v", w.keys[k], r))
			}
		}
	}
}

// waitAcks waits until threshold decisions were acknowledged.
func (l *throttleLoad) waitAcks(t testing.TB, timeout time.Duration) {
	t.Helper()
	select {
	case <-l.reached:
	case <-time.After(timeout):
		t.Fatalf("load: only %d of %d decisions acknowledged after %v", l.acks.Load(), l.threshold, timeout)
	}
}

// waitAckCount waits until n decisions were acknowledged in all.
func (l *throttleLoad) waitAckCount(t testing.TB, n int64, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for l.acks.Load() < n {
		if time.Now().After(deadline) {
			t.Fatalf("load: only %d of %d decisions acknowledged after %v", l.acks.Load(), n, timeout)
		}
		<-time.After(pollEvery)
	}
}

// stop closes the workers' connections, which ends them (a pipeline in
// flight gets no answer: its decisions count as sent, not acknowledged).
func (l *throttleLoad) stop() {
	for _, c := range l.conns {
		c.close()
	}
}

// wait waits for every worker to end (their connections broke).
func (l *throttleLoad) wait(t testing.TB, timeout time.Duration) {
	t.Helper()
	done := make(chan struct{})
	go func() { l.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(timeout):
		t.Fatalf("load: workers still running %v after the node went down", timeout)
	}
}

// totals sums sent and acknowledged decisions.
func (l *throttleLoad) totals() (sent, acked int64) {
	for _, w := range l.workers {
		for k := range w.keys {
			sent += w.sent[k]
			acked += w.acked[k]
		}
	}
	return sent, acked
}

// checkReplies fails the test on torn or unexpected replies; error replies
// must start with one of allowedErrPrefixes.
func (l *throttleLoad) checkReplies(t testing.TB, allowedErrPrefixes ...string) {
	t.Helper()
	for i, w := range l.workers {
		if w.torn != nil {
			t.Errorf("worker %d: %v", i, w.torn)
		}
		for _, b := range w.bad {
			t.Errorf("worker %d: unexpected reply %s", i, b)
		}
		for _, e := range w.errs {
			ok := false
			for _, p := range allowedErrPrefixes {
				ok = ok || strings.HasPrefix(e, p)
			}
			if !ok {
				t.Errorf("worker %d: unexpected error reply -%s", i, e)
			}
		}
	}
}

// verifyState reads every key with CL.PEEK quantity 0 at the frozen instant
// the load ran at and checks acked <= n <= sent. It returns how many sent but
// unacknowledged decisions turned out applied.
func (l *throttleLoad) verifyState(t testing.TB, c *respConn) (appliedUnacked int64) {
	t.Helper()
	for wi, w := range l.workers {
		appliedUnacked += verifyHeld(t, c, fmt.Sprintf("worker %d", wi), l.period, w.keys, w.sent, w.acked)
	}
	return appliedUnacked
}

// verifyHeld reads each key with CL.PEEK quantity 0 and checks that it
// holds n decisions with acked[k] <= n <= sent[k]; it returns how many sent
// but unacknowledged decisions turned out applied. With period 1 (a frozen
// clock) reset_after is n seconds exactly and remaining is limit - n; with
// a longer period and the real clock, reset_after is n periods less the
// seconds since the key's first decision, so n is reset_after / period
// rounded up (the test must take less than a period).
func verifyHeld(t testing.TB, c *respConn, who string, period int64, keys []string, sent, acked []int64) (appliedUnacked int64) {
	t.Helper()
	limit := loadBurstFor(period) + 1
	burst := strconv.FormatInt(limit-1, 10)
	for _, key := range keys {
		c.send("CL.PEEK", key, burst, "1", strconv.FormatInt(period, 10), "0")
	}
	rs := readN(t, c, len(keys))
	for k, r := range rs {
		v, ok := r.ints()
		if !ok || len(v) != 5 || v[0] != 0 || v[1] != limit || v[3] != -1 {
			t.Errorf("%s key %s: CL.PEEK: got %v", who, keys[k], r)
			continue
		}
		n := (v[4] + period - 1) / period // reset_after: one period per decision
		if period == 1 && v[2] != limit-n {
			t.Errorf("key %s: CL.PEEK %v: remaining %d and reset %d s disagree", keys[k], r, v[2], n)
		}
		switch {
		case n < acked[k]:
			t.Errorf("key %s: holds %d decisions, but %d were acknowledged (lost %d acknowledged decisions)",
				keys[k], n, acked[k], acked[k]-n)
		case n > sent[k]:
			t.Errorf("key %s: holds %d decisions, but only %d were sent", keys[k], n, sent[k])
		}
		appliedUnacked += n - acked[k]
	}
	return appliedUnacked
}

// loadTally adds up the decisions of several throttleLoads run one after
// another on the same keys (same prefix, workers and keys per worker), as
// a crash loop does, so that verifyHeld can check the keys' totals.
type loadTally struct {
	keys        []string
	sent, acked []int64
	index       map[string]int
}

func (tl *loadTally) add(l *throttleLoad) {
	if tl.index == nil {
		tl.index = map[string]int{}
	}
	for _, w := range l.workers {
		for k, key := range w.keys {
			i, ok := tl.index[key]
			if !ok {
				i = len(tl.keys)
				tl.index[key] = i
				tl.keys = append(tl.keys, key)
				tl.sent, tl.acked = append(tl.sent, 0), append(tl.acked, 0)
			}
			tl.sent[i] += w.sent[k]
			tl.acked[i] += w.acked[k]
		}
	}
}

func (tl *loadTally) totals() (sent, acked int64) {
	for i := range tl.keys {
		sent, acked = sent+tl.sent[i], acked+tl.acked[i]
	}
	return sent, acked
}
