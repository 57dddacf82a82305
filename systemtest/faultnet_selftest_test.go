package systemtest

import (
	"bytes"
	"crypto/rand"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/redcell/redcell/mux"
)

// The faultNet's own tests: a fake acceptor stands for the node (it answers
// the handshake with random bytes, then echoes), fake dialers present node
// IDs. Nothing here needs the redcell binary.

// fakeAcceptor listens on loopback. A peer connection (first byte ≥ 0x80)
// gets a challenge, its answer is read (and the ID kept), a fake proof is
// sent, then everything is echoed; any other connection is echoed from its
// first byte. Closed at the end of the test.
type fakeAcceptor struct {
	ln    net.Listener
	wg    sync.WaitGroup
	mu    sync.Mutex
	ids   []string
	conns map[net.Conn]struct{}
}

func startFakeAcceptor(t *testing.T) *fakeAcceptor {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := &fakeAcceptor{ln: ln, conns: map[net.Conn]struct{}{}}
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			a.mu.Lock()
			a.conns[c] = struct{}{}
			a.mu.Unlock()
			a.wg.Add(1)
			go a.serve(c)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		a.mu.Lock()
		for c := range a.conns {
			c.Close()
		}
		a.mu.Unlock()
		a.wg.Wait()
	})
	return a
}

func (a *fakeAcceptor) serve(c net.Conn) {
	defer a.wg.Done()
	defer func() {
		c.Close()
		a.mu.Lock()
		delete(a.conns, c)
		a.mu.Unlock()
	}()
	var first [1]byte
	if _, err := io.ReadFull(c, first[:]); err != nil {
		return
	}
	if first[0] < 0x80 {
		if _, err := c.Write(first[:]); err != nil {
			return
		}
	} else {
		hello := append([]byte("RCP1"), randomBytes(32)...)
		if _, err := c.Write(hello); err != nil {
			return
		}
		var nl [33]byte
		if _, err := io.ReadFull(c, nl[:]); err != nil {
			return
		}
		rest := make([]byte, int(nl[32])+32)
		if _, err := io.ReadFull(c, rest); err != nil {
			return
		}
		a.mu.Lock()
		a.ids = append(a.ids, string(rest[:nl[32]]))
		a.mu.Unlock()
		if _, err := c.Write(randomBytes(32)); err != nil {
			return
		}
	}
	_, _ = io.Copy(c, c)
}

func (a *fakeAcceptor) seenIDs() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.ids...)
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

// fakePeerDial connects to addr as node id: header 0x8E, the dialer's half
// of the handshake with a random MAC, and reads the challenge and the proof.
func fakePeerDial(t *testing.T, addr, id string) (net.Conn, error) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	defer c.SetDeadline(time.Time{})
	if _, err := c.Write([]byte{0x8E}); err != nil {
		return c, err
	}
	var hello [36]byte
	if _, err := io.ReadFull(c, hello[:]); err != nil {
		return c, err
	}
	if string(hello[:4]) != "RCP1" {
		t.Fatalf("challenge %q through the proxy", hello[:4])
	}
	msg := append(randomBytes(32), byte(len(id)))
	msg = append(msg, id...)
	msg = append(msg, randomBytes(32)...)
	if _, err := c.Write(msg); err != nil {
		return c, err
	}
	var proof [32]byte
	_, err = io.ReadFull(c, proof[:])
	return c, err
}

func mustPeerDial(t *testing.T, addr, id string) net.Conn {
	t.Helper()
	c, err := fakePeerDial(t, addr, id)
	if err != nil {
		t.Fatalf("handshake through the proxy as %s: %v", id, err)
	}
	return c
}

// echoOK sends msg and requires it back within a few seconds.
func echoOK(t *testing.T, c net.Conn, msg string) {
	t.Helper()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	defer c.SetDeadline(time.Time{})
	if _, err := c.Write([]byte(msg)); err != nil {
		t.Fatalf("write %q: %v", msg, err)
	}
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatalf("echo of %q: %v", msg, err)
	}
	if string(got) != msg {
		t.Fatalf("echo: got %q, want %q", got, msg)
	}
}

// expectClosedConn requires c to read EOF or a reset soon (not a timeout).
func expectClosedConn(t *testing.T, c net.Conn) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	var b [1]byte
	n, err := c.Read(b[:])
	if err == nil {
		t.Fatalf("read %d bytes from a connection on a dropped link", n)
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatal("a connection on a dropped link is still open after 5 s")
	}
}

// expectSilent requires c to neither deliver a byte nor close for d.
func expectSilent(t *testing.T, c net.Conn, d time.Duration) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(d))
	defer c.SetReadDeadline(time.Time{})
	var b [1]byte
	n, err := c.Read(b[:])
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a stalled connection read %d bytes, err %v; want nothing and no close", n, err)
	}
}

func TestFaultNetForwards(t *testing.T) {
	a := startFakeAcceptor(t)
	f := newFaultNet(t)
	addr := f.proxy(t, "n1", a.ln.Addr().String())

	c := mustPeerDial(t, addr, "n2")
	echoOK(t, c, "hello over raft")
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<14) // 256 KiB, several buffers
	go func() { _, _ = c.Write(big) }()
	got := make([]byte, len(big))
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadFull(c, got); err != nil || !bytes.Equal(got, big) {
		t.Fatalf("256 KiB echo: err %v, equal %v", err, bytes.Equal(got, big))
	}
	if ids := a.seenIDs(); len(ids) != 1 || ids[0] != "n2" {
		t.Fatalf("the node saw IDs %q, want [n2]: the handshake must pass unchanged", ids)
	}
	if n := f.connsSeen("n2", "n1"); n != 1 {
		t.Fatalf("connsSeen(n2, n1) = %d, want 1", n)
	}

	// A client connection (first byte < 0x80) passes without attribution,
	// and no fault touches it.
	cl, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	echoOK(t, cl, "*1\r\n$4\r\nPING\r\n")
	f.partition("n1")
	echoOK(t, cl, "*1\r\n$4\r\nPING\r\n")
	f.stall("n1")
	echoOK(t, cl, "still a client")
	f.heal()
}

func TestFaultNetPartitionDrops(t *testing.T) {
	a := startFakeAcceptor(t)
	f := newFaultNet(t)
	addr := f.proxy(t, "n1", a.ln.Addr().String())

	c2 := mustPeerDial(t, addr, "n2")
	c3 := mustPeerDial(t, addr, "n3")
	echoOK(t, c2, "a")
	echoOK(t, c3, "b")

	f.partition("n2") // n2 | n1 n3
	expectClosedConn(t, c2)
	echoOK(t, c3, "n3 to n1 is not cut")
	if c, err := fakePeerDial(t, addr, "n2"); err == nil {
		t.Fatalf("a new connection from n2 completed its handshake across the partition (%v)", c.LocalAddr())
	}
	echoOK(t, mustPeerDial(t, addr, "n3"), "a new connection from n3 works")

	f.partition("n1") // n1 | n2 n3: both links into n1 are cut
	expectClosedConn(t, c3)
	if _, err := fakePeerDial(t, addr, "n3"); err == nil {
		t.Fatal("a new connection from n3 into an isolated n1 completed its handshake")
	}

	f.heal()
	echoOK(t, mustPeerDial(t, addr, "n2"), "healed n2")
	echoOK(t, mustPeerDial(t, addr, "n3"), "healed n3")
}

func TestFaultNetStallAndHeal(t *testing.T) {
	a := startFakeAcceptor(t)
	f := newFaultNet(t)
	addr := f.proxy(t, "n1", a.ln.Addr().String())

	c2 := mustPeerDial(t, addr, "n2")
	c3 := mustPeerDial(t, addr, "n3")
	echoOK(t, c2, "before")

	f.stall("n2")
	if _, err := c2.Write([]byte("held")); err != nil {
		t.Fatal(err)
	}
	expectSilent(t, c2, 300*time.Millisecond)
	echoOK(t, c3, "n3 unaffected")

	// A new connection from n2 gets the challenge (the proxy cannot know who
	// dials before it), then is held: no proof comes back, nothing closes.
	n2b, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer n2b.Close()
	_ = n2b.SetDeadline(time.Now().Add(5 * time.Second))
	n2b.Write([]byte{0x8F})
	var hello [36]byte
	if _, err := io.ReadFull(n2b, hello[:]); err != nil {
		t.Fatalf("the challenge on a stalled link: %v", err)
	}
	msg := append(randomBytes(32), 2, 'n', '2')
	n2b.Write(append(msg, randomBytes(32)...))
	expectSilent(t, n2b, 300*time.Millisecond)

	f.heal()
	_ = c2.SetReadDeadline(time.Now().Add(5 * time.Second))
	got := make([]byte, 4)
	if _, err := io.ReadFull(c2, got); err != nil || string(got) != "held" {
		t.Fatalf("after heal the held bytes: %q, %v", got, err)
	}
	echoOK(t, c2, "after")
	_ = n2b.SetReadDeadline(time.Now().Add(5 * time.Second))
	var proof [32]byte
	if _, err := io.ReadFull(n2b, proof[:]); err != nil {
		t.Fatalf("the held handshake after heal: %v", err)
	}
	echoOK(t, n2b, "resumed handshake")

	// A stall turned into a partition drops what was held.
	f.stall("n2")
	c2.Write([]byte("x"))
	expectSilent(t, c2, 100*time.Millisecond)
	f.partition("n2")
	expectClosedConn(t, c2)
	f.heal()
}

// A close by the node on a stalled link reaches the dialer only after heal.
func TestFaultNetStallHoldsClose(t *testing.T) {
	a := startFakeAcceptor(t)
	f := newFaultNet(t)
	addr := f.proxy(t, "n1", a.ln.Addr().String())
	c2 := mustPeerDial(t, addr, "n2")
	echoOK(t, c2, "x")
	f.stall("n2")
	a.mu.Lock()
	for c := range a.conns {
		c.Close()
	}
	a.mu.Unlock()
	expectSilent(t, c2, 300*time.Millisecond)
	f.heal()
	expectClosedConn(t, c2)
}

// Closing the proxy ends its connections, stalled ones included.
func TestFaultNetCloseEndsEverything(t *testing.T) {
	a := startFakeAcceptor(t)
	f := newFaultNet(t)
	addr := f.proxy(t, "n1", a.ln.Addr().String())
	c2 := mustPeerDial(t, addr, "n2")
	c3 := mustPeerDial(t, addr, "n3")
	f.stall("n2")
	c2.Write([]byte("x"))
	done := make(chan struct{})
	go func() { f.close(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("closing the proxies took over 10 s")
	}
	expectClosedConn(t, c2)
	expectClosedConn(t, c3)
	if _, err := fakePeerDial(t, addr, "n2"); err == nil {
		t.Fatal("the proxy still forwards after close")
	}
}

// startMux runs a mux with the given node ID and a fixed secret on a
// loopback port; its Raft peer connections are echoed and their
// authenticated IDs sent on ids.
func startMux(t *testing.T, id string, ids chan<- string) *mux.Mux {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m, err := mux.New(ln, mux.Config{Secret: []byte("faultnet self-test cluster secret"), NodeID: id,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	peers, err := m.Listen(mux.HeaderRaft)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); m.Run() }()
	go func() {
		defer wg.Done()
		for {
			c, err := peers.Accept()
			if err != nil {
				return
			}
			if pc, ok := c.(*mux.PeerConn); ok && ids != nil {
				ids <- pc.PeerID()
			}
			wg.Add(1)
			go func() { defer wg.Done(); defer c.Close(); _, _ = io.Copy(c, c) }()
		}
	}()
	t.Cleanup(func() { m.Close(); wg.Wait() })
	return m
}

// The real handshake passes through the proxy unchanged, and the proxy
// attributes it to the dialer's node ID.
func TestFaultNetRealHandshake(t *testing.T) {
	ids := make(chan string, 16)
	n1 := startMux(t, "n1", ids)
	n2 := startMux(t, "n2", nil)
	n3 := startMux(t, "n3", nil)
	f := newFaultNet(t)
	addr := f.proxy(t, "n1", n1.Addr().String())

	c, err := n2.Dial(addr, mux.HeaderRaft, 5*time.Second)
	if err != nil {
		t.Fatalf("the real handshake through the proxy: %v", err)
	}
	defer c.Close()
	echoOK(t, c, "appendEntries")
	if id := <-ids; id != "n2" {
		t.Fatalf("n1 authenticated %q, want n2", id)
	}
	if f.connsSeen("n2", "n1") != 1 {
		t.Fatalf("the proxy attributed connsSeen(n2, n1) = %d, want 1", f.connsSeen("n2", "n1"))
	}

	f.partition("n2")
	expectClosedConn(t, c)
	if c, err := n2.Dial(addr, mux.HeaderRaft, 5*time.Second); err == nil {
		c.Close()
		t.Fatal("n2 completed a handshake with n1 across the partition")
	}
	c3, err := n3.Dial(addr, mux.HeaderRaft, 5*time.Second)
	if err != nil {
		t.Fatalf("n3 → n1 is not cut: %v", err)
	}
	defer c3.Close()
	echoOK(t, c3, "n3")

	f.stall("n2")
	if c, err := n2.Dial(addr, mux.HeaderRaft, 300*time.Millisecond); err == nil {
		c.Close()
		t.Fatal("n2 completed a handshake with n1 through a stalled link")
	}
	f.heal()
	c2, err := n2.Dial(addr, mux.HeaderRaft, 5*time.Second)
	if err != nil {
		t.Fatalf("after heal: %v", err)
	}
	defer c2.Close()
	echoOK(t, c2, "healed")
}
