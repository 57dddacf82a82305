package server

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redcell/redcell/commands"
)

// slowLog is Redis's slow log: the commands whose time (cmdstats.go: from
// dispatch until the result is ready, a write's commit included) reached
// slowlog-log-slower-than microseconds, newest first, at most
// slowlog-max-len of them. Connection goroutines offer every command;
// only a slow one takes the lock.
type slowLog struct {
	slowerThan atomic.Int64 // µs; negative: off (CONFIG slowlog-log-slower-than)
	maxLen     atomic.Int64 // CONFIG slowlog-max-len

	mu      sync.Mutex
	entries []slowEntry // oldest first
	nextID  int64
}

// slowEntry is one logged command, its arguments copied (and cut as
// Redis cuts them).
type slowEntry struct {
	id, unix, usec int64
	args           []string
	addr, name     string
}

// Redis's defaults and cuts (slowlog.h).
const (
	defaultSlowerThan = 10000 // µs
	defaultSlowMaxLen = 128
	slowMaxArgs       = 32  // SLOWLOG_ENTRY_MAX_ARGC
	slowMaxString     = 128 // SLOWLOG_ENTRY_MAX_STRING
)

func (l *slowLog) init() {
	l.slowerThan.Store(defaultSlowerThan)
	l.maxLen.Store(defaultSlowMaxLen)
}

// offer logs a command that took ns if it was slow enough (slow). Any
// connection goroutine.
func (l *slowLog) offer(c *conn, spec *commands.Spec, args [][]byte, ns int64) {
	if l.slow(spec, ns) {
		l.add(c, slowArgs(spec, args), ns)
	}
}

// offerLogged is offer for a command whose arguments slowArgs kept when
// MULTI queued it.
func (l *slowLog) offerLogged(c *conn, spec *commands.Spec, logged []string, ns int64) {
	if l.slow(spec, ns) {
		l.add(c, logged, ns)
	}
}

// slow reports whether a command that took ns goes in the log: the log is
// on, the time reached its threshold, and the table does not flag the
// command skip_slowlog (EXEC, whose commands are logged one by one).
func (l *slowLog) slow(spec *commands.Spec, ns int64) bool {
	limit := l.slowerThan.Load()
	return limit >= 0 && ns/1000 >= limit && !spec.HasFlag("skip_slowlog")
}

// add logs an entry of args for c.
func (l *slowLog) add(c *conn, args []string, ns int64) {
	e := slowEntry{unix: time.Now().Unix(), usec: ns / 1000, args: args, addr: c.addr}
	c.mu.Lock()
	e.name = c.name
	c.mu.Unlock()
	l.mu.Lock()
	e.id = l.nextID
	l.nextID++
	l.entries = append(l.entries, e)
	l.trim()
	l.mu.Unlock()
}

// trim drops the oldest entries beyond slowlog-max-len. Holds mu.
func (l *slowLog) trim() {
	if over := len(l.entries) - int(l.maxLen.Load()); over > 0 {
		clear(l.entries[:over])
		l.entries = append(l.entries[:0], l.entries[over:]...)
	}
}

// slowArgs copies a command's arguments as Redis's slowlogCreateEntry
// keeps them: at most 32, the last then saying how many more there were;
// strings over 128 bytes cut with how many bytes more they had. Passwords
// are "(redacted)", as Redis 7.0 redacts them (AUTH, HELLO … AUTH, CONFIG
// SET requirepass).
func slowArgs(spec *commands.Spec, args [][]byte) []string {
	n := min(len(args), slowMaxArgs)
	out := make([]string, n)
	for i := 0; i < n; i++ {
		a := args[i]
		switch {
		case n != len(args) && i == n-1:
			out[i] = "... (" + strconv.Itoa(len(args)-n+1) + " more arguments)"
		case redacted(spec, args, i):
			out[i] = "(redacted)"
		case len(a) > slowMaxString:
			out[i] = string(a[:slowMaxString]) + "... (" + strconv.Itoa(len(a)-slowMaxString) + " more bytes)"
		default:
			out[i] = string(a)
		}
	}
	return out
}

// redacted reports whether args[i] is a secret the slow log must not keep.
func redacted(spec *commands.Spec, args [][]byte, i int) bool {
	switch spec.Name {
	case "auth":
		return i > 0
	case "hello":
		for j := 2; j < i; j++ {
			if commands.EqualFold(args[j], "auth") {
				return i == j+1 || i == j+2
			}
		}
	case "config|set":
		return i >= 3 && i%2 == 1 && commands.EqualFold(args[i-1], "requirepass")
	}
	return false
}

// setMaxLen is CONFIG SET slowlog-max-len: a shorter log drops its
// oldest entries at once (Redis drops them at the next command).
func (l *slowLog) setMaxLen(n int64) {
	l.mu.Lock()
	l.maxLen.Store(n)
	l.trim()
	l.mu.Unlock()
}

func (l *slowLog) reset() {
	l.mu.Lock()
	clear(l.entries)
	l.entries = l.entries[:0]
	l.mu.Unlock()
}

func (l *slowLog) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.entries)
}

// newest copies up to n entries, newest first; all when n < 0.
func (l *slowLog) newest(n int64) []slowEntry {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n < 0 || n > int64(len(l.entries)) {
		n = int64(len(l.entries))
	}
	out := make([]slowEntry, 0, n)
	for i := len(l.entries) - 1; int64(len(out)) < n; i-- {
		out = append(out, l.entries[i])
	}
	return out
}

// SLOWLOG <GET [count] | LEN | RESET | HELP>
// Reads or clears the slow log: the commands that took at least
// slowlog-log-slower-than microseconds from dispatch to reply.
func cmdSlowlog(c *conn, s *commands.Spec, args [][]byte) {
	sub := s.Sub(args[1])
	if sub == nil {
		c.fail(commands.UnknownSubcommand(args[1], "SLOWLOG"))
		return
	}
	if !sub.CheckArity(len(args)) {
		c.fail(commands.WrongArgs(sub.Name))
		return
	}
	l := &c.s.diag.slow
	switch sub.Name {
	case "slowlog|help":
		writeHelp(c, "SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
			"GET [<count>]",
			"    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
			"    Entries are made of:",
			"    id, timestamp, time in microseconds, arguments array, client IP and port,",
			"    client name",
			"LEN",
			"    Return the length of the slowlog.",
			"RESET",
			"    Reset the slowlog.",
			"HELP",
			"    Prints this help.")
	case "slowlog|len":
		c.w.Int(int64(l.len()))
	case "slowlog|reset":
		l.reset()
		c.w.OK()
	case "slowlog|get":
		if len(args) > 3 {
			// Redis's table allows more words; its handler answers them so.
			c.fail(commands.SubcommandSyntax(args[1], "SLOWLOG"))
			return
		}
		count := int64(10)
		if len(args) == 3 {
			n, ok := commands.ParseInt(args[2])
			if !ok || n < -1 {
				c.fail("ERR count should be greater than or equal to -1")
				return
			}
			count = n
		}
		entries := l.newest(count)
		c.w.Array(len(entries))
		for i := range entries {
			e := &entries[i]
			c.w.Array(6)
			c.w.Int(e.id)
			c.w.Int(e.unix)
			c.w.Int(e.usec)
			c.w.Array(len(e.args))
			for _, a := range e.args {
				c.w.BulkString(a)
			}
			c.w.BulkString(e.addr)
			c.w.BulkString(e.name)
		}
	}
}
