// Package mux shares one TCP port between Redis clients and Redcell's own
// peers. A peer connection opens with a registered header byte (Raft today,
// forwarding later) and must then prove the cluster secret in a challenge–
// response handshake before a single byte reaches its protocol; every other
// connection is a Redis client. See DESIGN.md.
package mux

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync/atomic"
	"time"

	"github.com/redcell/redcell/internal/lograte"
	"github.com/redcell/redcell/internal/pending"
)

// Header bytes of the peer protocols. No Redis request starts with a byte of
// 0x80 or above (RESP starts with '*', inline commands with a printable
// character), so a peer announces itself with one of them.
const (
	// HeaderRaft opens a hashicorp/raft transport connection.
	HeaderRaft byte = 0x8E
	// HeaderForward opens a connection carrying requests from a follower to
	// its leader (package forward).
	HeaderForward byte = 0x8F
	// HeaderRaftGroup opens a hashicorp/raft transport connection of a
	// named Raft group: after the handshake the dialer writes the group's
	// ID (a uvarint) before raft's first byte (package node's raft
	// streams). HeaderRaft is group 0's, unnamed, as every build before
	// groups dials it.
	HeaderRaftGroup byte = 0x90
)

// Defaults for Config's timeouts.
const (
	// DefaultFirstByteTimeout is how long a new connection may stay silent
	// before it is handed to the Redis side as a client. Peers write their
	// header as they connect, so only a client can be this slow, and a client
	// is then the server's to keep or time out like any other.
	DefaultFirstByteTimeout = 3 * time.Second
	// DefaultHandshakeTimeout bounds a peer's whole handshake.
	DefaultHandshakeTimeout = 5 * time.Second
)

// Config configures a Mux.
type Config struct {
	// Secret is the cluster secret peers prove they hold. Empty: the node
	// has no peers and every peer connection is refused unread.
	Secret []byte
	// NodeID is this node's ID, presented to peers it dials (at most
	// MaxNodeIDLen bytes).
	NodeID string
	// FirstByteTimeout and HandshakeTimeout default to the constants above.
	FirstByteTimeout time.Duration
	HandshakeTimeout time.Duration
	Logger           *slog.Logger
	// TLSServer and TLSClient, when set (both or neither), put every peer
	// connection under mutual TLS: after the header byte, which stays in
	// clear so the port can tell peers from clients, the two sides run a
	// TLS handshake, and the cluster-secret handshake and the protocol
	// then run inside the TLS session. A peer that does not speak TLS, or
	// whose certificate the configuration refuses, is closed like one with
	// the wrong secret. The configurations must demand and verify
	// certificates themselves (package tlscert makes such a pair).
	TLSServer *tls.Config
	TLSClient *tls.Config
}

// Stats counts peer connections by outcome.
type Stats struct {
	PeersAccepted uint64 // handshakes that succeeded
	PeersRejected uint64 // peer connections closed before their protocol saw a byte
}

// Mux splits the connections accepted on one listener by their first byte.
//
// Goroutines: Run accepts in its own goroutine; every new connection is
// classified (and, for a peer, authenticated) in a goroutine of its own, so a
// silent or slow connection holds up nobody. Listen must be called before Run;
// Accept on the returned listeners, Dial, Stats and Close may be called from
// any goroutine.
type Mux struct {
	ln   net.Listener
	cfg  Config
	log  *slog.Logger
	auth *authenticator // nil without a secret

	clients chan net.Conn
	peers   map[byte]chan net.Conn // fixed once Run starts

	pending *pending.Conns // connections still being classified

	accepted, rejected atomic.Uint64
	rejectLog          *lograte.Limiter // refused peers: a line per rejectLogEvery
}

// New wraps ln. A secret shorter than MinSecretLen is an error: a short
// secret can be guessed offline from one recorded handshake.
func New(ln net.Listener, cfg Config) (*Mux, error) {
	if cfg.FirstByteTimeout <= 0 {
		cfg.FirstByteTimeout = DefaultFirstByteTimeout
	}
	if cfg.HandshakeTimeout <= 0 {
		cfg.HandshakeTimeout = DefaultHandshakeTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	m := &Mux{
		rejectLog: lograte.New(rejectLogEvery),
		ln:        ln, cfg: cfg, log: cfg.Logger,
		clients: make(chan net.Conn),
		peers:   make(map[byte]chan net.Conn),
		pending: pending.New(),
	}
	if (cfg.TLSServer == nil) != (cfg.TLSClient == nil) {
		return nil, errors.New("mux: peer TLS needs both a server and a client configuration")
	}
	if len(cfg.NodeID) > MaxNodeIDLen {
		return nil, fmt.Errorf("mux: node ID of %d bytes; at most %d", len(cfg.NodeID), MaxNodeIDLen)
	}
	if len(cfg.Secret) > 0 {
		a, err := newAuthenticator(cfg.Secret)
		if err != nil {
			return nil, err
		}
		m.auth = a
	}
	return m, nil
}

// Listen registers a peer protocol by its header byte and returns the
// listener its authenticated connections arrive on. Call it before Run.
// Closing the returned listener does not close the Mux (raft's transport
// closes its listener when it stops; the client port must stay up).
func (m *Mux) Listen(header byte) (net.Listener, error) {
	if header < 0x80 {
		return nil, fmt.Errorf("mux: header byte 0x%02X could start a Redis request; use 0x80 or above", header)
	}
	if _, dup := m.peers[header]; dup {
		return nil, fmt.Errorf("mux: header byte 0x%02X registered twice", header)
	}
	ch := make(chan net.Conn)
	m.peers[header] = ch
	return &chanListener{m: m, ch: ch, closeMux: false}, nil
}

// Clients is the listener of Redis client connections. Closing it closes
// the Mux.
func (m *Mux) Clients() net.Listener { return &chanListener{m: m, ch: m.clients, closeMux: true} }

// Addr is the shared listener's address.
func (m *Mux) Addr() net.Addr { return m.ln.Addr() }

// Stats returns the peer connection counters.
func (m *Mux) Stats() Stats {
	return Stats{PeersAccepted: m.accepted.Load(), PeersRejected: m.rejected.Load()}
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
			case <-m.pending.Done():
				return
			case <-time.After(50 * time.Millisecond): // back off on fd exhaustion
			}
			continue
		}
		if !m.pending.Start(c) {
			c.Close()
			return
		}
		go m.route(c)
	}
}

// route classifies one connection and hands it over. It owns c until then.
func (m *Mux) route(c net.Conn) {
	defer m.pending.Finish()
	defer m.pending.Forget(c)
	br := bufio.NewReaderSize(c, 4096)
	_ = c.SetReadDeadline(time.Now().Add(m.cfg.FirstByteTimeout))
	first, err := br.Peek(1)
	_ = c.SetReadDeadline(time.Time{})
	var ne net.Error
	switch {
	case err == nil && first[0] >= 0x80:
		m.routePeer(c, br, first[0])
	case err == nil || errors.As(err, &ne) && ne.Timeout():
		// A client, or one that has not spoken yet: the server keeps
		// silent clients as Redis does and closes them at shutdown.
		m.deliver(m.clients, &peekedConn{Conn: c, r: br})
	default:
		c.Close()
	}
}

// routePeer authenticates a peer connection and hands it to its protocol.
// Nothing the peer sent reaches the protocol unless the handshake succeeds.
func (m *Mux) routePeer(c net.Conn, br *bufio.Reader, header byte) {
	_, _ = br.Discard(1)
	ch, known := m.peers[header]
	var err error
	var peerID string
	switch {
	case m.auth == nil:
		err = errors.New("this node has no cluster secret, so it accepts no peers")
	case !known:
		err = fmt.Errorf("unknown peer protocol 0x%02X", header)
	default:
		_ = c.SetDeadline(time.Now().Add(m.cfg.HandshakeTimeout))
		if m.cfg.TLSServer != nil {
			tc := tls.Server(&peekedConn{Conn: c, r: br}, m.cfg.TLSServer)
			if err = tc.Handshake(); err != nil {
				err = fmt.Errorf("TLS handshake: %w", err)
				break
			}
			c, br = tc, bufio.NewReaderSize(tc, 4096)
		}
		peerID, err = m.auth.accept(c, br, header)
		_ = c.SetDeadline(time.Time{})
	}
	if err != nil {
		m.rejected.Add(1)
		if n, ok := m.rejectLog.Allow("refused"); ok {
			m.log.Warn("refused a peer connection", "remote", c.RemoteAddr().String(), "err", err, "refused_since_last_report", n)
		}
		c.Close()
		return
	}
	m.accepted.Add(1)
	m.deliver(ch, &PeerConn{peekedConn: peekedConn{Conn: c, r: br}, peerID: peerID})
}

// PeerConn is an authenticated peer connection; PeerID is the node ID the
// peer proved the secret with.
type PeerConn struct {
	peekedConn
	peerID string
}

// PeerID is the authenticated node ID of the other end.
func (p *PeerConn) PeerID() string { return p.peerID }

func (m *Mux) deliver(ch chan net.Conn, c net.Conn) {
	select {
	case ch <- c:
	case <-m.pending.Done():
		c.Close()
	}
}

// Dial connects to a peer's shared port, announces the protocol named by
// header and proves the cluster secret; the returned connection carries
// only that protocol. Without a secret there is nothing to prove, so Dial
// fails (ErrNoSecret). A failed Dial's error wraps ErrUnreachable,
// ErrSecretMismatch or ErrTLSMismatch when the failure says which
// (dialerror.go).
func (m *Mux) Dial(addr string, header byte, timeout time.Duration) (net.Conn, error) {
	if m.auth == nil {
		return nil, fmt.Errorf("mux: %w", ErrNoSecret)
	}
	return m.auth.dial(addr, header, m.cfg.NodeID, timeout, m.cfg.TLSClient)
}

// Close stops accepting, closes the listener and every connection that has
// not been handed over yet, and waits for their goroutines.
func (m *Mux) Close() error { return m.pending.Close(m.ln) }

// peekedConn is a connection whose first bytes sit in a bufio.Reader.
type peekedConn struct {
	net.Conn
	r *bufio.Reader
}

func (p *peekedConn) Read(b []byte) (int, error) { return p.r.Read(b) }

// Socket is the connection underneath, whose descriptor the client server
// polls for input (server/busypoll_linux.go); Buffered the peeked bytes
// not yet read, which that poll cannot see.
func (p *peekedConn) Socket() net.Conn { return p.Conn }

// Buffered is the number of peeked bytes Read has not returned yet.
func (p *peekedConn) Buffered() int { return p.r.Buffered() }

// CloseWrite half-closes the connection when the one underneath can (a
// server sending a last answer before it closes uses it).
func (p *peekedConn) CloseWrite() error {
	if cw, ok := p.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// chanListener hands out the connections routed to one channel.
type chanListener struct {
	m        *Mux
	ch       chan net.Conn
	closeMux bool
}

func (l *chanListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.m.pending.Done():
		return nil, net.ErrClosed
	}
}

func (l *chanListener) Close() error {
	if l.closeMux {
		return l.m.Close()
	}
	return nil
}

func (l *chanListener) Addr() net.Addr { return l.m.ln.Addr() }

// rejectLogEvery is how often a refused peer is logged at most: a flood of
// bad connections costs a log line every ten seconds, not one per
// connection.
const rejectLogEvery = 10 * time.Second
