package server

import (
	"strings"

	"github.com/redcell/redcell/commands"
)

// The commands of client-side caching: CLIENT TRACKING, CACHING, GETREDIR and
// TRACKINGINFO, and SUBSCRIBE / UNSUBSCRIBE for RESP2 clients that take their
// invalidations on __redis__:invalidate. The table they fill and the pushes
// they cause are in tracking.go.

// clientTracking is CLIENT TRACKING <ON | OFF> [REDIRECT id] [PREFIX prefix
// ...] [BCAST] [OPTIN] [OPTOUT] [NOLOOP], with Redis 7's checks and texts.
func clientTracking(c *conn, args [][]byte) {
	var redirect int64
	var bcast, optin, optout, noloop bool
	var prefixes []string
	for j := 3; j < len(args); j++ {
		more := len(args) - 1 - j
		switch {
		case commands.EqualFold(args[j], "redirect") && more > 0:
			j++
			if redirect != 0 {
				c.fail("ERR A client can only redirect to a single other client")
				return
			}
			v, ok := string2ll(args[j])
			if !ok {
				c.fail(commands.ErrNotInteger)
				return
			}
			if c.s.connByID(v) == nil {
				c.fail("ERR The client ID you want redirect to does not exist")
				return
			}
			redirect = v
		case commands.EqualFold(args[j], "bcast"):
			bcast = true
		case commands.EqualFold(args[j], "optin"):
			optin = true
		case commands.EqualFold(args[j], "optout"):
			optout = true
		case commands.EqualFold(args[j], "noloop"):
			noloop = true
		case commands.EqualFold(args[j], "prefix") && more > 0:
			j++
			prefixes = append(prefixes, string(args[j]))
		default:
			c.fail(commands.ErrSyntax)
			return
		}
	}
	switch {
	case commands.EqualFold(args[2], "off"):
		c.untrack()
		c.w.OK()
		return
	case !commands.EqualFold(args[2], "on"):
		c.fail(commands.ErrSyntax)
		return
	}
	old := c.trk.client
	switch {
	case !bcast && len(prefixes) > 0:
		c.fail("ERR PREFIX option requires BCAST mode to be enabled")
		return
	case old != nil && old.bcast != bcast:
		c.fail("ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode.")
		return
	case bcast && (optin || optout):
		c.fail("ERR OPTIN and OPTOUT are not compatible with BCAST")
		return
	case optin && optout:
		c.fail("ERR You can't use both OPTIN and OPTOUT")
		return
	case old != nil && ((optin && c.trk.optout) || (optout && c.trk.optin)):
		c.fail("ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode.")
		return
	}
	if bcast {
		var existing []string
		if old != nil {
			existing = old.prefixes
		}
		if e := prefixCollision(existing, prefixes); e != "" {
			c.fail(e)
			return
		}
	}
	var redirTo *conn
	if redirect != 0 {
		redirTo = c.s.connByID(redirect)
	}
	t := c.s.trk
	t.mu.Lock()
	tc := old
	if tc == nil {
		tc = &trackClient{c: c, own: map[string]int{}}
		t.clients[c.id] = tc
	}
	tc.noloop, tc.redirect, tc.redirTo = noloop, redirect, redirTo
	if bcast {
		if !tc.bcast {
			t.bcast = append(t.bcast, tc)
		}
		tc.bcast = true
		if len(prefixes) == 0 && len(tc.prefixes) == 0 {
			prefixes = []string{""} // every key
		}
		tc.prefixes = append(tc.prefixes, prefixes...)
	}
	t.active.Store(true)
	t.mu.Unlock()
	c.trk.client = tc
	c.trk.optin, c.trk.optout = optin, optout
	c.w.OK()
}

// prefixCollision is Redis's check that no two BCAST prefixes of one client
// overlap (one a prefix of the other).
func prefixCollision(existing, added []string) string {
	overlap := func(a, b string) bool { return strings.HasPrefix(a, b) || strings.HasPrefix(b, a) }
	for i, p := range added {
		for _, e := range existing {
			if overlap(p, e) {
				return "ERR Prefix '" + commands.SanitizeErrorText([]byte(p)) + "' overlaps with an existing prefix '" +
					commands.SanitizeErrorText([]byte(e)) + "'. Prefixes for a single client must not overlap."
			}
		}
		for _, q := range added[i+1:] {
			if overlap(p, q) {
				return "ERR Prefix '" + commands.SanitizeErrorText([]byte(p)) + "' overlaps with another provided prefix '" +
					commands.SanitizeErrorText([]byte(q)) + "'. Prefixes for a single client must not overlap."
			}
		}
	}
	return ""
}

// clientCaching is CLIENT CACHING <YES | NO>.
func clientCaching(c *conn, args [][]byte) {
	if c.trk.client == nil {
		c.fail("ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled")
		return
	}
	switch {
	case commands.EqualFold(args[2], "yes"):
		if !c.trk.optin {
			c.fail("ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.")
			return
		}
	case commands.EqualFold(args[2], "no"):
		if !c.trk.optout {
			c.fail("ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.")
			return
		}
	default:
		c.fail(commands.ErrSyntax)
		return
	}
	c.trk.caching = true
	c.w.OK()
}

// clientGetredir is CLIENT GETREDIR: -1 when not tracking, 0 without a
// redirect, else the redirect's client ID.
func clientGetredir(c *conn) {
	switch tc := c.trk.client; {
	case tc == nil:
		c.w.Int(-1)
	default:
		c.w.Int(tc.redirect)
	}
}

// clientTrackinginfo is CLIENT TRACKINGINFO: flags, redirect, prefixes.
func clientTrackinginfo(c *conn) {
	tc := c.trk.client
	var flags []string
	redirect := int64(-1)
	var prefixes []string
	if tc == nil {
		flags = []string{"off"}
	} else {
		flags = []string{"on"}
		if tc.bcast {
			flags = append(flags, "bcast")
		}
		if c.trk.optin {
			flags = append(flags, "optin")
			if c.trk.caching {
				flags = append(flags, "caching-yes")
			}
		}
		if c.trk.optout {
			flags = append(flags, "optout")
			if c.trk.caching {
				flags = append(flags, "caching-no")
			}
		}
		if tc.noloop {
			flags = append(flags, "noloop")
		}
		redirect = tc.redirect
		if tc.redirect != 0 && (tc.redirTo == nil || tc.redirTo.out.isClosed()) {
			flags = append(flags, "broken_redirect")
		}
		c.s.trk.mu.Lock()
		prefixes = append(prefixes, tc.prefixes...)
		c.s.trk.mu.Unlock()
	}
	c.w.MapHeader(3)
	c.w.BulkString("flags")
	c.w.SetHeader(len(flags))
	for _, f := range flags {
		c.w.BulkString(f)
	}
	c.w.BulkString("redirect")
	c.w.Int(redirect)
	c.w.BulkString("prefixes")
	c.w.Array(len(prefixes))
	for _, p := range prefixes {
		c.w.BulkString(p)
	}
}

// SUBSCRIBE channel [channel ...]
// Subscribes to __redis__:invalidate, the one channel Redcell publishes
// (client-side caching invalidations redirected to this connection); any
// other channel is refused, since nothing would ever be published there.
func cmdSubscribe(c *conn, _ *commands.Spec, args [][]byte) {
	for _, ch := range args[1:] {
		if string(ch) != invalidateChannel {
			c.fail("ERR Redcell publishes only the " + invalidateChannel + " channel (client-side caching invalidations): SUBSCRIBE '" +
				commands.SanitizeErrorText(ch) + "' is not supported")
			return
		}
	}
	c.trk.subscribed.Store(true)
	for range args[1:] {
		c.pubsubReply("subscribe", []byte(invalidateChannel), 1)
	}
}

// UNSUBSCRIBE [channel [channel ...]]
// Leaves __redis__:invalidate (all channels when none is named).
func cmdUnsubscribe(c *conn, _ *commands.Spec, args [][]byte) {
	if len(args) == 1 {
		if c.trk.subscribed.Swap(false) {
			c.pubsubReply("unsubscribe", []byte(invalidateChannel), 0)
		} else {
			c.pubsubReply("unsubscribe", nil, 0)
		}
		return
	}
	for _, ch := range args[1:] {
		if string(ch) == invalidateChannel {
			c.trk.subscribed.Store(false)
		}
		n := int64(0)
		if c.trk.subscribed.Load() {
			n = 1
		}
		c.pubsubReply("unsubscribe", ch, n)
	}
}

// pubsubReply writes a (un)subscribe confirmation: a push in RESP3, an
// array in RESP2; a nil channel is a null.
func (c *conn) pubsubReply(kind string, ch []byte, count int64) {
	if c.w.Proto == 3 {
		c.w.B = append(c.w.B, ">3\r\n"...)
	} else {
		c.w.Array(3)
	}
	c.w.BulkString(kind)
	if ch == nil {
		c.w.Null()
	} else {
		c.w.Bulk(ch)
	}
	c.w.Int(count)
}

// subscribedRefusal is Redis's answer to a command a RESP2 connection may
// not send while subscribed; "" when the command may run.
func (c *conn) subscribedRefusal(s *commands.Spec) string {
	if !c.trk.subscribed.Load() || c.w.Proto == 3 {
		return ""
	}
	switch s.Name {
	case "subscribe", "unsubscribe", "ping", "quit", "reset":
		return ""
	}
	return "ERR Can't execute '" + s.Name + "': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context"
}
