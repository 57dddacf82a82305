package systemtest

import (
	"fmt"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// Keys of the whole-cluster restart: 10 000 units each (one a day), more than
// the test sends, so a PEEK tells exactly how many units a key holds. Key k
// belongs to limiterFamilies[k%len(limiterFamilies)]: CL, TB greedy, TB
// INTERVAL, SL and counter (string and hash) keys go through the same restarts.
const (
	restartKeys     = 120
	restartBurst    = 9999
	restartCapacity = restartBurst + 1
)

// TestClusterRestartAll stops the whole cluster twice while clients on all
// three nodes send decisions: first with SIGKILL to every node at once, then
// (after a restart and more decisions) with SIGTERM, which must end every
// node with exit code 0 even as the last ones lose their quorum. After each
// restart on the same data dirs — no --join, no bootstrap — the three find
// each other, elect a leader, and every key (of every limiter family) holds
// at least the decisions acknowledged before the stop and at most those
// sent; the nodes agree on their state.
//
// It runs with one group and with three, the keys spread over the three
// (key k in group k mod 3): there every group elects a leader after each
// restart (SIGTERM meets the leaders of several groups stopping at once),
// and every group's state is compared.
func TestClusterRestartAll(t *testing.T) {
	forGroupCounts(t, testRestartAll)
}

func testRestartAll(t *testing.T, groups int) {
	c := startCluster(t, 3, groupFlags(groups)...)
	c.waitLeader()
	acc := newRestartAccount(groups)

	for round, how := range []string{"SIGKILL", "SIGTERM"} {
		load := acc.start(c, 2, uint64(round))
		time.Sleep(1500 * time.Millisecond)
		stopAt := time.Now()
		if how == "SIGKILL" {
			c.killAll()
		} else {
			c.stopAll()
		}
		stopTook := time.Since(stopAt)
		load.wait()
		sent, acked := acc.totals()
		t.Logf("%s to all three (took %v): %d decisions sent so far, %d acknowledged", how, stopTook.Round(time.Millisecond), sent, acked)

		restartAt := time.Now()
		var wg sync.WaitGroup
		errs := make([]error, len(c.nodes))
		for i := range c.nodes {
			wg.Add(1)
			go func(i int) { defer wg.Done(); errs[i] = c.nodes[i].start() }(i)
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		leader := c.waitFormed(3)
		t.Logf("after %s: all three restarted, %s leads group 0 after %v; leaders by group %v", how, c.nodes[leader].id, time.Since(restartAt).Round(time.Millisecond), c.leaderIDs())
		applied := acc.verify(t, c, leader)
		t.Logf("after %s: every key holds its acknowledged decisions; %d sent but unacknowledged ones were applied", how, applied)
		c.compareReplicas("after " + how)
	}
}

// restartAccount counts, per key, the decisions sent (before they reach a
// socket) and acknowledged as allowed, across rounds of load.
type restartAccount struct {
	groups      int // key k is in group k mod groups
	mu          sync.Mutex
	sent, acked [restartKeys]int64
	bad         []string
}

func newRestartAccount(groups int) *restartAccount { return &restartAccount{groups: groups} }

// key is key k's name: restart:tag:k, moved into group k mod groups when
// there are several (spreadKey).
func (a *restartAccount) key(k int) string {
	return spreadKey(fmt.Sprintf("restart:%s:%03d", restartFamily(k).tag, k), k%a.groups, a.groups)
}

func restartFamily(k int) limiterFamily { return limiterFamilies[k%len(limiterFamilies)] }

type restartLoad struct{ wg sync.WaitGroup }

func (l *restartLoad) wait() { l.wg.Wait() }

// start runs perNode clients on every node until their connections break
// (the nodes are stopped); a client whose node refuses or times out stops
// too.
func (a *restartAccount) start(c *cluster, perNode int, seed uint64) *restartLoad {
	l := &restartLoad{}
	for i := range c.nodes {
		for w := 0; w < perNode; w++ {
			l.wg.Add(1)
			go func(addr string, rng *rand.Rand) {
				defer l.wg.Done()
				nc, err := net.DialTimeout("tcp", addr, time.Second)
				if err != nil {
					a.fail(fmt.Sprintf("dialing %s: %v", addr, err))
					return
				}
				conn := newRESPConn(nc)
				defer conn.close()
				for {
					k := rng.IntN(restartKeys)
					a.mu.Lock()
					a.sent[k]++
					a.mu.Unlock()
					r, err := conn.doWithin(loadReadTimout, restartFamily(k).call(a.key(k), restartCapacity)...)
					if err != nil {
						return // the node went down
					}
					r = restartFamily(k).decode(r, restartCapacity, false)
					v, ok := r.ints()
					switch {
					case ok && len(v) == 5 && v[0] == 0 && v[1] == restartCapacity:
						a.mu.Lock()
						a.acked[k]++
						a.mu.Unlock()
					case r.isErr() && isFailoverError(r.str):
						// shutting down, or the cluster losing its quorum
					case r.isErr() && strings.HasPrefix(r.str, "LOADING "):
						// a restarted node still replaying: nothing happened
						time.Sleep(20 * time.Millisecond)
					default:
						a.fail(fmt.Sprintf("%s: %s: %v", addr, strings.Join(restartFamily(k).call(a.key(k), restartCapacity), " "), r))
						return
					}
				}
			}(c.nodes[i].addr(), rand.New(rand.NewPCG(seed, uint64(i*perNode+w))))
		}
	}
	return l
}

func (a *restartAccount) fail(s string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.bad = append(a.bad, s)
}

func (a *restartAccount) totals() (sent, acked int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for k := 0; k < restartKeys; k++ {
		sent += a.sent[k]
		acked += a.acked[k]
	}
	return sent, acked
}

// verify reads every key with its PEEK through node via and checks
// acked ≤ taken ≤ sent; it returns how many unacknowledged decisions were
// applied.
func (a *restartAccount) verify(t *testing.T, c *cluster, via int) (appliedUnacked int64) {
	t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, b := range a.bad {
		t.Error(b)
	}
	a.bad = nil
	nc, err := net.DialTimeout("tcp", c.nodes[via].addr(), probeTimeout)
	if err != nil {
		t.Fatal(err)
	}
	conn := newRESPConn(nc)
	defer conn.close()
	for k := 0; k < restartKeys; k++ {
		conn.send(restartFamily(k).peek(a.key(k), restartCapacity)...)
	}
	if err := conn.flush(); err != nil {
		t.Fatal(err)
	}
	for k := 0; k < restartKeys; k++ {
		r, err := conn.read()
		if err != nil {
			t.Fatal(err)
		}
		r = restartFamily(k).decode(r, restartCapacity, true)
		v, ok := r.ints()
		if !ok || len(v) != 5 || v[0] != 0 || v[1] != restartCapacity {
			t.Errorf("PEEK %s: got %v", a.key(k), r)
			continue
		}
		taken := restartBurst - v[2]
		switch {
		case taken < a.acked[k]:
			t.Errorf("key %s holds %d decisions, but %d were acknowledged: %d acknowledged decisions lost", a.key(k), taken, a.acked[k], a.acked[k]-taken)
		case taken > a.sent[k]:
			t.Errorf("key %s holds %d decisions, but only %d were sent", a.key(k), taken, a.sent[k])
		}
		appliedUnacked += taken - a.acked[k]
		// Later rounds count on from what is really there.
		a.acked[k], a.sent[k] = taken, taken
	}
	return appliedUnacked
}
