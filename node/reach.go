package node

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redcell/redcell/group"
)

// A leader the others cannot reach.
//
// A leader whose port drops what its peers send, while its own connections
// to them work (a one-way partition, a firewall rule on one side), looks
// healthy to Raft: the leader dials its followers, so AppendEntries and
// heartbeats flow both ways on its connections, and pre-vote keeps the
// followers, which hear it, from electing. hashicorp/raft cannot see that
// nobody can reach the leader. Its followers can: their forwarded calls and
// probes to it fail (forward/reach.go) while its heartbeats keep arriving.
// So:
//
//  1. Every node keeps a verdict on every other member, its forwarding
//     client's (forward.Client.DownSince: when the member was found
//     unreachable, cleared by anything heard from it), fresh from its own
//     calls under load and, when idle, from one ping a second to each
//     member (probePeers).
//  2. Its verdicts travel in its answer to the "status" administration call
//     (a sixth field: the members it cannot reach, each with how long),
//     which a leader already sends each member every second; a node that
//     leads any group now polls. The leader CAN reach its followers, so it
//     hears what they say about it. A build before this answers five
//     fields, and counts as reaching everyone.
//  3. When more than half of the other voters have reported it unreachable
//     for at least reachLeaveAfter, the leader hands every group it leads
//     to a voter that answered the poll, that no other member reports
//     unreachable and that reaches every other voter (the group's
//     preferred leader when it qualifies; judgeReach is the rule, a pure
//     function), gracefully as the balancer does (group.Transfer). It
//     tries again after reachRetryAfter if that fails.
//  4. Neither the balancer nor this rule hands leadership to a member that
//     this node finds unreachable, or that any member reported unreachable
//     within the last reachAvoidFor (reachAvoid), so leadership does not go
//     straight back while the fault stands, nor as soon as it clears.
//
// Meanwhile the followers' clients are answered within about a second,
// retryably (the router's heardButUnreachable, grouproute.go).

// reachProbeEvery is how often a node pings each member it has not heard
// from lately.
const reachProbeEvery = time.Second

// reachLeaveAfter is how long a majority of the other voters must have
// found the leader unreachable before it hands its groups over: a
// connection that broke and was dialled again within it is no fault.
const reachLeaveAfter = 3 * time.Second

// reachAvoidFor is how long after any member last found a node unreachable
// no leadership is handed to it.
const reachAvoidFor = 10 * time.Second

// reachRetryAfter spaces a leader's attempts to hand its groups over while
// they fail.
const reachRetryAfter = 5 * time.Second

// reachState is what the node remembers for the rule above.
type reachState struct {
	mu sync.Mutex
	// badAt is, by address, when this node or a member it polled last
	// found that member unreachable.
	badAt map[string]time.Time
	// failedAt is when handing the groups over last failed.
	failedAt time.Time
	// logged is the last reason for not handing over that was logged,
	// so that it is logged once.
	logged string
}

// probePeers pings every other member once every reachProbeEvery, unless a
// connection to it heard from it since the last round (forward.Client.Probe:
// a forwarded call's answer, the answer to a leader's status poll), so that
// this node's verdicts are current when a leader asks for them. Its own
// goroutine, until stop closes. At most one ping a second per member when
// idle.
func (n *Node) probePeers(stop <-chan struct{}) {
	t := time.NewTicker(reachProbeEvery)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		ms, err := n.base.group.Members()
		if err != nil {
			continue
		}
		var wg sync.WaitGroup
		for _, m := range ms {
			if m.ID == n.ID {
				continue
			}
			wg.Add(1)
			go func() { // may outlive the loop by a probe when the node stops (below)
				defer wg.Done()
				// Anything heard within the last round will do: the
				// verdict is what counts, and a second's delay in it is
				// nothing against reachLeaveAfter.
				_ = n.fwd.Probe(m.Addr, reachProbeEvery)
			}()
		}
		// A stopping node does not wait for a probe to a peer that does
		// not answer (up to two reach timeouts): the forwarding client's
		// Close, which Close runs once this returns, fails it.
		done := make(chan struct{})
		go func() {
			wg.Wait()
			close(done)
		}()
		select {
		case <-done:
		case <-stop:
			return
		}
	}
}

// formatReach is the status answer's sixth field: "-" when this node
// reaches every destination it has tried, else addr=ms for each it cannot
// reach, comma-separated, sorted.
func formatReach(down map[string]time.Duration) string {
	if len(down) == 0 {
		return "-"
	}
	parts := make([]string, 0, len(down))
	for addr, d := range down {
		parts = append(parts, addr+"="+strconv.FormatInt(d.Milliseconds(), 10))
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}

// parseReach reads formatReach's field.
func parseReach(s string) (map[string]time.Duration, error) {
	if s == "-" {
		return nil, nil
	}
	out := map[string]time.Duration{}
	for _, part := range strings.Split(s, ",") {
		i := strings.LastIndexByte(part, '=')
		if i <= 0 {
			return nil, fmt.Errorf("reachability %q: want addr=ms", part)
		}
		ms, err := strconv.ParseInt(part[i+1:], 10, 64)
		if err != nil || ms < 0 {
			return nil, fmt.Errorf("reachability %q: want addr=ms", part)
		}
		out[part[:i]] = time.Duration(ms) * time.Millisecond
	}
	return out, nil
}

// withReach appends this node's verdicts to a status answer.
func (n *Node) withReach(status string) string {
	return status + " " + formatReach(n.fwd.Unreachable())
}

// peerReach is one member as the leader's poll left it.
type peerReach struct {
	id, addr string
	voter    bool
	// fresh: it answered a recent poll; reports: its answer carried
	// verdicts (a build before them does not).
	fresh, reports bool
	unreachable    map[string]time.Duration // its verdicts, by address
}

// reachVerdict is judgeReach's decision.
type reachVerdict struct {
	leave bool
	// cut are the voters that have found this node unreachable for long
	// enough; targets the voters leadership may go to, sorted by ID.
	cut, targets []string
}

// judgeReach decides whether the node selfID at selfAddr, leading, must
// hand its leadership over: more than half of the other voters have found
// it unreachable for at least after. The targets are the other voters
// that answered the poll, that no other member that answered reports
// unreachable, and that themselves reach every voter but this one. Pure.
func judgeReach(selfID, selfAddr string, peers []peerReach, after time.Duration) reachVerdict {
	var v reachVerdict
	var voters []peerReach
	for _, p := range peers {
		if p.id != selfID && p.voter {
			voters = append(voters, p)
		}
	}
	for _, p := range voters {
		if p.fresh && p.reports && p.unreachable[selfAddr] >= after {
			v.cut = append(v.cut, p.id)
		}
	}
	v.leave = len(voters) > 0 && 2*len(v.cut) > len(voters)
	for _, p := range voters {
		if !p.fresh || !reachesVoters(p, voters) {
			continue
		}
		reached := true
		for _, q := range peers {
			if q.id != p.id && q.id != selfID && q.fresh {
				if _, down := q.unreachable[p.addr]; down {
					reached = false
				}
			}
		}
		if reached {
			v.targets = append(v.targets, p.id)
		}
	}
	slices.Sort(v.cut)
	slices.Sort(v.targets)
	return v
}

// reachesVoters reports whether p reports none of the voters (other than
// the leader asking, which is not among them) unreachable.
func reachesVoters(p peerReach, voters []peerReach) bool {
	for _, q := range voters {
		if _, down := p.unreachable[q.addr]; down && q.id != p.id {
			return false
		}
	}
	return true
}

// reachAvoid reports whether leadership must not be handed to the member
// at addr now: this node cannot reach it, or some member could not within
// reachAvoidFor.
func (n *Node) reachAvoid(addr string) bool {
	if !n.fwd.DownSince(addr).IsZero() {
		return true
	}
	n.reach.mu.Lock()
	defer n.reach.mu.Unlock()
	at, ok := n.reach.badAt[addr]
	return ok && time.Since(at) < reachAvoidFor
}

// leadsAny reports whether this node leads any of its groups.
func (n *Node) leadsAny() bool {
	for _, lg := range n.groups {
		if lg.group.IsLeader() {
			return true
		}
	}
	return false
}

// leaveIfUnreachable runs after each poll of the members (pollMembers)
// while this node leads any group: it records who was found unreachable
// and, when judgeReach says so, hands every group this node leads over.
func (n *Node) leaveIfUnreachable(ms []group.Member) {
	now := time.Now()
	selfAddr := ""
	peers := make([]peerReach, 0, len(ms))
	n.members.mu.Lock()
	for _, m := range ms {
		if m.ID == n.ID {
			selfAddr = m.Addr
			continue
		}
		v := n.members.views[m.ID]
		peers = append(peers, peerReach{
			id: m.ID, addr: m.Addr, voter: m.Suffrage == group.Voter,
			fresh:       !v.lastContact.IsZero() && now.Sub(v.lastContact) < 2*statusEvery,
			reports:     v.reports,
			unreachable: v.unreachable,
		})
	}
	n.members.mu.Unlock()

	n.reach.mu.Lock()
	if n.reach.badAt == nil {
		n.reach.badAt = map[string]time.Time{}
	}
	for addr := range n.fwd.Unreachable() {
		n.reach.badAt[addr] = now
	}
	for _, p := range peers {
		if p.fresh {
			for addr := range p.unreachable {
				n.reach.badAt[addr] = now
			}
		}
	}
	for addr, at := range n.reach.badAt {
		if now.Sub(at) >= reachAvoidFor {
			delete(n.reach.badAt, addr)
		}
	}
	failedAt := n.reach.failedAt
	n.reach.mu.Unlock()

	if selfAddr == "" {
		return
	}
	v := judgeReach(n.ID, selfAddr, peers, reachLeaveAfter)
	if !v.leave || now.Sub(failedAt) < reachRetryAfter {
		if !v.leave {
			n.logReachOnce("")
		}
		return
	}
	targets := slices.DeleteFunc(v.targets, func(id string) bool {
		i := slices.IndexFunc(peers, func(p peerReach) bool { return p.id == id })
		return i < 0 || n.reachAvoidOwn(peers[i].addr)
	})
	if len(targets) == 0 {
		n.logReachOnce(fmt.Sprintf("members %v cannot reach this node, but no voter can take its leadership over (each is unreachable from another member, or does not answer)", v.cut))
		return
	}
	n.log.Warn("the other members cannot reach this node although it reaches them: handing leadership of the groups it leads to another voter",
		"unreachable_from", strings.Join(v.cut, ","), "for_at_least", reachLeaveAfter, "candidates", strings.Join(targets, ","))
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failed []error
	for _, lg := range n.groups {
		if !lg.group.IsLeader() {
			continue
		}
		to := targets[int(lg.id)%len(targets)]
		if id, _, ok := preferredLeader(lg); ok && slices.Contains(targets, id) {
			to = id
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := lg.group.Transfer(to)
			if err != nil && lg.group.IsLeader() {
				mu.Lock()
				failed = append(failed, fmt.Errorf("group %d to %s: %w", lg.id, to, err))
				mu.Unlock()
				return
			}
			// An error with leadership gone is this node not hearing the
			// new leader, which is the fault itself.
			n.log.Info("handed leadership over: the other members cannot reach this node", "group", lg.id, "to", to)
		}()
	}
	wg.Wait()
	if len(failed) > 0 {
		n.reach.mu.Lock()
		n.reach.failedAt = time.Now()
		n.reach.mu.Unlock()
		n.log.Warn("leadership not handed over although the other members cannot reach this node; trying again later",
			"retry_after", reachRetryAfter, "err", errors.Join(failed...))
	}
	n.logReachOnce("")
}

// reachAvoidOwn is reachAvoid on this node's own verdict only: a member
// that the leader itself cannot reach could not be handed leadership.
func (n *Node) reachAvoidOwn(addr string) bool {
	return !n.fwd.DownSince(addr).IsZero()
}

// logReachOnce logs why leadership stays, once per reason ("" resets).
func (n *Node) logReachOnce(reason string) {
	n.reach.mu.Lock()
	same := n.reach.logged == reason
	n.reach.logged = reason
	n.reach.mu.Unlock()
	if !same && reason != "" {
		n.log.Warn("leadership kept although the other members cannot reach this node", "reason", reason)
	}
}
