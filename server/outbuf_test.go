package server

import (
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// client-output-buffer-limit: Redis's syntax, defaults and errors in
// CONFIG; with a normal-class limit set, a client whose replies exceed the
// hard limit, or stay above the soft limit for the soft seconds because it
// does not read, is closed without a reply, while others are served.
func TestOutputBufferLimit(t *testing.T) {
	n := startTestNode(t)
	_, addr := n.serveConfig(Config{})
	c := dialAddr(t, addr)
	for i, s := range []struct {
		args []string
		want string
	}{
		{[]string{"CONFIG", "GET", "client-output-buffer-limit"}, "*[$client-output-buffer-limit $normal 0 0 0 replica 268435456 67108864 60 pubsub 33554432 8388608 60]"},
		{[]string{"CONFIG", "SET", "client-output-buffer-limit", "normal 1 2"}, "-ERR CONFIG SET failed (possibly related to argument 'client-output-buffer-limit') - Wrong number of arguments in buffer limit configuration."},
		{[]string{"CONFIG", "SET", "client-output-buffer-limit", "master 1 2 3"}, "-ERR CONFIG SET failed (possibly related to argument 'client-output-buffer-limit') - Invalid client class specified in buffer limit configuration."},
		{[]string{"CONFIG", "SET", "client-output-buffer-limit", "normal 1kb 0 0"}, "+OK"},
		{[]string{"CONFIG", "GET", "client-output-buffer-limit"}, "*[$client-output-buffer-limit $normal 1024 0 0 replica 268435456 67108864 60 pubsub 33554432 8388608 60]"},
	} {
		if got := c.do(s.args...); got != s.want {
			t.Errorf("step %d: %q = %s, want %s", i, s.args, got, s.want)
		}
	}
	// Hard limit: 300 PINGs in one pipeline answer 2,100 bytes > 1 KiB.
	hard := dialAddr(t, addr)
	hard.send(strings.Repeat("*1\r\n$4\r\nPING\r\n", 300))
	hard.expectEOF()
	if got := c.do("PING"); got != "+PONG" {
		t.Fatalf("another client after the hard limit: %s", got)
	}

	// Soft limit: more than 64 KiB unwritten for a second.
	c.do("CONFIG", "SET", "client-output-buffer-limit", "normal 0 64kb 1")
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	_ = nc.(*net.TCPConn).SetReadBuffer(4096)
	// One round trip first: the node has registered the client before the
	// count of clients below is watched for it to go.
	if _, err := nc.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
		t.Fatal(err)
	}
	pong := make([]byte, len("+PONG\r\n"))
	if _, err := io.ReadFull(nc, pong); err != nil || string(pong) != "+PONG\r\n" {
		t.Fatalf("PING from the client to be dropped: %q, %v", pong, err)
	}
	pipeline := []byte(strings.Repeat("*2\r\n$4\r\nECHO\r\n$100\r\n"+strings.Repeat("z", 100)+"\r\n", 2000))
	// Send requests without ever reading, until the node drops the client:
	// its replies fill the sockets, its reply write stalls, and it stops
	// reading, so this writer blocks until the close fails its write. (A
	// writer that gave up after a stall of its own could stop while the
	// node, slowed by a loaded machine, had not yet read enough to stall:
	// then every reply fits in the socket buffers and nothing stalls.)
	writerDone := make(chan error, 1)
	go func() {
		for {
			if _, err := nc.Write(pipeline); err != nil {
				writerDone <- err
				return
			}
		}
	}()
	defer func() { nc.Close(); <-writerDone }()
	deadline := time.Now().Add(15 * time.Second)
	for {
		info := c.replyTreeOf("INFO", "clients").s
		if strings.Contains(info, "connected_clients:1\r\n") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a client that never read was not closed under a soft limit of 64 KiB for 1 s:\n%s", info)
		}
	}
	if got := c.do("PING"); got != "+PONG" {
		t.Fatalf("another client after the soft limit: %s", got)
	}
	c.do("CONFIG", "SET", "client-output-buffer-limit", "normal 0 0 0")
}
