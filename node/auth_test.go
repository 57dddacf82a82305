package node

import (
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/redcell/redcell/group"
)

// A password is per node and per client connection: in a cluster whose
// nodes all require it, a client authenticates with the node it talks to,
// and a follower then forwards its writes to the leader as usual (peers
// prove the cluster secret, not the client password).
func TestPasswordInACluster(t *testing.T) {
	withPass := func(id, join string) func(*Config) {
		return func(c *Config) {
			fastRaft(c)
			c.NodeID, c.Join, c.RequirePass, c.Bootstrap = id, join, "cluster-pw", join == ""
		}
	}
	first := mustOpen(t, t.TempDir(), withPass("n1", ""))
	nodes := []*Node{first}
	for i := 2; i <= 3; i++ {
		nodes = append(nodes, mustOpen(t, t.TempDir(), withPass(fmt.Sprintf("n%d", i), first.Addr.String())))
	}
	t.Cleanup(func() {
		for _, n := range nodes {
			n.Close()
		}
	})
	waitCond(t, 20*time.Second, "three voters", func() bool {
		ms, err := first.base.group.Members()
		if err != nil || len(ms) != 3 {
			return false
		}
		for _, m := range ms {
			if m.Suffrage != group.Voter {
				return false
			}
		}
		return true
	})
	waitCond(t, 20*time.Second, "a leader", func() bool { return leaderOf(nodes) >= 0 })
	for i, n := range nodes {
		cl := dial(t, n)
		if got := cl.do(t, "CL.THROTTLE", "shared", "9", "1", "86400"); got != "-NOAUTH Authentication required." {
			t.Errorf("node %d before AUTH: %s", i, got)
		}
		if got := cl.do(t, "AUTH", "cluster-pw"); got != "+OK" {
			t.Fatalf("node %d: AUTH = %s", i, got)
		}
		// One limit of 10, shared by the three nodes' clients in turn.
		if got, want := cl.throttle(t, "shared"), fmt.Sprintf(":0 :10 :%d :-1", 9-i); len(got) < len(want) || got[:len(want)] != want {
			t.Errorf("node %d after AUTH: %s, want %s ...", i, got, want)
		}
	}
}

// SHUTDOWN reaches the node's owner: ShutdownRequested fires, and Close
// then stops the node.
func TestShutdownCommandReachesTheOwner(t *testing.T) {
	n := mustOpen(t, t.TempDir(), nil)
	waitCond(t, 20*time.Second, "a ready leader", func() bool { return n.base.group.Ready() })
	cl := dial(t, n)
	if got := cl.do(t, "SHUTDOWN", "ABORT"); got != "-ERR No shutdown in progress." {
		t.Errorf("SHUTDOWN ABORT = %s", got)
	}
	select {
	case <-n.ShutdownRequested():
		t.Fatal("asked to stop before SHUTDOWN")
	default:
	}
	if _, err := cl.c.Write([]byte("SHUTDOWN\r\n")); err != nil {
		t.Fatal(err)
	}
	if b, err := cl.r.ReadByte(); err != io.EOF {
		t.Errorf("after SHUTDOWN: read %q, %v; want the connection closed", b, err)
	}
	select {
	case <-n.ShutdownRequested():
	case <-time.After(10 * time.Second):
		t.Fatal("SHUTDOWN did not reach ShutdownRequested")
	}
	mustClose(t, n)
}
