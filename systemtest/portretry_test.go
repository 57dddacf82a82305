package systemtest

import (
	"net"
	"strconv"
	"testing"
)

// TestNodeGivenATakenPortStartsOnAnother: a node whose port was chosen
// before its first start (as a cluster node's is, for its proxy) and is
// taken by the time it binds starts on another port, and tells repick
// which, so what named the old port can follow; the port stays taken by its
// holder throughout, as an outgoing connection's local port would be.
func TestNodeGivenATakenPortStartsOnAnother(t *testing.T) {
	holder, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	taken := holder.Addr().(*net.TCPAddr).Port

	n := newNode("porttaken", t.TempDir(), t.TempDir())
	n.port = taken
	n.firstStart = []string{"--bootstrap"}
	var told []int
	n.repick = func(port int) error { told = append(told, port); return nil }
	registerNodeCleanup(t, n, 0)
	if err := n.start(); err != nil {
		t.Fatal(err)
	}
	if n.port == taken || len(told) == 0 || told[len(told)-1] != n.port {
		t.Fatalf("started on port %d (the taken one %d), repick told %v", n.port, taken, told)
	}
	c := mustDial(t, net.JoinHostPort("127.0.0.1", strconv.Itoa(n.port)))
	if r := mustDo(t, c, "PING"); r.str != "PONG" {
		t.Fatalf("PING on the new port: %+v", r)
	}
}
