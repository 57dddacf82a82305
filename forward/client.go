package forward

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redcell/redcell/request"
)

// Errors a call can end with besides a RemoteError.
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
// goroutines at once and block until answered, failed or timed out. Each
// connection has one writer and one reader goroutine. Close may be called
// from any goroutine.
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
	id      uint64
	frame   []byte
	res     []request.Result
	abandon <-chan struct{} // nil: never
	text    string
	err     error
	sent    atomic.Bool
	done    chan struct{}
	once    sync.Once
}

func (c *call) finish(err error) {
	c.once.Do(func() {
		c.err = err
		close(c.done)
	})
}

// Propose forwards write requests to addr and fills res.
//
// The call ends at timeout, or as soon as abandon closes (the caller's way
// of saying the destination no longer leads: a stalled link to a deposed
// leader must not hold a client for the whole timeout). Either way a call
// whose frame was written ends with ErrLost. abandon may be nil.
func (c *Client) Propose(addr string, reqs []request.Request, res []request.Result, timeout time.Duration, abandon <-chan struct{}) error {
	body := appendRequests([]byte{kindPropose}, reqs)
	cl := &call{res: res, abandon: abandon}
	return c.do(addr, cl, body, timeout)
}

// Read forwards read requests to addr and fills res; timeout and abandon
// as for Propose.
func (c *Client) Read(addr string, reqs []request.Request, res []request.Result, timeout time.Duration, abandon <-chan struct{}) error {
	body := appendRequests([]byte{kindRead}, reqs)
	cl := &call{res: res, abandon: abandon}
	return c.do(addr, cl, body, timeout)
}

// Admin sends a cluster administration command with its arguments to addr
// and returns its text answer.
func (c *Client) Admin(addr, cmd string, args []string, timeout time.Duration) (string, error) {
	cl := &call{}
	err := c.do(addr, cl, appendAdmin([]byte{kindAdmin}, append([]string{cmd}, args...)), timeout)
	return cl.text, err
}

func (c *Client) do(addr string, cl *call, body []byte, timeout time.Duration) error {
	cl.done = make(chan struct{})
	cc, err := c.conn(addr, timeout)
	if err != nil {
		// Both wrapped: callers retry on ErrNotSent, and a joining node
		// tells the dial's cause apart (mux.ErrSecretMismatch and so on).
		return fmt.Errorf("%w: %w", ErrNotSent, err)
	}
	if !cc.register(cl, body) {
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
	nc   net.Conn
	out  chan *call
	quit chan struct{} // closed by fail

	mu     sync.Mutex
	calls  map[uint64]*call
	nextID uint64
	dead   bool
	err    error
}

func newClientConn(nc net.Conn) *clientConn {
	cc := &clientConn{nc: nc, out: make(chan *call, 1024), quit: make(chan struct{}), calls: make(map[uint64]*call)}
	go cc.writeLoop()
	go cc.readLoop()
	return cc
}

func (cc *clientConn) isDead() bool {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return cc.dead
}

// register assigns cl an ID, frames body and queues it for the writer;
// false if the connection is dead.
func (cc *clientConn) register(cl *call, body []byte) bool {
	cc.mu.Lock()
	if cc.dead {
		cc.mu.Unlock()
		return false
	}
	cc.nextID++
	cl.id = cc.nextID
	cl.frame = appendFrame(make([]byte, 0, len(body)+12), cl.id, body)
	cc.calls[cl.id] = cl
	cc.mu.Unlock()
	// If the connection dies before the writer takes the call, fail has
	// already answered it (it was registered): nothing is lost either way.
	select {
	case cc.out <- cl:
	case <-cc.quit:
	}
	return true
}

func (cc *clientConn) forget(id uint64) {
	cc.mu.Lock()
	delete(cc.calls, id)
	cc.mu.Unlock()
}

// writeLoop sends queued calls, many per flush.
func (cc *clientConn) writeLoop() {
	w := bufio.NewWriterSize(cc.nc, 64<<10)
	var batch []*call
	for {
		var cl *call
		select {
		case cl = <-cc.out:
		case <-cc.quit:
			return
		}
		batch = append(batch[:0], cl)
		for more := true; more; {
			select {
			case next := <-cc.out:
				batch = append(batch, next)
			default:
				more = false
			}
		}
		var err error
		for _, b := range batch {
			b.sent.Store(true) // from here on the outcome may be unknown
			if err == nil {
				_, err = w.Write(b.frame)
			}
			b.frame = nil
		}
		if err == nil {
			err = w.Flush()
		}
		if err != nil {
			cc.fail(err) // answers every registered call, queued ones too
			return
		}
		clear(batch)
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
	close(cc.quit)
	for _, cl := range calls {
		if cl.sent.Load() {
			cl.finish(fmt.Errorf("%w: %v", ErrLost, cause))
		} else {
			cl.finish(ErrNotSent)
		}
	}
}
