package server

import (
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/redcell/redcell/commands"
	"github.com/redcell/redcell/request"
)

// Client-side caching (CLIENT TRACKING), as Redis 6+ does it.
//
// A tracking connection's reads remember their keys in the tracker's table
// (default mode; OPTIN only after CLIENT CACHING YES, OPTOUT unless after
// CLIENT CACHING NO); BCAST connections register key prefixes instead. The
// state machine reports every applied entry's written keys (Written, called
// on raft's FSM goroutine, fsm.WriteWatcher), so a write made through any node
// of the cluster invalidates here once this node applies it. Each remembered
// key is invalidated once and forgotten until it is read again; FLUSHALL
// (and a restored snapshot) invalidates everything with a null.
//
// Invalidations are pushes: RESP3 `>2 invalidate [keys]` on the connection
// itself, or, with REDIRECT, on another connection: RESP3 the same push,
// RESP2 a pubsub message on `__redis__:invalidate`, which that connection
// must have SUBSCRIBEd to (else Redis sends nothing, and neither do we).
// Pushes never block the state machine: they are appended to the target
// connection's push buffer, which its own pusher goroutine writes (or the
// connection itself, before its next replies), so a push reaches a client
// before the reply to any command it sends after the write that caused it
// was applied here. A connection whose client does not read its pushes is
// closed at maxPushBytes, as Redis closes pubsub clients over their output
// limit.
//
// Ordering that makes the cache safe: a read's keys are remembered before
// the read is executed (queued, proposed or forwarded), so every write
// applied here after the value was read invalidates it. A write applied
// between remembering and reading gives an invalidation the client did not
// need, never a missing one. On a follower the read is answered by the
// leader at a point at or after what this node has applied when the key was
// remembered, so a write later than that point is applied here afterwards
// and invalidates.
//
// Not invalidated: keys that expire (a limiter key that lapses is the same as
// a fresh one). Clients cap a cached entry's life by the key's PTTL, which
// rueidis reads inside its caching transaction.

// maxTrackedKeys bounds the tracking table, as Redis's
// tracking-table-max-keys (default 1,000,000): past it, arbitrary keys are
// invalidated and forgotten.
const maxTrackedKeys = 1_000_000

// maxPushBytes is how many unsent push bytes a connection may hold before it
// is closed (Redis's pubsub output limit is 32 MB hard).
const maxPushBytes = 32 << 20

// invalidateChannel is the pubsub channel of RESP2 redirected invalidations.
const invalidateChannel = "__redis__:invalidate"

// tracker is the server's tracking table; it is the fsm.WriteWatcher the
// node connects to its state machine (Server.WriteWatcher).
type tracker struct {
	active atomic.Bool // some connection tracks: the state machine reports writes

	mu      sync.Mutex
	keys    map[string][]int64     // remembered key → IDs of the connections that read it
	clients map[int64]*trackClient // connections with tracking on
	bcast   []*trackClient         // those in BCAST mode
	touched []*trackClient         // scratch of one Written call
	items   int                    // IDs in keys, summed (INFO tracking_total_items)
	maxKeys int                    // maxTrackedKeys; lower in tests
	maxPush int                    // maxPushBytes; lower in tests
}

// trackClient is one tracking connection as the tracker sees it. Its fields
// change under tracker.mu only (the connection's goroutine reads its own
// mode without it: it is the only writer).
type trackClient struct {
	c        *conn
	bcast    bool
	noloop   bool
	redirect int64 // 0: none
	redirTo  *conn // the redirect target, resolved when tracking was enabled
	prefixes []string
	// own counts the keys of this connection's writes in flight (NOLOOP):
	// invalidations of them are not sent to it, as Redis skips the client
	// that made the change.
	own map[string]int
	// pending holds this Written call's invalidations; flushed: a null one;
	// touched: it is in tracker.touched.
	pending [][]byte
	flushed bool
	touched bool
}

// connTracking is a connection's own tracking state; only its goroutine
// touches it.
type connTracking struct {
	client        *trackClient // non-nil while CLIENT TRACKING is on
	optin, optout bool
	caching       bool     // CLIENT CACHING YES (OPTIN) or NO (OPTOUT): for the next command
	window        []string // NOLOOP: keys counted in client.own during a Propose
	subscribed    atomic.Bool
}

func newTracker() *tracker {
	return &tracker{keys: map[string][]int64{}, clients: map[int64]*trackClient{}, maxKeys: maxTrackedKeys, maxPush: maxPushBytes}
}

// Watching reports whether any connection tracks (fsm.WriteWatcher).
func (t *tracker) Watching() bool { return t.active.Load() }

// Written sends the invalidations of one applied entry (fsm.WriteWatcher).
// Called on raft's FSM goroutine; it never blocks on a connection.
func (t *tracker) Written(keys [][]byte, flushed bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if flushed {
		for _, tc := range t.clients {
			tc.flushed = true
			t.touch(tc)
		}
		clear(t.keys)
		t.items = 0
	}
	for _, k := range keys {
		if ids, ok := t.keys[string(k)]; ok {
			for _, id := range ids {
				tc := t.clients[id]
				if tc == nil || tc.bcast || tc.own[string(k)] > 0 {
					continue
				}
				tc.pending = append(tc.pending, k)
				t.touch(tc)
			}
			t.items -= len(ids)
			delete(t.keys, string(k))
		}
		for _, tc := range t.bcast {
			if tc.own[string(k)] == 0 && hasAnyPrefix(k, tc.prefixes) {
				tc.pending = append(tc.pending, k)
				t.touch(tc)
			}
		}
	}
	for i, tc := range t.touched {
		if tc.flushed {
			t.deliver(tc, nil, true)
		}
		if len(tc.pending) > 0 {
			t.deliver(tc, tc.pending, false)
		}
		clear(tc.pending)
		tc.pending, tc.flushed, tc.touched = tc.pending[:0], false, false
		t.touched[i] = nil
	}
	t.touched = t.touched[:0]
}

// touch adds tc to this call's targets once. Caller holds mu.
func (t *tracker) touch(tc *trackClient) {
	if !tc.touched {
		tc.touched = true
		t.touched = append(t.touched, tc)
	}
}

func hasAnyPrefix(k []byte, prefixes []string) bool {
	for _, p := range prefixes {
		if len(k) >= len(p) && string(k[:len(p)]) == p {
			return true
		}
	}
	return false
}

// deliver queues one invalidation (keys, or null) for tc: on its own
// connection in RESP3, or on its redirect target. Caller holds mu.
func (t *tracker) deliver(tc *trackClient, keys [][]byte, null bool) {
	to, redirected := tc.c, false
	if tc.redirect != 0 {
		if tc.redirTo == nil || tc.redirTo.out.isClosed() {
			// The client can no longer learn what to invalidate: tell it
			// (RESP3), as Redis does.
			if tc.c.proto.Load() == 3 {
				id := tc.redirect
				tc.c.enqueuePush(func(b []byte) []byte {
					b = append(b, ">2\r\n$21\r\ntracking-redir-broken\r\n:"...)
					b = strconv.AppendInt(b, id, 10)
					return append(b, '\r', '\n')
				})
			}
			return
		}
		to, redirected = tc.redirTo, true
	}
	resp3 := to.proto.Load() == 3
	if !resp3 && !(redirected && to.trk.subscribed.Load()) {
		return // RESP2 has no pushes on the connection itself
	}
	to.enqueuePush(func(b []byte) []byte {
		if resp3 {
			b = append(b, ">2\r\n$10\r\ninvalidate\r\n"...)
		} else {
			b = append(b, "*3\r\n$7\r\nmessage\r\n$20\r\n"+invalidateChannel+"\r\n"...)
		}
		switch {
		case null && resp3:
			return append(b, '_', '\r', '\n')
		case null:
			return append(b, '$', '-', '1', '\r', '\n')
		}
		b = append(b, '*')
		b = strconv.AppendInt(b, int64(len(keys)), 10)
		b = append(b, '\r', '\n')
		for _, k := range keys {
			b = append(b, '$')
			b = strconv.AppendInt(b, int64(len(k)), 10)
			b = append(b, '\r', '\n')
			b = append(b, k...)
			b = append(b, '\r', '\n')
		}
		return b
	})
}

// remember records that connection tc read keys. Caller: its connection's
// goroutine, before the read runs.
func (t *tracker) remember(tc *trackClient, r *request.Request) {
	t.mu.Lock()
	defer t.mu.Unlock()
	r.ForEachKey(func(k []byte) { t.rememberKey(tc.c.id, k) })
}

func (t *tracker) rememberKey(id int64, k []byte) {
	ids, ok := t.keys[string(k)]
	for _, o := range ids {
		if o == id {
			return
		}
	}
	if !ok && len(t.keys) >= t.maxKeys {
		t.evictOne()
	}
	t.keys[string(k)] = append(ids, id)
	t.items++
}

// evictOne invalidates and forgets one remembered key (Redis picks a random
// one too). Caller holds mu.
func (t *tracker) evictOne() {
	for k, ids := range t.keys {
		key := [][]byte{[]byte(k)}
		for _, id := range ids {
			if tc := t.clients[id]; tc != nil && !tc.bcast {
				t.deliver(tc, key, false)
			}
		}
		t.items -= len(ids)
		delete(t.keys, k)
		return
	}
}

// trackRead remembers the keys of a read this connection is about to run,
// if its tracking mode says so.
func (c *conn) trackRead(r *request.Request) {
	tc := c.trk.client
	if tc == nil || tc.bcast || (c.trk.optin && !c.trk.caching) || (c.trk.optout && c.trk.caching) {
		return
	}
	switch {
	case request.Describe(r.Code).Keys == request.KeyPattern:
		return // Key is a pattern (SCAN, KEYS), not a key: Redis tracks no key for them
	case r.Key == nil && len(r.Keys) == 0:
		return
	}
	c.s.trk.remember(tc, r)
}

// trackReads remembers the keys of a transaction's reads (EXEC).
func (c *conn) trackReads(reqs []request.Request) {
	if c.trk.client == nil {
		return
	}
	for i := range reqs {
		if !reqs[i].Code.IsWrite() {
			c.trackRead(&reqs[i])
		}
	}
}

// endCommand ends the effect of CLIENT CACHING after the command that
// followed it (a whole transaction, from MULTI to EXEC; CLIENT commands do
// not count), as Redis resets the flag.
func (c *conn) endCommand(name []byte) {
	if c.trk.caching && !c.tx.active && !commands.EqualFold(name, "client") {
		c.trk.caching = false
	}
}

// noloopBegin counts the keys of writes this NOLOOP connection is about to
// propose, so that their invalidations are not sent back to it; false when
// there is nothing to undo.
func (c *conn) noloopBegin(reqs []request.Request) bool {
	tc := c.trk.client
	if tc == nil || !tc.noloop {
		return false
	}
	t := c.s.trk
	t.mu.Lock()
	defer t.mu.Unlock()
	for i := range reqs {
		r := &reqs[i]
		if !r.Code.IsWrite() {
			continue
		}
		r.ForEachKey(func(k []byte) { c.trk.window = append(c.trk.window, string(k)) })
	}
	for _, k := range c.trk.window {
		tc.own[k]++
	}
	return true
}

// noloopEnd undoes noloopBegin once the writes are answered.
func (c *conn) noloopEnd() {
	tc := c.trk.client
	t := c.s.trk
	t.mu.Lock()
	for _, k := range c.trk.window {
		if tc.own[k]--; tc.own[k] <= 0 {
			delete(tc.own, k)
		}
	}
	t.mu.Unlock()
	clear(c.trk.window)
	c.trk.window = c.trk.window[:0]
}

// untrack turns tracking off for c (CLIENT TRACKING OFF, RESET, close). Its
// remembered keys are dropped lazily, when next invalidated.
func (c *conn) untrack() {
	tc := c.trk.client
	c.trk.optin, c.trk.optout, c.trk.caching = false, false, false
	if tc == nil {
		return
	}
	t := c.s.trk
	t.mu.Lock()
	if t.clients[c.id] == tc {
		delete(t.clients, c.id)
	}
	if tc.bcast {
		for i, o := range t.bcast {
			if o == tc {
				t.bcast = append(t.bcast[:i], t.bcast[i+1:]...)
				break
			}
		}
	}
	t.active.Store(len(t.clients) > 0)
	t.mu.Unlock()
	c.trk.client = nil
}

// pushOut carries pushes to a connection's socket without blocking whoever
// produces them: they are appended to buf, and written by the connection's
// pusher goroutine (started with its first push) or by the connection
// itself before its next replies, whichever takes wmu first.
type pushOut struct {
	wmu sync.Mutex // serialises writes to the socket: replies and pushes

	mu      sync.Mutex
	buf     []byte
	spare   []byte
	pending atomic.Bool // buf is not empty
	wake    chan struct{}
	started bool
	closed  bool
}

// enqueuePush appends a push built by build to c's push buffer. Safe from
// any goroutine; never blocks on the network.
func (c *conn) enqueuePush(build func([]byte) []byte) {
	o := &c.out
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return
	}
	o.buf = build(o.buf)
	if len(o.buf) > c.s.trk.maxPush {
		o.closed = true
		o.buf = nil
		o.mu.Unlock()
		c.s.warnClient("closing a client that does not read its invalidation pushes", "addr", c.addr, "id", c.id)
		c.nc.Close()
		return
	}
	o.pending.Store(true)
	if !o.started {
		o.started = true
		o.wake = make(chan struct{}, 1)
		go c.runPusher(o.wake)
	}
	select { // under mu: closeTracking closes wake under mu too
	case o.wake <- struct{}{}:
	default:
	}
	o.mu.Unlock()
}

// runPusher writes c's pushes as they come until c closes.
func (c *conn) runPusher(wake <-chan struct{}) {
	for range wake {
		c.out.wmu.Lock()
		if b := c.takePushes(); len(b) > 0 {
			_, err := c.nc.Write(b)
			c.s.stats.netOut.Add(int64(len(b)))
			c.recyclePushes(b)
			if err != nil {
				c.nc.Close() // the connection's goroutine sees it and ends
			}
		}
		c.out.wmu.Unlock()
		if c.out.isClosed() {
			return
		}
	}
}

// takePushes returns the pushes not yet written and empties the buffer.
// Caller holds wmu.
func (c *conn) takePushes() []byte {
	o := &c.out
	if !o.pending.Load() {
		return nil
	}
	o.mu.Lock()
	b := o.buf
	o.buf, o.spare = o.spare[:0], nil
	o.pending.Store(false)
	o.mu.Unlock()
	return b
}

// recyclePushes keeps a written buffer for the next pushes.
func (c *conn) recyclePushes(b []byte) {
	if cap(b) > 1<<20 {
		return
	}
	o := &c.out
	o.mu.Lock()
	if o.spare == nil {
		o.spare = b[:0]
	}
	o.mu.Unlock()
}

func (o *pushOut) isClosed() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.closed
}

// writePushesFirst writes pending pushes before a connection's replies.
// Caller holds wmu.
func (c *conn) writePushesFirst() error {
	b := c.takePushes()
	if len(b) == 0 {
		return nil
	}
	n, err := c.nc.Write(b)
	c.s.stats.netOut.Add(int64(n))
	c.recyclePushes(b)
	return err
}

// closeTracking ends c's tracking and pushes when the connection ends.
func (c *conn) closeTracking() {
	c.untrack()
	c.trk.subscribed.Store(false)
	o := &c.out
	o.mu.Lock()
	o.closed = true
	if o.started {
		close(o.wake) // the pusher exits
	}
	o.mu.Unlock()
}

// trackingStats are INFO's tracking fields: connections with tracking on,
// remembered keys, (key, connection) pairs, and BCAST prefixes.
func (t *tracker) stats() (clients, keys, items, prefixes int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, tc := range t.bcast {
		prefixes += len(tc.prefixes)
	}
	return len(t.clients), len(t.keys), t.items, prefixes
}

// listFields are c's CLIENT LIST fields for MULTI, pubsub and tracking, as
// Redis shows them: flags (x in MULTI, P subscribed, t tracking, B BCAST, R
// broken redirect; N for none), sub (channels), multi (queued commands, -1
// outside MULTI) and redir (-1 when not tracking). Safe from any goroutine.
func (c *conn) listFields() (flags string, sub, multi int, redir int64) {
	multi = int(c.tx.shown.Load()) - 1
	if multi >= 0 {
		flags += "x"
	}
	if c.trk.subscribed.Load() {
		flags += "P"
		sub = 1
	}
	redir = -1
	t := c.s.trk
	t.mu.Lock()
	if tc := t.clients[c.id]; tc != nil {
		flags += "t"
		if tc.bcast {
			flags += "B"
		}
		if tc.redirect != 0 && (tc.redirTo == nil || tc.redirTo.out.isClosed()) {
			flags += "R"
		}
		redir = tc.redirect
	}
	t.mu.Unlock()
	if flags == "" {
		flags = "N"
	}
	return flags, sub, multi, redir
}

// connByID finds a connected client by its ID (CLIENT TRACKING REDIRECT).
func (s *Server) connByID(id int64) *conn {
	var found *conn
	s.forEachConn(func(o *conn) {
		if o.id == id {
			found = o
		}
	})
	return found
}

// WriteWatcher is what the node connects to its state machine
// (fsm.FSM.WatchWrites) so that applied writes invalidate the keys clients
// cache: it satisfies fsm.WriteWatcher without this package importing fsm.
func (s *Server) WriteWatcher() interface {
	Watching() bool
	Written(keys [][]byte, flushed bool)
} {
	return s.trk
}
