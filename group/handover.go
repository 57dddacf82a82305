package group

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// Graceful leadership handover: a leader that is about to stop (SIGTERM,
// SHUTDOWN) or is asked to move its leadership (RAFT TRANSFER) hands it to
// a caught-up voter in a way no client sees as an error:
//
//  1. It stops taking new requests: awaitReady and enqueue answer
//     ErrNotLeader at once while the handover runs. Nothing was appended,
//     so the caller retries — the router here waits for the next leader
//     and forwards there, a follower that forwarded the call gets
//     FailNotLeader and does the same. It refuses rather than holds: a
//     follower abandons a forwarded write as "outcome unknown" the moment
//     it learns of another leader (node's leaderWatch), so a call held here
//     until the leadership moved would race that and could lose.
//  2. It waits for what it already took to be answered: queued batches
//     are proposed, and every entry in flight is committed and applied, so
//     their clients get their results. (Transferring with entries in flight
//     would answer them raft.ErrLeadershipLost, "outcome unknown": they are
//     in this node's log and the new leader may well commit them.)
//  3. raft.LeadershipTransfer (or ToServer, for RAFT TRANSFER <id>): raft
//     picks the voter with the most of the log, brings it up to the last
//     index and sends it TimeoutNow; it starts an election at once, which
//     this node's vote wins for it.
//  4. It waits until this node knows the new leader, so that its own
//     clients' requests, retried by the router, go straight there.
//
// Every wait is bounded (handoverBound); past it the handover gives up and
// says so, and the node stops as it would have without one (a failover).
//
// Which raft errors are safe to retry, for an Apply (mapRaftErr):
// ErrNotLeader and ErrLeadershipTransferInProgress are answered before the
// entry reaches the log (raft's leaderLoop refuses it, or a follower's
// loop does), so nothing happened and the request is retried (ErrNoLeader);
// ErrLeadershipLost is answered for an entry already in this leader's log,
// which a later leader may commit: ErrOutcomeUnknown, never retried
// blindly. A VerifyLeader (a read) has no effect, so any of them means
// "ask the leader again".

// handover is the group's handover state.
type handover struct {
	// on is set while a handover runs: new requests are refused with
	// ErrNotLeader (awaitReady, enqueue).
	on atomic.Bool
	// running is held by the one handover in progress.
	running atomic.Bool
	// electionTimeout is raft's, which paces each step's bound.
	electionTimeout time.Duration
}

// ErrHandoverInProgress answers a second handover while one runs.
var ErrHandoverInProgress = errors.New("group: a leadership handover is already in progress")

// handoverPoll spaces the looks at the proposer while it drains (a few
// milliseconds in all; once per stop, so not worth a signal).
const handoverPoll = time.Millisecond

// handoverBound is how long each step may take: the drain, raft's transfer
// (raft itself gives up after one election timeout, and a target that was
// behind may need more than one try), and learning the new leader.
func (g *Group) handoverBound() time.Duration {
	return 5 * max(g.handover.electionTimeout, 100*time.Millisecond)
}

// HandOver transfers leadership to the most caught-up voter before this
// node stops, as described above. It returns nil at once when this node
// does not lead or has no other voter (nothing to hand over), and nil once
// another node leads and this node knows it. On error the node may still
// lead; the caller stops anyway.
func (g *Group) HandOver() error { return g.handOver("") }

// handOver is HandOver to the voter id ("" for raft's choice: the one with
// the most of the log). Callers: the node's stop, RAFT TRANSFER (Transfer).
func (g *Group) handOver(id string) error {
	if g.stopping.Load() {
		return ErrShutdown
	}
	if g.raft.State() != raft.Leader {
		return ErrNotLeader
	}
	if g.otherVoters() == 0 {
		return errNoVoterToHandTo
	}
	if id != "" { // a named target must be another voter: checked before new requests are refused
		if err := g.checkTransferTarget(id); err != nil {
			return err
		}
	}
	if !g.handover.running.CompareAndSwap(false, true) {
		return ErrHandoverInProgress
	}
	defer g.handover.running.Store(false)
	began := time.Now()
	g.qmu.Lock() // enqueue checks on under qmu: nothing joins the queue after this
	g.handover.on.Store(true)
	g.qmu.Unlock()
	defer g.handover.on.Store(false)
	g.leaderSig.fire() // callers waiting in awaitReady look again, and are refused

	bound := g.handoverBound()
	if !g.waitDrained(bound) {
		g.log.Warn("leadership handover: requests still in flight after the bound; transferring anyway (they may be answered as of unknown outcome)",
			"bound", bound, "queued", g.queued(), "in_flight", g.batcher.inflight.Load())
	}
	drained := time.Since(began)
	deadline := time.Now().Add(bound)
	var err error
	for attempt := 1; ; attempt++ {
		err = g.transferOnce(id)
		if err == nil || g.raft.State() != raft.Leader || time.Now().After(deadline) || g.stopping.Load() {
			break
		}
		g.log.Debug("leadership handover: transfer attempt failed; trying again", "attempt", attempt, "err", err)
		// A refusal raft answers at once (the target is mid-restart or
		// was removed meanwhile) must not become a busy loop that holds
		// every request refused: try again after a fraction of an
		// election timeout, or when the leadership changes.
		select {
		case <-g.LeaderChanged():
		case <-time.After(g.handoverBound() / 20):
		case <-g.stopCh:
		}
	}
	if g.raft.State() == raft.Leader {
		return fmt.Errorf("group: leadership handover: still the leader after %v: %w", time.Since(began).Round(time.Millisecond), err)
	}
	leaderID, ok := g.awaitOtherLeader(time.Now().Add(bound))
	if !ok {
		return fmt.Errorf("group: leadership handover: stepped down, but no new leader known after %v", time.Since(began).Round(time.Millisecond))
	}
	g.log.Info("leadership handed over", "to", leaderID, "took", time.Since(began).Round(time.Microsecond),
		"drain", drained.Round(time.Microsecond))
	return nil
}

// errNoVoterToHandTo: a leader without another voter has nobody to hand
// its leadership to; its stop is what it would have been anyway.
var errNoVoterToHandTo = errors.New("group: no other voter to hand leadership to")

// IsNoVoterToHandTo reports whether HandOver found nobody to hand over to.
func IsNoVoterToHandTo(err error) bool { return errors.Is(err, errNoVoterToHandTo) }

// waitDrained waits until no batch is queued and no entry is in flight
// (every one answered), at most bound.
func (g *Group) waitDrained(bound time.Duration) bool {
	deadline := time.Now().Add(bound)
	t := time.NewTicker(handoverPoll)
	defer t.Stop()
	for {
		if g.queued() == 0 && g.batcher.inflight.Load() == 0 {
			return true
		}
		if time.Now().After(deadline) || g.stopping.Load() {
			return false
		}
		<-t.C
	}
}

// transferOnce asks raft for one leadership transfer (to id, or raft's
// choice) and waits for its answer, which raft bounds by an election
// timeout.
func (g *Group) transferOnce(id string) error {
	if id == "" {
		return g.raft.LeadershipTransfer().Error()
	}
	m, err := g.transferTarget(id)
	if err != nil {
		return err
	}
	return g.raft.LeadershipTransferToServer(raft.ServerID(id), raft.ServerAddress(m.Addr)).Error()
}

// checkTransferTarget refuses a transfer to this node itself or to a node
// that is not a voting member, which raft would refuse at once.
func (g *Group) checkTransferTarget(id string) error {
	_, err := g.transferTarget(id)
	return err
}

// transferTarget is the voting member id, other than this node.
func (g *Group) transferTarget(id string) (Member, error) {
	if id == g.cfg.NodeID {
		return Member{}, fmt.Errorf("group: node %s is this node: it leads already", id)
	}
	m, ok, err := g.member(id)
	if err != nil {
		return Member{}, err
	}
	if !ok || m.Suffrage != Voter {
		return Member{}, fmt.Errorf("group: node %s is not a voting member", id)
	}
	return m, nil
}

// awaitOtherLeader waits until this node knows a leader other than itself,
// until deadline; it returns that leader's ID.
func (g *Group) awaitOtherLeader(deadline time.Time) (string, bool) {
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	for {
		changed := g.LeaderChanged()
		if addr, id := g.Leader(); addr != "" && id != g.cfg.NodeID {
			return id, true
		}
		select {
		case <-changed:
		case <-t.C:
			return "", false
		case <-g.stopCh:
			return "", false
		}
	}
}
