package main

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The failover mode's clients: each makes one CL.THROTTLE decision at a time,
// as an application's rate-limit check does, and records when every
// successful one arrived, so that the longest stretch without one can be
// read afterwards for any window.
//
// What a client does when a decision fails:
//
//   - -CLUSTERDOWN or -TRYAGAIN (no leader yet, leader not ready, outcome
//     unknown), or -LOADING (a restarted node still replaying its log): it
//     asks again on the same connection after failoverErrorPause.
//   - a broken connection or a refused dial (its node was killed): it moves
//     to the next node in the list and asks there, as a client configured
//     with every node's address does; it does not wait for its node to come
//     back. Once the killed node has rejoined, the mode sends every client
//     back to its home node (failoverLoad.goHome), so that each kill meets
//     clients on all three nodes.
//
// Any other reply is counted as unexpected and reported.

// failoverErrorPause is how long a client waits after an error reply before
// it asks again: no busy loop against a node that refuses at once, and
// little added to the gap it measures.
const failoverErrorPause = 5 * time.Millisecond

// failoverRequestTimeout bounds one request: longer than the server's
// --write-timeout (5 s), so a request is answered before it times out.
const failoverRequestTimeout = 10 * time.Second

// failoverLoad is the running clients.
//
// Goroutines: one per client (started by startFailoverLoad, stopped by
// halt); the mode's goroutine calls goHome, successes and halt.
type failoverLoad struct {
	addrs   []string // node addresses by index (a restarted node keeps its port)
	epoch   atomic.Int64
	stop    chan struct{}
	wg      sync.WaitGroup
	clients []*failoverClient
}

// failoverClient is one client's record.
type failoverClient struct {
	home int // node index it starts on and returns to

	mu         sync.Mutex
	ok         []time.Time // arrival of every successful decision, in order
	errReplies map[string]int
	ioErrs     int // broken connections and timeouts
	dialErrs   int
	moves      int // times it moved to another node
	unexpected []string
}

// startFailoverLoad starts perNode clients on each node in addrs.
func startFailoverLoad(addrs []string, perNode int) *failoverLoad {
	l := &failoverLoad{addrs: addrs, stop: make(chan struct{})}
	for home := range addrs {
		for range perNode {
			c := &failoverClient{home: home, errReplies: make(map[string]int)}
			l.clients = append(l.clients, c)
			l.wg.Add(1)
			go l.run(len(l.clients)-1, c)
		}
	}
	return l
}

// goHome sends every client back to its home node before its next request.
func (l *failoverLoad) goHome() { l.epoch.Add(1) }

// halt stops the clients and waits for them.
func (l *failoverLoad) halt() {
	select {
	case <-l.stop:
	default:
		close(l.stop)
	}
	l.wg.Wait()
}

func (l *failoverLoad) stopped() bool {
	select {
	case <-l.stop:
		return true
	default:
		return false
	}
}

func (l *failoverLoad) pause(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-l.stop:
	case <-t.C:
	}
}

// run is client id's loop.
func (l *failoverLoad) run(id int, c *failoverClient) {
	defer l.wg.Done()
	var conn *respConn
	defer func() {
		if conn != nil {
			conn.Close()
		}
	}()
	cur, epoch := c.home, l.epoch.Load()
	key := "bench:failover:" + strconv.Itoa(id)
	for !l.stopped() {
		if e := l.epoch.Load(); e != epoch {
			epoch = e
			if cur != c.home {
				if conn != nil {
					conn.Close()
					conn = nil
				}
				cur = c.home
			}
		}
		if conn == nil {
			ctx, cancel := context.WithTimeout(context.Background(), 250*time.Millisecond)
			nc, err := dialRESP(ctx, l.addrs[cur])
			cancel()
			if err != nil {
				c.mu.Lock()
				c.dialErrs++
				c.moves++
				c.mu.Unlock()
				cur = (cur + 1) % len(l.addrs)
				l.pause(failoverErrorPause)
				continue
			}
			conn = nc
		}
		conn.setDeadline(time.Now().Add(failoverRequestTimeout))
		// A limit no run reaches: every decision is "allowed", and the
		// only thing measured is whether and when it came.
		v, err := conn.do("CL.THROTTLE", key, "1000000000", "1000000000", "1")
		at := time.Now()
		if err != nil {
			conn.Close()
			conn = nil
			c.mu.Lock()
			c.ioErrs++
			c.moves++
			c.mu.Unlock()
			cur = (cur + 1) % len(l.addrs)
			continue
		}
		if v.Kind == '-' {
			word, _, _ := strings.Cut(v.Str, " ")
			c.mu.Lock()
			c.errReplies[word]++
			if word != "CLUSTERDOWN" && word != "TRYAGAIN" && word != "LOADING" && len(c.unexpected) < 5 {
				c.unexpected = append(c.unexpected, "-"+v.Str)
			}
			c.mu.Unlock()
			l.pause(failoverErrorPause)
			continue
		}
		if _, err := throttleReply(v); err != nil {
			c.mu.Lock()
			if len(c.unexpected) < 5 {
				c.unexpected = append(c.unexpected, err.Error())
			}
			c.mu.Unlock()
			continue
		}
		c.mu.Lock()
		c.ok = append(c.ok, at)
		c.mu.Unlock()
	}
}

// lastOK is when the client's newest decision arrived (zero: none yet).
func (c *failoverClient) lastOK() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.ok) == 0 {
		return time.Time{}
	}
	return c.ok[len(c.ok)-1]
}

// allSucceededSince reports whether every client has had a decision after t.
func (l *failoverLoad) allSucceededSince(t time.Time) bool {
	for _, c := range l.clients {
		if !c.lastOK().After(t) {
			return false
		}
	}
	return true
}

// decisions is how many decisions all clients have had.
func (l *failoverLoad) decisions() int {
	n := 0
	for _, c := range l.clients {
		c.mu.Lock()
		n += len(c.ok)
		c.mu.Unlock()
	}
	return n
}

// gaps measures the window from a kill at killAt to end: worst is the
// longest stretch any one client went without a decision (from its last
// decision before the kill to its first after, or between any two after),
// and anyone the longest stretch in which no client at all had one.
func (l *failoverLoad) gaps(killAt, end time.Time) (worst, anyone time.Duration) {
	var all []time.Time
	for _, c := range l.clients {
		c.mu.Lock()
		// Only the part that matters: from the last decision at or
		// before the kill on.
		ts := slices.Clone(c.ok[max(firstAfter(c.ok, killAt)-1, 0):])
		c.mu.Unlock()
		worst = max(worst, longestGapAcross(ts, killAt, end))
		all = append(all, ts...)
	}
	slices.SortFunc(all, func(a, b time.Time) int { return a.Compare(b) })
	return worst, longestGapAcross(all, killAt, end)
}

// firstAfter is the index of the first instant of ts (sorted) after t, or
// len(ts).
func firstAfter(ts []time.Time, t time.Time) int {
	i, _ := slices.BinarySearchFunc(ts, t, func(a, b time.Time) int {
		if a.After(b) {
			return 1
		}
		return -1 // a <= b: keep looking to the right
	})
	return i
}

// longestGapAcross is the longest time between consecutive instants of ts
// (sorted) within the window that starts at the last instant at or before
// from (from itself when there is none) and ends at end: the gap that
// spans from is counted whole, and a trailing stretch up to end counts too.
func longestGapAcross(ts []time.Time, from, end time.Time) time.Duration {
	i := firstAfter(ts, from)
	prev := from
	if i > 0 {
		prev = ts[i-1]
	}
	var gap time.Duration
	for ; i < len(ts) && !ts[i].After(end); i++ {
		gap = max(gap, ts[i].Sub(prev))
		prev = ts[i]
	}
	return max(gap, end.Sub(prev))
}

// failoverTotals are the clients' counts over the whole run.
type failoverTotals struct {
	decisions, ioErrs, dialErrs, moves int
	errReplies                         map[string]int
	unexpected                         []string
}

func (l *failoverLoad) totals() failoverTotals {
	t := failoverTotals{errReplies: make(map[string]int)}
	for _, c := range l.clients {
		c.mu.Lock()
		t.decisions += len(c.ok)
		t.ioErrs += c.ioErrs
		t.dialErrs += c.dialErrs
		t.moves += c.moves
		for k, v := range c.errReplies {
			t.errReplies[k] += v
		}
		t.unexpected = append(t.unexpected, c.unexpected...)
		c.mu.Unlock()
	}
	return t
}
