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
// that names none takes the kept one. A node that joins takes the
// cluster's: before it opens its groups it asks the member it joins through
// (the "groups" administration command, which any node answers), and keeps
// the answer; a build before groups does not know the command, and runs one
// group.

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
// not given); learned is the cluster's count, asked by a joining node (0
// otherwise).
func resolveGroups(db *raftstore.DB, want, learned int, who identity) (int, error) {
	if want < 0 || want > MaxGroups {
		return 0, fmt.Errorf("--groups %d: give 1 to %d", want, MaxGroups)
	}
	keep := func(g int) (int, error) {
		if err := db.SetNodeRecord(groupsRecord, []byte(strconv.Itoa(g))); err != nil {
			return 0, fmt.Errorf("keeping the group count in the store: %w", err)
		}
		return g, nil
	}
	switch {
	case who.bootstrap:
		return keep(max(want, 1))
	case who.rejoin:
		if learned < 1 || learned > MaxGroups {
			return 0, fmt.Errorf("the cluster runs %d groups, which this build cannot", learned)
		}
		if want != 0 && want != learned {
			return 0, fmt.Errorf("%w: the cluster this node joins has %d, and --groups says %d (start without --groups)", ErrGroupsDiffer, learned, want)
		}
		return keep(learned)
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

// askGroups asks the cluster at addr how many groups it runs, retrying as a
// join does (joinerror.go) until it has an answer, stop closes, or the
// join's deadline passes.
func (n *Node) askGroups(addr string, stop <-chan struct{}) (int, error) {
	tries := newJoinAttempts(addr, n.joinTimeout)
	for {
		text, err := n.fwd.Admin(addr, dataGroup, groupsCommand, nil, tries.callTimeout())
		if err == nil {
			g, perr := strconv.Atoi(text)
			if perr != nil {
				return 0, fmt.Errorf("the member at %s answered its group count %q", addr, text)
			}
			return g, nil
		}
		var f *request.Failure
		if errors.As(err, &f) && f.Code == request.FailRefused && strings.Contains(f.Detail, "unknown RAFT subcommand") {
			return 1, nil // a build before groups: one group
		}
		if jerr := tries.failed(err); jerr != nil {
			return 0, jerr
		}
		n.log.Warn("join: asking for the group count, retrying", "via", addr, "cause", joinCause(err).String(), "err", err)
		select {
		case <-stop:
			return 0, errors.New("stopped before joining")
		case <-time.After(tries.pause()):
		}
	}
}
