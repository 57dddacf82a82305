package server

import (
	"strings"

	"github.com/redcell/redcell/commands"
)

// handler answers a Connection-class command. args[0] is the name.
type handler func(c *conn, s *commands.Spec, args [][]byte)

// handlers maps every Connection-class command of the table to its handler;
// a test checks that none is missing.
var handlers map[string]handler

func init() {
	handlers = map[string]handler{
		"ping": cmdPing, "echo": cmdEcho, "quit": cmdQuit, "reset": cmdReset,
		"hello": cmdHello, "auth": cmdAuth, "select": cmdSelect, "client": cmdClient,
		"info": cmdInfo, "time": cmdTime, "command": cmdCommand, "config": cmdConfig, "script": cmdScript, "raft": cmdRaft, "readonly": cmdReadonly, "readwrite": cmdReadwrite,
		"debug": cmdDebug, "cluster": cmdCluster, "asking": cmdAsking,
		"save": cmdSave, "bgsave": cmdBgsave, "lastsave": cmdLastsave, "shutdown": cmdShutdown,
		"multi": cmdMulti, "exec": cmdExec, "discard": cmdDiscard, "watch": cmdWatch, "unwatch": cmdUnwatch,
		"subscribe": cmdSubscribe, "unsubscribe": cmdUnsubscribe,
		"slowlog": cmdSlowlog, "latency": cmdLatency, "memory": cmdMemory,
	}
}

// PING [message]
// Returns PONG, or the message as a bulk string.
func cmdPing(c *conn, _ *commands.Spec, args [][]byte) {
	if len(args) > 2 {
		c.fail(commands.WrongArgs("ping"))
		return
	}
	if c.trk.subscribed.Load() && c.w.Proto == 2 {
		// Subscribed RESP2 connections get pubsub-shaped replies, as in Redis.
		c.w.Array(2)
		c.w.BulkString("pong")
		if len(args) == 2 {
			c.w.Bulk(args[1])
		} else {
			c.w.BulkString("")
		}
		return
	}
	if len(args) == 2 {
		c.w.Bulk(args[1])
		return
	}
	c.w.Simple("PONG")
}

// ECHO message
// Returns the message (binary-safe: redis-cli --pipe relies on it).
func cmdEcho(c *conn, _ *commands.Spec, args [][]byte) { c.w.Bulk(args[1]) }

// QUIT
// Answers OK, then closes the connection.
func cmdQuit(c *conn, _ *commands.Spec, _ [][]byte) {
	c.w.OK()
	c.closeAfter = true
}

// RESET
// Resets the connection to its initial state: RESP2, no name, no tracking,
// and not authenticated if a password is set.
func cmdReset(c *conn, _ *commands.Spec, _ [][]byte) {
	c.setProto(2)
	c.authed = !c.s.auth.required()
	c.mu.Lock()
	c.name = ""
	c.mu.Unlock()
	c.untrack()
	c.trk.subscribed.Store(false)
	c.readonly = false
	c.tx.reset()
	c.watch.reset()
	c.w.Simple("RESET")
}

// READONLY
// Reads on this connection answer from this node's own state without
// confirming leadership: cheaper, and possibly stale on a follower (it sees
// what it has applied). Writes are unaffected.
func cmdReadonly(c *conn, _ *commands.Spec, _ [][]byte) {
	c.readonly = true
	c.w.OK()
}

// READWRITE
// Reads on this connection are linearizable again (the default).
func cmdReadwrite(c *conn, _ *commands.Spec, _ [][]byte) {
	c.readonly = false
	c.w.OK()
}

// HELLO [protover [AUTH username password] [SETNAME clientname]]
// Switches the protocol (2 or 3) and answers the server's handshake map.
func cmdHello(c *conn, _ *commands.Spec, args [][]byte) {
	proto := 0
	if len(args) >= 2 {
		v, ok := string2ll(args[1])
		if !ok {
			c.fail(commands.ErrProtoNotInt)
			return
		}
		if v < 2 || v > 3 {
			c.fail(commands.ErrNoProto)
			return
		}
		proto = int(v)
	}
	var user, pass, name []byte
	setName := false
	for j := 2; j < len(args); j++ {
		more := len(args) - 1 - j
		switch {
		case commands.EqualFold(args[j], "auth") && more >= 2:
			user, pass = args[j+1], args[j+2]
			j += 2
		case commands.EqualFold(args[j], "setname") && more >= 1:
			name, setName = args[j+1], true
			j++
		default:
			c.fail("ERR Syntax error in HELLO option '" + commands.SanitizeErrorText(args[j]) + "'")
			return
		}
	}
	if user != nil {
		if !c.s.auth.check(user, pass) {
			c.fail(commands.ErrWrongPass)
			return
		}
		c.authed = true
	}
	if c.authRequired() {
		c.fail(commands.ErrHelloNoAuth)
		return
	}
	if setName {
		if !validClientName(name) {
			c.fail(commands.ErrClientName)
			return
		}
		c.mu.Lock()
		c.name = string(name)
		c.mu.Unlock()
	}
	if proto != 0 {
		c.setProto(proto)
	}
	c.w.MapHeader(7)
	c.w.BulkString("server")
	c.w.BulkString("redis")
	c.w.BulkString("version")
	c.w.BulkString(Version)
	c.w.BulkString("proto")
	c.w.Int(int64(c.w.Proto))
	c.w.BulkString("id")
	c.w.Int(c.id)
	c.w.BulkString("mode")
	c.w.BulkString("standalone")
	c.w.BulkString("role")
	c.w.BulkString("master")
	c.w.BulkString("modules")
	c.w.Array(0)
}

// SELECT index
// Selects database 0, the only one.
func cmdSelect(c *conn, _ *commands.Spec, args [][]byte) {
	v, ok := string2ll(args[1])
	if !ok || v < -1<<31 || v > 1<<31-1 {
		c.fail(commands.ErrNotInteger)
		return
	}
	if v != 0 {
		c.fail(commands.ErrDBIndex)
		return
	}
	c.w.OK()
}

// validClientName is Redis's rule: printable ASCII without spaces.
func validClientName(b []byte) bool {
	for _, ch := range b {
		if ch < '!' || ch > '~' {
			return false
		}
	}
	return true
}

// CLIENT <subcommand> [arguments]
// Dispatches the CLIENT subcommands.
func cmdClient(c *conn, s *commands.Spec, args [][]byte) {
	sub := s.Sub(args[1])
	if sub == nil {
		c.fail(commands.UnknownSubcommand(args[1], "CLIENT"))
		return
	}
	if !sub.CheckArity(len(args)) {
		c.fail(commands.WrongArgs(sub.Name))
		return
	}
	c.lastCmd.Store(sub) // CLIENT LIST's cmd= shows client|<sub>, as Redis
	switch sub.Name {
	case "client|kill":
		clientKill(c, args) // client_kill.go
	case "client|id":
		// CLIENT ID: the connection's unique ID.
		c.w.Int(c.id)
	case "client|setname":
		// CLIENT SETNAME connection-name: names the connection.
		if !validClientName(args[2]) {
			c.fail(commands.ErrClientName)
			return
		}
		c.mu.Lock()
		c.name = string(args[2])
		c.mu.Unlock()
		c.w.OK()
	case "client|getname":
		// CLIENT GETNAME: the connection's name, or null.
		c.mu.Lock()
		name := c.name
		c.mu.Unlock()
		if name == "" {
			c.w.Null()
			return
		}
		c.w.BulkString(name)
	case "client|setinfo":
		// CLIENT SETINFO <LIB-NAME libname | LIB-VER libver>
		clientSetinfo(c, args)
	case "client|info":
		// CLIENT INFO: this connection's line of CLIENT LIST.
		c.w.Verbatim(c.infoLine() + "\n")
	case "client|list":
		// CLIENT LIST [TYPE normal] [ID client-id ...]
		clientList(c, args)
	case "client|tracking":
		// CLIENT TRACKING <ON | OFF> [REDIRECT id] [PREFIX prefix ...] [BCAST] [OPTIN] [OPTOUT] [NOLOOP]
		clientTracking(c, args)
	case "client|caching":
		// CLIENT CACHING <YES | NO>
		clientCaching(c, args)
	case "client|getredir":
		// CLIENT GETREDIR
		clientGetredir(c)
	case "client|trackinginfo":
		// CLIENT TRACKINGINFO
		clientTrackinginfo(c)
	case "client|no-evict", "client|no-touch":
		// CLIENT NO-EVICT <ON | OFF>, CLIENT NO-TOUCH <ON | OFF>: accepted; nothing is evicted here.
		if !commands.EqualFold(args[2], "on") && !commands.EqualFold(args[2], "off") {
			c.fail(commands.ErrSyntax)
			return
		}
		c.w.OK()
	case "client|help":
		writeHelp(c, "CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
			"ID", "    Return the ID of the current connection.",
			"SETNAME <name>", "    Assign the name <name> to the current connection.",
			"GETNAME", "    Return the name of the current connection.",
			"SETINFO <option> <value>", "    Set client meta attr (LIB-NAME or LIB-VER).",
			"INFO", "    Return information about the current client connection.",
			"LIST [TYPE normal] [ID <id> [<id> ...]]", "    Return information about client connections.",
			"KILL <ip:port>", "    Kill connection made from <ip:port>.",
			"KILL <option> <value> [<option> <value> [...]]", "    Kill connections. Options are: ID <client-id>, TYPE normal, USER <username>,",
			"", "    ADDR <ip:port>, LADDR <ip:port>, SKIPME (YES|NO).",
			"TRACKING (ON|OFF) [OPTIN] [OPTOUT] [BCAST] [NOLOOP] [PREFIX <prefix>] [REDIRECT <id>]", "    Control server assisted client side caching.",
			"CACHING (YES|NO)", "    Enable/disable tracking of the keys for next command in OPTIN/OPTOUT modes.",
			"GETREDIR", "    Return the client ID we are redirecting to when tracking is enabled.",
			"TRACKINGINFO", "    Return information about current client's tracking status.",
			"NO-EVICT (ON|OFF)", "    Accepted for compatibility.",
			"NO-TOUCH (ON|OFF)", "    Accepted for compatibility.",
			"HELP", "    Print this help.")
	}
}

func clientSetinfo(c *conn, args [][]byte) {
	attr := strings.ToUpper(string(args[2]))
	if attr != "LIB-NAME" && attr != "LIB-VER" {
		c.fail("ERR Unrecognized option '" + commands.SanitizeErrorText(args[2]) + "'")
		return
	}
	if !validClientName(args[3]) {
		c.fail("ERR " + attr + " cannot contain spaces, newlines or special characters.")
		return
	}
	c.mu.Lock()
	if attr == "LIB-NAME" {
		c.libName = string(args[3])
	} else {
		c.libVer = string(args[3])
	}
	c.mu.Unlock()
	c.w.OK()
}

func clientList(c *conn, args [][]byte) {
	var ids map[int64]bool
	none := false
	for j := 2; j < len(args); j++ {
		switch {
		case commands.EqualFold(args[j], "type") && j+1 < len(args):
			known, normal := clientType(args[j+1])
			if !known {
				c.fail("ERR Unknown client type '" + commands.SanitizeErrorText(args[j+1]) + "'")
				return
			}
			none = none || !normal // no client of another type: an empty list
			j++
		case commands.EqualFold(args[j], "id") && j+1 < len(args):
			ids = map[int64]bool{}
			for j++; j < len(args); j++ {
				id, ok := string2ll(args[j])
				if !ok || id <= 0 {
					c.fail("ERR Invalid client ID")
					return
				}
				ids[id] = true
			}
		default:
			c.fail(commands.ErrSyntax)
			return
		}
	}
	var b strings.Builder
	c.s.forEachConn(func(o *conn) {
		if !none && (ids == nil || ids[o.id]) {
			b.WriteString(o.infoLine())
			b.WriteByte('\n')
		}
	})
	c.w.Verbatim(b.String())
}

// writeHelp answers a HELP subcommand as Redis does: an array of lines.
func writeHelp(c *conn, first string, lines ...string) {
	c.w.Array(len(lines) + 1)
	c.w.Simple(first)
	for _, l := range lines {
		c.w.Simple(l)
	}
}
