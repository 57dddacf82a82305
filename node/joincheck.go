package node

import (
	"errors"
	"fmt"

	"github.com/redcell/redcell/mux"
)

// joinCheckTimeout bounds the dial that checks a new member: a peer
// handshake, which an acceptor bounds at mux.DefaultHandshakeTimeout.
const joinCheckTimeout = mux.DefaultHandshakeTimeout

// checkJoin runs before this node adds a member (RAFT JOIN from a client,
// or a joining node's call): it dials the new member's address through the
// mux, as Raft will, and refuses the join unless the member answers and
// proves the cluster secret. A member that cannot be reached would
// otherwise be added anyway, and its leader would then try to replicate to
// it, and log the failure, several times a second for as long as it stays
// in the configuration; on a node without a cluster secret that is
// forever, since such a node can reach no peer at all. Other commands pass.
//
// The dial uses the forwarding header, which a node that is still joining
// already serves. Goroutines: a client connection's or a forwarded call's.
func (n *Node) checkJoin(cmd string, args []string) error {
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
	return nil
}
