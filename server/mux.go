package server

import (
	"bufio"
	"errors"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// RaftMagic is the first byte a Raft peer sends on a connection to the
// client port. No Redis client starts a request with it (a RESP request
// starts with '*', an inline one with a printable byte), so one port serves
// both, and a node has one address.
const RaftMagic byte = 0x8E

// Mux splits the connections accepted on one listener into Redis clients and
// Raft peers by their first byte. Client connections go to Clients(); Raft
// connections to the stream layer from RaftLayer().
//
// Goroutines: Run accepts in its own goroutine; each new connection's first
// byte is awaited in a goroutine of its own, so a silent client never holds
// up others.
type Mux struct {
	ln      net.Listener
	log     *slog.Logger
	clients chan net.Conn
	raft    chan net.Conn
	done    chan struct{}
	once    sync.Once
}

// NewMux wraps ln.
func NewMux(ln net.Listener, log *slog.Logger) *Mux {
	if log == nil {
		log = slog.Default()
	}
	return &Mux{ln: ln, log: log, clients: make(chan net.Conn), raft: make(chan net.Conn), done: make(chan struct{})}
}

// Run accepts until the listener is closed.
func (m *Mux) Run() {
	for {
		c, err := m.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			m.log.Warn("accept failed", "err", err)
			select {
			case <-m.done:
				return
			case <-time.After(50 * time.Millisecond): // back off on fd exhaustion
			}
			continue
		}
		go m.route(c)
	}
}

func (m *Mux) route(c net.Conn) {
	br := bufio.NewReaderSize(c, 4096)
	first, err := br.Peek(1)
	if err != nil {
		c.Close()
		return
	}
	dst := m.clients
	if first[0] == RaftMagic {
		_, _ = br.Discard(1)
		dst = m.raft
	}
	pc := &peekedConn{Conn: c, r: br}
	select {
	case dst <- pc:
	case <-m.done:
		c.Close()
	}
}

// peekedConn is a connection whose first bytes sit in a bufio.Reader.
type peekedConn struct {
	net.Conn
	r *bufio.Reader
}

func (p *peekedConn) Read(b []byte) (int, error) { return p.r.Read(b) }

// Close stops the mux and closes the listener.
func (m *Mux) Close() error {
	var err error
	m.once.Do(func() {
		close(m.done)
		err = m.ln.Close()
	})
	return err
}

// Clients is the listener of Redis client connections.
func (m *Mux) Clients() net.Listener { return &chanListener{m: m, ch: m.clients} }

// RaftLayer returns hashicorp/raft's stream layer on the shared port;
// advertise is this node's address as peers dial it.
func (m *Mux) RaftLayer(advertise net.Addr) raft.StreamLayer {
	return &raftLayer{chanListener: chanListener{m: m, ch: m.raft}, advertise: advertise}
}

type chanListener struct {
	m  *Mux
	ch chan net.Conn
}

func (l *chanListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.m.done:
		return nil, net.ErrClosed
	}
}

func (l *chanListener) Close() error   { return l.m.Close() }
func (l *chanListener) Addr() net.Addr { return l.m.ln.Addr() }

type raftLayer struct {
	chanListener
	advertise net.Addr
}

func (l *raftLayer) Addr() net.Addr { return l.advertise }

// Close is a no-op: the transport closing its listener must not take the
// client port down with it; the Mux is closed by its owner.
func (l *raftLayer) Close() error { return nil }

// Dial connects to a peer's shared port and announces a Raft connection.
func (l *raftLayer) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	c, err := net.DialTimeout("tcp", string(addr), timeout)
	if err != nil {
		return nil, err
	}
	if _, err := c.Write([]byte{RaftMagic}); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}
