package node

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redcell/redcell/raftstore"
)

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// openNode starts a real node (Pebble on disk, hashicorp/raft, a loopback
// port) on dir; the caller closes it.
func openNode(t *testing.T, dir string, mod func(*Config)) (*Node, error) {
	t.Helper()
	cfg := Config{Port: 0, DataDir: dir, Stripes: 4, Logger: quietLogger()}
	if mod != nil {
		mod(&cfg)
	}
	return Open(cfg)
}

func mustOpen(t *testing.T, dir string, mod func(*Config)) *Node {
	t.Helper()
	n, err := openNode(t, dir, mod)
	if err != nil {
		t.Fatalf("opening a node on %s: %v", dir, err)
	}
	return n
}

func mustClose(t *testing.T, n *Node) {
	t.Helper()
	if err := n.Close(); err != nil {
		t.Fatalf("closing the node: %v", err)
	}
}

// client is a minimal RESP client for these tests.
type client struct {
	c net.Conn
	r *bufio.Reader
}

func dial(t *testing.T, n *Node) *client {
	t.Helper()
	c, err := net.Dial("tcp", n.Addr.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	return &client{c: c, r: bufio.NewReader(c)}
}

// do sends one command and returns the reply's lines, joined by spaces
// (enough for integers, simple strings and arrays of integers).
func (cl *client) do(t *testing.T, args ...string) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := cl.c.Write([]byte(b.String())); err != nil {
		t.Fatal(err)
	}
	line, err := cl.r.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	line = strings.TrimSuffix(line, "\r\n")
	if !strings.HasPrefix(line, "*") {
		return line
	}
	var n int
	fmt.Sscanf(line[1:], "%d", &n)
	parts := make([]string, n)
	for i := range parts {
		if parts[i], err = cl.r.ReadString('\n'); err != nil {
			t.Fatal(err)
		}
		parts[i] = strings.TrimSuffix(parts[i], "\r\n")
	}
	return strings.Join(parts, " ")
}

// throttle spends one unit of a limit that cannot refill during the test
// and returns the reply.
func (cl *client) throttle(t *testing.T, key string) string {
	return cl.do(t, "CL.THROTTLE", key, "9", "1", "86400")
}

func TestFreshDataDirBootstrapsAndResumes(t *testing.T) {
	dir := t.TempDir()
	n := mustOpen(t, dir, nil)
	id := n.ID
	cl := dial(t, n)
	if got := cl.throttle(t, "k"); got != ":0 :10 :9 :-1 :86400" {
		t.Fatalf("first decision: %q", got)
	}
	mustClose(t, n)

	n = mustOpen(t, dir, nil)
	defer mustClose(t, n)
	if n.ID != id {
		t.Errorf("restart: node ID %q, want %q", n.ID, id)
	}
	// Until the log is replayed the node answers LOADING (group's loading
	// tests cover that); then the decision is there.
	select {
	case <-n.base.group.Loaded():
	case <-time.After(10 * time.Second):
		t.Fatal("the restarted node is still loading after 10s")
	}
	if got := dial(t, n).throttle(t, "k"); !strings.HasPrefix(got, ":0 :10 :8 ") {
		t.Errorf("second decision after restart: %q, want remaining 8", got)
	}
}

// The node ID lives in the Raft store: losing the node-id file loses
// nothing (the file is written again), and a file that disagrees with the
// store is refused rather than obeyed.
func TestNodeIDIsKeptWithTheRaftState(t *testing.T) {
	dir := t.TempDir()
	n := mustOpen(t, dir, func(c *Config) { c.NodeID = "n1" })
	mustClose(t, n)

	path := filepath.Join(dir, nodeIDFile)
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	n = mustOpen(t, dir, nil)
	if n.ID != "n1" {
		t.Errorf("after deleting the node-id file: ID %q, want n1", n.ID)
	}
	mustClose(t, n)
	if data, err := os.ReadFile(path); err != nil || strings.TrimSpace(string(data)) != "n1" {
		t.Errorf("node-id file after restart: %q, %v; want n1", data, err)
	}

	if err := os.WriteFile(path, []byte("intruder\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if n, err := openNode(t, dir, nil); err == nil {
		n.Close()
		t.Fatal("a node-id file naming another node was obeyed")
	} else if !strings.Contains(err.Error(), "intruder") || !strings.Contains(err.Error(), "n1") {
		t.Errorf("error should name both IDs: %v", err)
	}
	if err := os.WriteFile(path, []byte("n1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if n, err := openNode(t, dir, func(c *Config) { c.NodeID = "n2" }); err == nil {
		n.Close()
		t.Fatal("--node-id n2 was accepted on the data dir of n1")
	}
}

// A data dir written before the ID moved into the store (node-id file and
// Raft state, no stored ID) is adopted with the file's ID.
func TestDataDirFromBeforeTheStoredIDIsAdopted(t *testing.T) {
	dir := t.TempDir()
	n := mustOpen(t, dir, func(c *Config) { c.NodeID = "old" })
	dial(t, n).throttle(t, "k")
	mustClose(t, n)
	db, err := raftstore.OpenDB(filepath.Join(dir, raftDir), raftstore.Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	// Emulate the old layout: no ID in the store.
	if err := db.SetNodeRecord(nodeIDRecord, nil); err != nil {
		t.Fatal(err)
	}
	db.Close()
	n = mustOpen(t, dir, nil)
	defer mustClose(t, n)
	if n.ID != "old" {
		t.Errorf("adopted ID %q, want old", n.ID)
	}
}

// The reproduction: 200 random bytes written into Pebble's WAL at
// offset 20 of a node holding 20 keys. Pebble then replays nothing; the
// node must refuse to start instead of bootstrapping an empty cluster.
func TestDamagedWALIsRefusedNotBootstrapped(t *testing.T) {
	dir := t.TempDir()
	n := mustOpen(t, dir, nil)
	cl := dial(t, n)
	for i := 0; i < 20; i++ {
		cl.throttle(t, fmt.Sprintf("key:%d", i))
	}
	mustClose(t, n)

	wals, _ := filepath.Glob(filepath.Join(dir, raftDir, "*.log"))
	if len(wals) == 0 {
		t.Fatal("no Pebble WAL in the data dir")
	}
	garbage := make([]byte, 200)
	for i := range garbage {
		garbage[i] = byte(i*131 + 7)
	}
	for _, wal := range wals {
		f, err := os.OpenFile(wal, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt(garbage, 20); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}

	n, err := openNode(t, dir, nil)
	if err == nil {
		got := dial(t, n).do(t, "DBSIZE")
		n.Close()
		t.Fatalf("a node with a damaged WAL started (DBSIZE %s)", got)
	}
	if !errors.Is(err, ErrRaftStateMissing) && !strings.Contains(err.Error(), "raft store") {
		t.Fatalf("unexpected error: %v", err)
	}
	t.Logf("refused as expected: %v", err)
}

// Losing the whole Raft directory while the node-id file stays is the same
// case: refuse.
func TestMissingRaftStateIsRefused(t *testing.T) {
	dir := t.TempDir()
	n := mustOpen(t, dir, nil)
	dial(t, n).throttle(t, "k")
	mustClose(t, n)
	if err := os.RemoveAll(filepath.Join(dir, raftDir)); err != nil {
		t.Fatal(err)
	}
	n, err := openNode(t, dir, nil)
	if err == nil {
		n.Close()
		t.Fatal("a data dir with a node-id file and no Raft state was bootstrapped")
	}
	if !errors.Is(err, ErrRaftStateMissing) {
		t.Fatalf("error %v, want ErrRaftStateMissing", err)
	}
}

// A data dir whose Pebble files exist but hold nothing (a first start that
// never got as far as its bootstrap, or a store emptied by damage before the
// node-id file was written) is refused too: only a truly empty dir
// bootstraps.
func TestStoreFilesWithoutStateAreRefused(t *testing.T) {
	dir := t.TempDir()
	s, err := raftstore.Open(filepath.Join(dir, raftDir), raftstore.Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	n, err := openNode(t, dir, nil)
	if err == nil {
		n.Close()
		t.Fatal("a data dir holding an empty Raft store was bootstrapped")
	}
	if !errors.Is(err, ErrRaftStateMissing) {
		t.Fatalf("error %v, want ErrRaftStateMissing", err)
	}
}

// A directory of someone else's files is refused before anything is
// written into it, and left exactly as it was.
func TestForeignDirectoryIsRefused(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "lost+found"), 0o755); err != nil {
		t.Fatal(err)
	}
	n, err := openNode(t, dir, nil)
	if err == nil {
		n.Close()
		t.Fatal("a directory of unrelated files was taken over")
	}
	if !errors.Is(err, ErrNotRedcellDir) || !strings.Contains(err.Error(), "notes.txt") {
		t.Fatalf("error %v, want ErrNotRedcellDir naming notes.txt", err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("the refused directory now holds %d entries, want the 2 it had", len(entries))
	}
	// A mount point with only lost+found is empty.
	empty := t.TempDir()
	if err := os.Mkdir(filepath.Join(empty, "lost+found"), 0o755); err != nil {
		t.Fatal(err)
	}
	mustClose(t, mustOpen(t, empty, nil))
}
