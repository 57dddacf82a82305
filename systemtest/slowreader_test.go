package systemtest

import (
	"bytes"
	"net"
	"testing"
	"time"
)

// TestClientThatNeverReadsCostsBoundedMemory: clients that pipeline
// requests and never read a reply fill their sockets, and then the node
// stops reading from them (it writes a pipeline's replies before it reads
// the next): what each can make the node hold is one pipeline's replies, not
// everything it sent. Each stuck client here keeps a 4 KiB receive buffer
// and sends 24 MB of CL.PEEKs (~10 MB of replies): the kernel can hold a
// few MB of a connection's replies, so a node that read on regardless would
// hold the rest, tens of MB for ten clients. The node's RSS may grow by 16
// MB at most, other clients keep being answered meanwhile, and closing the
// stuck clients frees them.
func TestClientThatNeverReadsCostsBoundedMemory(t *testing.T) {
	t.Parallel()
	n := startTestNode(t, "slowreader")
	ok := mustDial(t, n.addr())
	expectReply(t, ok, wantStatus("PONG"), "PING")
	before := rssBytes(t, ok)

	const clients, perClient = 10, 24 << 20
	var cmd bytes.Buffer
	for cmd.Len() < 64<<10 {
		cmd.WriteString("*6\r\n$7\r\nCL.PEEK\r\n$3\r\nkey\r\n$2\r\n15\r\n$2\r\n30\r\n$2\r\n60\r\n$1\r\n1\r\n")
	}
	chunk := cmd.Bytes()
	var stuck []net.Conn
	sent := 0
	for range clients {
		nc, err := net.Dial("tcp", n.addr())
		if err != nil {
			t.Fatal(err)
		}
		if err := nc.(*net.TCPConn).SetReadBuffer(4096); err != nil {
			t.Fatal(err)
		}
		stuck = append(stuck, nc)
		// Write until the sockets are full: the write then stalls, which
		// the deadline turns into an error.
		for written := 0; written < perClient; {
			_ = nc.SetWriteDeadline(time.Now().Add(500 * time.Millisecond))
			m, err := nc.Write(chunk)
			written += m
			sent += m
			if err != nil {
				break
			}
		}
	}
	// Another client is still answered at once.
	start := time.Now()
	expectReply(t, ok, wantStatus("PONG"), "PING")
	if took := time.Since(start); took > time.Second {
		t.Errorf("PING took %v while %d clients were stuck", took, clients)
	}
	grown := rssBytes(t, ok) - before
	t.Logf("%d clients that never read sent %d MB between them; RSS grew by %.1f MB", clients, sent>>20, float64(grown)/(1<<20))
	if grown > 16<<20 {
		t.Errorf("RSS grew by %d MB for clients that never read; want it bounded by their pipelines, not by what they sent", grown>>20)
	}
	for _, nc := range stuck {
		nc.Close()
	}
	expectReply(t, ok, wantStatus("PONG"), "PING")
	c := mustDial(t, n.addr())
	deadline := time.Now().Add(10 * time.Second)
	for {
		info := mustDo(t, c, "INFO", "clients")
		if infoField(info.str, "connected_clients") == "2" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("stuck clients still connected 10 s after they closed:\n%s", info.str)
		}
	}
}
