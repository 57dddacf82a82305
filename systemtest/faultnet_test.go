package systemtest

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// faultNet is a set of fault-injecting TCP proxies, one in front of each node
// of a test cluster, that share one view of which links are cut.
//
// Node i is started with --advertise set to its proxy's address, so every peer
// connection TO node i (Raft, request forwarding) goes through proxy_i, which
// forwards to node i's real port. Clients dial real ports and never cross a
// proxy. A peer connection starts with a header byte ≥ 0x80 and the mux
// handshake (mux/handshake.go):
//
//	dialer   → acceptor  H
//	acceptor → dialer    "RCP1" | Na             (36 bytes)
//	dialer   → acceptor  Nd | L | ID | MAC        (32 + 1 + L + 32 bytes)
//	acceptor → dialer    MAC                      (32 bytes)
//
// The proxy forwards the acceptor's challenge as soon as it comes (the dialer
// sends nothing more until it has it), reads the dialer's H, Nd, L and ID, and
// so learns the source node of the connection: the link is src → dst, where
// dst is the node the proxy stands in front of. It verifies nothing and
// forwards every byte unchanged. A connection whose first byte is below 0x80
// is not a peer connection: it is forwarded without attribution and no fault
// applies to it.
//
// A fault names one side of a partition; every link between a node on that
// side and a node off it is cut, in both directions. Two kinds:
//
//   - partition (drop): connections on cut links are closed at once; a new one
//     is closed as soon as its source is known (after the challenge, which
//     passes before the proxy can know who dials).
//   - stall: connections on cut links stay open but carry no byte, in either
//     direction, until the fault is lifted; a close by one end is not passed
//     on either (as a FIN would be lost on a dead network). A new connection
//     is held the same way once attributed.
//
// A third, one-way, cuts only the links INTO the nodes on the cut side:
//
//   - isolateInbound: connections whose destination is on the cut side and
//     whose source is not stall as above; connections the cut side dials
//     to the others, and those among either side, pass. This is a node
//     whose port drops what arrives while its own connections work (a
//     firewall rule, a one-way partition): Raft from it flows, because it
//     dials its followers, and nothing its peers dial reaches it.
//
// One fault is in force at a time: partition, stall and isolateInbound
// replace the fault in force, heal lifts it. Bytes that had passed the check before a call may
// still be delivered just after it returns (at most one buffer per
// direction per connection).
type faultNet struct {
	mu      sync.Mutex
	side    map[string]bool // the cut side; empty means no fault
	stalled bool            // the fault stalls instead of dropping
	inbound bool            // only links into the cut side are cut (isolateInbound)
	changed chan struct{}   // closed and replaced at every change of the fault
	proxies []*faultProxy
	seen    map[[2]string]int // attributed connections per (src, dst)
	// opaque: peers speak TLS (--tls-cluster), so the handshake that names
	// the dialer is encrypted. Peer connections are then counted per
	// destination only (opaqueSeen), never attributed, and no fault
	// applies to them: partitions need a cluster without TLS.
	opaque     bool
	opaqueSeen map[string]int
}

// faultProxy is one listener of a faultNet, in front of node dst.
type faultProxy struct {
	net     *faultNet
	dstID   string
	dstAddr string // guarded by net.mu (retarget)
	ln      net.Listener
	ctx     context.Context // cancelled when the proxy closes
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	conns   map[*proxyConn]struct{} // guarded by net.mu
	closed  bool                    // guarded by net.mu
}

// proxyConn is one proxied connection: in from the dialer, out to the node.
type proxyConn struct {
	p       *faultProxy
	in, out net.Conn // out is nil until the dial to the node succeeds
	src     string   // the dialer's node ID once attributed; guarded by net.mu
	closed  bool     // guarded by net.mu: out must be closed by whoever sets it
	done    chan struct{}
	once    sync.Once
}

// Bounds of the proxy's own waits.
const (
	faultDialTimeout = 5 * time.Second
	faultBufSize     = 32 << 10
)

func newFaultNet(t testing.TB) *faultNet {
	f := &faultNet{changed: make(chan struct{}), seen: map[[2]string]int{}, opaqueSeen: map[string]int{}}
	t.Cleanup(f.close)
	return f
}

// proxy starts the proxy for node dstID, whose real address is dstAddr, on
// a free loopback port, and returns its address. It closes at the end of the
// test, with every connection through it.
func (f *faultNet) proxy(t testing.TB, dstID, dstAddr string) (addr string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("faultnet: listening for %s: %v", dstID, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &faultProxy{net: f, dstID: dstID, dstAddr: dstAddr, ln: ln, ctx: ctx, cancel: cancel, conns: map[*proxyConn]struct{}{}}
	f.mu.Lock()
	f.proxies = append(f.proxies, p)
	f.mu.Unlock()
	p.wg.Add(1)
	go p.acceptLoop()
	t.Cleanup(p.close)
	return ln.Addr().String()
}

// retarget points node dstID's proxy at a new real address: the node's
// first start found its port taken and it bound another one (node.repick);
// the address the others dial, the proxy's, stays.
func (f *faultNet) retarget(dstID, dstAddr string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range f.proxies {
		if p.dstID == dstID {
			p.dstAddr = dstAddr
		}
	}
}

// target is the real address the proxy forwards to now.
func (p *faultProxy) target() string {
	p.net.mu.Lock()
	defer p.net.mu.Unlock()
	return p.dstAddr
}

// partition cuts every link between the nodes in side and the others, both
// directions, closing the connections on them at once.
func (f *faultNet) partition(side ...string) { f.setFault(side, false) }

// stall cuts the same links as partition but keeps their connections open,
// carrying nothing until heal.
func (f *faultNet) stall(side ...string) { f.setFault(side, true) }

// isolateInbound stalls every link into the nodes in side from the others,
// leaving the links they dial, and those among the others, working.
func (f *faultNet) isolateInbound(side ...string) { f.setFaultOf(side, true, true) }

// heal restores every link; stalled connections resume where they stopped.
func (f *faultNet) heal() { f.setFault(nil, false) }

// connsSeen is the number of peer connections from src to dst the proxies
// have attributed so far (cut or not): a cluster test can check that peer
// traffic really goes through the proxies.
func (f *faultNet) connsSeen(src, dst string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.seen[[2]string{src, dst}]
}

// opaqueConnsSeen is the number of peer connections to dst the proxy passed
// without reading them (opaque mode).
func (f *faultNet) opaqueConnsSeen(dst string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.opaqueSeen[dst]
}

func (f *faultNet) setFault(side []string, stalled bool) { f.setFaultOf(side, stalled, false) }

func (f *faultNet) setFaultOf(side []string, stalled, inbound bool) {
	f.mu.Lock()
	f.side = map[string]bool{}
	for _, id := range side {
		f.side[id] = true
	}
	f.stalled = stalled && len(side) > 0
	f.inbound = inbound && len(side) > 0
	close(f.changed)
	f.changed = make(chan struct{})
	var drop []*proxyConn
	if !f.stalled {
		for _, p := range f.proxies {
			for pc := range p.conns {
				if f.cutLocked(pc.src, p.dstID) {
					drop = append(drop, pc)
				}
			}
		}
	}
	f.mu.Unlock()
	for _, pc := range drop {
		pc.close()
	}
}

// cutLocked reports whether the link src → dst is cut. An unattributed
// connection (src "") is never cut. f.mu is held.
func (f *faultNet) cutLocked(src, dst string) bool {
	if src == "" || len(f.side) == 0 {
		return false
	}
	if f.inbound {
		return f.side[dst] && !f.side[src]
	}
	return f.side[src] != f.side[dst]
}

// gate waits until pc's link carries bytes. It returns false when pc must
// end instead: its link is dropped, or pc or its proxy closed.
func (f *faultNet) gate(pc *proxyConn) bool {
	for {
		f.mu.Lock()
		cut, stalled, changed := f.cutLocked(pc.src, pc.p.dstID), f.stalled, f.changed
		f.mu.Unlock()
		switch {
		case !cut:
			select {
			case <-pc.done:
				return false
			default:
				return true
			}
		case !stalled:
			return false
		}
		select {
		case <-changed:
		case <-pc.done:
			return false
		}
	}
}

func (f *faultNet) close() {
	f.mu.Lock()
	ps := append([]*faultProxy(nil), f.proxies...)
	f.mu.Unlock()
	for _, p := range ps {
		p.close()
	}
}

func (p *faultProxy) close() {
	f := p.net
	f.mu.Lock()
	if p.closed {
		f.mu.Unlock()
		p.wg.Wait()
		return
	}
	p.closed = true
	conns := make([]*proxyConn, 0, len(p.conns))
	for pc := range p.conns {
		conns = append(conns, pc)
	}
	f.mu.Unlock()
	p.cancel()
	p.ln.Close()
	for _, pc := range conns {
		pc.close()
	}
	p.wg.Wait()
}

func (p *faultProxy) acceptLoop() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if p.ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			select { // a transient error (out of descriptors): retry shortly
			case <-p.ctx.Done():
				return
			case <-time.After(10 * time.Millisecond):
			}
			continue
		}
		pc := &proxyConn{p: p, in: c, done: make(chan struct{})}
		p.net.mu.Lock()
		if p.closed {
			p.net.mu.Unlock()
			c.Close()
			return
		}
		p.conns[pc] = struct{}{}
		p.wg.Add(1)
		p.net.mu.Unlock()
		go pc.run()
	}
}

// close ends the connection: both sockets close, every goroutine of it
// returns.
func (pc *proxyConn) close() {
	pc.once.Do(func() {
		f := pc.p.net
		f.mu.Lock()
		delete(pc.p.conns, pc)
		pc.closed = true
		out := pc.out
		f.mu.Unlock()
		close(pc.done)
		pc.in.Close()
		if out != nil {
			out.Close()
		}
	})
}

// run dials the node, passes the first byte on, attributes a peer
// connection by its handshake, then copies both ways through the gate.
func (pc *proxyConn) run() {
	p := pc.p
	f := p.net
	var copiers sync.WaitGroup
	defer p.wg.Done()
	defer copiers.Wait() // after the close below has ended the copier
	defer pc.close()

	d := net.Dialer{Timeout: faultDialTimeout}
	out, err := d.DialContext(p.ctx, "tcp", p.target())
	if err != nil {
		return
	}
	f.mu.Lock()
	closed := pc.closed
	if !closed {
		pc.out = out
	}
	f.mu.Unlock()
	if closed { // closed during the dial
		out.Close()
		return
	}

	var first [1]byte
	if _, err := io.ReadFull(pc.in, first[:]); err != nil {
		return
	}
	if _, err := out.Write(first[:]); err != nil {
		return
	}
	copiers.Add(1)
	go func() { // node → dialer: carries the challenge before attribution
		defer copiers.Done()
		pc.pipe(pc.out, pc.in)
	}()
	if first[0] < 0x80 {
		pc.pipe(pc.in, out)
		return
	}
	f.mu.Lock()
	opaque := f.opaque
	if opaque {
		f.opaqueSeen[p.dstID]++
	}
	f.mu.Unlock()
	if opaque {
		pc.pipe(pc.in, out)
		return
	}

	// Nd | L | ID: the dialer's node ID, read before anything goes on.
	hello := make([]byte, 33, 33+255)
	if _, err := io.ReadFull(pc.in, hello); err != nil {
		return
	}
	hello = hello[:33+int(hello[32])]
	if _, err := io.ReadFull(pc.in, hello[33:]); err != nil {
		return
	}
	f.mu.Lock()
	pc.src = string(hello[33:])
	f.seen[[2]string{pc.src, p.dstID}]++
	f.mu.Unlock()
	if !f.gate(pc) {
		return
	}
	if _, err := out.Write(hello); err != nil {
		return
	}
	pc.pipe(pc.in, out)
}

// pipe copies from → to, each chunk through the gate, and closes pc when
// either side ends (after the gate too: a stalled link passes no close).
func (pc *proxyConn) pipe(from, to net.Conn) {
	defer pc.close()
	buf := make([]byte, faultBufSize)
	for {
		n, rerr := from.Read(buf)
		if !pc.p.net.gate(pc) {
			return
		}
		if n > 0 {
			if _, err := to.Write(buf[:n]); err != nil {
				return
			}
		}
		if rerr != nil {
			return
		}
	}
}
