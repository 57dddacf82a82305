package systemtest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"testing"
	"time"
)

// Shape of the linearizability history: small limiters (5 units) on keys
// that rotate every linSlot, so each key sees both allowed and limited
// answers from a few clients, and each porcupine partition stays small.
const (
	linBurst       = 4
	linSlot        = 250 * time.Millisecond
	linKeysPerSlot = 3
	linReadTimeout = 2 * time.Second
	linCheckLimit  = 60 * time.Second
)

// TestClusterLinearizable records ~9 s of limiter calls, their PEEKs and
// DEL (the keys of each 250 ms slot are of one family: CL, TB greedy, TB
// INTERVAL, SL in turn) from six clients, two on each node's client port,
// while the leader is killed with SIGKILL (and restarted) and then the next
// leader is partitioned from the others and healed; porcupine must find one
// order of all operations that explains every reply
// (linearizability_test.go has the model). Errors, timeouts and broken
// connections are unknown outcomes (LOADING from the restarted node too,
// conservatively). Afterwards the three nodes hold the same state.
func TestClusterLinearizable(t *testing.T) {
	c := startCluster(t, 3)
	first := c.waitLeader()
	h := newHistoryRecorder()
	start := time.Now()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var stopOnce sync.Once
	stopClients := func() { stopOnce.Do(func() { close(stop) }); wg.Wait() }
	t.Cleanup(stopClients) // also when the test ends early
	var errs errorCounts
	for w := 0; w < 6; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			linClient(h, c.nodes[w%3].addr(), w, start, stop, &errs)
		}(w)
	}
	sleepUntil := func(d time.Duration) { time.Sleep(time.Until(start.Add(d))) }
	since := func() time.Duration { return time.Since(start).Round(time.Millisecond) }

	sleepUntil(1500 * time.Millisecond)
	c.kill(first)
	t.Logf("+%v: killed the leader %s", since(), c.nodes[first].id)
	sleepUntil(3 * time.Second)
	restarted := make(chan error, 1)
	go func() { restarted <- c.nodes[first].start() }() // ready when serving
	sleepUntil(4500 * time.Millisecond)
	if err := <-restarted; err != nil {
		t.Fatal(err)
	}
	t.Logf("+%v: restarted %s", since(), c.nodes[first].id)
	cut := c.waitLeader()
	c.net.partition(c.nodes[cut].id)
	t.Logf("+%v: partitioned the leader %s from the others", since(), c.nodes[cut].id)
	sleepUntil(7 * time.Second) // longer than linReadTimeout: the cut-off side's clients time out
	c.net.heal()
	t.Logf("+%v: healed", since())
	sleepUntil(9 * time.Second)
	stopClients()

	total, unknown := h.counts()
	t.Logf("history: %d operations in %v, %d with unknown outcome; error replies: %s", total, since(), unknown, errs.String())
	if total < 1000 {
		t.Errorf("only %d operations recorded: the history is too thin to mean much", total)
	}
	checkStarted := time.Now()
	checkLinearizable(t, h, linCheckLimit)
	t.Logf("porcupine took %v", time.Since(checkStarted).Round(time.Millisecond))

	c.waitFormed(3)
	c.compareReplicas("after the history")
}

// linClient sends random operations to addr until stop closes, recording
// each. It redials after any I/O error (a new client ID each time, as
// porcupine expects one operation at a time per client); failed dials
// record nothing, as nothing was sent.
func linClient(h *historyRecorder, addr string, worker int, start time.Time, stop <-chan struct{}, errs *errorCounts) {
	rng := rand.New(rand.NewPCG(4, uint64(worker)))
	var c *respConn
	conns := 0
	defer func() {
		if c != nil {
			c.close()
		}
	}()
	for {
		select {
		case <-stop:
			return
		default:
		}
		if c == nil {
			nc, err := net.DialTimeout("tcp", addr, 500*time.Millisecond)
			if err != nil {
				select {
				case <-stop:
					return
				case <-time.After(50 * time.Millisecond):
				}
				continue
			}
			c = newRESPConn(nc)
			conns++
		}
		slot := int(time.Since(start) / linSlot)
		// The slot's keys are of one limiter family, the families in turn.
		fam := limiterFamilies[slot%len(limiterFamilies)].tag
		op := limiterOp{Key: fmt.Sprintf("lin:%s:%d:%d", fam, slot, rng.IntN(linKeysPerSlot)), Burst: linBurst, Family: fam}
		switch p := rng.IntN(100); {
		case p < 65:
			op.Kind = "throttle"
		case p < 95:
			op.Kind = "peek"
		default:
			op.Kind = "del"
		}
		var ioErr bool
		_, err := h.record(worker*1000+conns, op, func() (limiterOut, error) {
			r, err := c.doWithin(linReadTimeout, op.args()...)
			if err != nil {
				ioErr = true
				return limiterOut{Unknown: true}, err
			}
			if r.isErr() {
				errs.add(r.str)
			}
			return parseLimiterReply(op, r)
		})
		if ioErr {
			errs.add("(i/o) " + ioErrKind(err))
			c.close()
			c = nil
		} else if err != nil {
			time.Sleep(10 * time.Millisecond) // an error reply: no busy loop
		}
	}
}

// ioErrKind names an I/O error coarsely for the error counts.
func ioErrKind(err error) string {
	var ne net.Error
	switch {
	case err == nil:
		return "none"
	case errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	default:
		return "connection broken"
	}
}
