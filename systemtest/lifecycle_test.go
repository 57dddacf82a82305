package systemtest

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestGracefulShutdown sends SIGTERM while clients are sending pipelines:
// the process exits 0, every reply that arrived is whole, and a restart
// resumes the state (a drained key stays drained, no acknowledged decision is
// lost) and becomes a ready leader again.
func TestGracefulShutdown(t *testing.T) {
	t.Parallel()
	n := startTestNode(t, "graceful")
	c := mustDial(t, n.addr())
	origin := freshBase(t, c)
	for j := int64(1); j <= 5; j++ {
		expectReply(t, c, wantInts(0, 5, 5-j, -1, 100*j), "CL.THROTTLE", "drained", "4", "1", "100")
	}
	expectReply(t, c, wantInts(1, 5, 0, 100, 500), "CL.THROTTLE", "drained", "4", "1", "100")

	const seed = 777
	load := startThrottleLoad(t, n.addr(), "graceful", 4, 25, 16, 2000, seed)
	load.waitAcks(t, 30*time.Second)
	if err := n.signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := n.waitExit(stopTimeout); err != nil {
		n.kill()
		t.Fatalf("after SIGTERM: %v", err)
	}
	if code := n.exitCode(); code != 0 {
		t.Errorf("exit code after SIGTERM under load: got %d, want 0", code)
	}
	load.wait(t, opTimeout+5*time.Second)
	// A request caught by the shutdown may be answered TRYAGAIN (its outcome
	// is then unknown); nothing else, and nothing cut in half.
	load.checkReplies(t, "TRYAGAIN ")
	sent, acked := load.totals()
	t.Logf("load (seed %d): %d decisions sent, %d acknowledged before the shutdown", seed, sent, acked)

	n.mustRestart(t)
	c = mustDial(t, n.addr())
	info := mustDo(t, c, "INFO", "raft")
	if v := infoField(info.str, "raft_ready"); v != "1" {
		t.Errorf("INFO raft after restart: raft_ready:%q, want 1", v)
	}
	if clk := replicatedClock(t, c); clk != origin {
		t.Errorf("replicated clock after restart: got %d, want the origin %d", clk, origin)
	}
	setClock(t, c, origin)
	expectReply(t, c, wantInts(1, 5, 0, 100, 500), "CL.PEEK", "drained", "4", "1", "100")
	expectReply(t, c, wantInts(1, 5, 0, 100, 500), "CL.THROTTLE", "drained", "4", "1", "100")
	expectReply(t, c, wantInt(500000), "PTTL", "drained")
	applied := load.verifyState(t, c)
	t.Logf("%d of %d unacknowledged decisions were applied", applied, sent-acked)
	n.mustStop(t)
}

// TestRestartResumesNodeID checks that the node ID is generated once, kept
// in the data directory and reported the same after a restart, and that a
// conflicting --node-id on an existing directory is refused.
func TestRestartResumesNodeID(t *testing.T) {
	t.Parallel()
	t.Run("generated_and_kept", func(t *testing.T) {
		t.Parallel()
		n := startTestNode(t, "nodeid")
		id := serverIDs(t, n)
		data, err := os.ReadFile(filepath.Join(n.dataDir, "node-id"))
		if err != nil {
			t.Fatalf("the node id file: %v", err)
		}
		if got := strings.TrimSpace(string(data)); got != id {
			t.Errorf("node-id file holds %q, INFO reports %q", got, id)
		}
		n.mustStop(t)
		n.mustRestart(t)
		if again := serverIDs(t, n); again != id {
			t.Errorf("node id after restart: got %q, want %q", again, id)
		}
		n.mustStop(t)

		// Another --node-id on this directory: refused, with a message
		// naming both IDs, and without harming the directory.
		other := newNode("nodeid-other", n.dataDir, t.TempDir(), "--node-id", "other")
		registerNodeCleanup(t, other, 0)
		p, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		other.port = p
		if err := other.launch(); err != nil {
			t.Fatal(err)
		}
		if err := other.waitExit(readyTimeout); err != nil {
			t.Fatalf("--node-id other on a directory of node %q: %v", id, err)
		}
		if code := other.exitCode(); code == 0 {
			t.Errorf("--node-id other on a directory of node %q: exit code 0, want non-zero", id)
		}
		msg := other.logTail(8192)
		if !strings.Contains(msg, "other") || !strings.Contains(msg, id) {
			t.Errorf("--node-id other: the error should name both IDs (%q, %q); stderr:\n%s", "other", id, msg)
		}
		n.mustRestart(t)
		if again := serverIDs(t, n); again != id {
			t.Errorf("node id after the refused start: got %q, want %q", again, id)
		}
	})
	t.Run("given_by_flag", func(t *testing.T) {
		t.Parallel()
		n := startTestNode(t, "nodeid-flag", "--node-id", "n1")
		if id := serverIDs(t, n); id != "n1" {
			t.Errorf("--node-id n1: INFO reports %q", id)
		}
		n.mustStop(t)
		n.mustRestart(t) // the same --node-id again is fine
		if id := serverIDs(t, n); id != "n1" {
			t.Errorf("--node-id n1 after restart: INFO reports %q", id)
		}
	})
}

// serverIDs returns the node id from INFO server, requiring run_id and
// node_id to agree and be non-empty.
func serverIDs(t *testing.T, n *node) string {
	t.Helper()
	c := mustDial(t, n.addr())
	info := mustDo(t, c, "INFO", "server")
	runID, nodeID := infoField(info.str, "run_id"), infoField(info.str, "node_id")
	if nodeID == "" || runID != nodeID {
		t.Fatalf("INFO server: run_id %q, node_id %q: want the same non-empty id", runID, nodeID)
	}
	c.close()
	return nodeID
}
