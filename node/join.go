package node

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/hashicorp/raft"

	"github.com/redcell/redcell/group"
	"github.com/redcell/redcell/mux"
	"github.com/redcell/redcell/request"
	"github.com/redcell/redcell/slots"
)

// Joining a cluster takes two steps, both driven by the joining node:
//
//  1. join: it asks a member (any; a follower answers with the leader's
//     address and the joiner follows) to add it as a non-voter. A non-voter
//     receives the log, or a snapshot, without counting towards the quorum,
//     so a new node cannot stall the cluster while it catches up.
//  2. promote: once its applied index has reached the commit index its
//     leader reports, it asks the leader to make it a voter.
//
// Step 2 also runs after a restart whenever this node finds itself a
// non-voter in the configuration, so a node that crashed between the steps
// finishes on its own. A restart with data never needs --join again.

// joinRetry spaces attempts while the cluster has no leader or the member
// asked is unreachable.
const joinRetry = 250 * time.Millisecond

// adminTimeout bounds one administration call to another node.
const adminTimeout = 15 * time.Second

// maxRedirects bounds how many times a join follows "not the leader".
const maxRedirects = 5

// join asks the cluster at addr to add this node to group id as a
// non-voter, following redirects to the group's leader, until it succeeds,
// stop closes, or it is clear that it cannot: the same secret or TLS
// mismatch (or refusal) twice in a row, or n.joinTimeout spent on a member
// that is unreachable or has no leader. The error then names the cause
// (*JoinError, joinerror.go). A node joins every group of the cluster, one
// after another (background, node.go).
func (n *Node) join(addr string, id slots.GroupID, stop <-chan struct{}) error {
	tries := newJoinAttempts(addr, n.joinTimeout)
	target := addr
	for redirects := 0; ; {
		_, err := n.fwd.Admin(target, id, "rejoin", []string{n.ID, n.Advertise.String()}, tries.callTimeout())
		if err == nil {
			n.log.Info("joined the cluster as a non-voter", "group", id, "via", target)
			return nil
		}
		var f *request.Failure
		if errors.As(err, &f) && f.Code == request.FailNotLeader && f.Detail != "" && redirects < maxRedirects {
			n.log.Info("join: following the redirect to the leader", "from", target, "leader", f.Detail)
			target = f.Detail
			redirects++
			continue
		}
		if jerr := tries.failed(err); jerr != nil {
			return jerr
		}
		n.log.Warn("join: retrying", "via", target, "cause", joinCause(err).String(), "err", err)
		target, redirects = addr, 0
		select {
		case <-stop:
			return errors.New("stopped before joining")
		case <-time.After(tries.pause()):
		}
	}
}

// promoteWhenCaughtUp runs while this node is a non-voter: once its applied
// index reaches the commit index the leader reports (asked over the
// forwarding connection: this node's own commit index only follows the
// entries it has received), it asks the leader to promote it. It returns
// when the node is a voter in the leader's configuration, or stop closes.
//
// The node's own configuration is only looked at once it has caught up: a
// node that joins again after losing its state replays its earlier life
// on the way, in which it was a voter, and must not take that for its
// promotion.
func (n *Node) promoteWhenCaughtUp(lg *localGroup, stop <-chan struct{}) {
	t := time.NewTicker(joinRetry)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		// raft's applied index, not the state machine's: no-op and barrier
		// entries never reach the state machine, so on an idle cluster
		// whose last entry is one, the state machine's index would stay
		// below the commit index until the next write.
		r := lg.group.Raft()
		leaderAddr, _ := r.LeaderWithID()
		if leaderAddr == "" {
			continue
		}
		if r.State() != raft.Leader {
			st, err := n.remoteStatus(string(leaderAddr), lg.id, adminTimeout)
			if err != nil || st.commit == 0 || r.AppliedIndex() < st.commit {
				continue
			}
		}
		me, ok := n.selfMember(lg)
		if !ok {
			continue // the configuration that adds us has not arrived yet
		}
		if me.Suffrage == group.Voter {
			return
		}
		if _, err := n.fwd.Admin(string(leaderAddr), lg.id, "promote", []string{n.ID}, adminTimeout); err != nil {
			n.log.Info("promotion not done yet; retrying", "group", lg.id, "err", err)
			continue
		}
		n.log.Info("promoted to voter", "group", lg.id, "applied_index", r.AppliedIndex())
		return
	}
}

func (n *Node) selfMember(lg *localGroup) (group.Member, bool) {
	ms, err := lg.group.Members()
	if err != nil {
		return group.Member{}, false
	}
	for _, m := range ms {
		if m.ID == n.ID {
			return m, true
		}
	}
	return group.Member{}, false
}

// admin executes a forwarded administration command with the local group lg
// only. A command that needs the leader, on a node that does not lead,
// fails with request.NotLeaderAt carrying the leader's address, which the
// forwarding server sends as it is so the sender can follow it.
func (n *Node) admin(lg *localGroup, cmd string, args []string) (string, error) {
	if cmd == groupsCommand {
		return strconv.Itoa(len(n.groups)), nil // groupcount.go: any node answers
	}
	if group.LeaderOnly(cmd) && !lg.group.IsLeader() {
		addr, _ := lg.group.Leader()
		return "", request.NotLeaderAt(addr)
	}
	if err := n.checkJoin(cmd, args); err != nil {
		return "", err
	}
	text, err := lg.local.Admin(cmd, args)
	if errors.Is(err, group.ErrNotLeader) {
		addr, _ := lg.group.Leader()
		return "", request.NotLeaderAt(addr)
	}
	if cmd == "status" && err == nil {
		text = n.withReach(text) // what this node cannot reach: reach.go
	}
	return text, err
}

// joinCheckTimeout bounds the dial that checks a new member: a peer
// handshake, which an acceptor bounds at mux.DefaultHandshakeTimeout.
const joinCheckTimeout = mux.DefaultHandshakeTimeout

// checkJoin runs before this node adds a member (RAFT JOIN from a client,
// or a joining node's call): it dials the new member's address through the
// mux, as Raft will, and refuses the join unless the member answers and
// proves the cluster secret, and (above the base feature level) unless
// its build supports the cluster's feature level; a promotion is checked
// for the level too (featurelevel.go). A member that cannot be reached would
// otherwise be added anyway, and its leader would then try to replicate to
// it, and log the failure, several times a second for as long as it stays
// in the configuration; on a node without a cluster secret that is
// forever, since such a node can reach no peer at all. Other commands pass.
//
// The dial uses the forwarding header, which a node that is still joining
// already serves. Goroutines: a client connection's or a forwarded call's.
func (n *Node) checkJoin(cmd string, args []string) error {
	if cmd == "promote" && len(args) == 1 {
		if addr := n.memberAddr(args[0]); addr != "" {
			return n.checkLevel(args[0], addr) // featurelevel.go
		}
		return nil
	}
	if (cmd != "join" && cmd != "rejoin") || len(args) != 2 {
		return nil // the group reports a wrong number of arguments
	}
	id, addr := args[0], args[1]
	c, err := n.mux.Dial(addr, mux.HeaderForward, joinCheckTimeout)
	if errors.Is(err, mux.ErrNoSecret) {
		return fmt.Errorf("this node has no cluster secret, so it could never reach node %s at %s: "+
			"start every node with the same --cluster-secret-file to form a cluster", id, addr)
	}
	if err != nil {
		return fmt.Errorf("node %s not added: this node cannot reach it at %s, the address its peers would use: %w", id, addr, err)
	}
	c.Close()
	// Every node runs every group: a node started with another count
	// would lack groups, or run groups the cluster does not have.
	if g, err := n.remoteGroups(addr, joinCheckTimeout); err != nil {
		return fmt.Errorf("node %s not added: asking it for its group count at %s: %w", id, addr, err)
	} else if g != len(n.groups) {
		return fmt.Errorf("node %s not added: it runs %d Raft groups and this cluster %d; start it with --groups %d", id, g, len(n.groups), len(n.groups))
	}
	return n.checkLevel(id, addr) // featurelevel.go
}
