package group

import (
	"errors"
	"net"
	"sync"
	"syscall"
	"time"
)

// Waiting for a restarting peer. hashicorp/raft's leader replicates to each
// follower on its own goroutine, and every failed AppendEntries doubles the
// pause before its next try (replicateTo: 10 ms × 2^(failures-2), up to
// 10.24 s), with a try at most every CommitTimeout (50–100 ms) while idle.
// A follower that is down refuses each connection at once, so a few seconds
// of downtime run the count up to where the leader sleeps 2.5–10 s before
// it speaks to the follower again, and the restarted follower, which needs
// the leader's commit index to apply its log, answers LOADING all that
// time. Nothing can wake that sleep, so the dial does not fail fast: a dial
// whose peer refuses the connection waits, up to the transport's timeout,
// for the peer to accept, so a down peer costs the leader one failure per
// timeout instead of one per try, and a restarted one is reached within
// peerRedialEvery of its port opening.
//
// One poller per address redials (peerRedialEvery), however many of raft's
// goroutines wait on it (replication, heartbeats, and a vote request per
// election per peer): a peer that is down for long costs 1/peerRedialEvery
// connection attempts a second, not one per waiting goroutine.

// peerRedialEvery is how often a refused peer is dialled again while
// something waits for it.
const peerRedialEvery = 10 * time.Millisecond

// peerRedial holds the pollers of the peers that refuse connections.
type peerRedial struct {
	// unreachable tells a failure that waiting may cure (isRefused when
	// nil); set before the first dial.
	unreachable func(error) bool

	mu   sync.Mutex
	down map[string]*downPeer
}

func (p *peerRedial) isDown(err error) bool {
	if p.unreachable != nil {
		return p.unreachable(err)
	}
	return isRefused(err)
}

// downPeer is one refusing peer's poller and its waiters. back is closed when
// the poller ends: with a connection in conn (for one waiter) when the peer
// accepted and the handshake succeeded, empty when it gave up or met another
// error (each waiter then dials for itself and gets its own answer).
type downPeer struct {
	waiters int // guarded by peerRedial.mu
	back    chan struct{}
	conn    chan net.Conn // capacity 1
}

// isRefused reports whether err is a connection the peer's host refused:
// nothing listens on the port, as while the peer's process restarts. The
// default of StreamLayer.Unreachable.
func isRefused(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) }

// dial dials addr; while the peer refuses (or, with unreachable set, cannot
// be reached in any way that waiting may cure), it waits for the shared poller
// to reach it, until timeout or stop. Goroutines: any (raft's transport
// calls it from its replication, heartbeat and vote goroutines).
func (p *peerRedial) dial(dialPeer func(string, time.Duration) (net.Conn, error), addr string, timeout time.Duration, stop <-chan struct{}) (net.Conn, error) {
	end := time.Now().Add(timeout)
	c, err := dialPeer(addr, timeout)
	for err != nil && p.isDown(err) {
		d := p.join(dialPeer, addr, timeout, stop)
		t := time.NewTimer(time.Until(end))
		select {
		case <-d.back:
		case <-t.C:
		case <-stop:
		}
		t.Stop()
		if c, ok := p.leave(d); ok {
			return c, nil
		}
		if !closed(d.back) || closed(stop) || time.Now().After(end) {
			return nil, err
		}
		// The poller met another answer (or ended as its last waiter
		// left): dial for ourselves; a refusal starts a new poller.
		c, err = dialPeer(addr, timeout)
	}
	return c, err
}

// closed reports whether ch is closed.
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// join counts one more waiter on addr's poller, starting one if none runs.
func (p *peerRedial) join(dialPeer func(string, time.Duration) (net.Conn, error), addr string, timeout time.Duration, stop <-chan struct{}) *downPeer {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.down == nil {
		p.down = make(map[string]*downPeer)
	}
	d := p.down[addr]
	if d == nil {
		d = &downPeer{back: make(chan struct{}), conn: make(chan net.Conn, 1)}
		p.down[addr] = d
		go p.poll(d, dialPeer, addr, timeout, stop)
	}
	d.waiters++
	return d
}

// leave uncounts a waiter, handing it the poller's connection if there is
// one. Under the lock, so the poller never leaves a connection that no
// waiter will take.
func (p *peerRedial) leave(d *downPeer) (net.Conn, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	d.waiters--
	select {
	case c := <-d.conn:
		return c, true
	default:
		return nil, false
	}
}

// poll redials addr every peerRedialEvery until the peer accepts, another
// error comes, stop closes, or no one waits any more. Goroutine: one per
// refusing address, started by join.
func (p *peerRedial) poll(d *downPeer, dialPeer func(string, time.Duration) (net.Conn, error), addr string, timeout time.Duration, stop <-chan struct{}) {
	t := time.NewTicker(peerRedialEvery)
	defer t.Stop()
	var c net.Conn
	for p.wanted(d) {
		select {
		case <-stop:
		case <-t.C:
			var err error
			if c, err = dialPeer(addr, timeout); err != nil && p.isDown(err) {
				continue
			}
		}
		break
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if c != nil {
		if d.waiters > 0 {
			d.conn <- c
		} else {
			c.Close()
		}
	}
	close(d.back)
	if p.down[addr] == d {
		delete(p.down, addr)
	}
}

// wanted reports whether anyone still waits on d.
func (p *peerRedial) wanted(d *downPeer) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return d.waiters > 0
}
