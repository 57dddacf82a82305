package systemtest

import (
	"io"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestMalformedInputOverTCP sends every row of protocol.md's "Malformed
// input" table over a raw connection and checks the exact reply bytes, that
// the connection is closed after every Protocol error, and that it keeps
// working otherwise — on a node without a password and on one started with
// --requirepass-file, where an unauthenticated client gets NOAUTH for what
// it may not run and Redis's unauthenticated limits. The replies with a
// password were recorded from Redis 7.0.15 with requirepass set.
func TestMalformedInputOverTCP(t *testing.T) {
	n := sharedNode(t)
	authed := startPasswordNode(t)
	const (
		closes = true
		stays  = false
	)
	const noauth = "-NOAUTH Authentication required.\r\n"
	big := func(prefix string, b byte, size int) string { return prefix + strings.Repeat(string(b), size) }
	rows := []struct {
		name   string
		input  string
		reply  string // exact bytes without a password; "" for no reply
		closed bool
		// withPass is the reply when a password is set and the client has
		// not given it, if it differs from reply; onlyPass rows need one.
		withPass string
		onlyPass bool
	}{
		{"empty_line", "\r\n", "", stays, "", false},
		{"negative_multibulk", "*-10\r\n", "", stays, "", false},
		{"zero_multibulk", "*0\r\n", "", stays, "", false},
		{"multibulk_too_long", "*3000000000\r\n", "-ERR Protocol error: invalid multibulk length\r\n", closes, "", false},
		{"multibulk_not_a_number", "*abc\r\n", "-ERR Protocol error: invalid multibulk length\r\n", closes, "", false},
		{"expected_dollar_after_args", "*3\r\n$3\r\nSET\r\n$1\r\nx\r\nfooz\r\n", "-ERR Protocol error: expected '$', got 'f'\r\n", closes, "", false},
		{"expected_dollar_first", "*1\r\nfoo\r\n", "-ERR Protocol error: expected '$', got 'f'\r\n", closes, "", false},
		{"bulk_length_minus_one", "*1\r\n$-1\r\n", "-ERR Protocol error: invalid bulk length\r\n", closes, "", false},
		{"bulk_length_negative", "*1\r\n$-10\r\n", "-ERR Protocol error: invalid bulk length\r\n", closes, "", false},
		{"bulk_length_over_512MB", "*1\r\n$536870913\r\n", "-ERR Protocol error: invalid bulk length\r\n", closes, "", false},
		{"bulk_length_not_a_number", "*1\r\n$abc\r\n", "-ERR Protocol error: invalid bulk length\r\n", closes, "", false},
		{"inline_over_64KB", big("", 'a', 70_000), "-ERR Protocol error: too big inline request\r\n", closes, "", false},
		{"mbulk_count_over_64KB", big("*", '1', 70_000), "-ERR Protocol error: too big mbulk count string\r\n", closes, "", false},
		{"bulk_count_over_64KB", big("*1\r\n$", '1', 70_000), "-ERR Protocol error: too big bulk count string\r\n", closes, "", false},
		{"unbalanced_quotes", "set \"\"\"test-key\"\"\" test-value\r\n", "-ERR Protocol error: unbalanced quotes in request\r\n", closes, "", false},
		{"commands_before_an_error_are_answered", "PING\r\n*abc\r\n", "+PONG\r\n-ERR Protocol error: invalid multibulk length\r\n", closes,
			noauth + "-ERR Protocol error: invalid multibulk length\r\n", false},
		{"empty_command_name", "*1\r\n$0\r\n\r\n", "-ERR unknown command '', with args beginning with: \r\n", stays, "", false},
		{"ping_arity", "PING x y z\r\n", "-ERR wrong number of arguments for 'ping' command\r\n", stays, noauth, false},
		{"http_post", "POST / HTTP/1.1\r\n", "", closes, "", false},
		{"http_host_header", "Host: example.com\r\n", "", closes, "", false},
		{"unauthenticated_multibulk", "*11\r\n", "", closes, "-ERR Protocol error: unauthenticated multibulk length\r\n", true},
		{"unauthenticated_bulk", "*1\r\n$16385\r\n", "", closes, "-ERR Protocol error: unauthenticated bulk length\r\n", true},
		{"unauthenticated_bulk_second_arg", "*2\r\n$4\r\nECHO\r\n$16385\r\n", "", closes, "-ERR Protocol error: unauthenticated bulk length\r\n", true},
		{"unauthenticated_limits_after_a_command", "PING\r\n*11\r\n", "", closes, noauth + "-ERR Protocol error: unauthenticated multibulk length\r\n", true},
	}
	for _, pass := range []bool{false, true} {
		addr, suffix := n.addr(), ""
		if pass {
			addr, suffix = authed.addr(), "_requirepass"
		}
		for _, row := range rows {
			if row.onlyPass && !pass {
				continue
			}
			t.Run(row.name+suffix, func(t *testing.T) {
				c := mustDial(t, addr)
				input, reply, after := row.input, row.reply, "+PONG\r\n"
				if pass {
					after = noauth
					if row.withPass != "" {
						reply = row.withPass
					}
				}
				if !row.closed {
					input += "PING\r\n" // the connection must still answer
				}
				if err := c.writeRaw([]byte(input)); err != nil {
					t.Fatalf("writing: %v", err)
				}
				expectBytes(t, c, reply)
				if row.closed {
					if err := c.expectClosed(); err != nil {
						t.Errorf("after %q: %v", abbreviate(row.input), err)
					}
					return
				}
				expectBytes(t, c, after)
			})
		}
	}

	t.Run("split_across_reads", func(t *testing.T) {
		// A pipeline sent one byte per write must parse as if sent at once.
		c := mustDial(t, n.addr())
		input := "*2\r\n$4\r\nECHO\r\n$5\r\na\x00\r\nb\r\nPING\r\nECHO \"x\\x41y\"\n"
		for i := 0; i < len(input); i++ {
			if err := c.writeRaw([]byte{input[i]}); err != nil {
				t.Fatal(err)
			}
		}
		expectBytes(t, c, "$5\r\na\x00\r\nb\r\n+PONG\r\n$3\r\nxAy\r\n")
	})

	t.Run("declared_lengths_not_preallocated", func(t *testing.T) {
		// Connections that declare the largest valid lengths and then send
		// almost nothing must not cost the server what they declare. (The
		// check cannot know when the server has parsed the headers; it is
		// strong when it has, and never fails spuriously.)
		probe := mustDial(t, n.addr())
		before := rssBytes(t, probe)
		declared := []string{
			"*1\r\n$536870912\r\nabc", // 512 MB, the bulk limit
			"*1\r\n$536870912\r\nabc",
			"*2147483647\r\n$1\r\na\r\n", // INT_MAX arguments
			"*2147483647\r\n$1\r\na\r\n",
		}
		for _, d := range declared {
			c := mustDial(t, n.addr())
			if err := c.writeRaw([]byte(d)); err != nil {
				t.Fatal(err)
			}
		}
		expectReply(t, probe, wantStatus("PONG"), "PING")
		after := rssBytes(t, probe)
		if grew := after - before; grew > 256<<20 {
			t.Errorf("RSS grew by %d MB after four connections declared 512 MB bulks and 2^31 arguments", grew>>20)
		}
	})
}

// rssBytes reads used_memory_rss from INFO memory.
func rssBytes(t *testing.T, c *respConn) int64 {
	t.Helper()
	info := mustDo(t, c, "INFO", "memory")
	v, err := strconv.ParseInt(infoField(info.str, "used_memory_rss"), 10, 64)
	if err != nil {
		t.Fatalf("INFO memory: used_memory_rss: %v", err)
	}
	return v
}

// expectBytes reads exactly len(want) bytes and compares them.
func expectBytes(t *testing.T, c *respConn, want string) {
	t.Helper()
	if want == "" {
		return
	}
	if err := c.flush(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, len(want))
	_ = c.nc.SetReadDeadline(deadline())
	k, err := io.ReadFull(c.br, buf)
	if string(buf[:k]) != want {
		t.Fatalf("got %q (%v), want %q", buf[:k], err, want)
	}
}

// rawExchange sends one command and checks the exact bytes of its reply.
func rawExchange(t *testing.T, c *respConn, reply string, args ...string) {
	t.Helper()
	c.send(args...)
	if err := c.flush(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, len(reply))
	_ = c.nc.SetReadDeadline(deadline())
	k, err := io.ReadFull(c.br, buf)
	if string(buf[:k]) != reply {
		t.Errorf("%s: got %q (%v), want %q", quoteArgs(args), buf[:k], err, reply)
	}
}

func abbreviate(s string) string {
	if len(s) > 40 {
		return s[:40] + "..." + strconv.Itoa(len(s)) + " bytes"
	}
	return s
}

// TestExactTexts checks the exact replies protocol.md lists, the HELLO reply
// shapes under RESP2 and RESP3, and what clients read on connect (INFO,
// CONFIG GET, COMMAND).
func TestExactTexts(t *testing.T) {
	n := sharedNode(t)

	t.Run("texts", func(t *testing.T) {
		c := mustDial(t, n.addr())
		long := strings.Repeat("a", 200)
		rawExchange(t, c, "-NOPROTO unsupported protocol version\r\n", "HELLO", "4")
		rawExchange(t, c, "-ERR Protocol version is not an integer or out of range\r\n", "HELLO", "abc")
		rawExchange(t, c, "-ERR DB index is out of range\r\n", "SELECT", "99")
		rawExchange(t, c, "+OK\r\n", "SELECT", "0")
		rawExchange(t, c, "-ERR Client names cannot contain spaces, newlines or special characters.\r\n", "CLIENT", "SETNAME", "a b")
		rawExchange(t, c, "+OK\r\n", "CLIENT", "SETNAME", "ok-name")
		rawExchange(t, c, "$7\r\nok-name\r\n", "CLIENT", "GETNAME")
		rawExchange(t, c, "-ERR unknown subcommand 'X'. Try CLIENT HELP.\r\n", "CLIENT", "X")
		rawExchange(t, c, "-ERR unknown command 'FOO', with args beginning with: 'bar' \r\n", "FOO", "bar")
		rawExchange(t, c, "-ERR unknown command 'FOO', with args beginning with: 'bar' 'baz' \r\n", "FOO", "bar", "baz")
		rawExchange(t, c, "-ERR unknown command 'FOO', with args beginning with: '"+long[:128]+"' \r\n", "FOO", long)
		// Redis 7.0.15 cuts the quoted arguments at 128 characters in total
		// (protocol.md says "each"; for one long argument both agree).
		a100, b100 := strings.Repeat("a", 100), strings.Repeat("b", 100)
		rawExchange(t, c, "-ERR unknown command 'FOO', with args beginning with: '"+a100+"' '"+b100[:25]+"' \r\n", "FOO", a100, b100)
		rawExchange(t, c, "-ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?\r\n", "AUTH", "x")
		rawExchange(t, c, "+PONG\r\n", "PING")
		rawExchange(t, c, "$5\r\nhello\r\n", "PING", "hello")
		rawExchange(t, c, "$5\r\na\x00\r\nb\r\n", "ECHO", "a\x00\r\nb")
		rawExchange(t, c, ":12739\r\n", "CLUSTER", "KEYSLOT", "123456789")
		rawExchange(t, c, "-ERR unknown subcommand 'FOO'. Try CLUSTER HELP.\r\n", "CLUSTER", "FOO")
		rawExchange(t, c, "+RESET\r\n", "RESET")
		rawExchange(t, c, "+OK\r\n", "QUIT")
		if err := c.expectClosed(); err != nil {
			t.Errorf("after QUIT: %v", err)
		}
	})

	t.Run("hello_shapes", func(t *testing.T) {
		c := mustDial(t, n.addr())
		checkHello(t, mustDo(t, c, "HELLO"), '*', 2)      // bare HELLO: the current protocol
		checkHello(t, mustDo(t, c, "HELLO", "2"), '*', 2) // the flat array
		checkHello(t, mustDo(t, c, "HELLO", "3"), '%', 3) // a RESP3 map
		checkHello(t, mustDo(t, c, "HELLO"), '%', 3)
		// RESP3 leaves CL.THROTTLE an array of integers and INFO a
		// verbatim string.
		origin := freshBase(t, c)
		setClock(t, c, origin)
		expectReply(t, c, wantInts(0, 6, 6, -1, 0), "CL.PEEK", "resp3:k", "5", "1", "1", "0")
		if info := mustDo(t, c, "INFO"); info.kind != '=' || !strings.Contains(info.str, "loading:0") {
			t.Errorf("INFO under RESP3: want a verbatim string with loading:0, got kind %q", info.kind)
		}
		expectReply(t, c, wantStatus("OK"), "CLIENT", "TRACKING", "ON", "OPTIN") // rueidis needs it
		r := mustDo(t, c, "HELLO", "3", "SETNAME", "via-hello")
		checkHello(t, r, '%', 3)
		expectReply(t, c, wantBulk("via-hello"), "CLIENT", "GETNAME")
		// COMMAND DOCS is a map of maps with a summary.
		docs := mustDo(t, c, "COMMAND", "DOCS", "cl.throttle")
		if doc, ok := docs.field("cl.throttle"); docs.kind != '%' || !ok || doc.kind != '%' {
			t.Errorf("COMMAND DOCS cl.throttle: want a map of maps, got %v", docs)
		} else if s, ok := doc.field("summary"); !ok || s.str == "" {
			t.Errorf("COMMAND DOCS cl.throttle: no summary in %v", doc)
		}
		// RESET goes back to RESP2.
		expectReply(t, c, wantStatus("RESET"), "RESET")
		checkHello(t, mustDo(t, c, "HELLO"), '*', 2)
	})

	t.Run("what_clients_read_on_connect", func(t *testing.T) {
		c := mustDial(t, n.addr())
		if info := mustDo(t, c, "INFO"); info.kind != '$' || !strings.Contains(info.str, "loading:0\r\n") {
			t.Errorf("INFO: want a bulk string with loading:0, got %v", info)
		}
		for _, p := range []string{"save", "appendonly"} {
			r := mustDo(t, c, "CONFIG", "GET", p)
			if r.kind != '*' || len(r.elems) != 2 || r.elems[0].str != p || r.elems[1].kind != '$' {
				t.Errorf("CONFIG GET %s: want [%q value], got %v", p, p, r)
			}
		}
		all := mustDo(t, c, "COMMAND")
		count := mustDo(t, c, "COMMAND", "COUNT")
		if all.kind != '*' || count.kind != ':' || int64(len(all.elems)) != count.num {
			t.Errorf("COMMAND COUNT %v, but COMMAND lists %d entries", count, len(all.elems))
		}
		info := mustDo(t, c, "COMMAND", "INFO", "cl.throttle")
		if info.kind != '*' || len(info.elems) != 1 || len(info.elems[0].elems) < 6 {
			t.Fatalf("COMMAND INFO cl.throttle: got %v", info)
		}
		e := info.elems[0].elems
		if e[0].str != "cl.throttle" || e[1].num != -5 || e[3].num != 1 || e[4].num != 1 || e[5].num != 1 {
			t.Errorf("COMMAND INFO cl.throttle: want name cl.throttle, arity -5, keys 1 1 1; got %v", info.elems[0])
		}
		// Every command the tests use is described.
		for _, name := range []string{"cl.throttle", "cl.peek", "del", "unlink", "exists", "pttl", "ttl", "type", "dbsize", "flushall", "ping", "echo", "hello", "info", "config", "command", "client", "select", "debug"} {
			r := mustDo(t, c, "COMMAND", "INFO", name)
			if r.kind != '*' || len(r.elems) != 1 || r.elems[0].null {
				t.Errorf("COMMAND INFO %s: got %v", name, r)
			}
		}
	})
}

var redisVersion = regexp.MustCompile(`^7\.\d+\.\d+$`)

// checkHello checks a HELLO reply: its kind (flat array or map), the fields
// clients read, and proto.
func checkHello(t *testing.T, r reply, kind byte, proto int64) {
	t.Helper()
	if r.kind != kind {
		t.Errorf("HELLO (proto %d): got kind %q, want %q: %v", proto, r.kind, kind, r)
		return
	}
	if len(r.elems) != 14 {
		t.Errorf("HELLO: want 7 fields, got %v", r)
	}
	for _, f := range []string{"server", "version", "proto", "id", "mode", "role", "modules"} {
		if _, ok := r.field(f); !ok {
			t.Errorf("HELLO: no %q in %v", f, r)
		}
	}
	if v, _ := r.field("version"); !redisVersion.MatchString(v.str) {
		t.Errorf("HELLO: version %v, want 7.x.y", v)
	}
	if p, _ := r.field("proto"); p.kind != ':' || p.num != proto {
		t.Errorf("HELLO: proto %v, want %d", p, proto)
	}
	if id, _ := r.field("id"); id.kind != ':' || id.num <= 0 {
		t.Errorf("HELLO: id %v, want a positive integer", id)
	}
	if m, _ := r.field("modules"); m.kind != '*' {
		t.Errorf("HELLO: modules %v, want an array", m)
	}
}
