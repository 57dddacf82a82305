package node

import (
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/raft"

	"github.com/redcell/redcell/raftstore"
)

// nodeIDRecord is the node-level record of the Raft store (raftstore.DB)
// that holds the node's ID. It belongs to the node, not to any Raft group,
// and lives in the same Pebble as every group's term, vote and log: the ID
// and the Raft state it belongs to cannot be lost apart. The node-id file
// in the data dir is a copy for people and scripts.
const nodeIDRecord = "node-id"

// legacyNodeIDKey is where the ID lived before node-level records: in the
// stable store of the node's one group, beside the term and the vote.
// loadNodeID moves it.
var legacyNodeIDKey = []byte("redcell/node-id")

const nodeIDFile = "node-id"

// ErrRaftStateMissing is returned when a data dir that has held a Redcell
// node has no readable Raft state. Bootstrapping a new cluster over it would
// serve an empty keyspace in place of every acknowledged decision, so the
// node refuses to start instead.
var ErrRaftStateMissing = errors.New("the data dir belonged to a Redcell node but its Raft state is missing or unreadable")

// identity is what a data dir says about the node that owns it.
type identity struct {
	id        string
	bootstrap bool // start a new one-node cluster in this (empty) data dir
	// rejoin: the node has no Raft state and joins through --join. Until
	// the leader has accepted the join (and replaced any member that held
	// this ID or address before), the node must refuse all Raft traffic:
	// see raftGate.
	rejoin bool
	// lostState: the data dir had held this node's identity, so it joins
	// as a new incarnation of a member whose state was lost.
	lostState bool
}

// startMode is what this start was told about the cluster.
type startMode struct {
	joining   bool // --join: ask an existing cluster to add this node
	bootstrap bool // --bootstrap: start a new cluster, this start only
	peers     bool // a cluster secret is set: this node may have peers
}

// ErrNotRedcellDir is returned for a data dir that holds files but none of
// Redcell's: taking it over would bury someone's files under a new cluster
// (and Pebble removes files it takes for its own).
var ErrNotRedcellDir = errors.New("the data dir is not empty and is not a Redcell data dir")

// ErrEmptyDataDirWithPeers is returned for a node that accepts peers (it
// has a cluster secret) and starts on an empty data dir with neither
// --join nor --bootstrap. Such a node may be a cluster member whose disk
// was lost or replaced: bootstrapping it would start a second, empty
// cluster under the old member's name and address, and every client
// pointed at it would see every acknowledged decision forgotten.
var ErrEmptyDataDirWithPeers = errors.New("the data dir is empty and this node accepts peers, but it was told neither to join a cluster nor to start a new one")

// ErrAlreadyBootstrapped is returned for --bootstrap on a data dir that
// already holds Raft state. --bootstrap is meant for one start: refusing it
// afterwards is what keeps it out of a command line that is run again
// after a disk was lost.
var ErrAlreadyBootstrapped = errors.New("--bootstrap starts a new cluster, but the data dir already holds Raft state")

// dataDirWasEmpty inspects dir before the store is opened (opening creates
// Pebble's files): true when it holds nothing a node wrote. It refuses,
// before anything is created, a dir that holds files but nothing of
// Redcell's (someone else's files), and, unless the node is joining, a
// node-id whose Raft store is gone. A filesystem's lost+found is ignored: a
// data dir is often a mount point.
func dataDirWasEmpty(dir string, joining bool) (bool, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false, fmt.Errorf("checking the data dir: %w", err)
	}
	var others []string
	hasID, hasRaft := false, false
	for _, e := range entries {
		switch e.Name() {
		case nodeIDFile:
			hasID = true
		case nodeIDFile + ".tmp", "lost+found":
		case raftDir:
			inner, err := os.ReadDir(filepath.Join(dir, raftDir))
			if err != nil {
				return false, fmt.Errorf("checking the data dir: %w", err)
			}
			hasRaft = len(inner) > 0
		default:
			others = append(others, e.Name())
		}
	}
	switch {
	case hasID && !hasRaft && !joining:
		id, _ := readNodeIDFile(dir)
		return false, fmt.Errorf("%w (data dir %s, node ID %s: the %s directory is missing or empty): refusing to start a new, empty cluster over it. "+
			"If this node is a member of a cluster, start it with --join <address of another member>: it is added back as a new member and catches up. "+
			"A lone node can only be restored from a backup", ErrRaftStateMissing, dir, id, raftDir)
	case hasID, hasRaft:
		// Redcell's: the store decides (its ID survives a lost node-id
		// file; a store without state is refused by resolveIdentity).
		return false, nil
	case len(others) > 0:
		if len(others) > 3 {
			others = append(others[:3], "...")
		}
		return false, fmt.Errorf("%w: %s holds %s; give Redcell an empty or new directory", ErrNotRedcellDir, dir, strings.Join(others, ", "))
	}
	return true, nil
}

// resolveIdentity decides who this node is and how it starts, from the
// data dir as it was before the store opened (wasEmpty), the Raft state of
// the node's group (store), the ID kept in the database (db), the node-id
// file, the --node-id flag and what this start was told (mode). The rules
// (DESIGN.md, "Identity"):
//
//   - Raft state present: resume. The stored ID wins; the file is
//     rewritten if missing, and a file or flag that disagrees is an error.
//     A store from before the ID moved into it takes the file's ID.
//     --bootstrap is refused (ErrAlreadyBootstrapped); --join is ignored.
//   - No Raft state and --join: join, as a new member or as a new
//     incarnation of the member whose ID the dir (or flag) names. The node
//     refuses Raft traffic until the leader has accepted it (raftGate), so
//     it never votes or acknowledges entries under an identity whose
//     earlier votes and entries it no longer has.
//   - No Raft state, an empty dir: bootstrap a one-node cluster if told to
//     with --bootstrap, or if the node has no cluster secret (no peer can
//     reach it: the embedded default). A node with a secret and neither
//     flag is refused (ErrEmptyDataDirWithPeers).
//   - Anything else (a node-id file or store files but no Raft state: a
//     lost or damaged log, or a first start that crashed before its
//     bootstrap was durable) is ErrRaftStateMissing. Never bootstrap over
//     it.
//
// With more than one group the question "has this node Raft state" would be
// asked of every group; today the node runs one (dataGroup).
func resolveIdentity(dir string, wasEmpty bool, db *raftstore.DB, store *raftstore.Store, flagID string, mode startMode) (identity, error) {
	existing, err := raft.HasExistingState(store, store, store.SnapshotStore(1))
	if err != nil {
		return identity{}, fmt.Errorf("reading the Raft state: %w", err)
	}
	storedID, err := loadNodeID(db, store)
	if err != nil {
		return identity{}, err
	}
	fileID, err := readNodeIDFile(dir)
	if err != nil {
		return identity{}, err
	}
	path := filepath.Join(dir, nodeIDFile)

	switch {
	case existing:
		id := storedID
		if id == "" { // a data dir written before the ID moved into the store
			id = fileID
		}
		if id == "" {
			return identity{}, fmt.Errorf("the data dir %s has Raft state but no node ID (neither in the store nor in %s); start with --node-id set to the ID this node has in its cluster", dir, path)
		}
		if mode.bootstrap {
			return identity{}, fmt.Errorf("%w (data dir %s, node %s): start it without --bootstrap. "+
				"--bootstrap is for the first start of a new cluster only; kept in a command line, it would start a new, empty cluster whenever this data dir is lost", ErrAlreadyBootstrapped, dir, id)
		}
		if fileID != "" && fileID != id {
			return identity{}, fmt.Errorf("%s says %q but the Raft state in %s belongs to %q", path, fileID, dir, id)
		}
		if flagID != "" && flagID != id {
			return identity{}, fmt.Errorf("--node-id %q differs from %q, the ID of the Raft state in %s", flagID, id, dir)
		}
		if storedID == "" {
			if err := db.SetNodeRecord(nodeIDRecord, []byte(id)); err != nil {
				return identity{}, fmt.Errorf("keeping the node ID in the store: %w", err)
			}
		}
		if fileID == "" {
			if err := writeNodeIDFile(dir, id); err != nil {
				return identity{}, err
			}
		}
		return identity{id: id}, nil

	case mode.joining:
		// No Raft state: a new node, a joiner that has not received its
		// first entries yet, or a member whose state was lost. All three
		// join the same way; the leader replaces any member that holds
		// this ID or address (group.Rejoin).
		known := storedID
		for _, other := range []struct{ what, id string }{{path, fileID}, {"--node-id", flagID}} {
			switch {
			case other.id == "":
			case known == "":
				known = other.id
			case other.id != known:
				return identity{}, fmt.Errorf("%s says %q but this data dir belongs to node %q", other.what, other.id, known)
			}
		}
		lost := storedID != "" || fileID != ""
		id := known
		if id == "" {
			if id, err = randomID(); err != nil {
				return identity{}, err
			}
		}
		if err := keepID(db, dir, id); err != nil {
			return identity{}, err
		}
		return identity{id: id, rejoin: true, lostState: lost}, nil

	case wasEmpty && (mode.bootstrap || !mode.peers):
		id := flagID
		if id == "" {
			if id, err = randomID(); err != nil {
				return identity{}, err
			}
		}
		if err := keepID(db, dir, id); err != nil {
			return identity{}, err
		}
		return identity{id: id, bootstrap: true}, nil

	case wasEmpty:
		return identity{}, fmt.Errorf("%w (data dir %s). If this node is a member of a cluster whose disk was lost, start it with --join <address of another member>: "+
			"it is added back as a new member and catches up. To start a new cluster with this node as its first member, start it once with --bootstrap", ErrEmptyDataDirWithPeers, dir)
	}
	who := cmp.Or(storedID, fileID, "unknown")
	return identity{}, fmt.Errorf("%w (data dir %s, node ID %s): refusing to start a new, empty cluster over it. "+
		"If this node is a member of a cluster, start it with --join <address of another member>: it is added back as a new member and catches up. "+
		"A lone node can only be restored from a backup; if it never completed its first start, remove the data dir and start again",
		ErrRaftStateMissing, dir, who)
}

// keepID writes the node's ID to the database (beside the Raft state it
// will belong to) and to the node-id file.
func keepID(db *raftstore.DB, dir, id string) error {
	if err := db.SetNodeRecord(nodeIDRecord, []byte(id)); err != nil {
		return fmt.Errorf("keeping the node ID in the store: %w", err)
	}
	return writeNodeIDFile(dir, id)
}

// makeDataDir creates dir if it is missing and reports whether it did.
func makeDataDir(dir string) (created bool, err error) {
	if _, err := os.Stat(dir); err == nil {
		return false, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return false, fmt.Errorf("checking the data dir: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return false, fmt.Errorf("creating the data dir: %w", err)
	}
	return true, nil
}

// emptyDataDir undoes a failed first start: it removes what a node writes
// to a data dir that was empty (the node-id file and the raft directory),
// and the dir itself if this start created it. Nothing else is touched:
// dataDirWasEmpty found nothing else there.
func emptyDataDir(dir string, created bool) error {
	if created {
		return os.RemoveAll(dir)
	}
	return errors.Join(
		os.RemoveAll(filepath.Join(dir, raftDir)),
		os.RemoveAll(filepath.Join(dir, nodeIDFile)),
		os.RemoveAll(filepath.Join(dir, nodeIDFile+".tmp")))
}

// loadNodeID returns the ID kept in the database, "" if none. An ID still
// in the group's stable store (a data dir from before node-level records)
// is moved to the node-level record first: written there, then deleted
// from the stable store, each with fsync, so a crash between the two
// leaves the same ID in both and the next start finishes the move.
func loadNodeID(db *raftstore.DB, store *raftstore.Store) (string, error) {
	v, err := db.NodeRecord(nodeIDRecord)
	if err != nil && !errors.Is(err, raftstore.ErrKeyNotFound) {
		return "", fmt.Errorf("reading the node ID from the store: %w", err)
	}
	id := string(v)
	legacy, err := store.Get(legacyNodeIDKey)
	if errors.Is(err, raftstore.ErrKeyNotFound) {
		return id, nil
	}
	if err != nil {
		return "", fmt.Errorf("reading the node ID from the store: %w", err)
	}
	switch {
	case len(legacy) == 0: // cleared: no ID there
	case id == "":
		id = string(legacy)
		if err := db.SetNodeRecord(nodeIDRecord, legacy); err != nil {
			return "", fmt.Errorf("moving the node ID to its node-level record: %w", err)
		}
	case id != string(legacy):
		return "", fmt.Errorf("the Raft store holds two node IDs: %q in its node-level record and %q where IDs were kept before", id, legacy)
	}
	if err := store.Delete(legacyNodeIDKey); err != nil {
		return "", fmt.Errorf("moving the node ID to its node-level record: %w", err)
	}
	return id, nil
}

func readNodeIDFile(dir string) (string, error) {
	data, err := os.ReadFile(filepath.Join(dir, nodeIDFile))
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading the node ID file: %w", err)
	}
	return strings.TrimSpace(string(data)), nil
}

// writeNodeIDFile replaces the file atomically and durably (write, fsync,
// rename, fsync of the directory).
func writeNodeIDFile(dir, id string) error {
	path := filepath.Join(dir, nodeIDFile)
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("writing the node ID file: %w", err)
	}
	_, err = f.WriteString(id + "\n")
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err == nil {
		err = syncDir(dir)
	}
	if err != nil {
		return fmt.Errorf("writing the node ID file: %w", err)
	}
	return nil
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

func randomID() (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("making a node ID: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// raftGate stands between the mux's Raft listener and raft's transport on a
// node that starts without Raft state and joins (identity.rejoin). Until
// open is called, every Raft connection is closed as soon as it arrives, so
// raft never sees a RequestVote, an AppendEntries or a snapshot.
//
// Why: a node without Raft state remembers no term, no vote and no log.
// The cluster's configuration may still name it (a member whose disk was
// lost, restarted under its old ID and address), and a peer that misses a
// leader asks it for its vote. hashicorp/raft grants a vote to any
// candidate when its own log is empty and it has no configuration, so two
// nodes — the empty one and a follower that lacks acknowledged entries —
// would elect a leader that has never seen them, and the next leader's log
// would overwrite the only copies. Closed connections are indistinguishable
// from a node that is down: that costs availability, never a decision.
//
// The node opens the gate once the leader has answered its join, which the
// leader does only after it has committed a configuration in which no
// member holds this node's ID or address as a voter from an earlier life
// (group.Rejoin): from then on this node is a new non-voter, whose votes no
// candidate asks for and whose acknowledgements no leader counts until it
// has caught up and been promoted.
//
// One gate serves every group of the node (wrap gives each group's listener
// its turnstile): the node joins every group at once, and none of its groups
// may vote before that.
//
// Goroutines: raft's transports call Accept from their accept loops; open is
// called once by the node's join goroutine; isOpen from anywhere.
type raftGate struct {
	log    *slog.Logger
	opened atomic.Bool
	warn   sync.Once
}

func newRaftGate(open bool, log *slog.Logger) *raftGate {
	g := &raftGate{log: log}
	g.opened.Store(open)
	return g
}

// wrap is ln behind the gate.
func (g *raftGate) wrap(ln net.Listener) net.Listener { return &gatedListener{Listener: ln, gate: g} }

type gatedListener struct {
	net.Listener
	gate *raftGate
}

// Accept returns the next Raft connection once the gate is open, and closes
// every one that arrives before.
func (l *gatedListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil || l.gate.opened.Load() {
			return c, err
		}
		l.gate.warn.Do(func() {
			l.gate.log.Info("refusing Raft traffic until the cluster's leader has accepted this node's join (a node without Raft state must not vote)",
				"from", c.RemoteAddr().String())
		})
		_ = c.Close()
	}
}

func (g *raftGate) open() { g.opened.Store(true) }

func (g *raftGate) isOpen() bool { return g.opened.Load() }
