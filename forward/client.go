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
	// ErrUnreachable: the destination could not be reached: no connection
	// with its handshake within the reach timeout, or nothing at all heard
	// back on a connection within it of a ping (reach.go). It is wrapped
	// together with ErrNotSent or ErrLost, which say what the caller may
	// assume; this says why.
	ErrUnreachable = errors.New("forward: the destination cannot be reached")
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
	// reach bounds a dial with its handshake, and the wait for anything
	// at all from the destination after a ping (reach.go).
	reach time.Duration

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
	return &Client{dial: dial, perDest: ConnsPerDestination, reach: DefaultReachTimeout, pools: make(map[string]*pool)}
}

// SetReachTimeout sets how long a destination may take to complete a
// dial's handshake, or to send anything back after a ping, before it is
// taken as unreachable (DefaultReachTimeout unless set). Call it before
// the first call.
func (c *Client) SetReachTimeout(d time.Duration) {
	if d > 0 {
		c.reach = d
	}
}

// pool is the connections to one destination.
type pool struct {
	addr  string
	mu    sync.Mutex
	conns []*clientConn
	next  atomic.Uint64
	// dialing is open while a dial to addr runs (one at a time: every
	// caller that needs a connection waits for it rather than dialling
	// again), closed when it ends; dialErr is its error.
	dialing chan struct{}
	dialErr error
	// downSince is when addr was last found unreachable (mono), 0 while
	// it answers: set by a failed dial or a connection given up for
	// silence, cleared by a dial that completes and by any byte read from
	// addr (reach.go).
	downSince atomic.Int64
}

// call is one request in flight.
type call struct {
	id       uint64
	frame    []byte
	deadline time.Time // the writer gives up on a stalled socket then
	res      []request.Result
	abandon  <-chan struct{} // nil: never
	ping     bool            // a ping (Probe): any answer will do
	admin    bool            // an administration call: its dial has its whole timeout
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
	cl := &call{admin: true}
	b := binary.AppendUvarint(startFrame(kindAdmin, 64), uint64(group))
	err := c.do(addr, cl, appendAdmin(b, append([]string{cmd}, args...)), timeout)
	return cl.text, err
}

func (c *Client) do(addr string, cl *call, frame []byte, timeout time.Duration) error {
	cl.done = make(chan struct{})
	cl.deadline = time.Now().Add(timeout)
	dialFor := min(timeout, c.reach)
	if cl.admin {
		// An administration call's dial has its whole timeout, as
		// before the reach timeout: a joining node tells a peer that
		// refuses its TLS or its secret from one that is down by how the
		// handshake fails, which may take the peer's own handshake
		// timeout (mux/dialerror.go).
		dialFor = timeout
	}
	cc, err := c.conn(addr, timeout, dialFor)
	if err != nil {
		// Both wrapped: callers retry on ErrNotSent, and a joining node
		// tells the dial's cause apart (mux.ErrSecretMismatch and so on).
		return fmt.Errorf("%w: %w", ErrNotSent, err)
	}
	next, ok := cc.register(cl, frame)
	if !ok {
		return ErrNotSent
	}
	// Wait for the answer, looking at the connection whenever it has been
	// quiet long enough to be in doubt (reach.go): a ping then, and the
	// connection given up if nothing at all comes back within the reach
	// timeout. A destination that answers pings is waited for until the
	// call's own timeout, however long its decision takes.
	t := time.NewTimer(min(timeout, time.Until(next)))
	defer t.Stop()
	var why string
wait:
	for {
		select {
		case <-cl.done:
			return cl.err
		case <-cl.abandon:
			why = "abandoned: the destination no longer leads"
			break wait
		case <-t.C:
			now := time.Now()
			if !now.Before(cl.deadline) {
				why = fmt.Sprintf("no answer within %v", timeout)
				break wait
			}
			next, dead := cc.check(now)
			if dead {
				cc.giveUp()
				<-cl.done // fail answers every call on the connection
				return cl.err
			}
			t.Reset(min(cl.deadline.Sub(now), next.Sub(now)))
		}
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
// One dial runs at a time per destination, bounded by dialFor (the reach
// timeout for calls and pings): a caller that finds no connection waits
// for the dial under way (at most its own timeout) and shares its outcome,
// so a destination whose handshake never completes costs every caller one
// reach timeout at most, not one each in turn. A caller that finds a
// connection while the pool is short uses it and dials the next one in the
// background.
func (c *Client) conn(addr string, timeout, dialFor time.Duration) (*clientConn, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, ErrClosed
	}
	p := c.pools[addr]
	if p == nil {
		p = &pool{addr: addr}
		c.pools[addr] = p
	}
	c.mu.Unlock()

	var wait *time.Timer
	defer func() {
		if wait != nil {
			wait.Stop()
		}
	}()
	for {
		p.mu.Lock()
		live := p.conns[:0]
		for _, cc := range p.conns {
			if !cc.isDead() {
				live = append(live, cc)
			}
		}
		clear(p.conns[len(live):])
		p.conns = live
		n := len(p.conns)
		if n < c.perDest && p.dialing == nil {
			ch := make(chan struct{})
			p.dialing = ch
			if n > 0 {
				go c.dialInto(p, ch, dialFor)
			} else {
				p.mu.Unlock()
				c.dialInto(p, ch, dialFor)
				p.mu.Lock()
				if len(p.conns) == 0 {
					err := p.dialErr
					p.mu.Unlock()
					return nil, err
				}
				n = len(p.conns)
			}
		}
		if n > 0 {
			cc := p.conns[p.next.Add(1)%uint64(n)]
			p.mu.Unlock()
			return cc, nil
		}
		// No connection, and another caller's dial under way: its
		// outcome is ours.
		ch := p.dialing
		p.mu.Unlock()
		if wait == nil {
			wait = time.NewTimer(timeout)
		}
		select {
		case <-ch:
		case <-wait.C:
			return nil, fmt.Errorf("no connection to %s within %v", addr, timeout)
		}
		p.mu.Lock()
		if len(p.conns) == 0 && p.dialing == nil {
			err := p.dialErr
			p.mu.Unlock()
			return nil, err
		}
		p.mu.Unlock()
	}
}

// dialInto dials p's destination within bound (the reach timeout, or less
// when the caller has less left; an administration call's own timeout) and
// adds the connection to p, or records the failure; then it closes ch,
// which ends the dial under way. Caller set p.dialing to ch.
func (c *Client) dialInto(p *pool, ch chan struct{}, bound time.Duration) {
	nc, err := c.dial(p.addr, bound)
	var cc *clientConn
	if err == nil {
		cc = newClientConn(nc, p, c.reach)
		c.mu.Lock()
		closed := c.closed
		c.mu.Unlock()
		if closed {
			cc.fail(ErrClosed)
			cc, err = nil, ErrClosed
		} else {
			p.markUp()
		}
	} else {
		err = fmt.Errorf("%w: %w", ErrUnreachable, err)
		p.markDown()
	}
	p.mu.Lock()
	if cc != nil {
		p.conns = append(p.conns, cc)
	}
	p.dialErr = err
	p.dialing = nil
	p.mu.Unlock()
	close(ch)
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
	nc    net.Conn
	w     *bufio.Writer // used by the flushing caller only
	pool  *pool
	reach time.Duration
	// heard is when a byte last arrived from the destination (mono);
	// pingAt when the last ping was queued (mono; guarded by mu).
	heard  atomic.Int64
	pingAt int64

	mu       sync.Mutex
	calls    map[uint64]*call
	nextID   uint64
	dead     bool
	err      error
	pending  []*call // registered, not yet taken by the flushing caller
	spare    []*call // the flusher's previous batch, reused
	flushing bool    // a caller is writing; it takes pending before it stops
}

func newClientConn(nc net.Conn, p *pool, reach time.Duration) *clientConn {
	cc := &clientConn{nc: nc, w: bufio.NewWriterSize(nc, 64<<10), pool: p, reach: reach, calls: make(map[uint64]*call)}
	cc.heard.Store(mono()) // the handshake just came back
	go cc.readLoop()
	return cc
}

func (cc *clientConn) isDead() bool {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return cc.dead
}

// register assigns cl an ID, seals frame (begun by startFrame) with it and
// sends it; ok is false if the connection is dead. The caller that finds
// nobody writing becomes the writer: it writes its frame and every frame
// queued meanwhile, flushing once per round, until the queue is empty (or,
// under a steady stream, for callerRounds rounds; see flush). Others just
// queue and return, and the reader wakes them when their answer arrives.
// When the connection has been quiet long enough to be in doubt, a ping
// goes right after the frame (reach.go); next is when the caller should
// look at the connection (check) if its answer has not come.
func (cc *clientConn) register(cl *call, frame []byte) (next time.Time, ok bool) {
	now := mono()
	cc.mu.Lock()
	if cc.dead {
		cc.mu.Unlock()
		return time.Time{}, false
	}
	cc.nextID++
	cl.id = cc.nextID
	cl.frame = sealFrame(frame, cl.id)
	cc.calls[cl.id] = cl
	cc.pending = append(cc.pending, cl)
	if cl.ping && cc.pingAt <= cc.heard.Load() {
		cc.pingAt = now // a ping already outstanding keeps its time: it is the one judged
	}
	l := judge(now, cc.heard.Load(), cc.pingAt, pingAfterQuiet, cc.reach)
	if l.ping {
		cc.queuePingLocked(now)
		l = judge(now, cc.heard.Load(), cc.pingAt, pingAfterQuiet, cc.reach)
	}
	if cc.flushing {
		cc.mu.Unlock()
		return fromMono(l.next), true
	}
	cc.flushing = true
	cc.mu.Unlock()
	cc.flush(callerRounds)
	return fromMono(l.next), true
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
	r := bufio.NewReaderSize(heardReader{cc}, 64<<10)
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
	if cl.ping {
		return nil // the destination answered: whatever it said, it is there
	}
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
			cl.finish(fmt.Errorf("%w: %w", ErrLost, cause))
		} else {
			cl.finish(fmt.Errorf("%w: %w", ErrNotSent, cause))
		}
	}
}
