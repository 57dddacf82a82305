package server

import (
	"testing"
)

// TestWatch: WATCH then EXEC on one node, through the real state machine:
// EXEC answers a nil array (RESP2 *-1, RESP3 _) and runs nothing when a
// watched key was written (by this or another connection, even with the
// same value), deleted, expired or flushed; it runs the transaction when
// nothing changed, after UNWATCH, DISCARD, RESET, an EXECABORT or an EXEC,
// and when a write changed nothing.
func TestWatch(t *testing.T) {
	n := startTestNode(t)
	c, other := n.dial(), n.dial()
	if got := c.do("DEBUG", "CLOCK", "SET", frozenNow); got != "+OK" {
		t.Fatal(got)
	}
	exec := func(want string) {
		t.Helper()
		c.send(encodeCmd("MULTI") + encodeCmd("INCR", "tx") + encodeCmd("EXEC"))
		c.expectReplies("+OK", "+QUEUED", want)
	}
	c.do("SET", "k", "v")
	c.do("SET", "tx", "0")

	steps := []struct {
		name  string
		cmds  [][]string // after WATCH k (by c unless other is set)
		other bool
		want  string // EXEC's reply
	}{
		{"nothing changed", nil, false, "*[:1]"},
		{"same value by another connection", [][]string{{"SET", "k", "v"}}, true, "*nil"},
		{"own write", [][]string{{"APPEND", "k", "x"}}, false, "*nil"},
		{"DEL", [][]string{{"DEL", "k"}}, true, "*nil"},
		{"created", [][]string{{"SET", "k", "v"}}, true, "*nil"},
		{"another key", [][]string{{"SET", "j", "v"}}, true, "*[:2]"},
		{"a refused write", [][]string{{"SET", "k", "w", "NX"}, {"EXPIRE", "k", "10", "XX"}, {"PERSIST", "k"}}, true, "*[:3]"},
		{"UNWATCH", [][]string{{"UNWATCH"}, {"SET", "k", "v"}}, false, "*[:4]"},
		{"FLUSHALL", [][]string{{"FLUSHALL"}}, true, "*nil"},
	}
	for _, s := range steps {
		if got := c.do("WATCH", "k", "missing"); got != "+OK" {
			t.Fatalf("%s: WATCH = %s", s.name, got)
		}
		for _, cmd := range s.cmds {
			who := c
			if s.other {
				who = other
			}
			who.do(cmd...)
		}
		if s.name == "FLUSHALL" {
			c.do("SET", "tx", "4")
		}
		exec(s.want)
	}

	// EXEC, DISCARD, RESET and an EXECABORT forget the watched keys.
	c.do("SET", "k", "v")
	for _, end := range [][]string{{"EXEC"}, {"DISCARD"}, {"NOSUCH"}} {
		c.do("WATCH", "k")
		c.do("MULTI")
		if end[0] == "NOSUCH" {
			c.do("NOSUCH")
			c.do("EXEC")
		} else {
			c.do(end...)
		}
		other.do("SET", "k", "v")
		exec("*[:5]")
		c.do("SET", "tx", "4")
	}
	c.do("WATCH", "k")
	if got := c.do("RESET"); got != "+RESET" {
		t.Fatal(got)
	}
	other.do("SET", "k", "v")
	exec("*[:5]")

	// Expiry between WATCH and EXEC, on the replicated clock.
	c.do("SET", "k", "v", "PX", "100")
	c.do("WATCH", "k")
	c.do("DEBUG", "CLOCK", "ADVANCE", "200000000")
	exec("*nil")

	// An empty transaction is checked too; RESP3 answers _.
	c.do("HELLO", "3")
	c.do("WATCH", "k")
	other.do("SET", "k", "v")
	c.send(encodeCmd("MULTI") + encodeCmd("EXEC"))
	c.expectReplies("+OK", "_")
	c.do("WATCH", "k")
	c.send(encodeCmd("MULTI") + encodeCmd("EXEC"))
	c.expectReplies("+OK", "*[]")

	// WATCH inside MULTI is an error that does not abort.
	c.send(encodeCmd("MULTI") + encodeCmd("WATCH", "k") + encodeCmd("INCR", "tx") + encodeCmd("EXEC"))
	c.expectReplies("+OK", "-ERR WATCH inside MULTI is not allowed", "+QUEUED", "*[:6]")
}
