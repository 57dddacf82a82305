package forward

import (
	"bufio"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/redcell/redcell/mux"
	"github.com/redcell/redcell/request"
)

func TestJudge(t *testing.T) {
	const quiet, reach = 200 * time.Millisecond, 750 * time.Millisecond
	ms := func(n int64) int64 { return n * int64(time.Millisecond) }
	for _, c := range []struct {
		name               string
		now, heard, pinged int64
		want               liveness
	}{
		{"heard lately: look again once quiet", ms(1000), ms(900), 0, liveness{next: ms(1100)}},
		{"quiet, no ping: ping", ms(1000), ms(700), 0, liveness{ping: true, next: ms(1750)}},
		{"quiet, last ping answered: ping again", ms(5000), ms(3000), ms(2990), liveness{ping: true, next: ms(5750)}},
		{"ping outstanding: look again a quiet time later", ms(1000), ms(100), ms(500), liveness{next: ms(1200)}},
		{"ping outstanding: look again at its reach", ms(1100), ms(100), ms(500), liveness{next: ms(1250)}},
		{"ping outstanding for reach: dead", ms(1250), ms(100), ms(500), liveness{dead: true}},
		{"answered just before reach: alive", ms(1250), ms(1240), ms(500), liveness{next: ms(1440)}},
	} {
		if got := judge(c.now, c.heard, c.pinged, quiet, reach); got != c.want {
			t.Errorf("%s: judge = %+v, want %+v", c.name, got, c.want)
		}
	}
}

// silentListener accepts connections, reads whatever they send and never
// writes a byte: a destination whose port takes data in and sends nothing
// back (a one-way partition seen from the dialer).
func silentListener(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			go io.Copy(io.Discard, c)
		}
	}()
	return ln.Addr().String()
}

func followerMux(t *testing.T) *mux.Mux {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m, err := mux.New(ln, mux.Config{Secret: secret, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// A destination that accepts the TCP connection but never completes the
// handshake: every caller waiting for the connection fails together within
// one reach timeout, not sent, and the destination is marked unreachable.
func TestHandshakeThatNeverCompletesIsUnreachable(t *testing.T) {
	const reach = 300 * time.Millisecond
	addr := silentListener(t)
	m := followerMux(t)
	c := NewClient(func(addr string, timeout time.Duration) (net.Conn, error) {
		return m.Dial(addr, mux.HeaderForward, timeout)
	})
	c.SetReachTimeout(reach)
	t.Cleanup(c.Close)

	start := time.Now()
	const callers = 20
	errs := make(chan error, callers)
	for range callers {
		go func() {
			errs <- c.Propose(addr, 0, []request.Request{incr("k", 1)}, make([]request.Result, 1), 10*time.Second, nil)
		}()
	}
	for range callers {
		err := <-errs
		if !errors.Is(err, ErrNotSent) || !errors.Is(err, ErrUnreachable) || !errors.Is(err, mux.ErrUnreachable) {
			t.Fatalf("call to a destination that never completes the handshake: %v, want ErrNotSent, ErrUnreachable and mux.ErrUnreachable", err)
		}
	}
	if took := time.Since(start); took > 2*reach {
		t.Errorf("%d callers failed after %v; one dial's reach timeout is %v", callers, took, reach)
	}
	if c.DownSince(addr).IsZero() {
		t.Error("the destination is not marked unreachable")
	}
	if d, ok := c.Unreachable()[addr]; !ok || d < 0 {
		t.Errorf("Unreachable() = %v, want %s listed", c.Unreachable(), addr)
	}
}

// A connection on which nothing comes back: the call, sent, fails as lost
// (its outcome unknown) within the quiet time plus the reach timeout of
// being sent, not at its own timeout, and every later call dials again.
func TestSilentConnectionIsGivenUp(t *testing.T) {
	const reach = 300 * time.Millisecond
	addr := silentListener(t)
	dials := 0
	var mu sync.Mutex
	c := NewClient(func(addr string, timeout time.Duration) (net.Conn, error) {
		mu.Lock()
		dials++
		mu.Unlock()
		return net.DialTimeout("tcp", addr, timeout) // "handshake" done: a plain connection
	})
	c.SetReachTimeout(reach)
	t.Cleanup(c.Close)

	// Fresh connection: heard at the dial, so the ping comes after the
	// quiet time; then the reach timeout.
	for i := range 2 {
		start := time.Now()
		err := c.Propose(addr, 0, []request.Request{incr("k", 1)}, make([]request.Result, 1), 10*time.Second, nil)
		took := time.Since(start)
		if !errors.Is(err, ErrLost) || !errors.Is(err, ErrUnreachable) {
			t.Fatalf("call %d on a silent connection: %v, want ErrLost wrapping ErrUnreachable", i, err)
		}
		if took > pingAfterQuiet+reach+200*time.Millisecond {
			t.Errorf("call %d on a silent connection failed after %v, want about %v", i, took, pingAfterQuiet+reach)
		}
		if c.DownSince(addr).IsZero() {
			t.Errorf("call %d: the destination is not marked unreachable", i)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if dials != 2 {
		t.Errorf("%d dials for two calls, want one each (the first connection was given up)", dials)
	}
}

// A leader that takes several reach timeouts to decide, but whose server
// reads and answers pings meanwhile, is waited for: the call succeeds and
// the destination is never marked unreachable.
func TestSlowLeaderIsWaitedFor(t *testing.T) {
	const reach = 150 * time.Millisecond
	h := &counterHandler{counts: map[string]int64{}, block: make(chan struct{}), entered: make(chan struct{}, 1)}
	c, addr, _ := setup(t, h)
	c.SetReachTimeout(reach)
	if err := c.Probe(addr, 0); err != nil { // a connection, quiet from here on
		t.Fatal(err)
	}
	time.Sleep(2 * pingAfterQuiet) // let the connection go quiet, so the call is pinged at once
	go func() {
		<-h.entered
		time.Sleep(5 * reach)
		close(h.block)
	}()
	res := make([]request.Result, 1)
	start := time.Now()
	if err := c.Propose(addr, 0, []request.Request{incr("k", 3)}, res, 10*time.Second, nil); err != nil {
		t.Fatalf("call to a slow leader: %v", err)
	}
	if took := time.Since(start); took < 5*reach {
		t.Fatalf("the call took %v, less than the leader's %v", took, 5*reach)
	}
	if res[0].Kind != request.KindInt || res[0].Ints[0] != 3 {
		t.Fatalf("result %+v, want 3", res[0])
	}
	if !c.DownSince(addr).IsZero() {
		t.Error("a slow leader was marked unreachable")
	}
}

// Probe: nil for a live server, ErrUnreachable for a silent one; a build
// before pings (it answers a ping as an unknown call) counts as there.
func TestProbe(t *testing.T) {
	const reach = 200 * time.Millisecond
	h := &counterHandler{counts: map[string]int64{}}
	c, addr, _ := setup(t, h)
	c.SetReachTimeout(reach)
	if err := c.Probe(addr, 0); err != nil {
		t.Fatalf("probe of a live server: %v", err)
	}
	if err := c.Probe(addr, 0); err != nil { // on the connection just made
		t.Fatalf("second probe of a live server: %v", err)
	}

	silent := silentListener(t)
	plain := NewClient(func(addr string, timeout time.Duration) (net.Conn, error) {
		return net.DialTimeout("tcp", addr, timeout)
	})
	plain.SetReachTimeout(reach)
	t.Cleanup(plain.Close)
	start := time.Now()
	if err := plain.Probe(silent, 0); !errors.Is(err, ErrUnreachable) {
		t.Fatalf("probe of a silent destination: %v, want ErrUnreachable", err)
	}
	if took := time.Since(start); took > reach+200*time.Millisecond {
		t.Errorf("probe of a silent destination took %v, want about %v", took, reach)
	}
	if plain.DownSince(silent).IsZero() {
		t.Error("a silent destination is not marked unreachable")
	}

	old := oldServer(t)
	if err := plain.Probe(old, 0); err != nil {
		t.Fatalf("probe of a build before pings: %v", err)
	}
	if !plain.DownSince(old).IsZero() {
		t.Error("a build before pings was marked unreachable")
	}
}

// oldServer answers every frame as a build before pings answers a kind it
// does not know.
func oldServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					id, _, _, _, err := readFrame(r, nil)
					if err != nil {
						return
					}
					if _, err := c.Write(sealFrame(appendError(make([]byte, headroom), request.Refused("unknown call kind")), id)); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// An administration call's dial has the call's whole timeout, not the
// reach timeout: a joining node reads a peer's refusal from how its
// handshake ends, which may come later than that.
func TestAdminDialHasItsTimeout(t *testing.T) {
	const reach = 100 * time.Millisecond
	addr := silentListener(t)
	m := followerMux(t)
	var bound time.Duration
	c := NewClient(func(addr string, timeout time.Duration) (net.Conn, error) {
		bound = timeout
		return m.Dial(addr, mux.HeaderForward, timeout)
	})
	c.SetReachTimeout(reach)
	t.Cleanup(c.Close)
	start := time.Now()
	_, err := c.Admin(addr, 0, "join", []string{"n9", "h:1"}, 4*reach)
	if !errors.Is(err, ErrNotSent) || !errors.Is(err, ErrUnreachable) {
		t.Fatalf("admin call to a destination that never completes the handshake: %v", err)
	}
	if bound != 4*reach || time.Since(start) < 4*reach {
		t.Fatalf("the admin call's dial was bounded by %v and failed after %v; want its timeout, %v", bound, time.Since(start), 4*reach)
	}
}
