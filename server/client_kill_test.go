package server

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/redcell/redcell/request"
)

// clientInfo is one connection's CLIENT INFO fields.
func clientInfo(t *testing.T, c *client) map[string]string {
	t.Helper()
	line := strings.TrimSpace(c.replyTreeOf("CLIENT", "INFO").s)
	f := map[string]string{}
	for _, kv := range strings.Split(line, " ") {
		k, v, _ := strings.Cut(kv, "=")
		f[k] = v
	}
	return f
}

// TestClientListFormat: CLIENT INFO and CLIENT LIST lines carry Redis
// 7.2's fields in Redis's order, with this connection's values.
func TestClientListFormat(t *testing.T) {
	n := startTestNode(t)
	c := n.dial()
	c.do("CLIENT", "SETNAME", "lister")
	line := strings.TrimSpace(c.replyTreeOf("CLIENT", "INFO").s)
	re := regexp.MustCompile(`^id=\d+ addr=127\.0\.0\.1:\d+ laddr=127\.0\.0\.1:\d+ fd=-?\d+ name=lister age=\d+ idle=\d+ flags=N db=0 sub=0 psub=0 ssub=0 multi=-1 qbuf=\d+ qbuf-free=\d+ argv-mem=\d+ multi-mem=\d+ rbs=\d+ rbp=\d+ obl=\d+ oll=\d+ omem=\d+ tot-mem=\d+ events=r cmd=client\|info user=default redir=-1 resp=2 lib-name= lib-ver=$`)
	if !re.MatchString(line) {
		t.Errorf("CLIENT INFO = %q", line)
	}
	id := clientInfo(t, c)["id"]
	other := n.dial()
	other.do("PING")
	list := c.replyTreeOf("CLIENT", "LIST").s
	if strings.Count(list, "\n") != 2 || !strings.Contains(list, "id="+id+" ") || !strings.Contains(list, "cmd=ping ") {
		t.Errorf("CLIENT LIST =\n%s", list)
	}
	for _, s := range []struct {
		args []string
		want string
	}{
		{[]string{"CLIENT", "LIST", "ID", id}, "1 lines"},
		{[]string{"CLIENT", "LIST", "TYPE", "normal"}, "2 lines"},
		{[]string{"CLIENT", "LIST", "TYPE", "master"}, "0 lines"},
		{[]string{"CLIENT", "LIST", "TYPE", "replica", "ID", id}, "0 lines"},
		{[]string{"CLIENT", "LIST", "TYPE", "foo"}, "-ERR Unknown client type 'foo'"},
		{[]string{"CLIENT", "LIST", "ID", "0"}, "-ERR Invalid client ID"},
		{[]string{"CLIENT", "LIST", "ID", "abc"}, "-ERR Invalid client ID"},
	} {
		r := c.replyTreeOf(s.args...)
		got := r.String()
		if r.typ == '$' {
			got = strconv.Itoa(strings.Count(r.s, "\n")) + " lines"
		}
		if got != s.want {
			t.Errorf("%q = %s, want %s", s.args, got, s.want)
		}
	}
}

// TestClientKill: every filter of CLIENT KILL and its old form, with Redis
// 7.0.15's replies and errors; killed connections are closed at once, the
// caller after its reply.
func TestClientKill(t *testing.T) {
	n := startTestNode(t)
	admin := n.dial()
	for _, s := range []struct {
		args []string
		want string
	}{
		{[]string{"CLIENT", "KILL", "1.2.3.4:5"}, "-ERR No such client"},
		{[]string{"CLIENT", "KILL", "addr"}, "-ERR No such client"},
		{[]string{"CLIENT", "KILL", "ID", "0"}, "-ERR client-id should be greater than 0"},
		{[]string{"CLIENT", "KILL", "ID", "abc"}, "-ERR client-id should be greater than 0"},
		{[]string{"CLIENT", "KILL", "USER", "bob"}, "-ERR No such user 'bob'"},
		{[]string{"CLIENT", "KILL", "TYPE", "foo"}, "-ERR Unknown client type 'foo'"},
		{[]string{"CLIENT", "KILL", "SKIPME", "maybe"}, "-ERR syntax error"},
		{[]string{"CLIENT", "KILL", "ID", "1", "SKIPME"}, "-ERR syntax error"},
		{[]string{"CLIENT", "KILL", "FOO", "bar"}, "-ERR syntax error"},
		{[]string{"CLIENT", "KILL", "ID", "999999"}, ":0"},
		{[]string{"CLIENT", "KILL", "TYPE", "master"}, ":0"},
		{[]string{"CLIENT", "KILL"}, "-ERR wrong number of arguments for 'client|kill' command"},
	} {
		if got := admin.do(s.args...); got != s.want {
			t.Errorf("%q = %s, want %s", s.args, got, s.want)
		}
	}

	// By ID, by ADDR, by LADDR and USER, and the old form.
	byID, byAddr, old, rest := n.dial(), n.dial(), n.dial(), n.dial()
	if got := admin.do("CLIENT", "KILL", "ID", clientInfo(t, byID)["id"]); got != ":1" {
		t.Errorf("KILL ID = %s", got)
	}
	byID.expectEOF()
	if got := admin.do("CLIENT", "KILL", "ADDR", clientInfo(t, byAddr)["addr"], "SKIPME", "yes"); got != ":1" {
		t.Errorf("KILL ADDR = %s", got)
	}
	byAddr.expectEOF()
	if got := admin.do("CLIENT", "KILL", clientInfo(t, old)["addr"]); got != "+OK" {
		t.Errorf("KILL addr:port = %s", got)
	}
	old.expectEOF()
	// LADDR and USER match every other client here; the caller is skipped.
	// rest has sent nothing yet: a PING makes sure the node has accepted it
	// (a dial returns before the accept loop has registered the client).
	if got := rest.do("PING"); got != "+PONG" {
		t.Fatalf("PING on rest = %s", got)
	}
	laddr := clientInfo(t, admin)["laddr"]
	if got := admin.do("CLIENT", "KILL", "LADDR", laddr, "USER", "default", "TYPE", "normal"); got != ":1" {
		t.Errorf("KILL LADDR USER TYPE = %s", got)
	}
	rest.expectEOF()
	if got := admin.do("PING"); got != "+PONG" {
		t.Errorf("the caller after KILL with SKIPME yes: %s", got)
	}

	// The old form may kill the caller: +OK, then closed before the PING.
	self := n.dial()
	self.send(encodeCmd("CLIENT", "KILL", clientInfo(t, self)["addr"]) + encodeCmd("PING"))
	if got := self.reply(); got != "+OK" {
		t.Errorf("KILL own addr = %s", got)
	}
	self.expectEOF()
	// SKIPME no: the count includes the caller, then it is closed.
	if got := admin.do("CLIENT", "KILL", "ID", clientInfo(t, admin)["id"], "SKIPME", "no"); got != ":1" {
		t.Errorf("KILL own ID SKIPME no = %s", got)
	}
	admin.expectEOF()
}

// heldBackend is a stub whose Propose blocks until release is closed,
// telling entered first: a connection waiting on its write cannot leave.
type heldBackend struct {
	stubBackend
	entered chan struct{}
	release chan struct{}
}

func (b *heldBackend) Propose(reqs []request.Request, res []request.Result) error {
	b.entered <- struct{}{}
	<-b.release
	return b.stubBackend.Propose(reqs, res)
}

// TestClientKillFreesAtOnce: a killed connection leaves the client table at
// once, as Redis frees it, even while its goroutine cannot exit yet (here,
// blocked on a write the backend holds): CLIENT LIST and INFO no longer show
// it, and a second KILL does not count it again. Without that, CI saw
// TestClientKill's LADDR filter count a connection killed just before.
func TestClientKillFreesAtOnce(t *testing.T) {
	backend := &heldBackend{entered: make(chan struct{}), release: make(chan struct{})}
	addr := serveBackend(t, Config{}, backend)
	admin, waiting := dialAddr(t, addr), dialAddr(t, addr)
	id := clientInfo(t, waiting)["id"]
	waiting.sendCmd("CL.THROTTLE", "k", "15", "30", "60")
	<-backend.entered // its goroutine is inside Propose until released
	released := false
	defer func() {
		if !released {
			close(backend.release)
		}
	}()

	if got := admin.do("CLIENT", "KILL", "ID", id); got != ":1" {
		t.Fatalf("KILL ID = %s", got)
	}
	if got := admin.replyTreeOf("CLIENT", "LIST", "ID", id).s; got != "" {
		t.Errorf("CLIENT LIST ID %s after KILL = %q, want no line", id, got)
	}
	if got := strings.Count(admin.replyTreeOf("CLIENT", "LIST").s, "\n"); got != 1 {
		t.Errorf("CLIENT LIST after KILL has %d lines, want 1 (the caller)", got)
	}
	if got := admin.do("CLIENT", "KILL", "ID", id); got != ":0" {
		t.Errorf("second KILL ID = %s, want :0", got)
	}
	if got := admin.do("CLIENT", "KILL", "TYPE", "normal"); got != ":0" {
		t.Errorf("KILL TYPE normal (caller skipped) = %s, want :0", got)
	}
	if got := infoValue(admin.replyTreeOf("INFO", "clients").s, "connected_clients"); got != "1" {
		t.Errorf("connected_clients after KILL = %s, want 1", got)
	}

	close(backend.release)
	released = true
	waiting.expectEOF() // its reply is not sent: the socket was closed
	if got := admin.do("PING"); got != "+PONG" {
		t.Errorf("PING = %s", got)
	}
}
