package group

import (
	"encoding/hex"
	"fmt"
	"strconv"

	"github.com/redcell/redcell/request"
)

// Admin runs one cluster administration command on this node (see
// server.Administrator for the contract; package node's router sends the
// ones that need the leader to it):
//
//	join <id> <addr>   add a non-voter (leader only; a repeat is a no-op)
//	rejoin <id> <addr> add a node that has no Raft state as a non-voter,
//	                   replacing a member with its ID or address (leader
//	                   only; sent by the joining node itself, never by RAFT)
//	promote <id>       make a member a voter (leader only)
//	remove <id>        take a member out (leader only)
//	transfer [<id>]    hand leadership over (leader only)
//	snapshot           snapshot this node's state now; answers the index
//	digest             "<applied index> <hex SHA-256 of the state>" of this node
//	lastsave           Unix seconds of this node's newest snapshot, "0" if none
//	status             "<applied index> <last log index> <commit index> <term>
//	                   <supported feature level>" of this node
//
// Leader-only commands on another node return ErrNotLeader. Goroutines:
// any; configuration changes block until committed (about one write).
func (l *Local) Admin(cmd string, args []string) (string, error) {
	arg := func(i int) string {
		if i < len(args) {
			return args[i]
		}
		return ""
	}
	want := func(n int) error {
		if len(args) != n {
			return fmt.Errorf("wrong number of arguments for RAFT %s", cmd)
		}
		return nil
	}
	g := l.g
	var err error
	switch cmd {
	case "join":
		if err = want(2); err == nil {
			err = g.AddNonvoter(arg(0), arg(1))
		}
	case "rejoin":
		if err = want(2); err == nil {
			err = g.Rejoin(arg(0), arg(1))
		}
	case "promote":
		if err = want(1); err == nil {
			err = g.Promote(arg(0))
		}
	case "remove":
		if err = want(1); err == nil {
			err = g.Remove(arg(0))
		}
	case "transfer":
		if len(args) > 1 {
			err = want(1)
		} else {
			err = g.Transfer(arg(0))
		}
	case "snapshot":
		if err = want(0); err != nil {
			return "", err
		}
		idx, err := g.Snapshot()
		if err != nil {
			return "", err
		}
		return strconv.FormatUint(idx, 10), nil
	case "digest":
		idx, sum, err := g.fsm.Digest()
		if err != nil {
			return "", err
		}
		return strconv.FormatUint(idx, 10) + " " + hex.EncodeToString(sum[:]), nil
	case "lastsave":
		if err = want(0); err != nil {
			return "", err
		}
		if l.store == nil {
			return "0", nil
		}
		return strconv.FormatUint(l.store.Stats().LastSnapshotUnixMS/1000, 10), nil
	case "status":
		// The fifth field, the feature level this build supports, came
		// with feature levels: a build before them answers four, which
		// the leader reads as the base level (node/featurelevel.go).
		return fmt.Sprintf("%d %d %d %d %d", g.fsm.AppliedIndex(), g.raft.LastIndex(), g.raft.CommitIndex(), g.raft.CurrentTerm(),
			request.SupportedFeatureLevel), nil
	default:
		return "", fmt.Errorf("unknown RAFT subcommand %q", cmd)
	}
	if err != nil {
		return "", err
	}
	return "OK", nil
}

// LeaderOnly reports whether an administration command must run on the
// leader.
func LeaderOnly(cmd string) bool {
	switch cmd {
	case "join", "rejoin", "promote", "remove", "transfer":
		return true
	}
	return false
}
