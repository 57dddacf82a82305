package node

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/redcell/redcell/group"
	"github.com/redcell/redcell/raftstore"
)

// A node with a cluster secret may be a member whose disk was lost: an
// empty data dir without --join or --bootstrap is refused, and left empty.
func TestEmptyDataDirWithPeersNeedsJoinOrBootstrap(t *testing.T) {
	dir := t.TempDir()
	n, err := openNode(t, dir, func(c *Config) { c.ClusterSecret = testSecret })
	if err == nil {
		n.Close()
		t.Fatal("an empty data dir with a cluster secret bootstrapped without --bootstrap")
	}
	if !errors.Is(err, ErrEmptyDataDirWithPeers) || !strings.Contains(err.Error(), "--join") || !strings.Contains(err.Error(), "--bootstrap") {
		t.Fatalf("error %v, want ErrEmptyDataDirWithPeers naming --join and --bootstrap", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("the refused start left %d entries in the data dir", len(entries))
	}
	// Told to, it bootstraps; a later start with --bootstrap is refused,
	// and without it resumes.
	n = mustOpen(t, dir, func(c *Config) { c.ClusterSecret, c.Bootstrap = testSecret, true })
	id := n.ID
	mustClose(t, n)
	if n, err := openNode(t, dir, func(c *Config) { c.ClusterSecret, c.Bootstrap = testSecret, true }); err == nil {
		n.Close()
		t.Fatal("--bootstrap on a data dir with Raft state was accepted")
	} else if !errors.Is(err, ErrAlreadyBootstrapped) {
		t.Fatalf("error %v, want ErrAlreadyBootstrapped", err)
	}
	n = mustOpen(t, dir, func(c *Config) { c.ClusterSecret = testSecret })
	defer mustClose(t, n)
	if n.ID != id {
		t.Errorf("resumed as %q, want %q", n.ID, id)
	}
}

// A start that fails after it has written to the data dir (here: a TLS
// port without a certificate, checked once the store and the node ID are
// written) leaves an empty data dir empty, and removes one it created.
func TestFailedStartLeavesTheDataDirAsFound(t *testing.T) {
	dir := t.TempDir()
	created := filepath.Join(dir, "new")
	for _, d := range []string{dir, created} {
		n, err := openNode(t, d, func(c *Config) { c.TLSPort = 1 })
		if err == nil {
			n.Close()
			t.Fatal("a TLS port without a certificate was accepted")
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("the data dir holds %d entries after failed starts, want none (the created one removed)", len(entries))
	}
	// A taken port fails before anything is written.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if n, err := openNode(t, created, func(c *Config) { c.Port = ln.Addr().(*net.TCPAddr).Port }); err == nil {
		n.Close()
		t.Fatal("a start on a taken port succeeded")
	}
	if _, err := os.Stat(created); !os.IsNotExist(err) {
		t.Errorf("the start that could not bind created the data dir (%v)", err)
	}
}

// A member whose data dir was wiped rejoins under its old ID: the leader
// replaces the old member (a voter at the same address) instead of taking
// the empty node for it, the node is promoted once caught up, and it holds
// every decision.
func TestWipedMemberRejoinsAsANewMember(t *testing.T) {
	nodes := startCluster(t, 3)
	li := leaderOf(nodes)
	if li < 0 {
		t.Fatal("no leader")
	}
	leader := nodes[li]
	cl := dial(t, leader)
	for _, k := range []string{"a", "b", "c"} {
		if got := cl.throttle(t, k); !strings.HasPrefix(got, ":0 ") {
			t.Fatalf("decision on %s: %q", k, got)
		}
	}
	wiped := (li + 1) % len(nodes)
	old := nodes[wiped]
	dir, port := old.dataDir, old.Addr.(*net.TCPAddr).Port
	mustClose(t, old)
	nodes[wiped] = nil
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	back := mustOpen(t, dir, func(c *Config) {
		fastRaft(c)
		c.NodeID, c.Port, c.Join = old.ID, port, leader.Addr.String()
	})
	nodes[wiped] = back
	waitCond(t, 20*time.Second, "the wiped node to be a voter again", func() bool {
		ms, err := leader.base.group.Members()
		if err != nil {
			return false
		}
		for _, m := range ms {
			if m.ID == back.ID {
				return m.Suffrage == group.Voter && back.raftGate.isOpen() && back.base.group.Raft().AppliedIndex() >= leader.base.group.Raft().CommitIndex()
			}
		}
		return false
	})
	bc := dial(t, back)
	if _, err := bc.c.Write([]byte("*1\r\n$8\r\nREADONLY\r\n")); err != nil {
		t.Fatal(err)
	}
	if line, err := bc.r.ReadString('\n'); err != nil || line != "+OK\r\n" {
		t.Fatalf("READONLY: %q %v", line, err)
	}
	for _, k := range []string{"a", "b", "c"} {
		if got := bc.do(t, "CL.PEEK", k, "9", "1", "86400"); !strings.HasPrefix(got, ":0 :10 :8 ") { // one held, one more peeked
			t.Errorf("%s on the rejoined node (its own state): %q, want one decision held", k, got)
		}
	}
}

// A data dir written before node-level records and group IDs (the node's
// ID in its one group's stable store, the Raft store's keys without a
// group prefix) starts as the same node with the same state: the store
// becomes group 0 and the ID moves to its node-level record.
func TestDataDirFromBeforeGroupsIsAdopted(t *testing.T) {
	dir := t.TempDir()
	n := mustOpen(t, dir, func(c *Config) { c.NodeID = "old" })
	cl := dial(t, n)
	for _, k := range []string{"a", "b"} {
		cl.throttle(t, k)
	}
	mustClose(t, n)
	rewriteAsFormerLayout(t, filepath.Join(dir, raftDir), "old")

	n = mustOpen(t, dir, nil)
	if n.ID != "old" {
		t.Errorf("adopted ID %q, want old", n.ID)
	}
	select {
	case <-n.base.group.Loaded():
	case <-time.After(10 * time.Second):
		t.Fatal("the migrated node is still loading after 10s")
	}
	for _, k := range []string{"a", "b"} {
		if got := dial(t, n).do(t, "CL.PEEK", k, "9", "1", "86400"); !strings.HasPrefix(got, ":0 :10 :8 ") {
			t.Errorf("%s after the migration: %q, want the decision held before it", k, got)
		}
	}
	if v, err := n.db.NodeRecord(nodeIDRecord); err != nil || string(v) != "old" {
		t.Errorf("node-level ID record = %q, %v; want old", v, err)
	}
	if v, err := n.base.store.Get(legacyNodeIDKey); !errors.Is(err, raftstore.ErrKeyNotFound) {
		t.Errorf("the ID is still in the group's stable store (%q, %v)", v, err)
	}
	mustClose(t, n)
	if n := mustOpen(t, dir, nil); n.ID != "old" {
		t.Errorf("after a second start: ID %q, want old", n.ID)
		mustClose(t, n)
	} else {
		mustClose(t, n)
	}
}

// rewriteAsFormerLayout rewrites the Raft store in dir, with Pebble alone,
// as the code before groups wrote it: group 0's keys without their 5-byte
// group prefix (0x10 and the group ID), the node's ID under the stable key
// "redcell/node-id" (format 1 stable keys start with 0x02), and neither a
// format marker (0x00 0x01) nor node-level records (0x00 0x02 ...).
func rewriteAsFormerLayout(t *testing.T, dir, id string) {
	t.Helper()
	db, err := pebble.Open(dir, &pebble.Options{FormatMajorVersion: pebble.FormatTableFormatV6, Logger: quietPebble{}})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	group0 := []byte{0x10, 0, 0, 0, 0}
	b := db.NewBatch()
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: group0, UpperBound: []byte{0x10, 0, 0, 0, 1}})
	if err != nil {
		t.Fatal(err)
	}
	for ok := it.First(); ok; ok = it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Set(it.Key()[len(group0):], v, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(
		b.DeleteRange([]byte{0x00}, []byte{0x01}, nil),
		b.DeleteRange(group0, []byte{0x10, 0, 0, 0, 1}, nil),
		b.Set(append([]byte{0x02}, legacyNodeIDKey...), []byte(id), nil),
		b.Commit(pebble.Sync)); err != nil {
		t.Fatal(err)
	}
}

// quietPebble discards Pebble's messages.
type quietPebble struct{}

func (quietPebble) Infof(string, ...any)  {}
func (quietPebble) Errorf(string, ...any) {}
func (quietPebble) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf(format, args...))
}
