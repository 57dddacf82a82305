package systemtest

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestDamagedWALRefusesToStart reproduces the safety issue's report with the
// real binary: a node holding 20 keys is stopped, 200 bytes of garbage are
// written into Pebble's WAL at offset 20, and the node is started again.
// Pebble then replays nothing; before the fix the node bootstrapped a new,
// empty cluster under its old ID and served an empty keyspace. It must
// instead exit non-zero with a message that says what is wrong, and leave
// the data dir as it was.
func TestDamagedWALRefusesToStart(t *testing.T) {
	t.Parallel()
	n := startTestNode(t, "damaged-wal")
	c := mustDial(t, n.addr())
	for i := 0; i < 20; i++ {
		mustDo(t, c, "CL.THROTTLE", "wal:"+strconv.Itoa(i), "5", "1", "86400")
	}
	c.close()
	n.kill() // the decisions sit in the WAL, not yet in an sstable

	wals, err := filepath.Glob(filepath.Join(n.dataDir, "raft", "*.log"))
	if err != nil || len(wals) == 0 {
		t.Fatalf("no Pebble WAL in %s: %v", n.dataDir, err)
	}
	garbage := make([]byte, 200)
	for i := range garbage {
		garbage[i] = byte(i*197 + 11)
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
	idBefore, err := os.ReadFile(filepath.Join(n.dataDir, "node-id"))
	if err != nil {
		t.Fatal(err)
	}

	off := n.logSize()
	if err := n.launch(); err != nil {
		t.Fatal(err)
	}
	if err := n.waitExit(readyTimeout); err != nil {
		t.Fatalf("the node with a damaged WAL did not exit: %v", err)
	}
	if code := n.exitCode(); code == 0 {
		t.Fatalf("the node with a damaged WAL exited 0")
	}
	msg := n.logSince(off)
	if strings.Contains(msg, "bootstrapped") {
		t.Errorf("the node bootstrapped a new cluster over the damaged data dir:\n%s", msg)
	}
	if !strings.Contains(msg, "Raft state is missing or unreadable") && !strings.Contains(msg, "raft store") {
		t.Errorf("the refusal does not say what is wrong:\n%s", lastLines(msg, 20))
	}
	if idAfter, _ := os.ReadFile(filepath.Join(n.dataDir, "node-id")); string(idAfter) != string(idBefore) {
		t.Errorf("node-id file changed from %q to %q", idBefore, idAfter)
	}
}

// TestWALDamagedInTheMiddleRefusesToStart is the hardening issue's report:
// 50 keys decided and acknowledged, the node killed, 4 bytes of Pebble's
// WAL flipped half-way through. Pebble alone would replay up to the damage
// and start with the later keys silently gone; the node must instead exit
// non-zero saying the WAL is corrupt in synced data, and change nothing.
func TestWALDamagedInTheMiddleRefusesToStart(t *testing.T) {
	t.Parallel()
	n := startTestNode(t, "wal-middle")
	c := mustDial(t, n.addr())
	for i := 0; i < 50; i++ {
		mustDo(t, c, "CL.THROTTLE", "mid:"+strconv.Itoa(i), "5", "1", "86400")
	}
	c.close()
	n.kill()

	wals, err := filepath.Glob(filepath.Join(n.dataDir, "raft", "*.log"))
	if err != nil || len(wals) == 0 {
		t.Fatalf("no Pebble WAL in %s: %v", n.dataDir, err)
	}
	wal := wals[len(wals)-1]
	data, err := os.ReadFile(wal)
	if err != nil {
		t.Fatal(err)
	}
	// The WAL is zero-filled past its records (raftstore/walprefill.go):
	// damage the middle of what was written, not of the file.
	written := len(data)
	for written > 0 && data[written-1] == 0 {
		written--
	}
	if written < 64 {
		t.Fatalf("%s holds %d bytes of records; want the 50 decisions' entries", wal, written)
	}
	copy(data[written/2:], []byte{0xde, 0xad, 0xbe, 0xef})
	if err := os.WriteFile(wal, data, 0o644); err != nil {
		t.Fatal(err)
	}

	off := n.logSize()
	if err := n.launch(); err != nil {
		t.Fatal(err)
	}
	if err := n.waitExit(readyTimeout); err != nil {
		t.Fatalf("the node with a WAL damaged in the middle did not exit: %v", err)
	}
	if code := n.exitCode(); code == 0 {
		t.Fatalf("the node with a WAL damaged in the middle exited 0")
	}
	if msg := n.logSince(off); !strings.Contains(msg, "corrupt in data that had been synced") {
		t.Errorf("the refusal does not say the WAL is corrupt:\n%s", lastLines(msg, 20))
	}
	after, err := os.ReadFile(wal)
	if err != nil || string(after) != string(data) {
		t.Errorf("the damaged WAL was changed by the refused start (err %v)", err)
	}
}
