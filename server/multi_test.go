package server

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/redcell/redcell/commands"
	"github.com/redcell/redcell/request"
)

// infoInt reads an integer field of INFO raft on c.
func (c *client) infoInt(field string) int64 {
	c.t.Helper()
	info := c.replyTreeOf("INFO", "raft").s
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				c.t.Fatalf("INFO %s = %q", field, v)
			}
			return n
		}
	}
	c.t.Fatalf("INFO raft has no %s:\n%s", field, info)
	return 0
}

// expectReplies reads len(want) replies and compares them in order.
func (c *client) expectReplies(want ...string) {
	c.t.Helper()
	for i, w := range want {
		if got := hideIDs(c.reply()); got != w {
			c.t.Errorf("reply %d = %s, want %s", i, got, w)
		}
	}
}

// TestMultiExecIsOneLogEntry: a transaction's writes, reads and connection
// commands are answered in order in EXEC's array, its requests are decided
// in exactly one log entry at one instant, and its reads see its own
// earlier writes.
func TestMultiExecIsOneLogEntry(t *testing.T) {
	n := startTestNode(t)
	c := n.dial()
	if got := c.do("DEBUG", "CLOCK", "SET", frozenNow); got != "+OK" {
		t.Fatalf("DEBUG CLOCK SET = %s", got)
	}
	entries := c.infoInt("raft_entries_proposed")
	ops := c.infoInt("raft_ops_proposed")
	c.send(encodeCmd("MULTI") +
		encodeCmd("EXISTS", "k") +
		encodeCmd("CL.THROTTLE", "k", "2", "1", "10") +
		encodeCmd("PING") +
		encodeCmd("CL.THROTTLE", "k", "2", "1", "10") +
		encodeCmd("CL.PEEK", "k", "2", "1", "10", "0") +
		encodeCmd("ECHO", "in order") +
		encodeCmd("PTTL", "k") +
		encodeCmd("DEL", "k") +
		encodeCmd("EXISTS", "k") +
		encodeCmd("CL.THROTTLE", "k", "2", "1", "10") +
		encodeCmd("TYPE", "k") +
		encodeCmd("EXEC"))
	c.expectReplies("+OK", "+QUEUED", "+QUEUED", "+QUEUED", "+QUEUED", "+QUEUED", "+QUEUED",
		"+QUEUED", "+QUEUED", "+QUEUED", "+QUEUED", "+QUEUED",
		"*[:0 *[:0 :3 :2 :-1 :10] +PONG *[:0 :3 :1 :-1 :20] *[:0 :3 :1 :-1 :20] $in order :20000 :1 :0 *[:0 :3 :2 :-1 :10] +string]")
	if got := c.infoInt("raft_entries_proposed") - entries; got != 1 {
		t.Errorf("the transaction took %d log entries, want 1", got)
	}
	if got := c.infoInt("raft_ops_proposed") - ops; got != 9 {
		t.Errorf("the transaction proposed %d requests, want its 9 (reads included)", got)
	}
	if got := c.infoInt("raft_last_entry_ops"); got != 9 {
		t.Errorf("the last entry held %d requests, want the transaction's 9", got)
	}
	// After EXEC the connection is out of the transaction.
	c.expectReplies()
	if got := c.do("CL.THROTTLE", "k", "2", "1", "10"); got != "*[:0 :3 :1 :-1 :20]" {
		t.Errorf("CL.THROTTLE after EXEC = %s", got)
	}
}

// TestMultiExecRESP3: EXEC answers an array in RESP3 too, and the replies
// inside keep RESP3's types.
func TestMultiExecRESP3(t *testing.T) {
	n := startTestNode(t)
	c := n.dial()
	c.do("HELLO", "3")
	c.do("DEBUG", "CLOCK", "SET", frozenNow)
	c.send(encodeCmd("MULTI") + encodeCmd("CL.THROTTLE", "r3", "0", "1", "10") +
		encodeCmd("CLIENT", "GETNAME") + encodeCmd("EXISTS", "r3") + encodeCmd("EXEC"))
	c.expectReplies("+OK", "+QUEUED", "+QUEUED", "+QUEUED", "*[*[:0 :1 :0 :-1 :10] _ :1]")
	// Keyspace listings inside a transaction see its own writes.
	c.send(encodeCmd("MULTI") + encodeCmd("FLUSHALL") + encodeCmd("CL.THROTTLE", "s1", "0", "1", "10") +
		encodeCmd("SCAN", "0") + encodeCmd("KEYS", "*") + encodeCmd("DEL", "s1") + encodeCmd("KEYS", "*") + encodeCmd("EXEC"))
	c.expectReplies("+OK", "+QUEUED", "+QUEUED", "+QUEUED", "+QUEUED", "+QUEUED", "+QUEUED",
		"*[+OK *[:0 :1 :0 :-1 :10] *[$0 *[$s1]] *[$s1] :1 *[]]")
	// An empty transaction.
	c.send(encodeCmd("MULTI") + encodeCmd("EXEC"))
	c.expectReplies("+OK", "*[]")
}

// TestMultiErrors: Redis 7's texts for misuse, EXECABORT after an error at
// queue time (nothing of the transaction is applied), and DISCARD.
func TestMultiErrors(t *testing.T) {
	n := startTestNode(t)
	c := n.dial()
	c.do("DEBUG", "CLOCK", "SET", frozenNow)
	c.expectReplies()
	for _, tc := range []struct {
		cmd  []string
		want string
	}{
		{[]string{"EXEC"}, "-" + commands.ErrExecNoMulti},
		{[]string{"DISCARD"}, "-ERR DISCARD without MULTI"},
		{[]string{"WATCH", "k"}, "+OK"},
		{[]string{"UNWATCH"}, "+OK"},
	} {
		if got := c.do(tc.cmd...); got != tc.want {
			t.Errorf("%v = %s, want %s", tc.cmd, got, tc.want)
		}
	}

	// Errors at queue time: an unknown command, a wrong arity. Each aborts
	// the transaction; nothing of it is applied.
	for _, bad := range [][]string{
		{"NOSUCH", "x"},
		{"PTTL"},
	} {
		c.send(encodeCmd("MULTI") + encodeCmd("CL.THROTTLE", "a", "5", "1", "10") + encodeCmd(bad...) +
			encodeCmd("CL.THROTTLE", "a", "5", "1", "10") + encodeCmd("EXEC"))
		c.expectReplies("+OK", "+QUEUED")
		if got := c.reply(); !strings.HasPrefix(got, "-") {
			t.Errorf("queueing %v = %s, want its error", bad, got)
		}
		c.expectReplies("+QUEUED", "-EXECABORT Transaction discarded because of previous errors.")
		if got := c.do("EXISTS", "a"); got != ":0" {
			t.Errorf("after EXECABORT (%v) EXISTS a = %s: a write of the aborted transaction was applied", bad, got)
		}
	}

	// Invalid arguments (redis-cell checks its own arity): queued, as in
	// Redis 7; EXEC answers the error in its place and runs the others.
	for i, tc := range []struct {
		bad  []string
		want string
	}{
		{[]string{"CL.THROTTLE", "a"}, commands.CellUsage("cl.throttle")},
		{[]string{"CL.THROTTLE", "a", "x", "1", "1"}, commands.CellNotInteger([]byte("x"))},
		{[]string{"FLUSHALL", "NOW"}, commands.ErrSyntax},
	} {
		key := fmt.Sprintf("queued%d", i)
		c.send(encodeCmd("MULTI") + encodeCmd("CL.THROTTLE", key, "5", "1", "10") + encodeCmd(tc.bad...) +
			encodeCmd("CL.THROTTLE", key, "5", "1", "10") + encodeCmd("EXEC"))
		c.expectReplies("+OK", "+QUEUED", "+QUEUED", "+QUEUED",
			"*[*[:0 :6 :5 :-1 :10] -"+tc.want+" *[:0 :6 :4 :-1 :20]]")
	}

	// Nested MULTI and WATCH inside MULTI are errors that do not abort;
	// UNWATCH is queued and answers OK inside EXEC's array.
	c.send(encodeCmd("MULTI") + encodeCmd("MULTI") + encodeCmd("WATCH", "a") +
		encodeCmd("UNWATCH") + encodeCmd("CL.THROTTLE", "a", "5", "1", "10") + encodeCmd("EXEC"))
	c.expectReplies("+OK", "-ERR MULTI calls can not be nested", "-ERR WATCH inside MULTI is not allowed",
		"+QUEUED", "+QUEUED", "*[+OK *[:0 :6 :5 :-1 :10]]")

	// DISCARD drops the queue; RESET leaves the transaction too.
	c.send(encodeCmd("MULTI") + encodeCmd("DEL", "a") + encodeCmd("DISCARD") + encodeCmd("EXISTS", "a") +
		encodeCmd("MULTI") + encodeCmd("DEL", "a") + encodeCmd("RESET") + encodeCmd("EXISTS", "a") + encodeCmd("EXEC"))
	c.expectReplies("+OK", "+QUEUED", "+OK", ":1", "+OK", "+QUEUED", "+RESET", ":1", "-"+commands.ErrExecNoMulti)
}

// TestMultiPipelineOrder: commands before MULTI are answered before its +OK,
// and commands after EXEC after its array, all in one pipeline.
func TestMultiPipelineOrder(t *testing.T) {
	n := startTestNode(t)
	c := n.dial()
	c.do("DEBUG", "CLOCK", "SET", frozenNow)
	c.send(encodeCmd("CL.THROTTLE", "p", "9", "1", "10") + encodeCmd("EXISTS", "p") +
		encodeCmd("MULTI") + encodeCmd("CL.THROTTLE", "p", "9", "1", "10") + encodeCmd("EXEC") +
		encodeCmd("CL.THROTTLE", "p", "9", "1", "10") + encodeCmd("PTTL", "p"))
	c.expectReplies("*[:0 :10 :9 :-1 :10]", ":1", "+OK", "+QUEUED", "*[*[:0 :10 :8 :-1 :20]]",
		"*[:0 :10 :7 :-1 :30]", ":30000")
}

// TestExecBackendFailure: when the backend fails the transaction's batch,
// EXEC answers the one error that says what the client may assume, and the
// queued connection commands do not run.
func TestExecBackendFailure(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{request.ErrNoLeader, commands.ErrClusterDown},
		{request.ErrOutcomeUnknown, commands.ErrOutcomeUnknown},
	} {
		s := stubServer(t, &stubBackend{err: tc.err})
		got := runPipeline(t, s, []string{"MULTI"}, []string{"CL.THROTTLE", "a", "1", "1", "1"},
			[]string{"CLIENT", "SETNAME", "x"}, []string{"EXEC"}, []string{"CLIENT", "GETNAME"})
		want := "+OK\r\n+QUEUED\r\n+QUEUED\r\n-" + tc.want + "\r\n$-1\r\n"
		if got != want {
			t.Errorf("EXEC failing with %v:\n got %q\nwant %q", tc.err, got, want)
		}
	}
}

// TestMultiTooLarge: a transaction may queue at most what one request may
// take in the log; past that the command is refused and EXEC aborts.
func TestMultiTooLarge(t *testing.T) {
	backend := &stubBackend{}
	s := stubServer(t, backend)
	big := strings.Repeat("k", commands.MaxRequestLogBytes/2-64)
	in := encodeCmd("MULTI") + encodeCmd("DEL", big) + encodeCmd("DEL", big) + encodeCmd("DEL", big) + encodeCmd("EXEC")
	c := s.newConn(nopConn{})
	c.rd = newReader(strings.NewReader(in))
	for done := 0; done < 5; {
		cmds, err := c.rd.next()
		if err != nil {
			t.Fatalf("reading: %v", err)
		}
		for i := range cmds {
			c.exec(cmds[i].args)
		}
		done += len(cmds)
	}
	got := string(c.w.B)
	want := "+OK\r\n+QUEUED\r\n+QUEUED\r\n-ERR transaction too large: "
	if !strings.HasPrefix(got, want) || !strings.HasSuffix(got, " bytes queued, the limit is 16777216\r\n-EXECABORT Transaction discarded because of previous errors.\r\n") {
		t.Errorf("three DELs of 8 MiB keys in one transaction:\n got %.200q", got)
	}
	if backend.proposed != 0 {
		t.Errorf("the aborted transaction proposed %d requests", backend.proposed)
	}
}
