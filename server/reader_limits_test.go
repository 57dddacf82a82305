package server

import (
	"strings"
	"testing"
)

// proto-max-bulk-len and client-query-buffer-limit: settable at runtime
// within Redis's bounds, shown by CONFIG GET, and enforced by every
// connection's reader: a longer argument is Redis's "invalid bulk length"
// protocol error; unparsed input beyond the query buffer limit closes the
// client without a reply, as Redis does.
func TestReaderLimitsAtRuntime(t *testing.T) {
	n := startTestNode(t)
	_, addr := n.serveConfig(Config{})
	c := dialAddr(t, addr)
	for i, s := range []struct {
		args []string
		want string
	}{
		{[]string{"CONFIG", "GET", "proto-max-bulk-len", "client-query-buffer-limit"}, "*[$client-query-buffer-limit $1073741824 $proto-max-bulk-len $536870912]"},
		{[]string{"CONFIG", "SET", "proto-max-bulk-len", "100"}, "-ERR CONFIG SET failed (possibly related to argument 'proto-max-bulk-len') - argument must be between 1048576 and 4611686018427387904 inclusive"},
		{[]string{"CONFIG", "SET", "client-query-buffer-limit", "lots"}, "-ERR CONFIG SET failed (possibly related to argument 'client-query-buffer-limit') - argument must be a memory value"},
		{[]string{"CONFIG", "SET", "proto-max-bulk-len", "1mb", "client-query-buffer-limit", "2mb"}, "+OK"},
		{[]string{"CONFIG", "GET", "proto-max-bulk-len", "client-query-buffer-limit"}, "*[$client-query-buffer-limit $2097152 $proto-max-bulk-len $1048576]"},
	} {
		if got := c.do(s.args...); got != s.want {
			t.Errorf("step %d: %q = %s, want %s", i, s.args, got, s.want)
		}
	}

	// One byte over proto-max-bulk-len: the protocol error, then closed.
	over := dialAddr(t, addr)
	over.send("*2\r\n$4\r\nECHO\r\n$1048577\r\n")
	if got := over.reply(); got != "-ERR Protocol error: invalid bulk length" {
		t.Errorf("bulk over proto-max-bulk-len: %s", got)
	}
	over.expectEOF()
	// Exactly at the limit is fine.
	at := dialAddr(t, addr)
	at.send("*2\r\n$4\r\nECHO\r\n$1048576\r\n" + strings.Repeat("x", 1<<20) + "\r\n")
	if got := at.replyTree(); len(got.s) != 1<<20 {
		t.Errorf("bulk at proto-max-bulk-len: a reply of %d bytes", len(got.s))
	}

	// A command that never completes: once 2 MB of it are held, closed.
	c.do("CONFIG", "SET", "proto-max-bulk-len", "8mb")
	big := dialAddr(t, addr)
	big.send("*2\r\n$4\r\nECHO\r\n$7000000\r\n")
	chunk := strings.Repeat("y", 64<<10)
	closed := false
	for sent := 0; sent < 7000000; sent += len(chunk) {
		if _, err := big.nc.Write([]byte(chunk)); err != nil {
			closed = true
			break
		}
	}
	if !closed {
		big.expectEOF()
	}
	if got := c.do("PING"); got != "+PONG" {
		t.Errorf("after closing the client over its query buffer limit: %s", got)
	}
	c.do("CONFIG", "SET", "proto-max-bulk-len", "512mb", "client-query-buffer-limit", "1gb")
}
