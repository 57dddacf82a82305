package server

import (
	"fmt"
	"strings"
	"time"

	"github.com/redcell/redcell/commands"
)

// TIME
// The server's wall clock as [unix seconds, microseconds].
func cmdTime(c *conn, _ *commands.Spec, _ [][]byte) {
	now := time.Now()
	c.w.Array(2)
	c.w.BulkInt(now.Unix())
	c.w.BulkInt(int64(now.Nanosecond() / 1000))
}

// DEBUG CLOCK [SET unix_ns | ADVANCE ns | REAL]
// Testing hook, only with --enable-debug-command: freeze or move the clock
// this node stamps log entries with; bare DEBUG CLOCK answers the replicated
// clock (the now of the last applied entry, 0 on a fresh node).
func cmdDebug(c *conn, _ *commands.Spec, args [][]byte) {
	if len(args) == 2 && commands.EqualFold(args[1], "help") {
		writeHelp(c, "DEBUG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
			"CLOCK",
			"    Return the clock this node stamps decisions with (Unix ns). Every subcommand but",
			"    HELP needs --enable-debug-command (tests only).",
			"CLOCK SET <unix-ns>",
			"    Freeze that clock at the given instant.",
			"CLOCK ADVANCE <ns>",
			"    Move the frozen clock forward.",
			"CLOCK REAL",
			"    Follow the real clock again.",
			"HELP",
			"    Print this help.")
		return
	}
	if !c.s.cfg.EnableDebug {
		c.fail(commands.ErrDebugDisabled)
		return
	}
	if sub := debugSubcommands[strings.ToLower(string(args[1]))]; sub != nil {
		sub(c, args) // a test build's (debug_nextlevel.go)
		return
	}
	if !commands.EqualFold(args[1], "clock") {
		c.fail(commands.UnknownSubcommand(args[1], "DEBUG"))
		return
	}
	b := c.s.cfg.Backend
	switch {
	case len(args) == 2:
		c.w.Int(b.Clock())
	case len(args) == 3 && commands.EqualFold(args[2], "real"):
		b.RealClock()
		c.w.OK()
	case len(args) == 4 && (commands.EqualFold(args[2], "set") || commands.EqualFold(args[2], "advance")):
		v, ok := commands.ParseInt(args[3])
		if !ok {
			c.fail(commands.ErrNotInteger)
			return
		}
		if commands.EqualFold(args[2], "set") {
			b.SetClock(v)
		} else {
			b.AdvanceClock(v)
		}
		c.w.OK()
	default:
		c.fail(commands.ErrSyntax)
	}
}

// debugSubcommands are DEBUG subcommands a test build adds (by lower-case
// name), behind --enable-debug-command like CLOCK. Filled while the package
// initialises, only read afterwards.
var debugSubcommands = map[string]func(c *conn, args [][]byte){}

// infoLine is this connection's CLIENT LIST line.
func (c *conn) infoLine() string {
	c.mu.Lock()
	name, lib, ver := c.name, c.libName, c.libVer
	c.mu.Unlock()
	now := time.Now()
	cmd := "NULL"
	if s := c.lastCmd.Load(); s != nil {
		cmd = s.Name
	}
	flags, sub, multi, redir := c.listFields() // tracking.go
	return fmt.Sprintf("id=%d addr=%s laddr=%s fd=-1 name=%s age=%d idle=%d flags=%s db=0 sub=%d psub=0 ssub=0 multi=%d qbuf=0 qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0 rbp=0 obl=0 oll=0 omem=0 tot-mem=0 events=r cmd=%s user=default redir=%d resp=%d lib-name=%s lib-ver=%s",
		c.id, c.addr, c.laddr, name, int(now.Sub(c.created).Seconds()),
		int(time.Duration(monoNow()-c.lastActive.Load()).Seconds()), flags, sub, multi, cmd, redir, c.proto.Load(), lib, ver)
}
