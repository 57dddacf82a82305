package server

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A tracking test writes on one connection and then sends PING on the
// tracking one: the node applies a write before it answers it, and a
// connection writes its pending pushes before its next replies, so every
// invalidation caused by that write arrives before the PONG. No sleeps.

const (
	pong3  = "+PONG"
	tkPeek = "10" // CL.PEEK/THROTTLE parameters used below: max_burst 10, 1 per 10 s
)

func throttle(k string) []string { return []string{"CL.THROTTLE", k, tkPeek, "1", "10"} }
func peek(k string) []string     { return []string{"CL.PEEK", k, tkPeek, "1", "10"} }

// expectPushes sends PING on c and checks that exactly the pushes want (in
// reply.String form) arrive before its PONG.
func (c *client) expectPushes(want ...string) {
	c.t.Helper()
	c.sendCmd("PING")
	var got []string
	for {
		r := c.reply()
		if r == pong3 || r == "*[$pong $]" {
			break
		}
		got = append(got, r)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		c.t.Errorf("pushes before PONG:\n got %q\nwant %q", got, want)
	}
}

func invalidate(keys ...string) string {
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = "$" + k
	}
	return ">[$invalidate *[" + strings.Join(parts, " ") + "]]"
}

// TestTrackingDefaultMode: a RESP3 connection that read a key hears once
// when another connection writes it; keys it did not read, or read before
// the last invalidation, stay silent.
func TestTrackingDefaultMode(t *testing.T) {
	n := startTestNode(t)
	tr, wr := n.dial(), n.dial()
	tr.do("HELLO", "3")
	if got := tr.do("CLIENT", "TRACKING", "ON"); got != "+OK" {
		t.Fatalf("CLIENT TRACKING ON = %s", got)
	}
	tr.do(peek("a")...)
	tr.do("EXISTS", "b", "c")
	tr.do("DBSIZE")
	tr.do("SCAN", "0", "MATCH", "p*")
	tr.do("KEYS", "q*")
	wr.do(throttle("a")...)
	tr.expectPushes(invalidate("a"))
	wr.do("DEL", "p*", "q*") // patterns, not keys that were read
	tr.expectPushes()
	wr.do(throttle("a")...) // a was invalidated: forgotten until read again
	wr.do(throttle("z")...) // never read
	tr.expectPushes()
	wr.do("DEL", "b", "c", "z") // one entry: one push with both keys
	tr.expectPushes(invalidate("b", "c"))

	// The tracking connection's own write: the push comes before the
	// write's reply (it was queued when the write was applied).
	tr.do(peek("a")...)
	tr.sendCmd(throttle("a")...)
	if got := tr.reply(); got != invalidate("a") {
		t.Errorf("own write: first reply %s, want the invalidation", got)
	}
	if got := tr.reply(); !strings.HasPrefix(got, "*[:0 :11") {
		t.Errorf("own write: then %s, want the CL.THROTTLE reply", got)
	}

	// FLUSHALL invalidates everything with a null, even keys never read.
	wr.do("FLUSHALL")
	tr.expectPushes(">[$invalidate _]")

	// Off: silence.
	tr.do(peek("a")...)
	tr.do("CLIENT", "TRACKING", "OFF")
	wr.do(throttle("a")...)
	tr.expectPushes()
}

// TestTrackingOptinOptout: OPTIN tracks only the command after CLIENT
// CACHING YES (a whole MULTI/EXEC, as rueidis sends it); OPTOUT tracks all
// but the command after CLIENT CACHING NO.
func TestTrackingOptinOptout(t *testing.T) {
	n := startTestNode(t)
	tr, wr := n.dial(), n.dial()
	tr.do("HELLO", "3")
	tr.do("CLIENT", "TRACKING", "ON", "OPTIN")
	tr.do(peek("a")...) // not opted in
	tr.do("CLIENT", "CACHING", "YES")
	tr.do(peek("b")...)
	tr.do(peek("c")...) // the flag lasted one command
	// rueidis's DoCache: CACHING YES, then MULTI PTTL k cmd EXEC.
	tr.send(encodeCmd("CLIENT", "CACHING", "YES") + encodeCmd("MULTI") + encodeCmd("PTTL", "d") +
		encodeCmd("TYPE", "d") + encodeCmd("EXEC"))
	tr.expectReplies("+OK", "+OK", "+QUEUED", "+QUEUED", "*[:-2 +none]")
	wr.do("DEL", "a", "b", "c", "d")
	tr.expectPushes(invalidate("b", "d"))

	op := n.dial()
	op.do("HELLO", "3")
	op.do("CLIENT", "TRACKING", "ON", "OPTOUT")
	op.do(peek("a")...)
	op.do("CLIENT", "CACHING", "NO")
	op.do(peek("b")...) // opted out
	wr.do("DEL", "a", "b")
	op.expectPushes(invalidate("a"))
}

// TestTrackingNoloopAndBcast: NOLOOP hears of other connections' writes but
// not its own; BCAST hears of every write under its prefixes without reading.
func TestTrackingNoloopAndBcast(t *testing.T) {
	n := startTestNode(t)
	nl, wr := n.dial(), n.dial()
	nl.do("HELLO", "3")
	nl.do("CLIENT", "TRACKING", "ON", "NOLOOP")
	nl.do(peek("a")...)
	nl.do(throttle("a")...) // its own write: nothing
	nl.expectPushes()
	nl.send(encodeCmd("MULTI") + encodeCmd(peek("a")...) + encodeCmd(throttle("a")...) + encodeCmd("EXEC"))
	nl.expectReplies("+OK", "+QUEUED", "+QUEUED")
	if got := nl.reply(); !strings.HasPrefix(got, "*[*[") {
		t.Errorf("EXEC = %s", got)
	}
	nl.expectPushes()
	nl.do(peek("a")...)
	wr.do(throttle("a")...)
	nl.expectPushes(invalidate("a"))

	bc := n.dial()
	bc.do("HELLO", "3")
	if got := bc.do("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "user:", "PREFIX", "ip:"); got != "+OK" {
		t.Fatalf("CLIENT TRACKING ON BCAST = %s", got)
	}
	wr.do("DEL", "user:1", "other", "ip:9", "user:2")
	bc.expectPushes(invalidate("user:1", "ip:9", "user:2"))
	all := n.dial()
	all.do("HELLO", "3")
	all.do("CLIENT", "TRACKING", "ON", "BCAST")
	wr.do(throttle("x")...)
	all.expectPushes(invalidate("x"))
	bc.expectPushes()
}

// TestTrackingRedirectRESP2: a RESP2 connection redirects its invalidations
// to another one subscribed to __redis__:invalidate, which receives them as
// pubsub messages (FLUSHALL as a null); while subscribed, a RESP2 connection
// runs only the pubsub commands, PING, QUIT and RESET.
func TestTrackingRedirectRESP2(t *testing.T) {
	n := startTestNode(t)
	tr, sub, wr := n.dial(), n.dial(), n.dial()
	id := sub.do("CLIENT", "ID")[1:]
	if got := sub.do("SUBSCRIBE", "__redis__:invalidate"); got != "*[$subscribe $__redis__:invalidate :1]" {
		t.Fatalf("SUBSCRIBE = %s", got)
	}
	if got := sub.do("PING"); got != "*[$pong $]" {
		t.Errorf("PING while subscribed = %s", got)
	}
	if got := sub.do("PING", "hi"); got != "*[$pong $hi]" {
		t.Errorf("PING hi while subscribed = %s", got)
	}
	if got := sub.do("CL.THROTTLE", "a", "1", "1", "1"); got != "-ERR Can't execute 'cl.throttle': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context" {
		t.Errorf("a limiter command while subscribed = %s", got)
	}
	if got := tr.do("CLIENT", "TRACKING", "ON", "REDIRECT", id); got != "+OK" {
		t.Fatalf("CLIENT TRACKING ON REDIRECT %s = %s", id, got)
	}
	if got := tr.do("CLIENT", "GETREDIR"); got != ":"+id {
		t.Errorf("CLIENT GETREDIR = %s, want %s", got, id)
	}
	tr.do(peek("k")...)
	wr.do(throttle("k")...)
	sub.expectPushes("*[$message $__redis__:invalidate *[$k]]")
	tr.expectPushes() // nothing on the RESP2 connection itself
	wr.do("FLUSHALL")
	sub.expectPushes("*[$message $__redis__:invalidate $nil]")
	if got := sub.do("UNSUBSCRIBE"); got != "*[$unsubscribe $__redis__:invalidate :0]" {
		t.Errorf("UNSUBSCRIBE = %s", got)
	}
	if got := sub.do("PING"); got != "+PONG" {
		t.Errorf("PING after UNSUBSCRIBE = %s", got)
	}
	if got := sub.do("SUBSCRIBE", "news"); !strings.HasPrefix(got, "-ERR Redcell publishes only the __redis__:invalidate channel") {
		t.Errorf("SUBSCRIBE news = %s", got)
	}
}

// TestTrackingRedirectBroken: when the redirect target has gone, a RESP3
// tracking connection is told so instead of invalidations.
func TestTrackingRedirectBroken(t *testing.T) {
	n := startTestNode(t)
	tr, target, wr, admin := n.dial(), n.dial(), n.dial(), n.dial()
	id := target.do("CLIENT", "ID")[1:]
	tr.do("HELLO", "3")
	tr.do("CLIENT", "TRACKING", "ON", "REDIRECT", id)
	tr.do(peek("k")...)
	target.nc.Close()
	for deadline := time.Now().Add(10 * time.Second); ; {
		if !strings.Contains(admin.replyTreeOf("CLIENT", "LIST").s, "id="+id+" ") {
			break // the server has seen it go
		}
		if time.Now().After(deadline) {
			t.Fatalf("client %s still listed 10 s after closing", id)
		}
		time.Sleep(10 * time.Millisecond) // polling the server's state, not ordering events
	}
	wr.do(throttle("k")...)
	tr.expectPushes(">[$tracking-redir-broken :" + id + "]")
	if got := hideIDs(tr.replyTreeOf("CLIENT", "TRACKINGINFO").String()); got != "%{$flags ~[$on $broken_redirect] $redirect :"+id+" $prefixes *[]}" {
		t.Errorf("CLIENT TRACKINGINFO = %s", got)
	}
}

// TestTrackingErrors: Redis 7's texts for invalid CLIENT TRACKING and
// CLIENT CACHING calls, and the state CLIENT TRACKINGINFO reports.
func TestTrackingErrors(t *testing.T) {
	n := startTestNode(t)
	c := n.dial()
	for _, tc := range []struct {
		cmd  string
		want string
	}{
		{"CLIENT GETREDIR", ":-1"},
		{"CLIENT TRACKINGINFO", "*[$flags *[$off] $redirect :-1 $prefixes *[]]"},
		{"CLIENT TRACKING maybe", "-ERR syntax error"},
		{"CLIENT TRACKING ON FOO", "-ERR syntax error"},
		{"CLIENT TRACKING ON PREFIX a", "-ERR PREFIX option requires BCAST mode to be enabled"},
		{"CLIENT TRACKING ON BCAST OPTIN", "-ERR OPTIN and OPTOUT are not compatible with BCAST"},
		{"CLIENT TRACKING ON OPTIN OPTOUT", "-ERR You can't use both OPTIN and OPTOUT"},
		{"CLIENT TRACKING ON REDIRECT abc", "-ERR value is not an integer or out of range"},
		{"CLIENT TRACKING ON REDIRECT 99999999", "-ERR The client ID you want redirect to does not exist"},
		{"CLIENT TRACKING ON BCAST PREFIX ab PREFIX a", "-ERR Prefix 'ab' overlaps with another provided prefix 'a'. Prefixes for a single client must not overlap."},
		{"CLIENT TRACKING ON OPTIN", "+OK"},
		{"CLIENT TRACKING ON OPTOUT", "-ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode."},
		{"CLIENT TRACKING ON BCAST", "-ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode."},
		{"CLIENT CACHING NO", "-ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode."},
		{"CLIENT CACHING maybe", "-ERR syntax error"},
		{"CLIENT CACHING YES", "+OK"},
		{"CLIENT TRACKINGINFO", "*[$flags *[$on $optin $caching-yes] $redirect :0 $prefixes *[]]"},
		{"CLIENT GETREDIR", ":0"},
		{"CLIENT TRACKING OFF", "+OK"},
		{"CLIENT TRACKING ON BCAST PREFIX a", "+OK"},
		{"CLIENT TRACKING ON BCAST PREFIX ab", "-ERR Prefix 'ab' overlaps with an existing prefix 'a'. Prefixes for a single client must not overlap."},
		{"CLIENT TRACKING ON BCAST PREFIX b", "+OK"},
		{"CLIENT TRACKINGINFO", "*[$flags *[$on $bcast] $redirect :0 $prefixes *[$a $b]]"},
		{"CLIENT CACHING YES", "-ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode."},
		{"RESET", "+RESET"},
		{"CLIENT TRACKINGINFO", "*[$flags *[$off] $redirect :-1 $prefixes *[]]"},
		{"CLIENT TRACKING ON REDIRECT " + strconv.FormatInt(1, 10) + "x", "-ERR value is not an integer or out of range"},
	} {
		if got := c.do(strings.Fields(tc.cmd)...); got != tc.want {
			t.Errorf("%s = %s, want %s", tc.cmd, got, tc.want)
		}
	}
}

// infoField reads one field of INFO section on c.
func (c *client) infoField(section, field string) string {
	c.t.Helper()
	for _, line := range strings.Split(c.replyTreeOf("INFO", section).s, "\r\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return v
		}
	}
	c.t.Fatalf("INFO %s has no %s", section, field)
	return ""
}

// TestTrackingTableLimit: past the table's limit a remembered key is
// invalidated and forgotten to make room (Redis's tracking-table-max-keys),
// and INFO counts what the table holds.
func TestTrackingTableLimit(t *testing.T) {
	n := startTestNode(t)
	n.srv.trk.maxKeys = 3
	tr, wr := n.dial(), n.dial()
	tr.do("HELLO", "3")
	tr.do("CLIENT", "TRACKING", "ON")
	for _, k := range []string{"a", "b", "c"} {
		tr.do(peek(k)...)
	}
	if got := wr.infoField("stats", "tracking_total_keys"); got != "3" {
		t.Errorf("tracking_total_keys = %s, want 3", got)
	}
	if got := wr.infoField("clients", "tracking_clients"); got != "1" {
		t.Errorf("tracking_clients = %s, want 1", got)
	}
	tr.sendCmd(peek("d")...)
	push := tr.replyTree()
	if push.typ != '>' || len(push.elems) != 2 || len(push.elems[1].elems) != 1 {
		t.Fatalf("reading a fourth key: %s, want the invalidation of an evicted key first", push)
	}
	evicted := push.elems[1].elems[0].s
	if !strings.Contains("abc", evicted) {
		t.Fatalf("evicted %q, want one of a, b, c", evicted)
	}
	if got := tr.reply(); !strings.HasPrefix(got, "*[:0 :11") {
		t.Errorf("then %s, want the CL.PEEK reply", got)
	}
	wr.do(throttle(evicted)...) // forgotten: no second invalidation
	tr.expectPushes()
	if got := wr.infoField("stats", "tracking_total_items"); got != "3" {
		t.Errorf("tracking_total_items = %s, want 3", got)
	}
	wr.do("FLUSHALL")
	tr.expectPushes(">[$invalidate _]")
	if got := wr.infoField("stats", "tracking_total_keys"); got != "0" {
		t.Errorf("tracking_total_keys after FLUSHALL = %s, want 0", got)
	}
}

// TestTrackingUnreadPushesClose: a connection holding more unsent pushes than
// the limit is closed, and the writer and the node carry on.
func TestTrackingUnreadPushesClose(t *testing.T) {
	n := startTestNode(t)
	n.srv.trk.maxPush = 10 // any invalidation is more
	tr, wr := n.dial(), n.dial()
	tr.do("HELLO", "3")
	tr.do("CLIENT", "TRACKING", "ON")
	tr.do(peek("k")...)
	if got := wr.do(throttle("k")...); !strings.HasPrefix(got, "*[:0 :11") {
		t.Fatalf("the write = %s", got)
	}
	tr.expectEOF()
	if got := wr.do(throttle("k")...); !strings.HasPrefix(got, "*[:0 :11") {
		t.Errorf("the next write = %s", got)
	}
}

// TestClientListShowsTransactionsAndTracking: CLIENT LIST's flags, sub,
// multi and redir fields, as Redis shows them.
func TestClientListShowsTransactionsAndTracking(t *testing.T) {
	n := startTestNode(t)
	a, b, admin := n.dial(), n.dial(), n.dial()
	aid, bid := a.do("CLIENT", "ID")[1:], b.do("CLIENT", "ID")[1:]
	fields := func(id string) string {
		t.Helper()
		line := admin.replyTreeOf("CLIENT", "LIST", "ID", id).s
		var out []string
		for _, f := range strings.Fields(line) {
			for _, name := range []string{"flags=", "sub=", "multi=", "redir="} {
				if strings.HasPrefix(f, name) {
					out = append(out, f)
				}
			}
		}
		return strings.Join(out, " ")
	}
	if got := fields(aid); got != "flags=N sub=0 multi=-1 redir=-1" {
		t.Errorf("a fresh connection: %s", got)
	}
	a.do("MULTI")
	a.do("PING")
	a.do(peek("k")...)
	if got := fields(aid); got != "flags=x sub=0 multi=2 redir=-1" {
		t.Errorf("inside MULTI with two queued: %s", got)
	}
	a.do("DISCARD")
	b.do("SUBSCRIBE", "__redis__:invalidate")
	a.do("CLIENT", "TRACKING", "ON", "BCAST", "REDIRECT", bid)
	if got := fields(aid); got != "flags=tB sub=0 multi=-1 redir="+bid {
		t.Errorf("tracking in BCAST mode with a redirect: %s", got)
	}
	if got := fields(bid); got != "flags=P sub=1 multi=-1 redir=-1" {
		t.Errorf("subscribed: %s", got)
	}
}
