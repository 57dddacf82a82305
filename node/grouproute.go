package node

import (
	"errors"
	"sync"
	"time"

	"github.com/redcell/redcell/forward"
	"github.com/redcell/redcell/group"
	"github.com/redcell/redcell/request"
	"github.com/redcell/redcell/server"
	"github.com/redcell/redcell/slots"
)

// groupRoute carries one group's calls: they are decided by the local
// Raft group when this node leads it, and forwarded to its leader when it
// does not. The router (router.go) picks the group of each request and
// hands the group's part to its groupRoute.
//
// Goroutines: Propose, Read, ReadLocal and Admin are called by connection
// goroutines, any number at once. The leader watch (leaderWatch) runs in
// one goroutine started by newGroupRoute and ended when stop closes.
type groupRoute struct {
	id        slots.GroupID
	local     *group.Local
	group     *group.Group
	fwd       *forward.Client
	watch     *leaderWatch
	checkJoin func(cmd string, args []string) error // join.go: run where a member is added
	timeout   time.Duration
	stop      <-chan struct{} // closed when the node stops
}

func newGroupRoute(id slots.GroupID, local *group.Local, g *group.Group, fwd *forward.Client, checkJoin func(string, []string) error, timeout time.Duration, stop <-chan struct{}) *groupRoute {
	if timeout <= 0 {
		timeout = DefaultWriteTimeout
	}
	rt := &groupRoute{id: id, local: local, group: g, fwd: fwd, watch: newLeaderWatch(g), checkJoin: checkJoin, timeout: timeout, stop: stop}
	go rt.watch.run(stop)
	return rt
}

// pause waits for the next leadership change, at most retryEvery (a known
// leader that does not answer is tried again soon) and at most left; it
// returns ErrShutdown at once when the node stops, so that no request holds
// up a shutdown for the rest of its timeout.
func (rt *groupRoute) pause(changed <-chan struct{}, left time.Duration) error {
	t := time.NewTimer(min(left, retryEvery))
	defer t.Stop()
	select {
	case <-changed:
	case <-t.C:
	case <-rt.stop:
		return request.ErrShutdown
	}
	return nil
}

// removed is the error for every request that needs the cluster on a node
// that was removed from it.
func (rt *groupRoute) removed() error {
	return request.Removed(rt.group.NodeID())
}

// noLeaderWait is how much longer a request that found no leader may wait
// for one: until the earlier of its own deadline and the moment this node
// knows there is no leader (group.NoLeaderKnownAt). Not positive on a node
// whose last contact with a leader is older than that: it answers at once.
func (rt *groupRoute) noLeaderWait(deadline time.Time) time.Duration {
	return time.Until(minTime(deadline, rt.group.NoLeaderKnownAt()))
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// Propose decides writes here or at the group's leader.
func (rt *groupRoute) Propose(reqs []request.Request, res []request.Result) error {
	return rt.routeAtLevel(reqs, res, true)
}

// Read answers reads linearizably here or at the leader.
func (rt *groupRoute) Read(reqs []request.Request, res []request.Result) error {
	return rt.routeAtLevel(reqs, res, false)
}

// routeAtLevel is route, except that a request whose code needs a cluster
// feature level above the active one is answered request.ErrFeatureLevel
// here, before anything is sent: the leader may run a build that cannot
// even decode it (group/featurelevel.go).
func (rt *groupRoute) routeAtLevel(reqs []request.Request, res []request.Result, write bool) error {
	if active := rt.group.FeatureLevel(); group.AboveLevel(active, reqs) {
		return group.AtLevel(active, reqs, res, func(r []request.Request, s []request.Result) error {
			return rt.route(r, s, write)
		})
	}
	return rt.route(reqs, res, write)
}

// ReadLocal answers a READONLY connection's reads from this node's state,
// leader or not, except on a node that was removed from the cluster. A
// READONLY read promises state stale by the replication lag; a removed node
// is never replicated to again, so its lag grows without bound and nothing
// tells the client: what it would answer for a limiter is whatever the
// limiter was when the node was removed, whatever the cluster has decided
// since. So it refuses, with the error that says why. (A node that merely
// has no leader still answers: its lag is the outage's length, and it
// catches up once a leader is back.)
func (rt *groupRoute) ReadLocal(reqs []request.Request, res []request.Result) error {
	if rt.group.Removed() {
		return rt.removed()
	}
	return rt.local.ReadLocal(reqs, res)
}

// route sends one call to whoever leads, waiting through elections up to the
// timeout, but not past the moment this node knows there is no leader, and
// not at all on a node that was removed. What it returns follows package
// request's batch failures: nothing is reported as failed unless it
// certainly did not happen.
func (rt *groupRoute) route(reqs []request.Request, res []request.Result, write bool) error {
	deadline := time.Now().Add(rt.timeout)
	var unreachableSince time.Time // when this call first failed to reach the leader
	for {
		wait := rt.group.LeaderChanged() // taken before looking, so no change is missed
		leaderAddr, _ := rt.group.Leader()
		leading := rt.group.IsLeader()
		var err error
		switch {
		case !leading && rt.group.Removed():
			return rt.removed()
		case leading:
			if write {
				err = rt.local.Propose(reqs, res)
			} else {
				err = rt.local.Read(reqs, res)
			}
			// The local group answers ErrNoLeader (or ErrNotLeader, which
			// wraps it) when it lost leadership before proposing: look
			// again. Everything else is final.
			if !errors.Is(err, request.ErrNoLeader) {
				return err
			}
		case leaderAddr != "":
			tried := time.Now()
			err = rt.forward(leaderAddr, reqs, res, write, time.Until(deadline))
			if err == nil || !retryable(err) {
				return err
			}
			if unreachable(err) {
				if unreachableSince.IsZero() {
					unreachableSince = tried
				}
				if rt.heardButUnreachable(leaderAddr, unreachableSince) {
					// Raft still hears the leader, so no election will
					// come: say so now, retryably (nothing happened).
					return request.ErrNoLeader
				}
			}
		default:
			err = request.ErrNoLeader
		}
		left := time.Until(deadline)
		if leaderAddr == "" && !leading {
			left = rt.noLeaderWait(deadline)
		}
		if left <= 0 {
			if errors.Is(err, request.ErrNotReady) {
				return request.ErrNotReady
			}
			return request.ErrNoLeader
		}
		// Wait for the leadership to change, but not forever on a leader
		// that is known yet unreachable or not ready: try again soon.
		if err := rt.pause(wait, left); err != nil {
			return err
		}
	}
}

// retryEvery spaces attempts at a leader that is known but not answering.
const retryEvery = 50 * time.Millisecond

// errRetry marks a forwarding failure after which nothing happened, so the
// call may go to the (new) leader again; unreachable, that the leader could
// not be reached at all (forward.ErrUnreachable).
type errRetry struct {
	cause       error
	unreachable bool
}

func (e errRetry) Error() string { return "retry: " + e.cause.Error() }
func (e errRetry) Unwrap() error { return e.cause }

func retryable(err error) bool {
	var r errRetry
	return errors.As(err, &r)
}

func unreachable(err error) bool {
	var r errRetry
	return errors.As(err, &r) && r.unreachable
}

// heardButUnreachable reports whether the leader at addr is one this node
// cannot reach while raft here still hears it: calls to it have failed for
// want of an answer since since (or since the forwarding client found it
// unreachable, if earlier) for at least a heartbeat timeout, and its last
// contact is more recent than that. That is a leader whose port drops what
// this node sends while its own connections to this node work (a one-way
// partition): heartbeats keep arriving (every tenth of the timeout), so
// raft holds no election, and a request would wait out its whole timeout
// for nothing. A leader that died or stalled is not one: its heartbeats
// stop with its answers, so by the time the failures have lasted the
// window its last contact is older than the window, and the request waits
// for the election as before. (The leader learns of it from its followers'
// reports and hands its groups over: reach.go.)
func (rt *groupRoute) heardButUnreachable(addr string, since time.Time) bool {
	if d := rt.fwd.DownSince(addr); !d.IsZero() && d.Before(since) {
		since = d
	}
	r := rt.group.Raft()
	window := r.ReloadableConfig().HeartbeatTimeout
	leader, _ := r.LeaderWithID()
	return string(leader) == addr && time.Since(since) >= window && time.Since(r.LastContact()) < window
}

// forward sends the call to the leader and decides on what came back: the
// leader's *request.Failure is passed on as it is, marked for a retry when
// its code says nothing happened at a node that could not decide (no
// leader there, not ready, stopping); a transport failure becomes the
// failure it amounts to.
func (rt *groupRoute) forward(addr string, reqs []request.Request, res []request.Result, write bool, timeout time.Duration) error {
	if timeout <= 0 {
		return errRetry{request.ErrNoLeader, false}
	}
	abandon := rt.watch.abandonFor(addr)
	var err error
	if write {
		err = rt.fwd.Propose(addr, rt.id, reqs, res, timeout, abandon)
	} else {
		err = rt.fwd.Read(addr, rt.id, reqs, res, timeout, abandon)
	}
	if err == nil {
		return nil
	}
	var f *request.Failure
	cut := errors.Is(err, forward.ErrUnreachable)
	switch {
	case errors.Is(err, forward.ErrNotSent):
		return errRetry{request.ErrNoLeader, cut}
	case errors.Is(err, forward.ErrLost):
		if !write {
			return errRetry{request.ErrNoLeader, cut} // a read may simply be asked again
		}
		return request.ErrOutcomeUnknown
	case errors.As(err, &f):
		switch f.Code {
		case request.FailNotLeader, request.FailNoLeader, request.FailShutdown, request.FailNotReady:
			return errRetry{f, false}
		case request.FailOutcomeUnknown, request.FailStateMachine, request.FailDiskFull:
			return f
		}
	}
	if write {
		return request.ErrOutcomeUnknown
	}
	return errRetry{request.ErrNoLeader, false}
}

// leaderWatch tells forwarded calls when to give up on the leader they
// were sent to: abandonFor(addr) returns a channel closed once raft here
// knows of a leader other than addr (or this node leads), or knows that there
// is no leader at all (group.NoLeaderKnownAt). A call still waiting on addr
// then ends at once, a write as outcome-unknown, a read to be retried. A
// leader whose links merely stall (or that was paused) would otherwise hold
// its followers' clients for the whole write timeout after the majority has
// moved on, or after this node has learnt that nobody leads.
//
// Every call to the same leader shares one channel (an epoch), closed by
// whoever first sees the leader move: the watch goroutine (one per node,
// started by newRouter, ended when the node stops) or a call that finds
// the leader already elsewhere. No goroutine is started per call.
type leaderWatch struct {
	g *group.Group

	mu    sync.Mutex
	addr  string        // the leader the current epoch's calls went to
	moved chan struct{} // closed when the leader moves away from addr
	// started wakes run when a call starts an epoch, so that it looks at
	// once (the leader may have gone between the call's look and now).
	started chan struct{}
}

func newLeaderWatch(g *group.Group) *leaderWatch {
	return &leaderWatch{g: g, moved: make(chan struct{}), started: make(chan struct{}, 1)}
}

// abandonFor returns the channel that closes when the leader moves away
// from addr. Any goroutine.
func (w *leaderWatch) abandonFor(addr string) <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.addr != addr {
		w.next(addr)
		select {
		case w.started <- struct{}{}:
		default: // run will look anyway
		}
	}
	return w.moved
}

// next ends the current epoch and starts one for calls to addr. Caller
// holds mu.
func (w *leaderWatch) next(addr string) {
	close(w.moved)
	w.addr, w.moved = addr, make(chan struct{})
}

// run ends the epoch whenever raft here learns the leader moved, until stop
// closes. Its own goroutine.
func (w *leaderWatch) run(stop <-chan struct{}) {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		changed := w.g.LeaderChanged()
		now, _ := w.g.Leader()
		leading := w.g.IsLeader()
		var knowNone <-chan time.Time
		w.mu.Lock()
		switch {
		case w.addr == "":
		case leading || (now != "" && now != w.addr):
			w.next("")
		case now == "":
			// raft here no longer follows addr: wait for a new leader
			// only until this node knows there is none.
			at := time.Until(w.g.NoLeaderKnownAt())
			if at <= 0 {
				w.next("")
				break
			}
			timer.Reset(at)
			knowNone = timer.C
		}
		w.mu.Unlock()
		select {
		case <-changed:
		case <-w.started:
		case <-knowNone: // look again: a leader may have contacted this node since
		case <-stop:
			return
		}
		if knowNone != nil && !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
	}
}

// leaderHandler serves forwarded calls with one local group only (never
// forwarding again). It does not check leadership itself: the group's
// proposer and read path do (a ready leader, or request.FailNotLeader at
// once when another node leads), and raft refuses an entry on a node that
// does not lead, so one check on the leader is the authoritative one.
type leaderHandler struct {
	n  *Node
	lg *localGroup
}

// handler is the forwarding server's Groups: the handler of a group this
// node runs, nil for any other.
func (n *Node) handler(id slots.GroupID) forward.Handler {
	if int(id) >= len(n.groups) {
		return nil
	}
	return leaderHandler{n: n, lg: n.groups[id]}
}

func (h leaderHandler) Propose(reqs []request.Request, res []request.Result, done func(error)) {
	h.lg.local.ProposeAsync(reqs, res, done)
}

func (h leaderHandler) Read(reqs []request.Request, res []request.Result, done func(error)) {
	h.lg.local.ReadAsync(reqs, res, done)
}

func (h leaderHandler) Admin(cmd string, args []string) (string, error) {
	return h.n.admin(h.lg, cmd, args)
}

// Admin runs a RAFT administration command: on this node when it concerns
// this node or this node leads, otherwise at the leader (waiting through an
// election up to the write timeout, but not past the moment this node knows
// there is no leader; a removed node has none to ask).
func (rt *groupRoute) Admin(op server.AdminOp, args []string) (string, error) {
	cmd := string(op) // as it travels to the leader and group.Local takes it
	if !group.LeaderOnly(cmd) {
		return rt.local.Admin(cmd, args)
	}
	deadline := time.Now().Add(rt.timeout)
	for {
		wait := rt.group.LeaderChanged()
		leaderAddr, _ := rt.group.Leader()
		leading := rt.group.IsLeader()
		var err error
		var text string
		switch {
		case !leading && rt.group.Removed():
			return "", rt.removed()
		case leading:
			// The node that adds a member checks it can reach it (join.go);
			// a follower leaves that to the leader it forwards to.
			if rt.checkJoin != nil {
				if err := rt.checkJoin(cmd, args); err != nil {
					return "", err
				}
			}
			text, err = rt.local.Admin(cmd, args)
			if !errors.Is(err, request.ErrNoLeader) {
				return text, err
			}
		case leaderAddr != "":
			text, err = rt.fwd.Admin(leaderAddr, rt.id, cmd, args, time.Until(deadline))
			var f *request.Failure
			switch {
			case err == nil:
				return text, nil
			case errors.As(err, &f) && !errors.Is(f, request.ErrNoLeader):
				return "", f // the leader's answer, refusals included
			case errors.Is(err, forward.ErrLost):
				return "", request.ErrOutcomeUnknown
			}
		}
		left := time.Until(deadline)
		if leaderAddr == "" && !leading {
			left = rt.noLeaderWait(deadline)
		}
		if left <= 0 {
			return "", request.ErrNoLeader
		}
		if err := rt.pause(wait, left); err != nil {
			return "", err
		}
	}
}
