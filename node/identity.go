package node

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/raft"

	"github.com/redcell/redcell/raftstore"
)

// nodeIDKey is where the node's ID lives in raft's stable store, beside the
// term and the vote: the ID and the Raft state it belongs to are written to
// the same Pebble and cannot be lost apart. The node-id file in the data dir
// is a copy for people and scripts.
var nodeIDKey = []byte("redcell/node-id")

const nodeIDFile = "node-id"

// ErrRaftStateMissing is returned when a data dir that has held a Redcell
// node has no readable Raft state. Bootstrapping a new cluster over it would
// serve an empty keyspace in place of every acknowledged decision, so the
// node refuses to start instead.
var ErrRaftStateMissing = errors.New("the data dir belonged to a Redcell node but its Raft state is missing or unreadable")

// identity is what a data dir says about the node that owns it.
type identity struct {
	id        string
	bootstrap bool // a truly empty data dir: start a new one-node cluster
}

// ErrNotRedcellDir is returned for a data dir that holds files but none of
// Redcell's: taking it over would bury someone's files under a new cluster
// (and Pebble removes files it takes for its own).
var ErrNotRedcellDir = errors.New("the data dir is not empty and is not a Redcell data dir")

// dataDirWasEmpty inspects dir before the store is opened (opening creates
// Pebble's files): true when it holds nothing a node wrote, so a new
// cluster may be bootstrapped in it. It refuses, before anything is
// created, a dir that holds files but no node-id (someone else's files, or
// a store whose identity was lost), and a node-id whose Raft store is gone.
// A filesystem's lost+found is ignored: a data dir is often a mount point.
func dataDirWasEmpty(dir string) (bool, error) {
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
	case hasID && !hasRaft:
		id, _ := readNodeIDFile(dir)
		return false, fmt.Errorf("%w (data dir %s, node ID %s: the %s directory is missing or empty): refusing to start a new, empty cluster over it. "+
			"Restore the data dir from a backup, or remove it to start afresh", ErrRaftStateMissing, dir, id, raftDir)
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

// resolveIdentity decides who this node is and whether it may bootstrap,
// from the data dir as it was before the store opened (wasEmpty), the
// store's Raft state, the ID kept in the store, the node-id file and the
// --node-id flag. The rules:
//
//   - A data dir that was empty bootstraps (unless the node is joining):
//     the ID is the flag's or a new random one, written to the store.
//   - A store with Raft state resumes. Its ID wins; the file is rewritten if
//     missing, and a file or flag that disagrees is an error. A store from
//     before the ID moved into it takes the file's ID.
//   - Anything else (a node-id file or store files but no Raft state: a lost
//     or damaged log, or a first start that crashed before its bootstrap was
//     durable) is ErrRaftStateMissing. Never bootstrap over it.
func resolveIdentity(dir string, wasEmpty bool, store *raftstore.Store, flagID string, joining bool) (identity, error) {
	existing, err := raft.HasExistingState(store, store, store.SnapshotStore(1))
	if err != nil {
		return identity{}, fmt.Errorf("reading the Raft state: %w", err)
	}
	storedID, err := getString(store, nodeIDKey)
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
		if fileID != "" && fileID != id {
			return identity{}, fmt.Errorf("%s says %q but the Raft state in %s belongs to %q", path, fileID, dir, id)
		}
		if flagID != "" && flagID != id {
			return identity{}, fmt.Errorf("--node-id %q differs from %q, the ID of the Raft state in %s", flagID, id, dir)
		}
		if storedID == "" {
			if err := store.Set(nodeIDKey, []byte(id)); err != nil {
				return identity{}, fmt.Errorf("keeping the node ID in the store: %w", err)
			}
		}
		if fileID == "" {
			if err := writeNodeIDFile(dir, id); err != nil {
				return identity{}, err
			}
		}
		return identity{id: id}, nil

	case wasEmpty || (joining && storedID == "" && fileID == ""):
		// A joining node has no Raft state until the leader sends it, so
		// an empty store is its normal state as long as it never held
		// another identity.
		id := flagID
		if id == "" {
			if id, err = randomID(); err != nil {
				return identity{}, err
			}
		}
		if err := store.Set(nodeIDKey, []byte(id)); err != nil {
			return identity{}, fmt.Errorf("keeping the node ID in the store: %w", err)
		}
		if err := writeNodeIDFile(dir, id); err != nil {
			return identity{}, err
		}
		return identity{id: id, bootstrap: !joining}, nil

	}
	who := storedID
	if who == "" {
		who = fileID
	}
	if who == "" {
		who = "unknown"
	}
	return identity{}, fmt.Errorf("%w (data dir %s, node ID %s): refusing to start a new, empty cluster over it. "+
		"Restore the data dir from a backup, or, if this node never completed its first start, remove the data dir and start again",
		ErrRaftStateMissing, dir, who)
}

func getString(store *raftstore.Store, key []byte) (string, error) {
	v, err := store.Get(key)
	if errors.Is(err, raftstore.ErrKeyNotFound) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading the node ID from the store: %w", err)
	}
	return string(v), nil
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

// writeNodeIDFile replaces the file atomically (write, fsync, rename).
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
	if err != nil {
		return fmt.Errorf("writing the node ID file: %w", err)
	}
	return nil
}

func randomID() (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("making a node ID: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}
