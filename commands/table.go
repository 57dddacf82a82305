// Package commands is Redcell's command table and request parsing: names,
// arity, flags, key positions and docs of every command (the single source of
// COMMAND, COMMAND DOCS and dispatch), the error vocabulary, and the parsing
// of arguments into typed requests. It imports no networking, so every
// command's parsing is testable without sockets. See DESIGN.md.
package commands

import (
	"sort"

	"github.com/redcell/redcell/request"
)

// Class says where a command executes.
type Class uint8

const (
	// Connection commands are answered by the server from connection or node
	// state; they never touch the keyspace.
	Connection Class = iota
	// Read commands read the keyspace on the leader after it confirms its
	// leadership; they never enter the log.
	Read
	// Write commands change the keyspace through the Raft log.
	Write
)

// Arg documents one argument for COMMAND DOCS.
type Arg struct {
	Name     string
	Type     string // key, integer, string, pure-token, oneof, block, pattern
	Token    string // for pure-token and tokened args
	Optional bool
	Multiple bool
	Args     []Arg // for oneof and block
}

// Spec describes one command (or one subcommand of a container command).
//
// A command that reaches the keyspace names the request code its Parse
// produces (Code); what that code is (read or write, its keys, whether it
// creates a key) is the code's descriptor in package request, and the
// spec's Class, key positions and the flags "write", "readonly" and
// "denyoom" are derived from it when the table is built (fromDescriptor),
// so COMMAND cannot disagree with what the request does.
type Spec struct {
	Name  string // lower case; "container|sub" for subcommands
	Arity int    // Redis convention: n = exactly n words incl. the name, -n = at least n
	Flags []string
	// Key positions as COMMAND reports them (1-based; LastKey -1 = to the
	// end). Derived from the code's key shape for a command with a Code.
	FirstKey, LastKey, Step int
	// Class is Connection, or derived from Code: Write for a write code,
	// Read for a read code.
	Class Class
	// Code is the request code Parse produces; 0 for a Connection command.
	Code request.Code
	// OwnArity: the handler checks arity itself (redis-cell answers its own
	// usage error instead of Redis's arity error).
	OwnArity bool
	// OwnFlags: Flags are exactly what COMMAND lists, not completed from
	// the descriptor (EVAL: the script decides whether it writes).
	OwnFlags bool
	// Parse turns a Read or Write command's arguments (args[0] the name)
	// into its request of code Code, validated completely, or returns the
	// error text to answer instead. It is the one place a command's syntax
	// lives: a new command is a table entry with its Code and Parse. The
	// request's keys alias args, whose entries (never their bytes) Parse
	// may rearrange for that, as EVAL's does. It returns the request by value: a
	// pointer handed to a call through a func field escapes, and would
	// cost every command an allocation (TestConnPipelineDoesNotAllocate).
	Parse      func(args [][]byte) (request.Request, string)
	Group      string
	Since      string
	Summary    string
	Complexity string
	Args       []Arg
	Subs       []*Spec
	ACL        []string
	// ID numbers every command and subcommand of the table, 0 to
	// NumSpecs()-1, when the table is built: per-command figures (the
	// server's commandstats and latency histograms) live in an array at
	// this index, so recording one is no map lookup.
	ID int
}

var table = []*Spec{
	// Rate limiting (redis-cell compatible).
	{Name: "cl.throttle", Arity: -5, OwnArity: true, Flags: []string{"fast"}, Code: request.Throttle,
		Group: "module", Since: "1.0.0", Complexity: "O(1)", ACL: []string{"@write", "@fast"},
		Summary: "Rate-limits key with GCRA (redis-cell): answers [limited, limit, remaining, retry_after, reset_after].",
		Args: []Arg{{Name: "key", Type: "key"}, {Name: "max_burst", Type: "integer"}, {Name: "count", Type: "integer"},
			{Name: "period", Type: "integer"}, {Name: "quantity", Type: "integer", Optional: true}}, Parse: ParseThrottle},
	{Name: "cl.peek", Arity: -5, OwnArity: true, Flags: []string{"fast"}, Code: request.Peek,
		Group: "module", Since: "1.0.0", Complexity: "O(1)", ACL: []string{"@read", "@fast"},
		Summary: "Answers what CL.THROTTLE would at this instant, with no effect.",
		Args: []Arg{{Name: "key", Type: "key"}, {Name: "max_burst", Type: "integer"}, {Name: "count", Type: "integer"},
			{Name: "period", Type: "integer"}, {Name: "quantity", Type: "integer", Optional: true}}, Parse: ParsePeek},

	// Token bucket (tb.go) and sliding log (sl.go).
	tbTake, tbPeek, slHit, slPeek,

	// Strings (strings.go).
	stringSpecs[0], stringSpecs[1], stringSpecs[2], stringSpecs[3], stringSpecs[4], stringSpecs[5],
	stringSpecs[6], stringSpecs[7], stringSpecs[8], stringSpecs[9], stringSpecs[10], stringSpecs[11],
	stringSpecs[12], stringSpecs[13], stringSpecs[14], stringSpecs[15], stringSpecs[16], stringSpecs[17],
	stringSpecs[18], // INCREX (increx.go)

	// Sets (sets.go).
	setSpecs[0], setSpecs[1], setSpecs[2], setSpecs[3], setSpecs[4], setSpecs[5],

	// Hashes (hashes.go).
	hashSpecs[0], hashSpecs[1], hashSpecs[2], hashSpecs[3], hashSpecs[4], hashSpecs[5], hashSpecs[6],
	hashSpecs[7], hashSpecs[8], hashSpecs[9], hashSpecs[10], hashSpecs[11], hashSpecs[12],
	// Lists (lists.go).
	listSpecs[0], listSpecs[1], listSpecs[2], listSpecs[3], listSpecs[4], listSpecs[5],
	listSpecs[6], listSpecs[7], listSpecs[8], listSpecs[9], listSpecs[10], listSpecs[11],

	// Sorted sets (zset.go).
	zsetSpecs[0], zsetSpecs[1], zsetSpecs[2], zsetSpecs[3], zsetSpecs[4], zsetSpecs[5],
	zsetSpecs[6], zsetSpecs[7], zsetSpecs[8], zsetSpecs[9], zsetSpecs[10], zsetSpecs[11],

	// Lua scripts (scripting.go).
	scriptSpecs[0], scriptSpecs[1], scriptSpecs[2], scriptSpecs[3], scriptSpecs[4],

	// Iterating the keyspace (scan.go).
	scanSpec, keysSpec,

	// Expiry (expire.go).
	expireSpecs[0], expireSpecs[1], expireSpecs[2], expireSpecs[3],
	expireSpecs[4], expireSpecs[5], expireSpecs[6], expireSpecs[7],
	// Renaming (expire.go: RENAME, RENAMENX).
	expireSpecs[8], expireSpecs[9],

	// Keyspace.
	{Name: "del", Arity: -2, Code: request.Del,
		Group: "generic", Since: "1.0.0", Complexity: "O(N) where N is the number of keys", ACL: []string{"@keyspace", "@write", "@slow"},
		Summary: "Deletes keys (resets their limiters). Returns the number of keys removed.",
		Args:    []Arg{{Name: "key", Type: "key", Multiple: true}}, Parse: parseDel},
	{Name: "unlink", Arity: -2, Flags: []string{"fast"}, Code: request.Del,
		Group: "generic", Since: "4.0.0", Complexity: "O(N) where N is the number of keys", ACL: []string{"@keyspace", "@write", "@fast"},
		Summary: "Deletes keys, like DEL.",
		Args:    []Arg{{Name: "key", Type: "key", Multiple: true}}, Parse: parseDel},
	{Name: "exists", Arity: -2, Flags: []string{"fast"}, Code: request.Exists,
		Group: "generic", Since: "1.0.0", Complexity: "O(N) where N is the number of keys", ACL: []string{"@keyspace", "@read", "@fast"},
		Summary: "Counts the arguments that exist (repeats count again).",
		Args:    []Arg{{Name: "key", Type: "key", Multiple: true}}, Parse: parseExists},
	{Name: "pttl", Arity: 2, Flags: []string{"fast"}, Code: request.PTTL,
		Group: "generic", Since: "2.6.0", Complexity: "O(1)", ACL: []string{"@keyspace", "@read", "@fast"},
		Summary: "Milliseconds until the key's limiter is equivalent to fresh; -2 when missing.",
		Args:    []Arg{{Name: "key", Type: "key"}}, Parse: parsePTTL},
	{Name: "ttl", Arity: 2, Flags: []string{"fast"}, Code: request.TTL,
		Group: "generic", Since: "1.0.0", Complexity: "O(1)", ACL: []string{"@keyspace", "@read", "@fast"},
		Summary: "Seconds until the key's limiter is equivalent to fresh; -2 when missing.",
		Args:    []Arg{{Name: "key", Type: "key"}}, Parse: parseTTL},
	{Name: "type", Arity: 2, Flags: []string{"fast"}, Code: request.Type,
		Group: "generic", Since: "1.0.0", Complexity: "O(1)", ACL: []string{"@keyspace", "@read", "@fast"},
		Summary: "The limiter family of the key: string (CL), tokenbucket, slidinglog or none.",
		Args:    []Arg{{Name: "key", Type: "key"}}, Parse: parseType},
	{Name: "dbsize", Arity: 1, Flags: []string{"fast"}, Code: request.DBSize,
		Group: "server", Since: "1.0.0", Complexity: "O(N)", ACL: []string{"@keyspace", "@read", "@fast"},
		Summary: "The number of live keys.", Parse: parseDBSize},
	{Name: "flushall", Arity: -1, Code: request.FlushAll,
		Group: "server", Since: "1.0.0", Complexity: "O(N)", ACL: []string{"@keyspace", "@write", "@slow", "@dangerous"},
		Summary: "Removes every key.",
		Args: []Arg{{Name: "flush-type", Type: "oneof", Optional: true, Args: []Arg{
			{Name: "async", Type: "pure-token", Token: "ASYNC"}, {Name: "sync", Type: "pure-token", Token: "SYNC"}}}}, Parse: parseFlush},
	{Name: "flushdb", Arity: -1, Code: request.FlushAll,
		Group: "server", Since: "1.0.0", Complexity: "O(N)", ACL: []string{"@keyspace", "@write", "@slow", "@dangerous"},
		Summary: "Removes every key (there is one database).",
		Args: []Arg{{Name: "flush-type", Type: "oneof", Optional: true, Args: []Arg{
			{Name: "async", Type: "pure-token", Token: "ASYNC"}, {Name: "sync", Type: "pure-token", Token: "SYNC"}}}}, Parse: parseFlush},

	// Connection.
	{Name: "ping", Arity: -1, Flags: []string{"fast", "stale", "loading"}, Group: "connection", Since: "1.0.0", Complexity: "O(1)",
		ACL: []string{"@fast", "@connection"}, Summary: "Returns PONG, or the message.", Args: []Arg{{Name: "message", Type: "string", Optional: true}}},
	{Name: "echo", Arity: 2, Flags: []string{"fast", "stale", "loading"}, Group: "connection", Since: "1.0.0", Complexity: "O(1)",
		ACL: []string{"@fast", "@connection"}, Summary: "Returns the message.", Args: []Arg{{Name: "message", Type: "string"}}},
	{Name: "quit", Arity: -1, Flags: []string{"noscript", "loading", "stale", "fast", "no_auth", "allow_busy"}, Group: "connection", Since: "1.0.0", Complexity: "O(1)",
		ACL: []string{"@fast", "@connection"}, Summary: "Answers OK and closes the connection."},
	{Name: "reset", Arity: 1, Flags: []string{"noscript", "loading", "stale", "fast", "no_auth", "allow_busy"}, Group: "connection", Since: "6.2.0", Complexity: "O(1)",
		ACL: []string{"@fast", "@connection"}, Summary: "Resets the connection: RESP2, no name, no tracking."},
	{Name: "hello", Arity: -1, Flags: []string{"noscript", "loading", "stale", "fast", "no_auth", "allow_busy"}, Group: "connection", Since: "6.0.0", Complexity: "O(1)",
		ACL: []string{"@fast", "@connection"}, Summary: "Handshake: protocol version, optional AUTH and SETNAME.",
		Args: []Arg{{Name: "arguments", Type: "block", Optional: true, Args: []Arg{
			{Name: "protover", Type: "integer"},
			{Name: "username-password", Type: "block", Token: "AUTH", Optional: true, Args: []Arg{{Name: "username", Type: "string"}, {Name: "password", Type: "string"}}},
			{Name: "clientname", Type: "string", Token: "SETNAME", Optional: true}}}}},
	{Name: "auth", Arity: -2, Flags: []string{"noscript", "loading", "stale", "fast", "no_auth", "allow_busy"}, Group: "connection", Since: "1.0.0", Complexity: "O(N)",
		ACL: []string{"@fast", "@connection"}, Summary: "Authenticates the connection.",
		Args: []Arg{{Name: "username", Type: "string", Optional: true}, {Name: "password", Type: "string"}}},
	{Name: "select", Arity: 2, Flags: []string{"fast", "stale", "loading"}, Group: "connection", Since: "1.0.0", Complexity: "O(1)",
		ACL: []string{"@fast", "@connection"}, Summary: "Selects database 0, the only one.", Args: []Arg{{Name: "index", Type: "integer"}}},
	{Name: "readonly", Arity: 1, Flags: []string{"fast", "loading", "stale"}, Group: "cluster", Since: "3.0.0", Complexity: "O(1)",
		ACL: []string{"@fast", "@connection"}, Summary: "Reads on this connection answer from this node's own state, without asking the leader (may be stale on a follower)."},
	{Name: "readwrite", Arity: 1, Flags: []string{"fast", "loading", "stale"}, Group: "cluster", Since: "3.0.0", Complexity: "O(1)",
		ACL: []string{"@fast", "@connection"}, Summary: "Reads on this connection are linearizable again (the default)."},
	{Name: "asking", Arity: 1, Flags: []string{"fast"}, Group: "cluster", Since: "3.0.0", Complexity: "O(1)",
		ACL: []string{"@fast", "@connection"}, Summary: "Accepted for cluster clients: no slot is ever migrating, so it changes nothing."},
	// Transactions (server/multi.go): the queued requests are decided in one
	// log entry. WATCH's check is made in that entry by the state machine
	// (server/watch.go, fsm/watchguard.go).
	{Name: "multi", Arity: 1, Flags: []string{"noscript", "loading", "stale", "fast", "allow_busy"}, Group: "transactions", Since: "1.2.0", Complexity: "O(1)",
		ACL: []string{"@fast", "@transaction"}, Summary: "Starts a transaction: the commands until EXEC are queued and then run atomically, at one instant, in one log entry."},
	{Name: "exec", Arity: 1, Flags: []string{"noscript", "loading", "stale", "skip_slowlog"}, Group: "transactions", Since: "1.2.0", Complexity: "Depends on commands in the transaction",
		ACL: []string{"@slow", "@transaction"}, Summary: "Runs the queued commands as one log entry and answers an array of their replies."},
	{Name: "discard", Arity: 1, Flags: []string{"noscript", "loading", "stale", "fast", "allow_busy"}, Group: "transactions", Since: "2.0.0", Complexity: "O(N), when N is the number of queued commands",
		ACL: []string{"@fast", "@transaction"}, Summary: "Discards the queued commands of a transaction."},
	{Name: "watch", Arity: -2, Flags: []string{"noscript", "loading", "stale", "fast", "allow_busy"}, FirstKey: 1, LastKey: -1, Step: 1, Group: "transactions", Since: "2.2.0", Complexity: "O(1)",
		ACL: []string{"@fast", "@transaction"}, Summary: "Watches keys: the next EXEC answers nil, running nothing, if any of them changed (through any node), or the leader changed, since.",
		Args: []Arg{{Name: "key", Type: "key", Multiple: true}}},
	{Name: "unwatch", Arity: 1, Flags: []string{"noscript", "loading", "stale", "fast", "allow_busy"}, Group: "transactions", Since: "2.2.0", Complexity: "O(1)",
		ACL: []string{"@fast", "@transaction"}, Summary: "Forgets every key the connection watches."},
	// Pubsub, for the one channel Redcell publishes: client-side caching
	// invalidations redirected to a RESP2 connection (server/tracking.go).
	{Name: "subscribe", Arity: -2, Flags: []string{"pubsub", "noscript", "loading", "stale"}, Group: "pubsub", Since: "2.0.0", Complexity: "O(N) where N is the number of channels to subscribe to.",
		ACL: []string{"@pubsub", "@slow"}, Summary: "Subscribes to __redis__:invalidate, the channel of redirected client-side caching invalidations (the only one Redcell publishes).",
		Args: []Arg{{Name: "channel", Type: "string", Multiple: true}}},
	{Name: "unsubscribe", Arity: -1, Flags: []string{"pubsub", "noscript", "loading", "stale"}, Group: "pubsub", Since: "2.0.0", Complexity: "O(N) where N is the number of channels to unsubscribe.",
		ACL: []string{"@pubsub", "@slow"}, Summary: "Unsubscribes from __redis__:invalidate.",
		Args: []Arg{{Name: "channel", Type: "string", Optional: true, Multiple: true}}},
	{Name: "client", Arity: -2, Flags: []string{}, Group: "connection", Since: "2.4.0", Complexity: "Depends on subcommand.",
		ACL: []string{"@slow"}, Summary: "A container for client connection commands.", Subs: []*Spec{
			{Name: "client|id", Arity: 2, Flags: []string{"noscript", "loading", "stale"}, Group: "connection", Since: "5.0.0", Complexity: "O(1)", ACL: []string{"@slow", "@connection"}, Summary: "Returns the connection's unique ID."},
			{Name: "client|setname", Arity: 3, Flags: []string{"noscript", "loading", "stale"}, Group: "connection", Since: "2.6.9", Complexity: "O(1)", ACL: []string{"@slow", "@connection"}, Summary: "Names the connection.", Args: []Arg{{Name: "connection-name", Type: "string"}}},
			{Name: "client|getname", Arity: 2, Flags: []string{"noscript", "loading", "stale"}, Group: "connection", Since: "2.6.9", Complexity: "O(1)", ACL: []string{"@slow", "@connection"}, Summary: "Returns the connection's name."},
			{Name: "client|setinfo", Arity: 4, Flags: []string{"noscript", "loading", "stale"}, Group: "connection", Since: "7.2.0", Complexity: "O(1)", ACL: []string{"@slow", "@connection"}, Summary: "Sets LIB-NAME or LIB-VER of the connection.",
				Args: []Arg{{Name: "attr", Type: "oneof", Args: []Arg{{Name: "libname", Type: "string", Token: "LIB-NAME"}, {Name: "libver", Type: "string", Token: "LIB-VER"}}}}},
			{Name: "client|info", Arity: 2, Flags: []string{"noscript", "loading", "stale"}, Group: "connection", Since: "6.2.0", Complexity: "O(1)", ACL: []string{"@slow", "@connection"}, Summary: "Returns information about this connection."},
			{Name: "client|list", Arity: -2, Flags: []string{"admin", "noscript", "loading", "stale"}, Group: "connection", Since: "2.4.0", Complexity: "O(N) where N is the number of client connections", ACL: []string{"@admin", "@slow", "@dangerous", "@connection"}, Summary: "Lists the client connections."},
			{Name: "client|tracking", Arity: -3, Flags: []string{"noscript", "loading", "stale"}, Group: "connection", Since: "6.0.0", Complexity: "O(1)", ACL: []string{"@slow", "@connection"}, Summary: "Turns server-assisted client side caching on or off.",
				Args: []Arg{{Name: "status", Type: "oneof", Args: []Arg{{Name: "on", Type: "pure-token", Token: "ON"}, {Name: "off", Type: "pure-token", Token: "OFF"}}},
					{Name: "optin", Type: "pure-token", Token: "OPTIN", Optional: true}, {Name: "optout", Type: "pure-token", Token: "OPTOUT", Optional: true},
					{Name: "client-id", Type: "integer", Token: "REDIRECT", Optional: true}, {Name: "prefix", Type: "string", Token: "PREFIX", Optional: true, Multiple: true},
					{Name: "bcast", Type: "pure-token", Token: "BCAST", Optional: true}, {Name: "noloop", Type: "pure-token", Token: "NOLOOP", Optional: true}}},
			{Name: "client|caching", Arity: 3, Flags: []string{"noscript", "loading", "stale"}, Group: "connection", Since: "6.0.0", Complexity: "O(1)", ACL: []string{"@slow", "@connection"}, Summary: "Opts the next command in or out of tracking."},
			{Name: "client|getredir", Arity: 2, Flags: []string{"noscript", "loading", "stale"}, Group: "connection", Since: "6.0.0", Complexity: "O(1)", ACL: []string{"@slow", "@connection"}, Summary: "Returns the client ID invalidations are redirected to: -1 when not tracking, 0 without a redirect."},
			{Name: "client|trackinginfo", Arity: 2, Flags: []string{"noscript", "loading", "stale"}, Group: "connection", Since: "6.2.0", Complexity: "O(1)", ACL: []string{"@slow", "@connection"}, Summary: "Returns the connection's tracking flags, redirect and prefixes."},
			{Name: "client|no-evict", Arity: 3, Flags: []string{"admin", "noscript", "loading", "stale"}, Group: "connection", Since: "7.0.0", Complexity: "O(1)", ACL: []string{"@admin", "@slow", "@dangerous", "@connection"}, Summary: "Accepted for compatibility."},
			{Name: "client|no-touch", Arity: 3, Flags: []string{"noscript", "loading", "stale"}, Group: "connection", Since: "7.2.0", Complexity: "O(1)", ACL: []string{"@slow", "@connection"}, Summary: "Accepted for compatibility."},
			{Name: "client|kill", Arity: -3, Flags: []string{"admin", "noscript", "loading", "stale"}, Group: "connection", Since: "2.4.0", Complexity: "O(N) where N is the number of client connections", ACL: []string{"@admin", "@slow", "@dangerous", "@connection"}, Summary: "Closes client connections: CLIENT KILL addr:port, or by ID, ADDR, LADDR, USER, TYPE, SKIPME filters.",
				Args: []Arg{{Name: "filter", Type: "oneof", Args: []Arg{{Name: "old-format", Type: "string"}, {Name: "new-format", Type: "oneof", Multiple: true, Args: []Arg{
					{Name: "client-id", Type: "integer", Token: "ID", Optional: true}, {Name: "client-type", Type: "string", Token: "TYPE", Optional: true},
					{Name: "username", Type: "string", Token: "USER", Optional: true}, {Name: "addr", Type: "string", Token: "ADDR", Optional: true},
					{Name: "laddr", Type: "string", Token: "LADDR", Optional: true}, {Name: "skipme", Type: "string", Token: "SKIPME", Optional: true}}}}}}},
			{Name: "client|help", Arity: 2, Flags: []string{"loading", "stale"}, Group: "connection", Since: "5.0.0", Complexity: "O(1)", ACL: []string{"@slow", "@connection"}, Summary: "Shows helpful text about the different subcommands."},
		}},

	// Server.
	{Name: "info", Arity: -1, Flags: []string{"loading", "stale"}, Group: "server", Since: "1.0.0", Complexity: "O(1)",
		ACL: []string{"@slow", "@dangerous"}, Summary: "Information and statistics: server, clients, stats, keyspace, raft.",
		Args: []Arg{{Name: "section", Type: "string", Optional: true, Multiple: true}}},
	{Name: "time", Arity: 1, Flags: []string{"loading", "stale", "fast"}, Group: "server", Since: "2.6.0", Complexity: "O(1)",
		ACL: []string{"@fast"}, Summary: "The server's wall clock: seconds and microseconds."},
	{Name: "save", Arity: 1, Flags: []string{"admin", "noscript", "no_async_loading", "no_multi"}, Group: "server", Since: "1.0.0", Complexity: "O(N) where N is the total number of keys",
		ACL: []string{"@admin", "@slow", "@dangerous"}, Summary: "Takes a Raft snapshot of this node's state now and compacts its log; answers once it is on disk."},
	{Name: "bgsave", Arity: -1, Flags: []string{"admin", "noscript", "no_async_loading"}, Group: "server", Since: "1.0.0", Complexity: "O(1)",
		ACL: []string{"@admin", "@slow", "@dangerous"}, Summary: "Starts a Raft snapshot of this node's state in the background.",
		Args: []Arg{{Name: "schedule", Type: "pure-token", Token: "SCHEDULE", Optional: true}}},
	{Name: "lastsave", Arity: 1, Flags: []string{"loading", "stale", "fast"}, Group: "server", Since: "1.0.0", Complexity: "O(1)",
		ACL: []string{"@admin", "@fast", "@dangerous"}, Summary: "Unix time of this node's newest snapshot (the start of the process if it has none)."},
	{Name: "shutdown", Arity: -1, Flags: []string{"admin", "noscript", "loading", "stale", "no_multi", "allow_busy"}, Group: "server", Since: "1.0.0", Complexity: "O(N) when saving, where N is the total number of keys",
		ACL: []string{"@admin", "@slow", "@dangerous"}, Summary: "Snapshots (unless NOSAVE) and stops this node gracefully; the process exits 0.",
		Args: []Arg{{Name: "save-selector", Type: "oneof", Optional: true, Args: []Arg{
			{Name: "nosave", Type: "pure-token", Token: "NOSAVE"}, {Name: "save", Type: "pure-token", Token: "SAVE"}}},
			{Name: "now", Type: "pure-token", Token: "NOW", Optional: true}, {Name: "force", Type: "pure-token", Token: "FORCE", Optional: true},
			{Name: "abort", Type: "pure-token", Token: "ABORT", Optional: true}}},
	{Name: "command", Arity: -1, Flags: []string{"loading", "stale"}, Group: "server", Since: "2.8.13", Complexity: "O(N) where N is the total number of commands",
		ACL: []string{"@slow", "@connection"}, Summary: "Detailed information about every command.", Subs: []*Spec{
			{Name: "command|count", Arity: 2, Flags: []string{"loading", "stale"}, Group: "server", Since: "2.8.13", Complexity: "O(1)", ACL: []string{"@slow", "@connection"}, Summary: "The number of commands."},
			{Name: "command|info", Arity: -2, Flags: []string{"loading", "stale"}, Group: "server", Since: "2.8.13", Complexity: "O(N) where N is the number of commands to look up", ACL: []string{"@slow", "@connection"}, Summary: "Information about the named commands (all when none are named).",
				Args: []Arg{{Name: "command-name", Type: "string", Optional: true, Multiple: true}}},
			{Name: "command|docs", Arity: -2, Flags: []string{"loading", "stale"}, Group: "server", Since: "7.0.0", Complexity: "O(N) where N is the number of commands to look up", ACL: []string{"@slow", "@connection"}, Summary: "Documentation of the named commands (all when none are named).",
				Args: []Arg{{Name: "command-name", Type: "string", Optional: true, Multiple: true}}},
			{Name: "command|getkeys", Arity: -3, Flags: []string{"loading", "stale"}, Group: "server", Since: "2.8.13", Complexity: "O(N) where N is the number of arguments to the command", ACL: []string{"@slow", "@connection"}, Summary: "The keys of a full command (cluster clients route by them).",
				Args: []Arg{{Name: "command", Type: "string"}, {Name: "arg", Type: "string", Optional: true, Multiple: true}}},
			{Name: "command|list", Arity: -2, Flags: []string{"loading", "stale"}, Group: "server", Since: "7.0.0", Complexity: "O(N) where N is the total number of commands", ACL: []string{"@slow", "@connection"}, Summary: "The names of all commands."},
			{Name: "command|help", Arity: 2, Flags: []string{"loading", "stale"}, Group: "server", Since: "5.0.0", Complexity: "O(1)", ACL: []string{"@slow", "@connection"}, Summary: "Shows helpful text about the different subcommands."},
		}},
	{Name: "config", Arity: -2, Flags: []string{}, Group: "server", Since: "2.0.0", Complexity: "Depends on subcommand.",
		ACL: []string{"@slow"}, Summary: "A container for server configuration commands.", Subs: []*Spec{
			{Name: "config|get", Arity: -3, Flags: []string{"admin", "noscript", "loading", "stale"}, Group: "server", Since: "2.0.0", Complexity: "O(N) when N is the number of configuration parameters provided", ACL: []string{"@admin", "@slow", "@dangerous"}, Summary: "Returns the parameters matching the glob patterns.",
				Args: []Arg{{Name: "parameter", Type: "string", Multiple: true}}},
			{Name: "config|set", Arity: -4, Flags: []string{"admin", "noscript", "loading", "stale"}, Group: "server", Since: "2.0.0", Complexity: "O(N) when N is the number of configuration parameters provided", ACL: []string{"@admin", "@slow", "@dangerous"}, Summary: "Sets runtime parameters of this node (requirepass, maxclients, timeout, loglevel); all or none.",
				Args: []Arg{{Name: "data", Type: "block", Multiple: true, Args: []Arg{{Name: "parameter", Type: "string"}, {Name: "value", Type: "string"}}}}},
			{Name: "config|resetstat", Arity: 2, Flags: []string{"admin", "noscript", "loading", "stale"}, Group: "server", Since: "2.0.0", Complexity: "O(1)", ACL: []string{"@admin", "@slow", "@dangerous"}, Summary: "Resets the statistics INFO reports."},
			{Name: "config|rewrite", Arity: 2, Flags: []string{"admin", "noscript", "loading", "stale"}, Group: "server", Since: "2.8.0", Complexity: "O(1)", ACL: []string{"@admin", "@slow", "@dangerous"}, Summary: "Refused: Redcell runs without a config file (its settings are flags)."},
			{Name: "config|help", Arity: 2, Flags: []string{"loading", "stale"}, Group: "server", Since: "5.0.0", Complexity: "O(1)", ACL: []string{"@slow"}, Summary: "Shows helpful text about the different subcommands."},
		}},
	{Name: "debug", Arity: -2, Flags: []string{"admin", "noscript", "loading", "stale"}, Group: "server", Since: "1.0.0", Complexity: "Depends on subcommand.",
		ACL: []string{"@admin", "@slow", "@dangerous"}, Summary: "Testing hook (only with --enable-debug-command): DEBUG CLOCK [SET unix_ns | ADVANCE ns | REAL].",
		Args: []Arg{{Name: "subcommand", Type: "string"}, {Name: "argument", Type: "string", Optional: true, Multiple: true}}},
	{Name: "raft", Arity: -2, Flags: []string{}, Group: "cluster", Since: "7.0.0", Complexity: "Depends on subcommand.",
		ACL: []string{"@slow"}, Summary: "Redcell cluster administration: membership, leadership, snapshots, state digests.", Subs: []*Spec{
			{Name: "raft|join", Arity: 4, Flags: []string{"admin", "noscript"}, Group: "cluster", Since: "7.0.0", Complexity: "O(1)", ACL: []string{"@admin", "@slow", "@dangerous"},
				Summary: "Adds a node (its ID and the address peers reach it at) as a non-voter; it is promoted once caught up. Forwarded to the leader.",
				Args:    []Arg{{Name: "node_id", Type: "string"}, {Name: "address", Type: "string"}}},
			{Name: "raft|remove", Arity: 3, Flags: []string{"admin", "noscript"}, Group: "cluster", Since: "7.0.0", Complexity: "O(1)", ACL: []string{"@admin", "@slow", "@dangerous"},
				Summary: "Removes a node from the cluster. Forwarded to the leader.", Args: []Arg{{Name: "node_id", Type: "string"}}},
			{Name: "raft|transfer", Arity: -2, Flags: []string{"admin", "noscript"}, Group: "cluster", Since: "7.0.0", Complexity: "O(1)", ACL: []string{"@admin", "@slow", "@dangerous"},
				Summary: "Hands leadership to node_id, or to the most up-to-date voter. Forwarded to the leader.", Args: []Arg{{Name: "node_id", Type: "string", Optional: true}}},
			{Name: "raft|snapshot", Arity: 2, Flags: []string{"admin", "noscript"}, Group: "cluster", Since: "7.0.0", Complexity: "O(N) with N the number of keys", ACL: []string{"@admin", "@slow"},
				Summary: "Snapshots this node's state now and compacts its log; answers the snapshot's index."},
			{Name: "raft|info", Arity: 2, Flags: []string{"loading", "stale"}, Group: "cluster", Since: "7.0.0", Complexity: "O(members)", ACL: []string{"@slow"},
				Summary: "This node's view of the cluster: role, term, leader, indexes, members."},
			{Name: "raft|digest", Arity: -2, Flags: []string{"stale"}, Group: "cluster", Since: "7.0.0", Complexity: "O(N) with N the number of keys", ACL: []string{"@slow"},
				Summary: "Answers [applied_index, SHA-256 of the replicated state at that index] of this node's Raft group (0 unless named): equal on replicas at the same index.",
				Args:    []Arg{{Name: "group", Type: "integer", Optional: true}}},
			{Name: "raft|help", Arity: 2, Flags: []string{"loading", "stale"}, Group: "cluster", Since: "7.0.0", Complexity: "O(1)", ACL: []string{"@slow"}, Summary: "Shows helpful text about the different subcommands."},
		}},
	// Diagnostics (diagnostics.go): SLOWLOG, LATENCY, MEMORY.
	diagnosticsSpecs[0], diagnosticsSpecs[1], diagnosticsSpecs[2],
	// The Redis Cluster protocol (server/handlers_cluster.go, docs/cluster.md):
	// each Raft group is a shard. Arity and flags are Redis 7.0's.
	{Name: "cluster", Arity: -2, Flags: []string{}, Group: "cluster", Since: "3.0.0", Complexity: "Depends on subcommand.",
		ACL: []string{"@slow"}, Summary: "The Redis Cluster protocol: every Raft group is a shard, its leader the master.", Subs: []*Spec{
			{Name: "cluster|slots", Arity: 2, Flags: []string{"stale"}, Group: "cluster", Since: "3.0.0", Complexity: "O(N) where N is the total number of Cluster nodes", ACL: []string{"@slow"},
				Summary: "The slot ranges and the nodes serving them: the leader of each group first, then its other voters."},
			{Name: "cluster|shards", Arity: 2, Flags: []string{"stale"}, Group: "cluster", Since: "7.0.0", Complexity: "O(N) where N is the total number of cluster nodes", ACL: []string{"@slow"},
				Summary: "Each shard (Raft group): its slot ranges and its nodes with role, applied index and health."},
			{Name: "cluster|nodes", Arity: 2, Flags: []string{"stale"}, Group: "cluster", Since: "3.0.0", Complexity: "O(N) where N is the total number of Cluster nodes", ACL: []string{"@slow"},
				Summary: "The cluster's nodes as Redis's nodes.conf lines."},
			{Name: "cluster|info", Arity: 2, Flags: []string{"stale"}, Group: "cluster", Since: "3.0.0", Complexity: "O(1)", ACL: []string{"@slow"},
				Summary: "The cluster's state: ok while every slot's group has a leader this node knows."},
			{Name: "cluster|myid", Arity: 2, Flags: []string{"stale"}, Group: "cluster", Since: "3.0.0", Complexity: "O(1)", ACL: []string{"@slow"},
				Summary: "This node's cluster ID: the hex SHA-1 of its node ID."},
			{Name: "cluster|keyslot", Arity: 3, Flags: []string{"stale"}, Group: "cluster", Since: "3.0.0", Complexity: "O(N) where N is the number of bytes in the key", ACL: []string{"@slow"},
				Summary: "The hash slot of a key.", Args: []Arg{{Name: "key", Type: "string"}}},
			{Name: "cluster|countkeysinslot", Arity: 3, Flags: []string{"stale"}, Group: "cluster", Since: "3.0.0", Complexity: "O(N) where N is the number of keys in the keyspace", ACL: []string{"@slow"},
				Summary: "The number of live keys in a hash slot (a linearizable read of every key).", Args: []Arg{{Name: "slot", Type: "integer"}}},
			{Name: "cluster|getkeysinslot", Arity: 4, Flags: []string{"stale"}, Group: "cluster", Since: "3.0.0", Complexity: "O(N) where N is the number of keys in the keyspace", ACL: []string{"@slow"},
				Summary: "Up to count live keys of a hash slot (a linearizable read of every key).", Args: []Arg{{Name: "slot", Type: "integer"}, {Name: "count", Type: "integer"}}},
			{Name: "cluster|replicas", Arity: 3, Flags: []string{"admin", "stale"}, Group: "cluster", Since: "5.0.0", Complexity: "O(N) where N is the number of replicas", ACL: []string{"@admin", "@slow", "@dangerous"},
				Summary: "The replicas of a master as CLUSTER NODES lines.", Args: []Arg{{Name: "node-id", Type: "string"}}},
			{Name: "cluster|slaves", Arity: 3, Flags: []string{"admin", "stale"}, Group: "cluster", Since: "3.0.0", Complexity: "O(N) where N is the number of replicas", ACL: []string{"@admin", "@slow", "@dangerous"},
				Summary: "The replicas of a master as CLUSTER NODES lines (old name of CLUSTER REPLICAS).", Args: []Arg{{Name: "node-id", Type: "string"}}},
			{Name: "cluster|help", Arity: 2, Flags: []string{"loading", "stale"}, Group: "cluster", Since: "5.0.0", Complexity: "O(1)", ACL: []string{"@slow"}, Summary: "Shows helpful text about the different subcommands."},
		}},
}

// numSpecs is the number of commands and subcommands, each with its ID.
var numSpecs int

var byName = func() map[string]*Spec {
	m := make(map[string]*Spec, len(table))
	for _, s := range table {
		s.ID = numSpecs
		numSpecs++
		for _, sub := range s.Subs {
			sub.ID = numSpecs
			numSpecs++
		}
		if s.Code != 0 || s.Parse != nil {
			fromDescriptor(s)
		}
		for _, sub := range s.Subs {
			if sub.Code != 0 || sub.Parse != nil {
				fromDescriptor(sub)
			}
		}
		m[s.Name] = s
	}
	return m
}()

// fromDescriptor completes the spec of a command that reaches the keyspace
// from its code's descriptor: its class, its key positions as COMMAND
// reports them, and the flags Redis derives from the same facts ("write" or
// "readonly", then "denyoom" for a command that may create a key or grow a
// value), before
// the spec's own flags. A spec without a parser or with a code request does
// not describe is a programming error.
func fromDescriptor(s *Spec) {
	d := request.Describe(s.Code)
	if !s.Code.Known() || s.Parse == nil {
		panic("commands: " + s.Name + " has no parser or a code request does not describe")
	}
	flags := []string{"readonly"}
	s.Class = Read
	if s.Code.IsWrite() {
		flags, s.Class = []string{"write"}, Write
	}
	if d.Creates || d.Grows {
		flags = append(flags, "denyoom")
	}
	if !s.OwnFlags {
		s.Flags = append(flags, s.Flags...)
	}
	switch d.Keys {
	case request.OneKey, request.KeyValue:
		s.FirstKey, s.LastKey, s.Step = 1, 1, 1
	case request.KeyPairs:
		s.FirstKey, s.LastKey, s.Step = 1, -1, 2
	case request.KeyList:
		s.FirstKey, s.LastKey, s.Step = 1, -1, 1
	case request.KeyScript:
		// As Redis: the keys follow a count, which COMMAND cannot express
		// by positions (COMMAND GETKEYS finds them).
		s.FirstKey, s.LastKey, s.Step = 0, 0, 0
	}
}

// NumSpecs is the number of commands and subcommands in the table: every
// Spec's ID is below it.
func NumSpecs() int { return numSpecs }

// Lookup finds a command by name, case-insensitively; nil if unknown.
// scratch is a caller-owned buffer (reused to avoid allocation).
func Lookup(name []byte, scratch *[]byte) *Spec {
	*scratch = Lower(*scratch, name)
	return byName[string(*scratch)]
}

// Sub finds a subcommand of a container ("client", "setname").
func (s *Spec) Sub(name []byte) *Spec {
	for _, sub := range s.Subs {
		if EqualFold(name, sub.Name[len(s.Name)+1:]) {
			return sub
		}
	}
	return nil
}

// ForArgs is the spec that runs args (args[0] s's name): the subcommand's
// when s is a container whose subcommand args[1] reaches the keyspace
// (SCRIPT LOAD), which runs as any keyspace command does; s otherwise.
func (s *Spec) ForArgs(args [][]byte) *Spec {
	if len(s.Subs) > 0 && len(args) > 1 {
		if sub := s.Sub(args[1]); sub != nil && sub.Code != 0 {
			return sub
		}
	}
	return s
}

// All returns every top-level command, sorted by name.
func All() []*Spec {
	out := append([]*Spec(nil), table...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// HasFlag reports whether the spec carries flag f (as COMMAND lists it).
func (s *Spec) HasFlag(f string) bool {
	for _, g := range s.Flags {
		if g == f {
			return true
		}
	}
	return false
}

// CheckArity reports whether n words (name included) fit the spec's arity.
func (s *Spec) CheckArity(n int) bool {
	if s.Arity >= 0 {
		return n == s.Arity
	}
	return n >= -s.Arity
}
