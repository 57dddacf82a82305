package server

import (
	"strings"

	"github.com/redcell/redcell/commands"
)

// COMMAND [COUNT | INFO [name ...] | DOCS [name ...] | LIST | HELP]
// Describes every command from the command table: true arity, flags, key
// positions (Redis 7's ten-field form), and docs.
func cmdCommand(c *conn, s *commands.Spec, args [][]byte) {
	all := commands.All()
	if len(args) == 1 {
		c.w.Array(len(all))
		for _, cs := range all {
			writeCommandInfo(c, cs)
		}
		return
	}
	sub := s.Sub(args[1])
	if sub == nil {
		c.fail(commands.UnknownSubcommand(args[1], "COMMAND"))
		return
	}
	if !sub.CheckArity(len(args)) {
		c.fail(commands.WrongArgs(sub.Name))
		return
	}
	switch sub.Name {
	case "command|count":
		c.w.Int(int64(len(all)))
	case "command|list":
		if len(args) > 2 {
			// FILTERBY is not supported; Redis answers a syntax error for
			// anything it cannot parse too.
			c.fail(commands.ErrSyntax)
			return
		}
		c.w.Array(len(all))
		for _, cs := range all {
			c.w.BulkString(cs.Name)
		}
	case "command|info":
		specs := all
		if len(args) > 2 {
			specs = specs[:0:0]
			for _, n := range args[2:] {
				specs = append(specs, lookupPath(n))
			}
		}
		c.w.Array(len(specs))
		for _, cs := range specs {
			if cs == nil {
				c.w.NullArray()
				continue
			}
			writeCommandInfo(c, cs)
		}
	case "command|docs":
		specs := all
		if len(args) > 2 {
			specs = specs[:0:0]
			for _, n := range args[2:] {
				if cs := lookupPath(n); cs != nil {
					specs = append(specs, cs)
				}
			}
		}
		c.w.MapHeader(len(specs))
		for _, cs := range specs {
			c.w.BulkString(cs.Name)
			writeCommandDocs(c, cs)
		}
	case "command|getkeys":
		commandGetKeys(c, args[2:])
	case "command|help":
		writeHelp(c, "COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
			"(no subcommand)", "    Return details about all commands.",
			"COUNT", "    Return the total number of commands.",
			"LIST", "    Return a list of all commands.",
			"INFO [<command-name> ...]", "    Return details about the named commands (all when none is named).",
			"DOCS [<command-name> ...]", "    Return documentation details about the named commands (all when none is named).",
			"GETKEYS <full-command>", "    Return the keys from a full Redis command.",
			"HELP", "    Print this help.")
	}
}

// lookupPath finds "name" or "container|sub".
func lookupPath(n []byte) *commands.Spec {
	var scratch []byte
	name, sub, hasSub := strings.Cut(string(n), "|")
	cs := commands.Lookup([]byte(name), &scratch)
	if cs == nil || !hasSub {
		return cs
	}
	return cs.Sub([]byte(sub))
}

// writeCommandInfo writes Redis 7's COMMAND INFO entry: name, arity, flags,
// first key, last key, step, ACL categories, tips, key specs, subcommands.
func writeCommandInfo(c *conn, s *commands.Spec) {
	c.w.Array(10)
	c.w.BulkString(s.Name)
	c.w.Int(int64(s.Arity))
	c.w.SetHeader(len(s.Flags))
	for _, f := range s.Flags {
		c.w.Simple(f)
	}
	c.w.Int(int64(s.FirstKey))
	c.w.Int(int64(s.LastKey))
	c.w.Int(int64(s.Step))
	c.w.SetHeader(len(s.ACL))
	for _, a := range s.ACL {
		c.w.Simple(a)
	}
	c.w.Array(0) // tips
	writeKeySpecs(c, s)
	c.w.Array(len(s.Subs))
	for _, sub := range s.Subs {
		writeCommandInfo(c, sub)
	}
}

// writeKeySpecs derives Redis 7 key specifications from the key positions:
// a range from FirstKey, or for a script (movablekeys: its keys follow a
// count) Redis's keynum spec, which is what lets a cluster client find a
// script's keys. Flag names are Redis's: the access kind upper case, the
// operation lower case.
func writeKeySpecs(c *conn, s *commands.Spec) {
	script := s.FirstKey == 0 && s.HasFlag("movablekeys")
	if s.FirstKey == 0 && !script {
		c.w.Array(0)
		return
	}
	flags := []string{"RO", "access"}
	if s.Class == commands.Write {
		flags = []string{"RW", "update"}
		if s.Name == "del" || s.Name == "unlink" {
			flags = []string{"RM", "delete"}
		}
	}
	c.w.Array(1)
	if script {
		// Redis 7.0's words: a script may do anything with its keys.
		notes := "We cannot tell how the keys will be used so we assume the worst, RW and UPDATE"
		flags = []string{"RW", "access", "update"}
		if s.HasFlag("readonly") {
			notes = "We cannot tell how the keys will be used so we assume the worst, RO and ACCESS"
			flags = []string{"RO", "access"}
		}
		c.w.MapHeader(4)
		c.w.BulkString("notes")
		c.w.BulkString(notes)
	} else {
		c.w.MapHeader(3)
	}
	c.w.BulkString("flags")
	c.w.SetHeader(len(flags))
	for _, f := range flags {
		c.w.Simple(f)
	}
	c.w.BulkString("begin_search")
	c.w.MapHeader(2)
	c.w.BulkString("type")
	c.w.BulkString("index")
	c.w.BulkString("spec")
	c.w.MapHeader(1)
	c.w.BulkString("index")
	if script {
		c.w.Int(2) // numkeys
		c.w.BulkString("find_keys")
		c.w.MapHeader(2)
		c.w.BulkString("type")
		c.w.BulkString("keynum")
		c.w.BulkString("spec")
		c.w.MapHeader(3)
		c.w.BulkString("keynumidx")
		c.w.Int(0)
		c.w.BulkString("firstkey")
		c.w.Int(1)
		c.w.BulkString("keystep")
		c.w.Int(1)
		return
	}
	lastKey := int64(0)
	if s.LastKey < 0 {
		lastKey = -1
	}
	c.w.Int(int64(s.FirstKey))
	c.w.BulkString("find_keys")
	c.w.MapHeader(2)
	c.w.BulkString("type")
	c.w.BulkString("range")
	c.w.BulkString("spec")
	c.w.MapHeader(3)
	c.w.BulkString("lastkey")
	c.w.Int(lastKey)
	c.w.BulkString("keystep")
	c.w.Int(int64(s.Step))
	c.w.BulkString("limit")
	c.w.Int(0)
}

// commandGetKeys answers COMMAND GETKEYS command [arg ...]: the keys of the
// full command, found as Redis 7.0 finds them (by the table's key positions;
// a script's by its numkeys), with Redis's errors. Cluster clients ask it
// for a command whose keys move (redis-py for EVAL_RO, EVALSHA_RO).
func commandGetKeys(c *conn, argv [][]byte) {
	var scratch []byte
	cs := commands.Lookup(argv[0], &scratch)
	if cs != nil && len(cs.Subs) > 0 && len(argv) > 1 {
		cs = cs.Sub(argv[1]) // Redis looks a container's subcommand up
	}
	switch {
	case cs == nil:
		c.fail(commands.ErrGetKeysNoCommand)
		return
	case cs.FirstKey == 0 && !cs.HasFlag("movablekeys"):
		c.fail(commands.ErrGetKeysNoKeys)
		return
	case !cs.CheckArity(len(argv)):
		c.fail(commands.ErrGetKeysArity)
		return
	}
	var keys [][]byte
	if cs.FirstKey == 0 {
		// A script: numkeys at 2, the keys after it. A count that is not
		// a number, or larger than what follows, names no key (Redis's
		// atoi and its check); a script needs none.
		n, ok := commands.ParseInt(argv[2])
		if ok && n > 0 && n <= int64(len(argv)-3) {
			keys = argv[3 : 3+n]
		}
	} else {
		last := cs.LastKey
		if last < 0 {
			last += len(argv)
		}
		if last >= len(argv) || last < cs.FirstKey {
			c.fail(commands.ErrGetKeysInvalid)
			return
		}
		for i := cs.FirstKey; i <= last; i += max(cs.Step, 1) {
			keys = append(keys, argv[i])
		}
	}
	c.w.Array(len(keys))
	for _, k := range keys {
		c.w.Bulk(k)
	}
}

// writeCommandDocs writes Redis 7's COMMAND DOCS map for one command.
func writeCommandDocs(c *conn, s *commands.Spec) {
	n := 4
	if len(s.Args) > 0 {
		n++
	}
	if len(s.Subs) > 0 {
		n++
	}
	c.w.MapHeader(n)
	c.w.BulkString("summary")
	c.w.BulkString(s.Summary)
	c.w.BulkString("since")
	c.w.BulkString(s.Since)
	c.w.BulkString("group")
	c.w.BulkString(s.Group)
	c.w.BulkString("complexity")
	c.w.BulkString(s.Complexity)
	if len(s.Args) > 0 {
		c.w.BulkString("arguments")
		writeArgDocs(c, s.Args)
	}
	if len(s.Subs) > 0 {
		c.w.BulkString("subcommands")
		c.w.MapHeader(len(s.Subs))
		for _, sub := range s.Subs {
			c.w.BulkString(sub.Name)
			writeCommandDocs(c, sub)
		}
	}
}

func writeArgDocs(c *conn, args []commands.Arg) {
	c.w.Array(len(args))
	for _, a := range args {
		var flags []string
		if a.Optional {
			flags = append(flags, "optional")
		}
		if a.Multiple {
			flags = append(flags, "multiple")
		}
		n := 3
		if a.Token != "" {
			n++
		}
		if len(flags) > 0 {
			n++
		}
		if len(a.Args) > 0 {
			n++
		}
		c.w.MapHeader(n)
		c.w.BulkString("name")
		c.w.BulkString(a.Name)
		c.w.BulkString("type")
		c.w.BulkString(a.Type)
		c.w.BulkString("display_text")
		c.w.BulkString(strings.ReplaceAll(a.Name, "_", "-"))
		if a.Token != "" {
			c.w.BulkString("token")
			c.w.BulkString(a.Token)
		}
		if len(flags) > 0 {
			c.w.BulkString("flags")
			c.w.SetHeader(len(flags))
			for _, f := range flags {
				c.w.Simple(f)
			}
		}
		if len(a.Args) > 0 {
			c.w.BulkString("arguments")
			writeArgDocs(c, a.Args)
		}
	}
}
