package group

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// fakePeer is a DialPeer that refuses until up is set, then hands out one
// end of a pipe; it counts the attempts.
type fakePeer struct {
	up       atomic.Bool
	other    error // returned instead of a connection when set
	attempts atomic.Int64
	mu       sync.Mutex
	conns    []net.Conn
}

var errRefused = fmt.Errorf("mux: peer x: unreachable: cannot connect: %w", syscall.ECONNREFUSED)

func (f *fakePeer) dial(string, time.Duration) (net.Conn, error) {
	f.attempts.Add(1)
	if !f.up.Load() {
		return nil, errRefused
	}
	if f.other != nil {
		return nil, f.other
	}
	a, b := net.Pipe()
	f.mu.Lock()
	f.conns = append(f.conns, a, b)
	f.mu.Unlock()
	return a, nil
}

func (f *fakePeer) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.conns {
		c.Close()
	}
}

// waitUntil polls cond every millisecond for up to 5 s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		<-time.After(time.Millisecond)
	}
}

// Many dials wait on one refusing peer; one poller redials it; when it
// accepts, every waiter gets a connection.
func Test_PeerRedial_WaitersShareOnePollerAndConnectWhenThePeerListens(t *testing.T) {
	var p peerRedial
	f := &fakePeer{}
	defer f.close()
	const waiters = 20
	type result struct {
		c   net.Conn
		err error
	}
	results := make(chan result, waiters)
	for i := 0; i < waiters; i++ {
		go func() {
			c, err := p.dial(f.dial, "x", 10*time.Second, nil)
			results <- result{c, err}
		}()
	}
	waitUntil(t, "every waiter to have tried once", func() bool { return f.attempts.Load() >= waiters })
	before := f.attempts.Load()
	<-time.After(20 * peerRedialEvery) // a stretch of time during which the waiters wait, counted below
	polled := f.attempts.Load() - before
	if polled > 25 {
		t.Fatalf("%d attempts in %v of waiting with %d waiters: want about one per %v (one poller)", polled, 20*peerRedialEvery, waiters, peerRedialEvery)
	}
	upAt := time.Now()
	f.up.Store(true)
	for i := 0; i < waiters; i++ {
		r := <-results
		if r.err != nil || r.c == nil {
			t.Fatalf("waiter %d: %v, want a connection", i, r.err)
		}
	}
	if took := time.Since(upAt); took > time.Second {
		t.Fatalf("waiters connected %v after the peer listened, want within a few poll intervals", took)
	}
	p.mu.Lock()
	left := len(p.down)
	p.mu.Unlock()
	if left != 0 {
		t.Fatalf("%d pollers left after the peer came back", left)
	}
}

// A dial gives up at its timeout, and at once when stop closes; an error
// other than a refusal is returned at once.
func Test_PeerRedial_TimeoutStopAndOtherErrors(t *testing.T) {
	var p peerRedial
	f := &fakePeer{}
	start := time.Now()
	if _, err := p.dial(f.dial, "x", 100*time.Millisecond, nil); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("dial to a peer that stays down: %v, want the refusal", err)
	}
	if took := time.Since(start); took < 100*time.Millisecond {
		t.Fatalf("gave up after %v, before its timeout", took)
	}

	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := p.dial(f.dial, "x", time.Minute, stop)
		done <- err
	}()
	waitUntil(t, "the dial to wait", func() bool { return f.attempts.Load() > 3 })
	close(stop)
	select {
	case err := <-done:
		if !errors.Is(err, syscall.ECONNREFUSED) {
			t.Fatalf("stopped dial: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a stopped dial still waits")
	}

	mismatch := errors.New("cluster secret mismatch")
	g := &fakePeer{other: mismatch}
	g.up.Store(true)
	start = time.Now()
	if _, err := p.dial(g.dial, "y", time.Minute, nil); !errors.Is(err, mismatch) || time.Since(start) > time.Second {
		t.Fatalf("dial meeting another error: %v after %v, want it at once", err, time.Since(start))
	}

	// With unreachable set, what it accepts is waited for as well.
	q := peerRedial{unreachable: func(err error) bool { return errors.Is(err, mismatch) }}
	h := &fakePeer{other: mismatch}
	h.up.Store(true)
	start = time.Now()
	if _, err := q.dial(h.dial, "z", 50*time.Millisecond, nil); !errors.Is(err, mismatch) || time.Since(start) < 50*time.Millisecond {
		t.Fatalf("dial meeting an error unreachable accepts: %v after %v, want it after the timeout", err, time.Since(start))
	}
}
