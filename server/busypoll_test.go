//go:build linux

package server

import (
	"net"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// polledPair is one accepted loopback socket watched by b under id, and
// the client end that writes to it.
type polledPair struct {
	client net.Conn
	server net.Conn
	rc     syscall.RawConn
}

func newPolledPair(t *testing.T, b *busyPoll, id int64) polledPair {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cl, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	sv, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close(); sv.Close() })
	rc, err := sv.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	if !b.watch(rc, id) {
		t.Fatalf("watch of socket %d failed", id)
	}
	return polledPair{client: cl, server: sv, rc: rc}
}

func newTestBusyPoll(t *testing.T, budget time.Duration, quiet *atomic.Bool) *busyPoll {
	t.Helper()
	b, err := newBusyPoll(budget, quiet.Load, new(atomic.Bool))
	if err != nil || b == nil {
		t.Fatalf("newBusyPoll: %v, %v", b, err)
	}
	t.Cleanup(b.close)
	return b
}

func quietSwitch(on bool) *atomic.Bool {
	q := new(atomic.Bool)
	q.Store(on)
	return q
}

// A spin ends at once when the connection's own input is there, and
// when another client's is (that client's goroutine must be woken by Go's
// poller, which needs this one to park); ids above 32 bits are told apart.
func TestBusyPoll_EndsOnInput(t *testing.T) {
	b := newTestBusyPoll(t, time.Minute, quietSwitch(true))
	own := newPolledPair(t, b, 1<<40|7)
	other := newPolledPair(t, b, 7)

	if _, err := own.client.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if !b.await(1<<40 | 7) {
		t.Fatal("await with the connection's own input pending: false")
	}
	// Read it: the socket is quiet again.
	if _, err := own.server.Read(make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	if _, err := other.client.Write([]byte("y")); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if b.await(1<<40 | 7) {
		t.Fatal("await returned true for another connection's input")
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("await spun %v with another client's input pending; want it to stop at once", took)
	}
	if got := b.spins.Load(); got != 2 {
		t.Fatalf("spins %d, want 2", got)
	}
	if got := b.hits.Load(); got != 1 {
		t.Fatalf("hits %d, want 1", got)
	}
}

// It does not spin while the node has work, while another connection is
// mid-request or spinning, and stops after its budget with no input.
func TestBusyPoll_OnlyWhenIdle(t *testing.T) {
	quiet := quietSwitch(false)
	b := newTestBusyPoll(t, time.Millisecond, quiet)
	newPolledPair(t, b, 1)

	if b.await(1) || b.spins.Load() != 0 {
		t.Fatal("spun while the node was not quiet")
	}
	quiet.Store(true)
	b.active.Add(1)
	if b.await(1) || b.spins.Load() != 0 {
		t.Fatal("spun while another connection was between a request and its reply")
	}
	b.active.Add(-1)
	b.spinner.Store(true)
	if b.await(1) || b.spins.Load() != 0 {
		t.Fatal("spun while another connection was spinning")
	}
	b.spinner.Store(false)
	if b.await(1) {
		t.Fatal("await with no input: true")
	}
	if b.spins.Load() != 1 || b.hits.Load() != 0 || b.spinner.Load() {
		t.Fatalf("after a spin that ran out: spins %d hits %d spinner %v; want 1, 0, false", b.spins.Load(), b.hits.Load(), b.spinner.Load())
	}
}

// A socket closed by another goroutine (CLIENT KILL) leaves the poll with
// it; its connection's later unwatch must not remove the socket that
// reuses the descriptor number.
func TestBusyPoll_UnwatchAfterCloseSparesTheNextSocket(t *testing.T) {
	b := newTestBusyPoll(t, 20*time.Millisecond, quietSwitch(true))
	old := newPolledPair(t, b, 1)
	var oldFd uintptr
	if err := old.rc.Control(func(fd uintptr) { oldFd = fd }); err != nil {
		t.Fatal(err)
	}
	old.server.Close()
	old.client.Close()

	next := newPolledPair(t, b, 2)
	var nextFd uintptr
	if err := next.rc.Control(func(fd uintptr) { nextFd = fd }); err != nil {
		t.Fatal(err)
	}
	b.unwatch(old.rc)
	if _, err := next.client.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if !b.await(2) {
		t.Fatalf("the socket after a closed one (fd %d, the closed one's %d) left the poll", nextFd, oldFd)
	}
	b.unwatch(next.rc)
	if b.await(2) {
		t.Fatal("an unwatched socket's input ended a spin")
	}
}

// Through a server: a client that sends one request at a time is awaited
// by spinning while the backend is quiet, gets every answer, and INFO
// counts the spins; with no budget nothing spins.
func TestBusyPoll_Server(t *testing.T) {
	n := startTestNode(t)
	_, addr := n.serveConfig(Config{BusyPoll: time.Second, Quiet: func() bool { return true }})
	c := dialAddr(t, addr)
	for i := range 20 {
		if got := c.do("PING"); got != "+PONG" {
			t.Fatalf("PING %d = %q", i, got)
		}
	}
	info := c.do("INFO", "stats")
	for _, want := range []string{"busy_poll_usec:1000000", "busy_poll_active:1\r", "busy_polls:", "busy_poll_hits:", "busy_poll_pauses:0\r"} {
		if !strings.Contains(info, want) {
			t.Fatalf("INFO stats lacks %q:\n%s", want, info)
		}
	}
	if strings.Contains(info, "busy_polls:0\r") || strings.Contains(info, "busy_poll_hits:0\r") {
		t.Fatalf("a one-at-a-time client was never awaited by spinning:\n%s", info)
	}

	_, addr = n.serveConfig(Config{})
	c = dialAddr(t, addr)
	c.do("PING")
	if info := c.do("INFO", "stats"); !strings.Contains(info, "busy_poll_usec:0\r") || !strings.Contains(info, "busy_polls:0\r") ||
		!strings.Contains(info, "busy_poll_active:0\r") {
		t.Fatalf("without a budget:\n%s", info)
	}
}

// The judge: a window of spins that ran out of budget pauses spinning for
// pauseMin awaits (which park at once and are not spins), the next such
// window for twice as many, and a window in which the input came within
// the budget ends the doubling: the pause after it is pauseMin again.
func TestBusyPoll_JudgePausesSpinsThatDoNotPay(t *testing.T) {
	b := newTestBusyPoll(t, time.Microsecond, quietSwitch(true))
	p := newPolledPair(t, b, 1)
	misses := func() {
		t.Helper()
		for i := range judgeWindow {
			if b.paused.Load() {
				t.Fatalf("paused after %d of a window's misses", i)
			}
			if b.await(1) {
				t.Fatal("await without input: true")
			}
		}
	}
	hits := func() {
		t.Helper()
		buf := make([]byte, 1)
		for range judgeWindow {
			if _, err := p.client.Write([]byte("x")); err != nil {
				t.Fatal(err)
			}
			if !b.await(1) {
				t.Fatal("await with input pending: false")
			}
			if _, err := p.server.Read(buf); err != nil {
				t.Fatal(err)
			}
		}
	}
	// parks counts the awaits of a pause: each parks at once, spins none.
	parks := func() int {
		t.Helper()
		spins, n := b.spins.Load(), 0
		for b.paused.Load() {
			if b.await(1) {
				t.Fatal("a paused await: true")
			}
			n++
		}
		if b.spins.Load() != spins {
			t.Fatalf("%d spins during a pause", b.spins.Load()-spins)
		}
		return n
	}

	misses()
	if !b.paused.Load() || b.pauses.Load() != 1 {
		t.Fatalf("after a window of misses: paused %v, pauses %d", b.paused.Load(), b.pauses.Load())
	}
	if n := parks(); n != pauseMin {
		t.Fatalf("first pause: %d awaits, want %d", n, pauseMin)
	}
	misses()
	if n := parks(); n != 2*pauseMin {
		t.Fatalf("second pause in a row: %d awaits, want %d", n, 2*pauseMin)
	}
	hits()
	if b.paused.Load() || b.pauses.Load() != 2 {
		t.Fatalf("after a paying window: paused %v, pauses %d", b.paused.Load(), b.pauses.Load())
	}
	misses()
	if n := parks(); n != pauseMin {
		t.Fatalf("pause after a paying window: %d awaits, want %d", n, pauseMin)
	}
	// Half the window is enough to pay.
	buf := make([]byte, 1)
	for i := range judgeWindow {
		if i%2 == 0 {
			p.client.Write([]byte("x"))
			if !b.await(1) {
				t.Fatal("await with input pending: false")
			}
			p.server.Read(buf)
		} else if b.await(1) {
			t.Fatal("await without input: true")
		}
	}
	if b.paused.Load() {
		t.Fatal("a window with half of its spins finding the input paused spinning")
	}
}
