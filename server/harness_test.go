package server

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/redcell/redcell/fsm"
	"github.com/redcell/redcell/group"
	"github.com/redcell/redcell/raftstore"
)

// testNode is a single-node Redcell built in-process the way package node
// wires one: Pebble raft store in a temp dir, the FSM, an in-memory raft
// transport, the group, and a Server on a loopback listener with the group
// behind it as its Backend (group.Local). Tests talk to it over real TCP.
type testNode struct {
	t       testing.TB
	addr    string // client address
	srv     *Server
	backend *group.Local
}

// localBackend is the local group as every role of the server's Backend:
// group.Local takes administration verbs as the strings they travel as.
func localBackend(l *group.Local) Backend {
	return Backend{Decider: l, Reader: l, Administrator: localAdmin{l}, Status: l, TestClock: l}
}

type localAdmin struct{ l *group.Local }

func (a localAdmin) Admin(op AdminOp, args []string) (string, error) {
	return a.l.Admin(string(op), args)
}

// quietLogger drops the node's logs; a failing test prints what it needs.
func quietLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// startTestNode starts a node with DEBUG enabled and waits until it is a
// ready leader. Everything is shut down when the test ends.
func startTestNode(t testing.TB) *testNode {
	t.Helper()
	log := quietLogger()
	store, err := raftstore.Open(t.TempDir(), raftstore.Options{Logger: log})
	if err != nil {
		t.Fatalf("raftstore.Open: %v", err)
	}
	clock := &group.Clock{}
	machine := fsm.New(fsm.Config{Stripes: 4, Logger: log, OnFatal: func(err error) {
		t.Errorf("state machine stopped: %v", err)
	}})
	raftAddr, transport := raft.NewInmemTransport("")
	g, err := group.Open(group.Config{
		NodeID:    "node1",
		Addr:      raftAddr,
		Bootstrap: true,
		LogStore:  store,
		Stable:    store,
		Snapshots: store.SnapshotStore(2),
		Transport: transport,
		FSM:       machine,
		Clock:     clock,
		Logger:    log,
		Tune: func(c *raft.Config) {
			c.HeartbeatTimeout = 50 * time.Millisecond
			c.ElectionTimeout = 50 * time.Millisecond
			c.LeaderLeaseTimeout = 50 * time.Millisecond
		},
	})
	if err != nil {
		store.Close()
		t.Fatalf("group.Open: %v", err)
	}
	n := &testNode{t: t, backend: group.NewLocal(g, store)}
	n.srv, n.addr = n.serve(true)
	machine.WatchWrites(n.srv.WriteWatcher())
	t.Cleanup(func() {
		// The servers (cleaned up before this, see serve) are closed.
		if err := g.Shutdown(); err != nil {
			t.Errorf("group shutdown: %v", err)
		}
		transport.Close()
		if err := store.Close(); err != nil {
			t.Errorf("store close: %v", err)
		}
	})
	deadline := time.Now().Add(10 * time.Second)
	for !g.Ready() {
		if time.Now().After(deadline) {
			t.Fatalf("the node did not become a ready leader within 10 s")
		}
		time.Sleep(5 * time.Millisecond) // polling for readiness, not synchronising
	}
	return n
}

// serve starts another Server on the node's group (a second front with its
// own settings) and returns it with its address. It is closed at cleanup,
// before the group shuts down.
func (n *testNode) serve(enableDebug bool) (*Server, string) {
	n.t.Helper()
	return n.serveConfig(Config{EnableDebug: enableDebug})
}

// serveConfig is serve with more settings: cfg's backend, addresses and
// version are filled in, and a quiet logger unless it has one.
func (n *testNode) serveConfig(cfg Config) (*Server, string) {
	n.t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		n.t.Fatalf("listen: %v", err)
	}
	cfg.Backend, cfg.NodeID, cfg.Addr, cfg.DataDir = localBackend(n.backend), "node1", ln.Addr().String(), "/data/redcell"
	cfg.RedcellVer = "test"
	if cfg.Logger == nil {
		cfg.Logger = quietLogger()
	}
	srv := New(cfg)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	n.t.Cleanup(func() {
		ln.Close()
		if err := <-served; err != nil {
			n.t.Errorf("Serve: %v", err)
		}
		srv.Close()
	})
	return srv, ln.Addr().String()
}

// client is a raw RESP connection for tests.
type client struct {
	t  testing.TB
	nc net.Conn
	br *bufio.Reader
}

func (n *testNode) dial() *client { return dialAddr(n.t, n.addr) }

func dialAddr(t testing.TB, addr string) *client {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { nc.Close() })
	_ = nc.SetDeadline(time.Now().Add(20 * time.Second)) // a hung test fails instead of hanging
	return &client{t: t, nc: nc, br: bufio.NewReader(nc)}
}

// send writes raw bytes.
func (c *client) send(raw string) {
	c.t.Helper()
	if _, err := c.nc.Write([]byte(raw)); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// sendCmd writes one command as a multibulk.
func (c *client) sendCmd(args ...string) { c.t.Helper(); c.send(encodeCmd(args...)) }

func encodeCmd(args ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b.String()
}

// do sends one command and returns its reply in the compact form of
// reply.String.
func (c *client) do(args ...string) string {
	c.t.Helper()
	c.sendCmd(args...)
	return c.reply()
}

// reply reads one reply and formats it.
func (c *client) reply() string { c.t.Helper(); return c.replyTree().String() }

// replyTree reads one reply.
func (c *client) replyTree() reply {
	c.t.Helper()
	r, err := readReply(c.br)
	if err != nil {
		c.t.Fatalf("reading a reply: %v", err)
	}
	return r
}

// expectEOF checks that the server closed the connection with nothing more
// to say.
func (c *client) expectEOF() {
	c.t.Helper()
	b, err := c.br.ReadByte()
	if err == nil {
		rest, _ := c.br.Peek(c.br.Buffered())
		c.t.Fatalf("expected the connection to be closed, got %q", append([]byte{b}, rest...))
	}
	if !errors.Is(err, io.EOF) && !strings.Contains(err.Error(), "connection reset") {
		c.t.Fatalf("expected EOF, got %v", err)
	}
}

// reply is one RESP2/RESP3 reply: typ is its type byte, s the text of a
// simple, error, integer or bulk reply, elems the elements of an aggregate
// (a map's keys and values alternate). null marks $-1, *-1 and _.
type reply struct {
	typ   byte
	s     string
	null  bool
	elems []reply
}

// String formats a reply compactly:
//
//	+OK  -ERR text  :5  $bulk  $nil  *[a b]  *nil  %{k v}  ~[a]  _  =txt:...
//
// Aggregates are formatted recursively, elements separated by one space.
func (r reply) String() string {
	switch {
	case r.typ == '_':
		return "_"
	case r.null:
		return string(r.typ) + "nil"
	case r.elems != nil || strings.IndexByte("*~%>|", r.typ) >= 0:
		open, close := "[", "]"
		if r.typ == '%' || r.typ == '|' {
			open, close = "{", "}"
		}
		parts := make([]string, len(r.elems))
		for i, e := range r.elems {
			parts[i] = e.String()
		}
		return string(r.typ) + open + strings.Join(parts, " ") + close
	}
	return string(r.typ) + r.s
}

// readReply reads one RESP2/RESP3 reply.
func readReply(br *bufio.Reader) (reply, error) {
	line, err := br.ReadString('\n')
	if err != nil {
		return reply{}, err
	}
	if !strings.HasSuffix(line, "\r\n") || len(line) < 3 {
		return reply{}, fmt.Errorf("malformed reply line %q", line)
	}
	r := reply{typ: line[0]}
	body := line[1 : len(line)-2]
	switch r.typ {
	case '+', '-', ':', ',', '#', '(':
		r.s = body
	case '_':
		r.null = true
	case '$', '=':
		n, err := strconv.Atoi(body)
		if err != nil {
			return r, fmt.Errorf("bad length %q", line)
		}
		if n < 0 {
			r.null = true
			return r, nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(br, buf); err != nil {
			return r, err
		}
		if !bytes.HasSuffix(buf, []byte("\r\n")) {
			return r, fmt.Errorf("bulk of %d not followed by CRLF", n)
		}
		r.s = string(buf[:n])
	case '*', '~', '%', '>', '|':
		n, err := strconv.Atoi(body)
		if err != nil {
			return r, fmt.Errorf("bad count %q", line)
		}
		if n < 0 {
			r.null = true
			return r, nil
		}
		if r.typ == '%' || r.typ == '|' {
			n *= 2
		}
		r.elems = make([]reply, n)
		for i := range r.elems {
			if r.elems[i], err = readReply(br); err != nil {
				return r, err
			}
		}
	default:
		return r, fmt.Errorf("unknown reply type in %q", line)
	}
	return r, nil
}
