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
//
// With three groups each slot's three keys are one in each group, the
// node killed leads group 1 and the node cut off then leads group 2 (it
// may lead more by then: the killed node's group comes back to it), on a
// shorter schedule (linSchedule).
func TestClusterLinearizable(t *testing.T) {
	forGroupCounts(t, testClusterLinearizable)
}

// linSchedule is when the history's faults happen, from its start: the
// kill, the restart, the partition, the heal, the end. The partition
// outlasts linReadTimeout, so the cut-off side's clients time out.
type linSchedule struct{ kill, restart, cut, heal, end time.Duration }

// linSchedules by group count: three groups run 6.5 s rather than 9, the
// same faults closer together (the partition still outlasts
// linReadTimeout), to keep the suite's time in check.
var linSchedules = map[int]linSchedule{
	1: {1500 * time.Millisecond, 3 * time.Second, 4500 * time.Millisecond, 7 * time.Second, 9 * time.Second},
	3: {1000 * time.Millisecond, 2 * time.Second, 3 * time.Second, 5500 * time.Millisecond, 6500 * time.Millisecond},
}

func testClusterLinearizable(t *testing.T, groups int) {
	sched := linSchedules[groups]
	c := startCluster(t, 3, groupFlags(groups)...)
	killGroup, cutGroup := 0, 0
	if groups > 1 {
		killGroup, cutGroup = 1, 2
		c.waitBalanced()
	}
	first := c.waitGroupLeader(killGroup)
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
			linClient(h, c.nodes[w%3].addr(), w, groups, start, stop, &errs)
		}(w)
	}
	sleepUntil := func(d time.Duration) { time.Sleep(time.Until(start.Add(d))) }
	since := func() time.Duration { return time.Since(start).Round(time.Millisecond) }

	sleepUntil(sched.kill)
	c.kill(first)
	t.Logf("+%v: killed %s, the leader of group %d", since(), c.nodes[first].id, killGroup)
	sleepUntil(sched.restart)
	restarted := make(chan error, 1)
	go func() { restarted <- c.nodes[first].start() }() // ready when serving
	sleepUntil(sched.cut)
	if err := <-restarted; err != nil {
		t.Fatal(err)
	}
	t.Logf("+%v: restarted %s", since(), c.nodes[first].id)
	cut := c.waitGroupLeader(cutGroup)
	c.net.partition(c.nodes[cut].id)
	t.Logf("+%v: partitioned %s, the leader of group %d (of groups %v), from the others", since(), c.nodes[cut].id, cutGroup, c.groupsLedBy(cut))
	sleepUntil(sched.heal) // longer than linReadTimeout: the cut-off side's clients time out
	c.net.heal()
	t.Logf("+%v: healed", since())
	sleepUntil(sched.end)
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
// record nothing, as nothing was sent. With several groups a slot's key j
// is in group j mod groups.
func linClient(h *historyRecorder, addr string, worker, groups int, start time.Time, stop <-chan struct{}, errs *errorCounts) {
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
		j := rng.IntN(linKeysPerSlot)
		op := limiterOp{Key: spreadKey(fmt.Sprintf("lin:%s:%d:%d", fam, slot, j), j%groups, groups), Burst: linBurst, Family: fam}
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
