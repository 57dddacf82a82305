package group

import (
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// StreamLayer is hashicorp/raft's network stream layer over connections that
// something else has already accepted and authenticated (package mux on the
// shared client port). Listener delivers incoming peer connections; Dial
// opens an authenticated one to a peer; Advertise is this node's address as
// peers dial it.
//
// Close does not close Listener's source: raft's transport closes its stream
// layer when it stops, and the client port must outlive it. The owner of the
// listener closes it.
//
// Dial waits for a peer that refuses the connection (peerredial.go): a
// restarting peer is reached as soon as it listens, and raft's leader does
// not pile up failures against it. Stop, when closed, ends those waits: the
// owner closes it before raft.Shutdown, which waits for raft's goroutines,
// and so for any dial under way.
type StreamLayer struct {
	Listener  net.Listener
	Advertise net.Addr
	DialPeer  func(addr string, timeout time.Duration) (net.Conn, error)
	Stop      <-chan struct{}
	// Unreachable tells a dial failure that waiting may cure (the peer is
	// not listening, or not answering yet) from one it cannot (a wrong
	// secret). Default: the connection was refused.
	Unreachable func(error) bool

	redialOnce sync.Once
	redial     peerRedial
}

var _ raft.StreamLayer = (*StreamLayer)(nil)

// Accept waits for the next authenticated peer connection.
func (s *StreamLayer) Accept() (net.Conn, error) { return s.Listener.Accept() }

// Close is a no-op; see the type's comment.
func (s *StreamLayer) Close() error { return nil }

// Addr is the advertised address.
func (s *StreamLayer) Addr() net.Addr { return s.Advertise }

// Dial opens an authenticated connection to a peer, waiting up to timeout
// for one that refuses connections to listen again.
func (s *StreamLayer) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	s.redialOnce.Do(func() { s.redial.unreachable = s.Unreachable })
	return s.redial.dial(s.DialPeer, string(addr), timeout, s.Stop)
}
