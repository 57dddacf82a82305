package node

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"sync"
	"time"

	"github.com/redcell/redcell/mux"
	"github.com/redcell/redcell/slots"
)

// Raft streams of several groups behind one port.
//
// hashicorp/raft has no group in its RPCs: each raft.Raft owns a
// NetworkTransport, which owns a stream layer. So every group of the node
// gets a listener of its own, and the group is named before raft reads the
// stream. Group 0 keeps mux.HeaderRaft, which names no group: that is what
// every build before groups dials and accepts, so a cluster with one group
// speaks exactly as before, and a rolling upgrade mixes builds freely. Every
// other group's connections open with mux.HeaderRaftGroup and, after the
// mux's handshake, the group's ID as a uvarint; raftStreams reads it and
// hands the connection to that group's listener. A connection that names a
// group this node does not run is closed, as a node that is down would be:
// the dialling leader retries, and by then the group may exist here.
//
// Goroutines: run accepts in its own goroutine (started by newRaftStreams,
// ended when the mux listener closes); each connection's ID is read in a
// goroutine of its own, bounded by groupIDTimeout, so a silent peer holds up
// nobody. listener is called by Open for each group before any connection
// can arrive for it; dial from raft's goroutines.
type raftStreams struct {
	m   *mux.Mux
	log *slog.Logger

	mu        sync.Mutex
	listeners map[slots.GroupID]*streamListener
	closed    bool
}

// groupIDTimeout bounds the wait for a named stream's group ID, which the
// dialer writes right after the handshake.
const groupIDTimeout = 5 * time.Second

func newRaftStreams(m *mux.Mux, named net.Listener, log *slog.Logger) *raftStreams {
	rs := &raftStreams{m: m, log: log, listeners: make(map[slots.GroupID]*streamListener)}
	go rs.run(named)
	return rs
}

// listener is group id's listener of incoming raft connections (group 0's
// is the mux's HeaderRaft listener itself, which the caller passes as
// unnamed).
func (rs *raftStreams) listener(id slots.GroupID, unnamed net.Listener) net.Listener {
	if id == 0 {
		return unnamed
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	l, ok := rs.listeners[id]
	if !ok {
		l = &streamListener{rs: rs, id: id, ch: make(chan net.Conn), done: make(chan struct{}), addr: rs.m.Addr()}
		rs.listeners[id] = l
	}
	return l
}

// dial opens an authenticated raft connection of group id to a peer.
func (rs *raftStreams) dial(id slots.GroupID, addr string, timeout time.Duration) (net.Conn, error) {
	if id == 0 {
		return rs.m.Dial(addr, mux.HeaderRaft, timeout)
	}
	c, err := rs.m.Dial(addr, mux.HeaderRaftGroup, timeout)
	if err != nil {
		return nil, err
	}
	var b [binary.MaxVarintLen64]byte
	n := binary.PutUvarint(b[:], uint64(id))
	_ = c.SetWriteDeadline(time.Now().Add(timeout))
	if _, err := c.Write(b[:n]); err != nil {
		c.Close()
		return nil, fmt.Errorf("naming raft group %d to %s: %w", id, addr, err)
	}
	_ = c.SetWriteDeadline(time.Time{})
	return c, nil
}

// run hands every named connection to its group until named closes.
func (rs *raftStreams) run(named net.Listener) {
	for {
		c, err := named.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				rs.log.Warn("accepting raft streams", "err", err)
			}
			return
		}
		go rs.route(c)
	}
}

// route reads a connection's group ID and hands it over.
func (rs *raftStreams) route(c net.Conn) {
	_ = c.SetReadDeadline(time.Now().Add(groupIDTimeout))
	br := bufio.NewReaderSize(c, 16)
	id, err := binary.ReadUvarint(br)
	if err != nil || id > math.MaxUint32 {
		c.Close()
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	rs.mu.Lock()
	l, ok := rs.listeners[slots.GroupID(id)]
	rs.mu.Unlock()
	if !ok {
		c.Close() // not a group of this node (yet): as if down
		return
	}
	conn := net.Conn(c)
	if br.Buffered() > 0 {
		conn = &bufferedConn{Conn: c, r: br} // raft's first bytes came with the ID
	}
	select {
	case l.ch <- conn:
	case <-l.done:
		c.Close()
	}
}

// streamListener is one group's listener of named raft connections.
type streamListener struct {
	rs        *raftStreams
	id        slots.GroupID
	ch        chan net.Conn
	done      chan struct{}
	closeOnce sync.Once
	addr      net.Addr
}

func (l *streamListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Close ends Accept; the group's connections arriving later are closed.
func (l *streamListener) Close() error {
	l.closeOnce.Do(func() {
		close(l.done)
		l.rs.mu.Lock()
		if l.rs.listeners[l.id] == l {
			delete(l.rs.listeners, l.id)
		}
		l.rs.mu.Unlock()
	})
	return nil
}

func (l *streamListener) Addr() net.Addr { return l.addr }

// bufferedConn reads what its reader buffered before the connection.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (b *bufferedConn) Read(p []byte) (int, error) { return b.r.Read(p) }
