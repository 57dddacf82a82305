package server

import (
	"sort"
	"strconv"

	"github.com/redcell/redcell/commands"
)

// configParam is one parameter of CONFIG GET, and of CONFIG SET when it
// can change at runtime. Parameters are this node's own: CONFIG SET changes
// the node it is sent to, as in Redis, where each replica has its own.
type configParam struct {
	name string
	get  func(s *Server) string
	// parse validates a value for CONFIG SET and returns how to apply it,
	// or Redis's reason text ("argument couldn't be parsed into an
	// integer"). nil: the parameter is fixed at start (a flag), and CONFIG
	// SET answers "can't set immutable config".
	parse func(s *Server, v []byte) (apply func(), reason string)
}

// configParams are every parameter, in no particular order (CONFIG GET
// sorts its answer).
var configParams = []configParam{
	{name: "requirepass", get: func(s *Server) string { return s.auth.text() },
		parse: func(s *Server, v []byte) (func(), string) {
			text := string(v)
			return func() { s.auth.set(text) }, ""
		}},

	// Fixed at start, reported as what Redcell does.
	{name: "save", get: func(*Server) string { return "" }},
	{name: "appendonly", get: func(*Server) string { return "no" }},
	{name: "appendfsync", get: func(*Server) string { return "no" }},
	{name: "databases", get: func(*Server) string { return "1" }},
	{name: "bind", get: func(s *Server) string { h, _ := splitHostPort(s.cfg.Addr); return h }},
	{name: "port", get: func(s *Server) string { _, p := splitHostPort(s.cfg.Addr); return p }},
	{name: "dir", get: func(s *Server) string { return s.cfg.DataDir }},
	{name: "maxmemory", get: func(*Server) string { return "0" }},
	{name: "maxmemory-policy", get: func(*Server) string { return "noeviction" }},
	{name: "timeout", get: func(*Server) string { return "0" }},
	{name: "maxclients", get: func(*Server) string { return "10000" }},
	{name: "cluster-enabled", get: func(*Server) string { return "no" }},
	{name: "proto-max-bulk-len", get: func(*Server) string { return strconv.Itoa(maxBulkLen) }},
	{name: "enable-debug-command", get: func(s *Server) string { return yesNo(s.cfg.EnableDebug) }},
}

func yesNo(v bool) string {
	if v {
		return "yes"
	}
	return "no"
}

func findConfigParam(name []byte) *configParam {
	for i := range configParams {
		if commands.EqualFold(name, configParams[i].name) {
			return &configParams[i]
		}
	}
	return nil
}

// CONFIG <GET parameter [parameter ...] | SET parameter value [parameter value ...] | RESETSTAT | REWRITE | HELP>
// CONFIG GET answers the parameters matching the glob patterns
// (redis-benchmark asks for save and appendonly); CONFIG SET changes this
// node's runtime parameters, all or none.
func cmdConfig(c *conn, s *commands.Spec, args [][]byte) {
	sub := s.Sub(args[1])
	if sub == nil {
		c.fail(commands.UnknownSubcommand(args[1], "CONFIG"))
		return
	}
	if !sub.CheckArity(len(args)) {
		c.fail(commands.WrongArgs(sub.Name))
		return
	}
	switch sub.Name {
	case "config|help":
		writeHelp(c, "CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
			"GET <pattern>", "    Return parameters matching the glob-like <pattern> and their values.",
			"SET <directive> <value>", "    Set the configuration <directive> to <value>.",
			"HELP", "    Print this help.")
	case "config|get":
		configGet(c, args[2:])
	case "config|set":
		configSet(c, args[2:])
	}
}

func configGet(c *conn, patterns [][]byte) {
	var found []*configParam
	for i := range configParams {
		p := &configParams[i]
		for _, pat := range patterns {
			if commands.GlobMatch(pat, []byte(p.name), true) {
				found = append(found, p)
				break
			}
		}
	}
	sort.Slice(found, func(i, j int) bool { return found[i].name < found[j].name })
	c.w.mapHeader(len(found))
	for _, p := range found {
		c.w.bulkString(p.name)
		c.w.bulkString(p.get(c.s))
	}
}

// configSet is Redis 7's CONFIG SET: name/value pairs, every one checked
// (known, mutable, not repeated, a valid value) before any is applied.
func configSet(c *conn, pairs [][]byte) {
	if len(pairs)%2 != 0 {
		c.fail(commands.WrongArgs("config|set"))
		return
	}
	failed := func(name []byte, reason string) {
		c.fail("ERR CONFIG SET failed (possibly related to argument '" + commands.SanitizeErrorText(name) + "') - " + reason)
	}
	applies := make([]func(), 0, len(pairs)/2)
	seen := map[*configParam]bool{}
	for i := 0; i < len(pairs); i += 2 {
		p := findConfigParam(pairs[i])
		if p == nil {
			c.fail("ERR Unknown option or number of arguments for CONFIG SET - '" + commands.SanitizeErrorText(pairs[i]) + "'")
			return
		}
		if p.parse == nil {
			failed(pairs[i], "can't set immutable config")
			return
		}
		if seen[p] {
			failed(pairs[i], "duplicate parameter")
			return
		}
		seen[p] = true
		apply, reason := p.parse(c.s, pairs[i+1])
		if reason != "" {
			failed(pairs[i], reason)
			return
		}
		applies = append(applies, apply)
	}
	for _, apply := range applies {
		apply()
	}
	c.w.ok()
}
