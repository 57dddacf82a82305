package forward

import (
	"encoding/binary"
	"fmt"
	"time"
)

// Telling "cannot reach" from "slow to decide".
//
// A call the destination has not answered may be waiting for a slow
// decision (a large entry on a slow disk takes over a second), or may never
// have arrived: the destination's port drops what this node sends while
// its own connections to this node still work, so Raft, which it dials,
// sees nothing wrong. The client tells the two apart by whether anything
// at all comes back on the connection:
//
//   - A dial, with the peer handshake, must complete within the reach
//     timeout (Client.SetReachTimeout, DefaultReachTimeout).
//   - A connection that has heard nothing from the destination for
//     pingAfterQuiet while a call waits on it is sent a ping (kindPing),
//     which the destination's forward server answers from the
//     connection's reader, without its Raft group: a leader busy deciding
//     answers it at once. A call sent on a connection that was already
//     that quiet is followed by a ping in the same write.
//   - If nothing at all (not the pong, not any other answer) arrives
//     within the reach timeout of the ping, the connection is given up:
//     every call on it ends, ErrLost (sent: a write's outcome is unknown)
//     or ErrNotSent, either wrapping ErrUnreachable.
//
// So a destination that cannot be reached fails its callers within about
// pingAfterQuiet + the reach timeout, while one that answers pings is
// waited for until each call's own timeout. Each destination carries a
// verdict, DownSince: when it was last found unreachable, cleared by a
// completed dial or any byte read from it. Probe refreshes it for an idle
// destination with one ping, for callers that need it current (the node
// asks its peers for their verdicts on it: node/reach.go).

// DefaultReachTimeout is the reach timeout of a new Client. A dial on a LAN
// takes a few round trips (TCP, the header, the challenge, the proofs, and
// with TLS its handshake), a millisecond or so; a pong one. 750 ms leaves
// room for stalls of a busy host (threads waiting 150-220 ms were seen on
// a loaded 2-core machine: group/DESIGN.md) and for inter-region round
// trips, and together with pingAfterQuiet keeps a caller's wait for an
// unreachable destination under a second.
const DefaultReachTimeout = 750 * time.Millisecond

// pingAfterQuiet is how long a connection with a call waiting may stay
// silent before it is pinged. Under load answers flow far more often, so
// pings are sent only by quiet connections.
const pingAfterQuiet = 200 * time.Millisecond

// liveness is what a caller waiting on a connection does now: send a ping,
// give the connection up, or look again at next (mono).
type liveness struct {
	ping, dead bool
	next       int64
}

// judge decides about a connection with a call waiting, at now, given when
// it last heard a byte from the destination (heard) and when its last ping
// was queued (pinged, 0: never); times are mono. A ping is outstanding
// while nothing was heard since it went: the connection is dead once that
// lasted reach. Otherwise a connection quiet for quiet gets a ping. While a
// ping is outstanding the caller looks again every quiet as well: nobody
// tells it when the pong comes, and the connection may go silent right
// after it, which must be found out a quiet time later, not a reach
// timeout later. Pure.
func judge(now, heard, pinged int64, quiet, reach time.Duration) liveness {
	if pinged > heard {
		if now-pinged >= int64(reach) {
			return liveness{dead: true}
		}
		return liveness{next: min(pinged+int64(reach), now+int64(quiet))}
	}
	if now-heard >= int64(quiet) {
		return liveness{ping: true, next: now + int64(reach)}
	}
	return liveness{next: heard + int64(quiet)}
}

// epoch is the origin of mono: times as int64 from the monotonic clock,
// cheap to keep in atomics.
var epoch = time.Now()

func mono() int64 { return int64(time.Since(epoch)) }

func fromMono(m int64) time.Time { return epoch.Add(time.Duration(m)) }

// heardReader is the connection as its reader reads it: every read that
// returns bytes stamps heard and clears the destination's verdict.
type heardReader struct{ cc *clientConn }

func (h heardReader) Read(b []byte) (int, error) {
	n, err := h.cc.nc.Read(b)
	if n > 0 {
		h.cc.heard.Store(mono())
		h.cc.pool.markUp()
	}
	return n, err
}

func (p *pool) markUp() {
	if p.downSince.Load() != 0 {
		p.downSince.Store(0)
	}
}

func (p *pool) markDown() {
	p.downSince.CompareAndSwap(0, max(mono(), 1))
}

// check is a waiting caller's look at the connection (judge), sending the
// ping it calls for; dead: give the connection up.
func (cc *clientConn) check(now time.Time) (next time.Time, dead bool) {
	m := int64(now.Sub(epoch))
	cc.mu.Lock()
	if cc.dead {
		cc.mu.Unlock()
		return now.Add(cc.reach), false // fail is answering every call
	}
	l := judge(m, cc.heard.Load(), cc.pingAt, pingAfterQuiet, cc.reach)
	if l.dead {
		cc.mu.Unlock()
		return time.Time{}, true
	}
	if !l.ping {
		cc.mu.Unlock()
		return fromMono(l.next), false
	}
	cc.queuePingLocked(m)
	if cc.flushing {
		cc.mu.Unlock()
		return fromMono(l.next), false
	}
	cc.flushing = true
	cc.mu.Unlock()
	cc.flush(callerRounds)
	return fromMono(l.next), false
}

// giveUp fails the connection for silence and marks its destination
// unreachable.
func (cc *clientConn) giveUp() {
	cc.pool.markDown()
	cc.fail(fmt.Errorf("%w: nothing heard from %s within %v of a ping", ErrUnreachable, cc.pool.addr, cc.reach))
}

// queuePingLocked queues a ping that nobody waits for (its answer, matched
// to no call, only stamps heard). Caller holds mu and flushes (or finds a
// flush under way).
func (cc *clientConn) queuePingLocked(now int64) {
	cc.nextID++
	cc.pending = append(cc.pending, &call{id: cc.nextID, frame: sealFrame(pingFrame(), cc.nextID), deadline: fromMono(now).Add(cc.reach)})
	cc.pingAt = now
}

func pingFrame() []byte {
	return binary.AppendUvarint(startFrame(kindPing, binary.MaxVarintLen64), 0)
}

// Probe checks that addr can be reached, refreshing its verdict
// (DownSince): nil at once when a connection to it heard from it within
// fresh (no less than pingAfterQuiet), otherwise the outcome of a ping
// (dialling first if there is no connection): within two reach timeouts,
// the dial's and the ping's. Any goroutine.
func (c *Client) Probe(addr string, fresh time.Duration) error {
	fresh = max(fresh, pingAfterQuiet)
	c.mu.Lock()
	p := c.pools[addr]
	c.mu.Unlock()
	if p != nil {
		p.mu.Lock()
		for _, cc := range p.conns {
			if !cc.isDead() && mono()-cc.heard.Load() < int64(fresh) {
				p.mu.Unlock()
				return nil
			}
		}
		p.mu.Unlock()
	}
	cl := &call{ping: true}
	return c.do(addr, cl, pingFrame(), 3*c.reach)
}

// DownSince is when addr was found unreachable, if it still is (zero: it
// answers, or this client has not tried it). Any goroutine.
func (c *Client) DownSince(addr string) time.Time {
	c.mu.Lock()
	p := c.pools[addr]
	c.mu.Unlock()
	if p == nil {
		return time.Time{}
	}
	if d := p.downSince.Load(); d != 0 {
		return fromMono(d)
	}
	return time.Time{}
}

// Unreachable lists every destination this client finds unreachable now,
// with how long it has been. Any goroutine.
func (c *Client) Unreachable() map[string]time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out map[string]time.Duration
	now := mono()
	for addr, p := range c.pools {
		if d := p.downSince.Load(); d != 0 {
			if out == nil {
				out = make(map[string]time.Duration)
			}
			out[addr] = time.Duration(now - d)
		}
	}
	return out
}
