package node

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redcell/redcell/raftstore"
	"github.com/redcell/redcell/request"
)

// How many Raft groups the keyspace is split over (--groups).
//
// The count is chosen once, when the cluster is bootstrapped, and kept in
// the node's Pebble beside its ID (the node-level record "groups"): every
// group's Raft state is keyed by the group's ID, so a node that restarts
// with another count would find groups without state or state without a
// group. A data dir written before groups has no record and one group.
// A start that names a count other than the one kept is refused; a start
// that names none takes the kept one. A node that joins is started with the
// cluster's count (--groups, 1 when not given), and keeps it: the member
// that adds it asks it for its count (the "groups" administration command,
// which any node answers; a build before groups does not know it and runs
// one group) and refuses the join when the counts differ (join.go), so a
// node never joins with groups the cluster does not have. (The joining node
// learning the count from the cluster instead would mean opening its groups
// after it starts serving clients, which it does while it waits to join.)

// groupsRecord is the node-level record holding the group count.
const groupsRecord = "groups"

// groupsCommand is the administration command a node answers with its
// group count (node.admin), for a joining node.
const groupsCommand = "groups"

// MaxGroups bounds --groups: hashicorp/raft runs three goroutines per group
// and heartbeats every follower of every group it leads, so hundreds of
// groups want coalesced heartbeats it cannot do (../DESIGN.md, "Sharding").
const MaxGroups = 64

// ErrGroupsDiffer is returned when --groups names a count other than the
// one the data dir was bootstrapped with.
var ErrGroupsDiffer = errors.New("the cluster's group count is fixed when it is bootstrapped")

// resolveGroups returns how many groups this node runs. want is --groups (0:
// not given).
func resolveGroups(db *raftstore.DB, want int, who identity) (int, error) {
	if want < 0 || want > MaxGroups {
		return 0, fmt.Errorf("--groups %d: give 1 to %d", want, MaxGroups)
	}
	if who.bootstrap || who.rejoin {
		g := max(want, 1)
		if err := db.SetNodeRecord(groupsRecord, []byte(strconv.Itoa(g))); err != nil {
			return 0, fmt.Errorf("keeping the group count in the store: %w", err)
		}
		return g, nil
	}
	kept := 1
	v, err := db.NodeRecord(groupsRecord)
	switch {
	case err == nil:
		if kept, err = strconv.Atoi(string(v)); err != nil || kept < 1 || kept > MaxGroups {
			return 0, fmt.Errorf("the store's group count %q is not one this build can run", v)
		}
	case !errors.Is(err, raftstore.ErrKeyNotFound):
		return 0, fmt.Errorf("reading the group count: %w", err)
	}
	if want != 0 && want != kept {
		return 0, fmt.Errorf("%w: this data dir's cluster has %d, and --groups says %d (start without --groups, or bootstrap a new cluster with an empty data dir)", ErrGroupsDiffer, kept, want)
	}
	return kept, nil
}

// remoteGroups asks the node at addr how many groups it runs: 1 for a build
// before groups, which does not know the command.
func (n *Node) remoteGroups(addr string, timeout time.Duration) (int, error) {
	text, err := n.fwd.Admin(addr, dataGroup, groupsCommand, nil, timeout)
	var f *request.Failure
	switch {
	case err == nil:
	case errors.As(err, &f) && f.Code == request.FailRefused && strings.Contains(f.Detail, "unknown RAFT subcommand"):
		return 1, nil
	default:
		return 0, err
	}
	g, err := strconv.Atoi(text)
	if err != nil {
		return 0, fmt.Errorf("node at %s answered its group count %q", addr, text)
	}
	return g, nil
}
