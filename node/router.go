package node

import (
	"github.com/redcell/redcell/request"
	"github.com/redcell/redcell/server"
	"github.com/redcell/redcell/slots"

	"errors"
	"fmt"
	"strconv"
	"time"
)

// DefaultWriteTimeout bounds how long a request waits for a leader that can
// decide it: through an election, a leader's readiness barrier, and the
// forwarding hop. Past it the client gets TRYAGAIN (or CLUSTERDOWN when no
// leader was known at all); a write already sent when it expires has an
// unknown outcome and is answered so. A node that knows it has no leader
// (group.NoLeaderKnownAt) or that was removed from the cluster does not
// wait for it.
const DefaultWriteTimeout = 5 * time.Second

// router is the server's Decider, Reader and Administrator on every node.
// It picks each request's group by its keys' hash slot (slotMap) and hands
// each group's part of a call to that group's route (grouproute.go), which
// decides it here when this node leads the group and forwards it to the
// group's leader when it does not. It is the only place that knows where
// requests go; the server sees the same roles whatever the groups. With one
// group every call goes whole to group 0's route, as before groups. (The
// server's Status and TestClock are nodeStatus and group 0's backend.)
//
// Goroutines: every method is called by connection goroutines, any number
// at once; a call split over several groups runs each group's part in a
// goroutine of its own (split.go).
type router struct {
	routes []*groupRoute // by GroupID
	slots  *slotMap
}

var (
	_ server.Decider       = (*router)(nil)
	_ server.Reader        = (*router)(nil)
	_ server.Administrator = (*router)(nil)
)

func newRouter(routes []*groupRoute, m *slotMap) *router {
	return &router{routes: routes, slots: m}
}

// Propose decides a pipeline's writes (and the reads riding with them), one
// entry per group they fall in.
func (r *router) Propose(reqs []request.Request, res []request.Result) error {
	if len(r.routes) == 1 {
		return r.routes[0].Propose(reqs, res)
	}
	return r.split(reqs, res, (*groupRoute).Propose)
}

// Transact decides an atomic unit whole, in the group of its keys' slot
// (the server has refused a unit whose keys lie in several slots).
func (r *router) Transact(reqs []request.Request, res []request.Result) error {
	return r.unitRoute(reqs).Propose(reqs, res)
}

// Read answers reads linearizably, at each group's leader.
func (r *router) Read(reqs []request.Request, res []request.Result) error {
	if len(r.routes) == 1 {
		return r.routes[0].Read(reqs, res)
	}
	return r.split(reqs, res, (*groupRoute).Read)
}

// ReadLocal answers a READONLY connection's reads from this node's own
// groups.
func (r *router) ReadLocal(reqs []request.Request, res []request.Result) error {
	if len(r.routes) == 1 {
		return r.routes[0].ReadLocal(reqs, res)
	}
	return r.split(reqs, res, (*groupRoute).ReadLocal)
}

// Admin runs a RAFT administration command. Every node is a member of every
// group, so a membership change (RAFT JOIN, RAFT REMOVE) is made in every
// group, group 0 first; RAFT DIGEST names the group whose state it hashes
// (group 0 when it names none), so replicas can be compared group by
// group; anything else runs on group 0, the membership's group.
func (r *router) Admin(op server.AdminOp, args []string) (string, error) {
	if op == server.AdminDigest {
		return r.digest(args)
	}
	if op != server.AdminJoin && op != server.AdminRemove {
		return r.routes[0].Admin(op, args)
	}
	var text string
	for _, rt := range r.routes {
		t, err := rt.Admin(op, args)
		if err != nil {
			if rt.id != 0 {
				return "", fmt.Errorf("raft group %d: %w", rt.id, err)
			}
			return "", err
		}
		if rt.id == 0 {
			text = t
		}
	}
	return text, nil
}

// digest answers RAFT DIGEST [group]: this node's applied index and state
// digest of the group named (its decimal ID), or of group 0.
func (r *router) digest(args []string) (string, error) {
	id := 0
	switch len(args) {
	case 0:
	case 1:
		g, err := strconv.Atoi(args[0])
		if err != nil || g < 0 || g >= len(r.routes) {
			return "", fmt.Errorf("no raft group %q on this node: groups are 0 to %d", args[0], len(r.routes)-1)
		}
		id = g
	default:
		return "", errors.New("wrong number of arguments for RAFT DIGEST: at most a group")
	}
	return r.routes[id].Admin(server.AdminDigest, nil)
}

// unitRoute is the route of an atomic unit: the group of its first key
// (every key shares its slot), group 0 when it names none.
func (r *router) unitRoute(reqs []request.Request) *groupRoute {
	if len(r.routes) == 1 {
		return r.routes[0]
	}
	for i := range reqs {
		if s, keyed, _ := reqs[i].Slot(); keyed {
			return r.routes[r.slots.group(s)]
		}
	}
	return r.routes[0]
}

// groupOf is the group a whole request goes to: its keys' slot's (the
// first key's, when an atomic request's keys lie in several slots: the
// owner refuses the others at apply), group 0 for a keyless one.
func (r *router) groupOf(req *request.Request) slots.GroupID {
	if s, keyed, _ := req.Slot(); keyed {
		return r.slots.group(s)
	}
	return 0
}
