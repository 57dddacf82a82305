package mux

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"
)

var (
	secretA = []byte("0123456789abcdef-cluster-A")
	secretB = []byte("0123456789abcdef-cluster-B")
)

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// startMux listens on a free loopback port and runs a Mux with the Raft and
// forwarding protocols registered; it is closed when the test ends.
func startMux(t *testing.T, cfg Config) (*Mux, net.Listener) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Logger == nil {
		cfg.Logger = quietLogger()
	}
	m, err := New(ln, cfg)
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	raftLn, err := m.Listen(HeaderRaft)
	if err != nil {
		t.Fatal(err)
	}
	// Registered as on a real node, where a failed dial's probe uses it
	// (dialerror.go); nothing accepts from it here.
	if _, err := m.Listen(HeaderForward); err != nil {
		t.Fatal(err)
	}
	go m.Run()
	t.Cleanup(func() { m.Close() })
	return m, raftLn
}

// acceptOne returns the next connection from ln, or nil if none arrives
// before the mux closes or the wait ends.
func acceptOne(ln net.Listener, wait time.Duration) net.Conn {
	got := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- nil
			return
		}
		got <- c
	}()
	select {
	case c := <-got:
		return c
	case <-time.After(wait):
		return nil
	}
}

func TestPeerWithTheSecretIsAdmittedBothWays(t *testing.T) {
	acceptor, raftLn := startMux(t, Config{Secret: secretA})
	dialer, _ := startMux(t, Config{Secret: secretA, NodeID: "node-2"})

	c, err := dialer.Dial(acceptor.Addr().String(), HeaderRaft, 5*time.Second)
	if err != nil {
		t.Fatalf("Dial with the right secret: %v", err)
	}
	defer c.Close()
	in := acceptOne(raftLn, 5*time.Second)
	if in == nil {
		t.Fatal("the authenticated connection never reached the raft listener")
	}
	defer in.Close()
	if pc, ok := in.(*PeerConn); !ok || pc.PeerID() != "node-2" {
		t.Errorf("accepted connection %T does not carry the dialer's ID node-2", in)
	}
	// The protocol sees exactly the bytes sent after the handshake.
	if _, err := c.Write([]byte("hello raft")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 10)
	if _, err := io.ReadFull(in, buf); err != nil || string(buf) != "hello raft" {
		t.Fatalf("acceptor read %q, %v", buf, err)
	}
	if _, err := in.Write([]byte("ack")); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(c, buf[:3]); err != nil || string(buf[:3]) != "ack" {
		t.Fatalf("dialer read %q, %v", buf[:3], err)
	}
	if s := acceptor.Stats(); s.PeersAccepted != 1 || s.PeersRejected != 0 {
		t.Errorf("stats %+v, want 1 accepted, 0 rejected", s)
	}
}

func TestPeerWithAnotherSecretIsRefused(t *testing.T) {
	acceptor, raftLn := startMux(t, Config{Secret: secretA})
	dialer, _ := startMux(t, Config{Secret: secretB})
	if c, err := dialer.Dial(acceptor.Addr().String(), HeaderRaft, 5*time.Second); err == nil {
		c.Close()
		t.Fatal("Dial with the wrong secret succeeded")
	}
	if c := acceptOne(raftLn, 200*time.Millisecond); c != nil {
		c.Close()
		t.Fatal("a connection with the wrong secret reached the raft listener")
	}
	checkRejected(t, acceptor, 1)
}

func TestNodeWithoutSecretAcceptsNoPeerAndSendsNothing(t *testing.T) {
	acceptor, raftLn := startMux(t, Config{})
	c, err := net.Dial("tcp", acceptor.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// A forged raft heartbeat: header byte, then an AppendEntries RPC type
	// byte and msgpack-looking bytes.
	if _, err := c.Write(append([]byte{HeaderRaft, 0x00}, bytes.Repeat([]byte{0x85}, 64)...)); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, err := c.Read(make([]byte, 64))
	if n != 0 || err == nil || isTimeout(err) {
		t.Fatalf("read %d bytes, err %v: want the connection closed with nothing sent", n, err)
	}
	if in := acceptOne(raftLn, 200*time.Millisecond); in != nil {
		in.Close()
		t.Fatal("a peer connection reached raft on a node without a secret")
	}
	checkRejected(t, acceptor, 1)

	dialer, _ := startMux(t, Config{Secret: secretA})
	if c, err := dialer.Dial(acceptor.Addr().String(), HeaderRaft, 5*time.Second); err == nil {
		c.Close()
		t.Fatal("a node without a secret admitted a peer")
	}
	if _, err := acceptor.Dial(dialer.Addr().String(), HeaderRaft, time.Second); err == nil {
		t.Fatal("a node without a secret dialled a peer")
	}
}

// An attacker who does not hold the secret: raw frames after the header, a
// replayed answer from an earlier genuine handshake, and an answer that
// reflects the acceptor's own challenge. None reaches raft.
func TestForgedAndReplayedHandshakesAreRefused(t *testing.T) {
	acceptor, raftLn := startMux(t, Config{Secret: secretA})
	addr := acceptor.Addr().String()

	// Record a genuine dialer's answer to one challenge.
	auth, _ := newAuthenticator(secretA)
	c1, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	recorded := recordingGreet(t, auth, c1)
	if in := acceptOne(raftLn, 5*time.Second); in == nil {
		t.Fatal("the genuine handshake was refused")
	} else {
		in.Close()
	}
	c1.Close()

	attempts := map[string]func(hello []byte) []byte{
		"raw raft frame":  func([]byte) []byte { return bytes.Repeat([]byte{0x01}, nonceLen+1+1+macLen) },
		"replayed answer": func([]byte) []byte { return recorded },
		"reflected challenge": func(hello []byte) []byte {
			na := hello[len(helloMagic):]
			msg := append(append([]byte(nil), na...), 0)
			return append(msg, make([]byte, macLen)...)
		},
	}
	for name, answer := range attempts {
		t.Run(name, func(t *testing.T) {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(5 * time.Second))
			if _, err := c.Write([]byte{HeaderRaft}); err != nil {
				t.Fatal(err)
			}
			hello := make([]byte, len(helloMagic)+nonceLen)
			if _, err := io.ReadFull(c, hello); err != nil {
				t.Fatalf("reading the challenge: %v", err)
			}
			if _, err := c.Write(answer(hello)); err != nil {
				t.Fatal(err)
			}
			if n, err := c.Read(make([]byte, macLen)); n != 0 || err == nil || isTimeout(err) {
				t.Fatalf("read %d bytes, err %v: want the connection closed with no proof sent", n, err)
			}
			if in := acceptOne(raftLn, 100*time.Millisecond); in != nil {
				in.Close()
				t.Fatal("a forged handshake reached raft")
			}
		})
	}
	checkRejected(t, acceptor, uint64(len(attempts)))
}

// recordingGreet runs the dialer's side on c and returns its answer bytes.
func recordingGreet(t *testing.T, a *authenticator, c net.Conn) []byte {
	t.Helper()
	var rec bytes.Buffer
	if _, err := c.Write([]byte{HeaderRaft}); err != nil {
		t.Fatal(err)
	}
	if err := a.greet(&teeConn{Conn: c, w: &rec}, c.RemoteAddr().String(), HeaderRaft, "genuine", false, time.Now().Add(5*time.Second)); err != nil {
		t.Fatalf("genuine greet: %v", err)
	}
	return rec.Bytes()
}

type teeConn struct {
	net.Conn
	w *bytes.Buffer
}

func (t *teeConn) Write(b []byte) (int, error) { t.w.Write(b); return t.Conn.Write(b) }

func TestClientsKeepTheirFirstByte(t *testing.T) {
	m, _ := startMux(t, Config{Secret: secretA})
	clients := m.Clients()
	for _, req := range []string{"*1\r\n$4\r\nPING\r\n", "PING\r\n", "\r\n"} {
		c, err := net.Dial("tcp", m.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Write([]byte(req)); err != nil {
			t.Fatal(err)
		}
		in := acceptOne(clients, 5*time.Second)
		if in == nil {
			t.Fatalf("%q never reached the client listener", req)
		}
		got := make([]byte, len(req))
		if _, err := io.ReadFull(in, got); err != nil || string(got) != req {
			t.Errorf("client side read %q, %v; want %q", got, err, req)
		}
		in.Close()
		c.Close()
	}
}

// A connection that says nothing is handed to the client side after the
// first-byte timeout: the server then keeps or times it out like any
// client, and closes it at shutdown.
func TestSilentConnectionBecomesAClient(t *testing.T) {
	m, _ := startMux(t, Config{FirstByteTimeout: 50 * time.Millisecond})
	c, err := net.Dial("tcp", m.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	in := acceptOne(m.Clients(), 5*time.Second)
	if in == nil {
		t.Fatal("a silent connection was never handed to the client listener")
	}
	defer in.Close()
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(in).ReadString('\n')
	if err != nil || line != "PING\r\n" {
		t.Fatalf("read %q, %v after the handoff", line, err)
	}
}

func TestCloseClosesConnectionsNotYetHandedOver(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(ln, Config{Secret: secretA, FirstByteTimeout: time.Hour, HandshakeTimeout: time.Hour, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Listen(HeaderRaft); err != nil {
		t.Fatal(err)
	}
	go m.Run()
	silent, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	midHandshake, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer midHandshake.Close()
	if _, err := midHandshake.Write([]byte{HeaderRaft}); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(midHandshake, make([]byte, len(helloMagic)+nonceLen)); err != nil {
		t.Fatal(err)
	}
	// Both are now pending inside the mux.
	closed := make(chan error, 1)
	go func() { closed <- m.Close() }()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return with connections pending")
	}
	for name, c := range map[string]net.Conn{"silent": silent, "mid-handshake": midHandshake} {
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Read(make([]byte, 1)); err == nil || isTimeout(err) {
			t.Errorf("%s connection: read err %v after Close, want closed", name, err)
		}
	}
	if _, err := m.Clients().Accept(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Accept after Close: %v, want net.ErrClosed", err)
	}
}

func TestConfigurationErrors(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if _, err := New(ln, Config{Secret: []byte("short")}); err == nil {
		t.Error("a 5-byte secret was accepted")
	}
	m, err := New(ln, Config{Secret: secretA})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Listen('*'); err == nil {
		t.Error("header '*' (a RESP request) was accepted")
	}
	if _, err := m.Listen(HeaderRaft); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Listen(HeaderRaft); err == nil {
		t.Error("a header registered twice was accepted")
	}
}

// checkRejected compares the rejection counter. The mux counts a rejection
// before it closes the connection, so once a test has seen the close the
// count is final.
func checkRejected(t *testing.T, m *Mux, want uint64) {
	t.Helper()
	if got := m.Stats().PeersRejected; got != want {
		t.Fatalf("peer connections rejected: %d, want %d", got, want)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
