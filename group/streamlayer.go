package group

import (
	"net"
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
type StreamLayer struct {
	Listener  net.Listener
	Advertise net.Addr
	DialPeer  func(addr string, timeout time.Duration) (net.Conn, error)
}

var _ raft.StreamLayer = (*StreamLayer)(nil)

// Accept waits for the next authenticated peer connection.
func (s *StreamLayer) Accept() (net.Conn, error) { return s.Listener.Accept() }

// Close is a no-op; see the type's comment.
func (s *StreamLayer) Close() error { return nil }

// Addr is the advertised address.
func (s *StreamLayer) Addr() net.Addr { return s.Advertise }

// Dial opens an authenticated connection to a peer.
func (s *StreamLayer) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return s.DialPeer(string(addr), timeout)
}
