package forward

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redcell/redcell/request"
	"github.com/redcell/redcell/slots"
)

// Errors a call can end with besides the destination's *request.Failure.
var (
	// ErrNotSent: the call never left this node (no connection, or it broke
	// before the frame was written). Safe to retry anywhere.
	ErrNotSent = errors.New("forward: not sent")
	// ErrLost: the frame was written but no answer came (the connection
	// broke or the call timed out). A write's outcome is unknown.
	ErrLost = errors.New("forward: sent, but the answer was lost")
	// ErrClosed: the client is closed.
	ErrClosed = errors.New("forward: client closed")
)

// Client sends calls to other nodes over a few long-lived connections per
// destination, multiplexing every caller onto them: each connection's
// writer takes whatever calls queued while it was writing and sends them
// with one flush, so a follower's many waiting clients cost the leader a few
// large reads instead of many small ones.
//
// Goroutines: Propose, Read and Admin may be called from any number of
// goroutines at once and block until answered, failed or timed out. A
// caller writes its own frame: the one that finds the connection idle
// writes every frame queued while it writes, then flushes (see
// clientConn.register), so no goroutine sits between a caller and the
// socket (under a steady stream, one goroutine per burst takes over after
// callerRounds). Each connection has one reader goroutine, which matches answers
// to calls and wakes their callers. Close may be called from any goroutine.
type Client struct {
	dial    func(addr string, timeout time.Duration) (net.Conn, error)
	perDest int

	mu     sync.Mutex
	pools  map[string]*pool
	closed bool
}

// ConnsPerDestination is how many connections a Client keeps to one node.
// Two keep one slow write from holding up every call; more measured no
// better on loopback, where one connection moves far more than a Raft
// leader can commit.
const ConnsPerDestination = 2

// NewClient makes a client that opens connections with dial (an
// authenticated peer dialer).
func NewClient(dial func(addr string, timeout time.Duration) (net.Conn, error)) *Client {
	return &Client{dial: dial, perDest: ConnsPerDestination, pools: make(map[string]*pool)}
}

type pool struct {
	mu    sync.Mutex
	conns []*clientConn
	next  atomic.Uint64
}

// call is one request in flight.
type call struct {
	id       uint64
	frame    []byte
	deadline time.Time // the writer gives up on a stalled socket then
	res      []request.Result
	abandon  <-chan struct{} // nil: never
	text     string
	err      error
	sent     atomic.Bool
	done     chan struct{}
	once     sync.Once
}

func (c *call) finish(err error) {
	c.once.Do(func() {
		c.err = err
		close(c.done)
	})
}

// Propose forwards write requests for Raft group group to addr and fills
// res. The requests are encoded once, into the frame, in the encoding log
// entries carry.
//
// The call ends at timeout, or as soon as abandon closes (the caller's way
// of saying the destination no longer leads: a stalled link to a deposed
// leader must not hold a client for the whole timeout). Either way a call
// whose frame was written ends with ErrLost. abandon may be nil. A failure
// the destination answered is its *request.Failure, as it sent it.
func (c *Client) Propose(addr string, group slots.GroupID, reqs []request.Request, res []request.Result, timeout time.Duration, abandon <-chan struct{}) error {
	cl := &call{res: res, abandon: abandon}
	return c.do(addr, cl, requestFrame(kindPropose, group, reqs), timeout)
}

// Read forwards read requests to addr and fills res; as Propose otherwise.
func (c *Client) Read(addr string, group slots.GroupID, reqs []request.Request, res []request.Result, timeout time.Duration, abandon <-chan struct{}) error {
	cl := &call{res: res, abandon: abandon}
	return c.do(addr, cl, requestFrame(kindRead, group, reqs), timeout)
}

// requestFrame encodes a batch call into a frame still to be sealed.
func requestFrame(kind byte, group slots.GroupID, reqs []request.Request) []byte {
	n := 2 * binary.MaxVarintLen64
	for i := range reqs {
		n += request.EncodedLen(&reqs[i])
	}
	b := binary.AppendUvarint(startFrame(kind, n), uint64(group))
	return appendRequests(b, reqs)
}

// Admin sends a cluster administration command for Raft group group with its
// arguments to addr and returns its text answer.
func (c *Client) Admin(addr string, group slots.GroupID, cmd string, args []string, timeout time.Duration) (string, error) {
	cl := &call{}
	b := binary.AppendUvarint(startFrame(kindAdmin, 64), uint64(group))
	err := c.do(addr, cl, appendAdmin(b, append([]string{cmd}, args...)), timeout)
	return cl.text, err
}

func (c *Client) do(addr string, cl *call, frame []byte, timeout time.Duration) error {
	cl.done = make(chan struct{})
	cl.deadline = time.Now().Add(timeout)
	cc, err := c.conn(addr, timeout)
	if err != nil {
		// Both wrapped: callers retry on ErrNotSent, and a joining node
		// tells the dial's cause apart (mux.ErrSecretMismatch and so on).
		return fmt.Errorf("%w: %w", ErrNotSent, err)
	}
	if !cc.register(cl, frame) {
		return ErrNotSent
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	var why string
	select {
	case <-cl.done:
		return cl.err
	case <-t.C:
		why = fmt.Sprintf("no answer within %v", timeout)
	case <-cl.abandon:
		why = "abandoned: the destination no longer leads"
	}
	cc.forget(cl.id)
	if cl.sent.Load() {
		cl.finish(fmt.Errorf("%w: %s", ErrLost, why))
	} else {
		cl.finish(ErrNotSent)
	}
	<-cl.done
	return cl.err
}

// conn returns a live connection to addr, dialling if the pool is short.
func (c *Client) conn(addr string, timeout time.Duration) (*clientConn, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, ErrClosed
	}
	p := c.pools[addr]
	if p == nil {
		p = &pool{}
		c.pools[addr] = p
	}
	c.mu.Unlock()

	p.mu.Lock()
	defer p.mu.Unlock()
	live := p.conns[:0]
	for _, cc := range p.conns {
		if !cc.isDead() {
			live = append(live, cc)
		}
	}
	p.conns = live
	if len(p.conns) < c.perDest {
		nc, err := c.dial(addr, timeout)
		if err != nil {
			if len(p.conns) == 0 {
				return nil, err
			}
		} else {
			cc := newClientConn(nc)
			c.mu.Lock()
			closed := c.closed
			c.mu.Unlock()
			if closed {
				cc.fail(ErrClosed)
				return nil, ErrClosed
			}
			p.conns = append(p.conns, cc)
		}
	}
	return p.conns[p.next.Add(1)%uint64(len(p.conns))], nil
}

// Close fails every call in flight and closes every connection.
func (c *Client) Close() {
	c.mu.Lock()
	c.closed = true
	pools := c.pools
	c.pools = map[string]*pool{}
	c.mu.Unlock()
	for _, p := range pools {
		p.mu.Lock()
		for _, cc := range p.conns {
			cc.fail(ErrClosed)
		}
		p.mu.Unlock()
	}
}

// clientConn is one multiplexed connection.
type clientConn struct {
	nc net.Conn
	w  *bufio.Writer // used by the flushing caller only

	mu       sync.Mutex
	calls    map[uint64]*call
	nextID   uint64
	dead     bool
	err      error
	pending  []*call // registered, not yet taken by the flushing caller
	spare    []*call // the flusher's previous batch, reused
	flushing bool    // a caller is writing; it takes pending before it stops
}

func newClientConn(nc net.Conn) *clientConn {
	cc := &clientConn{nc: nc, w: bufio.NewWriterSize(nc, 64<<10), calls: make(map[uint64]*call)}
	go cc.readLoop()
	return cc
}

func (cc *clientConn) isDead() bool {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return cc.dead
}

// register assigns cl an ID, seals frame (begun by startFrame) with it and
// sends it; false if the connection is dead. The caller that finds nobody
// writing becomes the writer: it writes its frame and every frame queued
// meanwhile, flushing once per round, until the queue is empty (or, under a
// steady stream, for callerRounds rounds; see flush). Others just queue and
// return, and the reader wakes them when their answer arrives.
func (cc *clientConn) register(cl *call, frame []byte) bool {
	cc.mu.Lock()
	if cc.dead {
		cc.mu.Unlock()
		return false
	}
	cc.nextID++
	cl.id = cc.nextID
	cl.frame = sealFrame(frame, cl.id)
	cc.calls[cl.id] = cl
	cc.pending = append(cc.pending, cl)
	if cc.flushing {
		cc.mu.Unlock()
		return true
	}
	cc.flushing = true
	cc.mu.Unlock()
	cc.flush(callerRounds)
	return true
}

func (cc *clientConn) forget(id uint64) {
	cc.mu.Lock()
	delete(cc.calls, id)
	cc.mu.Unlock()
}

// callerRounds bounds the rounds a caller writes for others before it
// hands the rest to a goroutine: under a steady stream of calls the queue
// may never empty, and a caller must get back to waiting for its own answer.
const callerRounds = 2

// flush writes queued calls, many per flush, until none is left. Only the
// goroutine that set flushing runs it: a caller, for at most rounds rounds
// (then a goroutine started for the rest of the burst takes over; rounds <
// 0: no bound). A socket that takes no bytes until the latest deadline of
// the calls being written fails the connection, which answers every call on
// it (ErrLost once written).
func (cc *clientConn) flush(rounds int) {
	for round := 0; ; round++ {
		cc.mu.Lock()
		if round == rounds && len(cc.pending) > 0 && !cc.dead {
			cc.mu.Unlock()
			go cc.flush(-1) // still flushing: the goroutine finishes the burst
			return
		}
		batch := cc.pending
		cc.pending = cc.spare[:0]
		if len(batch) == 0 || cc.dead {
			cc.flushing = false
			cc.spare = batch[:0]
			cc.mu.Unlock()
			return
		}
		cc.mu.Unlock()
		var deadline time.Time
		for _, b := range batch {
			if b.deadline.After(deadline) {
				deadline = b.deadline
			}
		}
		err := cc.nc.SetWriteDeadline(deadline)
		for _, b := range batch {
			b.sent.Store(true) // from here on the outcome may be unknown
			if err == nil {
				_, err = cc.w.Write(b.frame)
			}
			b.frame = nil
		}
		if err == nil {
			err = cc.w.Flush()
		}
		clear(batch)
		cc.mu.Lock()
		cc.spare = batch[:0]
		cc.mu.Unlock()
		if err != nil {
			cc.fail(err) // answers every registered call, queued ones too
			cc.mu.Lock()
			cc.flushing = false
			cc.mu.Unlock()
			return
		}
	}
}

// readLoop matches answers to calls.
func (cc *clientConn) readLoop() {
	r := bufio.NewReaderSize(cc.nc, 64<<10)
	var buf []byte
	for {
		id, status, payload, nb, err := readFrame(r, buf)
		buf = nb
		if err != nil {
			cc.fail(err)
			return
		}
		cc.mu.Lock()
		cl := cc.calls[id]
		delete(cc.calls, id)
		cc.mu.Unlock()
		if cl == nil {
			continue // timed out and forgotten
		}
		cl.finish(decodeAnswer(status, payload, cl))
	}
}

func decodeAnswer(status byte, payload []byte, cl *call) error {
	switch status {
	case statusOK:
		if cl.res != nil {
			return decodeResults(payload, cl.res)
		}
		text, _, err := readString(payload)
		cl.text = text
		return err
	case statusError:
		return decodeError(payload)
	}
	return fmt.Errorf("forward: unknown response status %d", status)
}

// fail kills the connection once and answers every call in flight:
// ErrLost for those whose frame was written, ErrNotSent for the rest.
func (cc *clientConn) fail(cause error) {
	cc.mu.Lock()
	if cc.dead {
		cc.mu.Unlock()
		return
	}
	cc.dead, cc.err = true, cause
	calls := cc.calls
	cc.calls = nil
	cc.mu.Unlock()
	cc.nc.Close()
	for _, cl := range calls {
		if cl.sent.Load() {
			cl.finish(fmt.Errorf("%w: %v", ErrLost, cause))
		} else {
			cl.finish(ErrNotSent)
		}
	}
}
