package server

import (
	"regexp"
	"strings"
	"testing"
)

// frozenNow is far enough in the future that no entry stamped with the real
// clock can be ahead of it.
const frozenNow = "4000000000000000000"

// hideIDs replaces client ids, which depend on test order, by ID.
var idRE = regexp.MustCompile(`\$id :\d+`)

func hideIDs(s string) string { return idRE.ReplaceAllString(s, "$$id :ID") }

const (
	hello2 = "*[$server $redis $version $" + Version + " $proto :2 $id :ID $mode $standalone $role $master $modules *[]]"
	hello3 = "%{$server $redis $version $" + Version + " $proto :3 $id :ID $mode $standalone $role $master $modules *[]}"
)

// TestPipelineAnswersInOrder sends writes, reads and connection commands in
// one write and checks every reply, in order, and that the switch to RESP3
// applies from HELLO 3 on and not before.
func TestPipelineAnswersInOrder(t *testing.T) {
	n := startTestNode(t)
	c := n.dial()
	if got := c.do("DEBUG", "CLOCK", "SET", frozenNow); got != "+OK" {
		t.Fatalf("DEBUG CLOCK SET = %s", got)
	}
	c.send(encodeCmd("CL.THROTTLE", "k", "0", "1", "10") +
		encodeCmd("PTTL", "k") +
		"PING\r\n" +
		encodeCmd("CLIENT", "GETNAME") +
		encodeCmd("CL.THROTTLE", "k", "0", "1", "10") +
		encodeCmd("EXISTS", "k", "nokey", "k") +
		encodeCmd("HELLO", "3") +
		encodeCmd("CLIENT", "GETNAME") +
		encodeCmd("CL.PEEK", "k", "0", "1", "10", "0") +
		encodeCmd("TYPE", "k") +
		encodeCmd("DEL", "k", "nokey") +
		encodeCmd("PTTL", "k"))
	want := []string{
		"*[:0 :1 :0 :-1 :10]",
		":10000",
		"+PONG",
		"$nil", // RESP2 null bulk: $-1
		"*[:1 :1 :0 :10 :10]",
		":2",
		hello3,
		"_", // RESP3 null
		"*[:0 :1 :0 :-1 :10]",
		"+string",
		":1",
		":-2",
	}
	for i, w := range want {
		if got := hideIDs(c.reply()); got != w {
			t.Errorf("reply %d = %s, want %s", i, got, w)
		}
	}
}

// TestProtocolErrorAfterValidCommands: the replies to the commands before a
// malformed request arrive, then the error, then the connection closes.
func TestProtocolErrorAfterValidCommands(t *testing.T) {
	n := startTestNode(t)
	tests := []struct {
		name, input string
		want        []string
	}{
		{"multibulk count", "PING\r\nCL.THROTTLE e1 0 1 10\r\nECHO hi\r\n*abc\r\nPING\r\n",
			[]string{"+PONG", "*[:0 :1 :0 :-1 :10]", "$hi", "-ERR Protocol error: invalid multibulk length"}},
		{"expected dollar", encodeCmd("EXISTS", "e1") + "*1\r\nfoo\r\n",
			[]string{":1", "-ERR Protocol error: expected '$', got 'f'"}},
		{"unbalanced quotes", "PING\r\nset \"\"\"test-key\"\"\" test-value\r\n",
			[]string{"+PONG", "-ERR Protocol error: unbalanced quotes in request"}},
		{"bulk length", "PING\r\n*1\r\n$-5\r\n", []string{"+PONG", "-ERR Protocol error: invalid bulk length"}},
		{"http POST", "PING\r\nPOST / HTTP/1.1\r\nHost: x\r\n\r\n", []string{"+PONG"}},
		{"http Host", "Host: example.com\r\nPING\r\n", nil},
		{"QUIT", "PING\r\nQUIT\r\nPING\r\n", []string{"+PONG", "+OK"}},
		{"QUIT with args", "QUIT now\r\nPING\r\n", []string{"+OK"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := n.dial()
			c.send(tt.input)
			for i, w := range tt.want {
				if got := c.reply(); got != w {
					t.Errorf("reply %d = %s, want %s", i, got, w)
				}
			}
			c.expectEOF()
		})
	}
}

// TestExactTexts checks the replies protocol.md fixes, one command at a time
// on one connection (in order: some change the connection's state).
func TestExactTexts(t *testing.T) {
	n := startTestNode(t)
	c := n.dial()
	tests := []struct {
		args []string
		want string
	}{
		// HELLO.
		{[]string{"HELLO"}, hello2},
		{[]string{"HELLO", "2"}, hello2},
		{[]string{"HELLO", "4"}, "-NOPROTO unsupported protocol version"},
		{[]string{"HELLO", "1"}, "-NOPROTO unsupported protocol version"},
		{[]string{"HELLO", "abc"}, "-ERR Protocol version is not an integer or out of range"},
		{[]string{"HELLO", "3", "SETNAME"}, "-ERR Syntax error in HELLO option 'SETNAME'"},
		{[]string{"HELLO", "3", "AUTH", "bob", "pw"}, "-WRONGPASS invalid username-password pair or user is disabled."},
		{[]string{"PING"}, "+PONG"}, // still RESP2 after the failed HELLOs
		{[]string{"CLIENT", "GETNAME"}, "$nil"},
		{[]string{"HELLO", "3", "AUTH", "default", "pw", "SETNAME", "app1"}, hello3},
		{[]string{"CLIENT", "GETNAME"}, "$app1"},
		{[]string{"HELLO"}, hello3}, // bare HELLO: the current protocol
		{[]string{"CONFIG", "GET", "save"}, "%{$save $}"},
		{[]string{"HELLO", "2"}, hello2},
		{[]string{"CONFIG", "GET", "save"}, "*[$save $]"},

		// AUTH.
		{[]string{"AUTH", "x"}, "-ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?"},
		{[]string{"AUTH", "bob", "x"}, "-WRONGPASS invalid username-password pair or user is disabled."},
		{[]string{"AUTH", "default", "x"}, "+OK"},
		{[]string{"AUTH", "a", "b", "c"}, "-ERR syntax error"},
		{[]string{"AUTH"}, "-ERR wrong number of arguments for 'auth' command"},

		// SELECT.
		{[]string{"SELECT", "99"}, "-ERR DB index is out of range"},
		{[]string{"SELECT", "-1"}, "-ERR DB index is out of range"},
		{[]string{"SELECT", "0"}, "+OK"},
		{[]string{"SELECT", "abc"}, "-ERR value is not an integer or out of range"},
		{[]string{"SELECT"}, "-ERR wrong number of arguments for 'select' command"},

		// CLIENT.
		{[]string{"CLIENT", "SETNAME", "a b"}, "-ERR Client names cannot contain spaces, newlines or special characters."},
		{[]string{"CLIENT", "SETNAME", "a\nb"}, "-ERR Client names cannot contain spaces, newlines or special characters."},
		{[]string{"CLIENT", "SETNAME", "myname"}, "+OK"},
		{[]string{"CLIENT", "GETNAME"}, "$myname"},
		{[]string{"CLIENT", "SETNAME", ""}, "+OK"},
		{[]string{"CLIENT", "GETNAME"}, "$nil"},
		{[]string{"CLIENT", "X"}, "-ERR unknown subcommand 'X'. Try CLIENT HELP."},
		{[]string{"CLIENT", "setname"}, "-ERR wrong number of arguments for 'client|setname' command"},
		{[]string{"CLIENT"}, "-ERR wrong number of arguments for 'client' command"},
		{[]string{"CLIENT", "CACHING", "yes"}, "-ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled"},
		{[]string{"CLIENT", "TRACKING", "on", "OPTIN"}, "+OK"},
		{[]string{"CLIENT", "CACHING", "yes"}, "+OK"},
		{[]string{"CLIENT", "SETINFO", "LIB-NAME", "go-redis(,go1.22)"}, "+OK"},
		{[]string{"CLIENT", "SETINFO", "LIB-VER", "9.0.0"}, "+OK"},
		{[]string{"CLIENT", "SETINFO", "LIB-VER", "9 0"}, "-ERR LIB-VER cannot contain spaces, newlines or special characters."},
		{[]string{"CLIENT", "NO-EVICT", "on"}, "+OK"},

		// Others.
		{[]string{"PING", "hello"}, "$hello"},
		{[]string{"PING", "x", "y", "z"}, "-ERR wrong number of arguments for 'ping' command"},
		{[]string{"ECHO", "a\r\n\x00b"}, "$a\r\n\x00b"},
		{[]string{"ECHO"}, "-ERR wrong number of arguments for 'echo' command"},
		{[]string{"CLUSTER", "KEYSLOT", "foo"}, ":12182"},
		{[]string{"cluster", "nosuch"}, "-ERR unknown subcommand 'nosuch'. Try CLUSTER HELP."},
		{[]string{"CLUSTER", "MYID", "x"}, "-ERR wrong number of arguments for 'cluster|myid' command"},
		{[]string{"ASKING"}, "+OK"},
		{[]string{"FOO", "bar"}, "-ERR unknown command 'FOO', with args beginning with: 'bar' "},
		{[]string{"FOO"}, "-ERR unknown command 'FOO', with args beginning with: "},
		{[]string{""}, "-ERR unknown command '', with args beginning with: "},
		{[]string{"CL.THROTTLE"}, "-Cell error: Store error: Usage: cl.throttle <key> <max_burst> <count per period> <period> [<quantity>]"},
		{[]string{"CL.THROTTLE", "k", "1", "x", "1"}, "-Cell error: Store error: Couldn't parse as integer: x"},
		{[]string{"CL.PEEK", "k", "1", "1"}, "-Cell error: Store error: Usage: cl.peek <key> <max_burst> <count per period> <period> [<quantity>]"},
		{[]string{"CL.THROTTLE", "k", "1", "0", "1"}, "-Cell error: Store error: Zero rates are not supported"},
		{[]string{"PTTL"}, "-ERR wrong number of arguments for 'pttl' command"},
		{[]string{"FLUSHALL", "NOW"}, "-ERR syntax error"},
		{[]string{"RESET"}, "+RESET"},
		{[]string{"CLIENT", "CACHING", "yes"}, "-ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled"},
	}
	for _, tt := range tests {
		if got := hideIDs(c.do(tt.args...)); got != tt.want {
			t.Errorf("%q = %s\n%*s want %s", tt.args, got, len(strings.Join(tt.args, " "))+3, "", tt.want)
		}
	}
	// The connection survived every error.
	if got := c.do("PING"); got != "+PONG" {
		t.Errorf("PING after the errors = %s", got)
	}
}

// TestUnknownCommandTruncation: Redis 7 cuts the name at 128 bytes and lists
// arguments while the list is shorter than 128 bytes, each cut to the room
// left; CR/LF become spaces.
func TestUnknownCommandTruncation(t *testing.T) {
	n := startTestNode(t)
	c := n.dial()
	long := strings.Repeat("N", 200)
	a, b := strings.Repeat("a", 100), strings.Repeat("b", 100)
	got := c.do(long, a, b, "c")
	want := "-ERR unknown command '" + long[:128] + "', with args beginning with: '" + a + "' '" + b[:25] + "' "
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if got, want := c.do("FOO", "x\r\ny", "z"), "-ERR unknown command 'FOO', with args beginning with: 'x  y' 'z' "; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// TestDebugNeedsTheFlag: without --enable-debug-command DEBUG is refused
// with Redis's text; with it, DEBUG CLOCK answers.
func TestDebugNeedsTheFlag(t *testing.T) {
	n := startTestNode(t)
	_, addr := n.serve(false)
	plain := dialAddr(t, addr)
	for _, args := range [][]string{{"DEBUG", "CLOCK"}, {"DEBUG", "CLOCK", "SET", "1"}, {"debug", "sleep", "0"}} {
		if got := plain.do(args...); got != "-ERR DEBUG command not allowed" {
			t.Errorf("%q without the flag = %s", args, got)
		}
	}
	// DEBUG HELP answers either way, as every HELP does.
	for _, cl := range []*client{plain, n.dial()} {
		if got := cl.do("DEBUG", "help"); !strings.HasPrefix(got, "*[+DEBUG <subcommand> [<arg> [value] [opt] ...]. Subcommands are: +CLOCK") || !strings.HasSuffix(got, "+HELP +    Print this help.]") {
			t.Errorf("DEBUG HELP = %s", got)
		}
	}
	if got := plain.do("CONFIG", "GET", "enable-debug-command"); got != "*[$enable-debug-command $no]" {
		t.Errorf("CONFIG GET enable-debug-command = %s", got)
	}
	dbg := n.dial()
	if got := dbg.do("DEBUG", "CLOCK", "SET", frozenNow); got != "+OK" {
		t.Errorf("DEBUG CLOCK SET = %s", got)
	}
	if got := dbg.do("CL.THROTTLE", "d", "0", "1", "10"); got != "*[:0 :1 :0 :-1 :10]" {
		t.Errorf("CL.THROTTLE = %s", got)
	}
	if got := dbg.do("DEBUG", "CLOCK"); got != ":"+frozenNow {
		t.Errorf("DEBUG CLOCK = %s, want the replicated clock %s", got, frozenNow)
	}
	if got := dbg.do("DEBUG", "CLOCK", "ADVANCE", "x"); got != "-ERR value is not an integer or out of range" {
		t.Errorf("DEBUG CLOCK ADVANCE x = %s", got)
	}
	if got := dbg.do("DEBUG", "CLOCK", "ADVANCE", "10000000000"); got != "+OK" {
		t.Errorf("DEBUG CLOCK ADVANCE = %s", got)
	}
	// Like redis-cell's key, it lives through the millisecond of its TAT.
	if got := dbg.do("PTTL", "d"); got != ":0" {
		t.Errorf("PTTL at the TAT = %s, want :0", got)
	}
	if got := dbg.do("DEBUG", "CLOCK", "ADVANCE", "1000000"); got != "+OK" {
		t.Errorf("DEBUG CLOCK ADVANCE = %s", got)
	}
	if got := dbg.do("PTTL", "d"); got != ":-2" {
		t.Errorf("PTTL 1 ms after the TAT = %s, want :-2", got)
	}
	if got := dbg.do("DEBUG", "CLOCK", "REAL"); got != "+OK" {
		t.Errorf("DEBUG CLOCK REAL = %s", got)
	}
}

// TestConfigGetGlobs: CONFIG GET takes Redis glob patterns, several at once,
// case-insensitively, and answers the matches sorted.
func TestConfigGetGlobs(t *testing.T) {
	n := startTestNode(t)
	c := n.dial()
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"save"}, "*[$save $]"},
		{[]string{"SAVE"}, "*[$save $]"},
		{[]string{"save", "appendonly"}, "*[$appendonly $yes $save $]"},
		{[]string{"append*"}, "*[$appendfsync $always $appendonly $yes]"},
		{[]string{"maxmemory*"}, "*[$maxmemory $0 $maxmemory-policy $noeviction]"},
		{[]string{"max?lients"}, "*[$maxclients $10000]"},
		{[]string{"[ab]*"}, "*[$appendfsync $always $appendonly $yes $bind $127.0.0.1]"},
		{[]string{"[^a-z]*"}, "*[]"},
		{[]string{"nothing"}, "*[]"},
		{[]string{"save", "save"}, "*[$save $]"},
		{[]string{"data*", "dir"}, "*[$databases $1 $dir $/data/redcell]"},
	}
	for _, tt := range tests {
		if got := c.do(append([]string{"CONFIG", "GET"}, tt.args...)...); got != tt.want {
			t.Errorf("CONFIG GET %q = %s, want %s", tt.args, got, tt.want)
		}
	}
	all := c.replyTreeOf("CONFIG", "GET", "*")
	if len(all.elems) < 2*10 {
		t.Errorf("CONFIG GET * has %d fields", len(all.elems)/2)
	}
	if got := c.do("CONFIG", "SET", "save", "900 1"); got != "-ERR CONFIG SET failed (possibly related to argument 'save') - snapshots follow --snapshot-interval, --snapshot-threshold and --snapshot-log-bytes, set when the node starts" {
		t.Errorf("CONFIG SET = %s", got)
	}
	if got := c.do("CONFIG", "GET"); got != "-ERR wrong number of arguments for 'config|get' command" {
		t.Errorf("CONFIG GET (no pattern) = %s", got)
	}
}

func (c *client) replyTreeOf(args ...string) reply {
	c.t.Helper()
	c.sendCmd(args...)
	return c.replyTree()
}

// TestInfoAnswers: INFO always answers (ioredis's ready check reads
// "loading:"), as a bulk string in RESP2 and a verbatim string in RESP3.
func TestInfoAnswers(t *testing.T) {
	n := startTestNode(t)
	c := n.dial()
	r := c.replyTreeOf("INFO")
	if r.typ != '$' || !strings.Contains(r.s, "loading:0\r\n") || !strings.Contains(r.s, "redis_version:"+Version+"\r\n") {
		t.Errorf("INFO (RESP2) = %.300s", r)
	}
	c.do("HELLO", "3")
	r = c.replyTreeOf("INFO", "persistence")
	if r.typ != '=' || !strings.HasPrefix(r.s, "txt:") || !strings.Contains(r.s, "loading:0\r\n") {
		t.Errorf("INFO persistence (RESP3) = %.300s", r)
	}
	if r := c.replyTreeOf("INFO", "nosuchsection"); r.typ != '=' {
		t.Errorf("INFO nosuchsection = %s, want an (empty) verbatim string", r)
	}
}

// TestConcurrentClientsShareOneLimit: eight connections pipelining
// CL.THROTTLE on one key at one frozen instant get exactly the limit's worth
// of allowed replies between them, each remaining count once: every
// decision went through the log in one order. Other connections read INFO
// and CLIENT LIST meanwhile (run with -race).
func TestConcurrentClientsShareOneLimit(t *testing.T) {
	n := startTestNode(t)
	if got := n.dial().do("DEBUG", "CLOCK", "SET", frozenNow); got != "+OK" {
		t.Fatalf("DEBUG CLOCK SET = %s", got)
	}
	const clients, perClient = 8, 50
	var pipeline strings.Builder
	for i := 0; i < perClient; i++ {
		pipeline.WriteString(encodeCmd("CL.THROTTLE", "shared", "99", "1", "3600"))
	}
	type outcome struct {
		replies []string
		err     error
	}
	results := make(chan outcome, clients+2)
	for i := 0; i < clients; i++ {
		c := n.dial()
		go func() {
			var o outcome
			if _, o.err = c.nc.Write([]byte(pipeline.String())); o.err == nil {
				for j := 0; j < perClient && o.err == nil; j++ {
					var r reply
					r, o.err = readReply(c.br)
					o.replies = append(o.replies, r.String())
				}
			}
			results <- o
		}()
	}
	for i := 0; i < 2; i++ {
		c := n.dial()
		go func() {
			var o outcome
			for j := 0; j < 20 && o.err == nil; j++ {
				if _, o.err = c.nc.Write([]byte(encodeCmd("CLIENT", "LIST") + encodeCmd("INFO"))); o.err == nil {
					_, o.err = readReply(c.br)
				}
				if o.err == nil {
					_, o.err = readReply(c.br)
				}
			}
			results <- o
		}()
	}
	allowed := map[string]int{}
	limited := 0
	for i := 0; i < clients+2; i++ {
		o := <-results
		if o.err != nil {
			t.Fatalf("client: %v", o.err)
		}
		for _, r := range o.replies {
			switch {
			case strings.HasPrefix(r, "*[:0 :100 :"):
				allowed[r]++
			case r == "*[:1 :100 :0 :3600 :360000]":
				limited++
			default:
				t.Errorf("unexpected reply %s", r)
			}
		}
	}
	if len(allowed) != 100 || limited != clients*perClient-100 {
		t.Errorf("%d distinct allowed replies, %d limited; want 100 and %d", len(allowed), limited, clients*perClient-100)
	}
	for r, k := range allowed {
		if k != 1 {
			t.Errorf("%s answered %d times", r, k)
		}
	}
}

// TestPipelineSplitIntoSingleBytes: a pipeline written one byte per write
// (each its own TCP segment, Go sets TCP_NODELAY) is answered as if it came
// in one piece.
func TestPipelineSplitIntoSingleBytes(t *testing.T) {
	n := startTestNode(t)
	c := n.dial()
	c.do("DEBUG", "CLOCK", "SET", frozenNow)
	input := encodeCmd("CL.THROTTLE", "sb", "0", "1", "10") + "PTTL sb\r\nPING \"a b\"\n" + encodeCmd("CL.THROTTLE", "sb", "0", "1", "10")
	for i := 0; i < len(input); i++ {
		c.send(input[i : i+1])
	}
	for i, want := range []string{"*[:0 :1 :0 :-1 :10]", ":10000", "$a b", "*[:1 :1 :0 :10 :10]"} {
		if got := c.reply(); got != want {
			t.Errorf("reply %d = %s, want %s", i, got, want)
		}
	}
}
