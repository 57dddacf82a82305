package server

import (
	"fmt"
	"log/slog"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/redcell/redcell/commands"
	"github.com/redcell/redcell/internal/arg"
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
	// fixed: CONFIG SET accepts only the value the parameter always has,
	// so CONFIG REWRITE has nothing of it to write.
	fixed bool
}

// configParams are every parameter, in no particular order (CONFIG GET
// sorts its answer).
var configParams = []configParam{
	// Runtime parameters (CONFIG SET).
	{name: "requirepass", get: func(s *Server) string { return s.auth.text() },
		parse: func(s *Server, v []byte) (func(), string) {
			text := string(v)
			return func() { s.auth.set(text) }, ""
		}},
	{name: "maxclients", get: func(s *Server) string { return strconv.FormatInt(s.params.maxClients.Load(), 10) },
		parse: func(s *Server, v []byte) (func(), string) {
			n, reason := parseConfigInt(v, 1, 1<<32-1)
			return func() { s.params.maxClients.Store(n) }, reason
		}},
	{name: "timeout", get: func(s *Server) string { return strconv.FormatInt(s.params.idleTimeout.Load(), 10) },
		parse: func(s *Server, v []byte) (func(), string) {
			n, reason := parseConfigInt(v, 0, 1<<31-1)
			return func() { s.params.idleTimeout.Store(n) }, reason
		}},
	{name: "proto-max-bulk-len", get: func(s *Server) string { return strconv.FormatInt(s.params.reader.maxBulk.Load(), 10) },
		parse: func(s *Server, v []byte) (func(), string) {
			n, reason := parseConfigMemory(v, minReaderLimit, 1<<62)
			return func() { s.params.reader.maxBulk.Store(n) }, reason
		}},
	{name: "client-query-buffer-limit", get: func(s *Server) string { return strconv.FormatInt(s.params.reader.maxQuery.Load(), 10) },
		parse: func(s *Server, v []byte) (func(), string) {
			n, reason := parseConfigMemory(v, minReaderLimit, 1<<62)
			return func() { s.params.reader.maxQuery.Store(n) }, reason
		}},
	{name: "client-output-buffer-limit", get: func(s *Server) string { return s.params.outLimits.Load().String() },
		parse: func(s *Server, v []byte) (func(), string) {
			l, reason := parseOutputLimits(*s.params.outLimits.Load(), string(v))
			return func() { s.params.outLimits.Store(&l) }, reason
		}},
	{name: "loglevel", get: func(s *Server) string { return logLevelName(s.cfg.LogLevel) },
		parse: func(s *Server, v []byte) (func(), string) {
			level, ok := logLevels[strings.ToLower(string(v))]
			if !ok || s.cfg.LogLevel == nil {
				return nil, "argument(s) must be one of the following: debug, verbose, notice, warning, nothing"
			}
			return func() { s.cfg.LogLevel.Set(level) }, ""
		}},

	{name: "protected-mode", get: func(s *Server) string { return yesNo(s.params.protectedMode.Load()) },
		parse: func(s *Server, v []byte) (func(), string) {
			switch strings.ToLower(string(v)) {
			case "yes":
				return func() { s.params.protectedMode.Store(true) }, ""
			case "no":
				return func() { s.params.protectedMode.Store(false) }, ""
			}
			return nil, "argument must be 'yes' or 'no'"
		}},

	// The slow log and the latency monitor (slowlog.go, latency.go) and
	// the per-command histograms (cmdstats.go), with Redis's ranges.
	{name: "slowlog-log-slower-than", get: func(s *Server) string { return strconv.FormatInt(s.diag.slow.slowerThan.Load(), 10) },
		parse: func(s *Server, v []byte) (func(), string) {
			n, reason := parseConfigInt(v, -1, math.MaxInt64)
			return func() { s.diag.slow.slowerThan.Store(n) }, reason
		}},
	{name: "slowlog-max-len", get: func(s *Server) string { return strconv.FormatInt(s.diag.slow.maxLen.Load(), 10) },
		parse: func(s *Server, v []byte) (func(), string) {
			n, reason := parseConfigInt(v, 0, math.MaxInt64)
			return func() { s.diag.slow.setMaxLen(n) }, reason
		}},
	{name: "latency-monitor-threshold", get: func(s *Server) string { return strconv.FormatInt(s.diag.lat.threshold.Load(), 10) },
		parse: func(s *Server, v []byte) (func(), string) {
			n, reason := parseConfigInt(v, 0, math.MaxInt64)
			return func() { s.diag.lat.threshold.Store(n) }, reason
		}},
	{name: "latency-tracking", get: func(s *Server) string { return yesNo(s.diag.tracking.Load()) },
		parse: func(s *Server, v []byte) (func(), string) {
			switch strings.ToLower(string(v)) {
			case "yes":
				return func() { s.diag.tracking.Store(true) }, ""
			case "no":
				return func() { s.diag.tracking.Store(false) }, ""
			}
			return nil, "argument must be 'yes' or 'no'"
		}},
	{name: "latency-tracking-info-percentiles", get: func(*Server) string { return "50 99 99.9" }},

	// Persistence, as it really is: every decision is in the Raft log,
	// fsynced before it is answered (appendonly yes, appendfsync always),
	// and the log is compacted by snapshots on the schedule save reports
	// ("<seconds> <entries>": every --snapshot-interval, if at least
	// --snapshot-threshold entries were logged since the last one).
	// Setting one to the value it has is a no-op (scripts that ask for
	// durability get it); any other value is refused with the reason.
	{name: "appendonly", get: func(*Server) string { return "yes" }, fixed: true,
		parse: fixedValue("yes", "every decision is in the Raft log before it is answered; appendonly cannot be turned off")},
	{name: "appendfsync", get: func(*Server) string { return "always" }, fixed: true,
		parse: fixedValue("always", "the Raft log is fsynced before every reply; appendfsync cannot be changed")},
	{name: "save", get: func(s *Server) string { return s.cfg.Save }, fixed: true,
		parse: func(s *Server, v []byte) (func(), string) {
			if string(v) == s.cfg.Save {
				return func() {}, ""
			}
			return nil, "snapshots follow --snapshot-interval, --snapshot-threshold and --snapshot-log-bytes, set when the node starts"
		}},

	// Fixed at start (flags) or by design.
	{name: "databases", get: func(*Server) string { return "1" }},
	{name: "bind", get: func(s *Server) string { h, _ := splitHostPort(s.cfg.Addr); return h }},
	{name: "port", get: func(s *Server) string { _, p := splitHostPort(s.cfg.Addr); return p }},
	{name: "dir", get: func(s *Server) string { return s.cfg.DataDir }},
	// maxmemory: above it the leader refuses new keys (OOM) and never
	// evicts a live limit (group/memoryguard.go); noeviction is the only
	// policy a rate limiter can have.
	{name: "maxmemory", get: func(s *Server) string { return strconv.FormatInt(s.maxMemory(), 10) },
		parse: func(s *Server, v []byte) (func(), string) {
			n, ok := arg.Memory(string(v))
			if !ok {
				return nil, "argument must be a memory value"
			}
			if s.cfg.MaxMemory == nil {
				return nil, "can't set immutable config"
			}
			return func() { s.cfg.MaxMemory.Store(n) }, ""
		}},
	{name: "maxmemory-policy", get: func(*Server) string { return "noeviction" }},
	{name: "cluster-enabled", get: func(*Server) string { return "no" }},

	{name: "enable-debug-command", get: func(s *Server) string { return yesNo(s.cfg.EnableDebug) }},
	{name: "tls-port", get: func(s *Server) string { return strconv.Itoa(s.cfg.TLSPort) }},
	{name: "tls-auth-clients", get: func(s *Server) string { return s.cfg.TLSAuthClients }},
	{name: "tls-cluster", get: func(s *Server) string { return yesNo(s.cfg.TLSCluster) }},
}

// runtimeParams are the CONFIG SET parameters the server enforces itself
// (requirepass is in auth, loglevel in Config.LogLevel). Any goroutine.
type runtimeParams struct {
	maxClients    atomic.Int64                 // connections beyond are refused (Serve)
	protectedMode atomic.Bool                  // protected-mode (protected.go)
	idleTimeout   atomic.Int64                 // seconds; 0 = never (closeIdle)
	reader        *readerLimits                // proto-max-bulk-len, client-query-buffer-limit (every reader)
	outLimits     atomic.Pointer[outputLimits] // client-output-buffer-limit (outbuf.go)
}

// defaultMaxClients is Redis's default maxclients.
const defaultMaxClients = 10000

// logLevels are Redis's loglevel names (7.2 added "nothing") on slog's
// levels; verbose sits between debug and notice as in Redis.
var logLevels = map[string]slog.Level{
	"debug":   slog.LevelDebug,
	"verbose": slog.LevelDebug + 2,
	"notice":  slog.LevelInfo,
	"warning": slog.LevelWarn,
	"nothing": slog.LevelError + 100,
}

// logLevelName is the Redis name of the level v is at: --log-level info is
// "notice", warn and error are "warning".
func logLevelName(v *slog.LevelVar) string {
	if v == nil {
		return "notice"
	}
	switch l := v.Level(); {
	case l >= logLevels["nothing"]:
		return "nothing"
	case l >= slog.LevelWarn:
		return "warning"
	case l >= slog.LevelInfo:
		return "notice"
	case l > slog.LevelDebug:
		return "verbose"
	default:
		return "debug"
	}
}

// fixedValue accepts only the value a parameter always has.
func fixedValue(value, reason string) func(*Server, []byte) (func(), string) {
	return func(_ *Server, v []byte) (func(), string) {
		if commands.EqualFold(v, value) {
			return func() {}, ""
		}
		return nil, reason
	}
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
			"RESETSTAT", "    Reset statistics reported by the INFO command.",
			"REWRITE", "    Rewrite the configuration file.",
			"HELP", "    Print this help.")
	case "config|get":
		configGet(c, args[2:])
	case "config|set":
		configSet(c, args[2:])
	case "config|resetstat":
		// CONFIG RESETSTAT: INFO's counters start again from zero.
		c.s.stats.reset()
		c.s.diag.resetStats()
		c.w.OK()
	case "config|rewrite":
		configRewrite(c)
	}
}

// configRewrite is CONFIG REWRITE: the runtime parameters' current values
// go to Config.RewriteConfig, which writes them into the config file the
// node started with (cmd/redcell knows the file, its directive names and
// the defaults). A node started without --config answers Redis's error.
func configRewrite(c *conn) {
	if c.s.cfg.RewriteConfig == nil {
		c.fail("ERR The server is running without a config file")
		return
	}
	params := map[string]string{}
	for i := range configParams {
		if p := &configParams[i]; p.parse != nil && !p.fixed {
			params[p.name] = p.get(c.s)
		}
	}
	if err := c.s.cfg.RewriteConfig(params); err != nil {
		c.s.log.Warn("CONFIG REWRITE failed", "err", err)
		c.fail("ERR Rewriting config file: " + commands.SanitizeErrorText([]byte(err.Error())))
		return
	}
	c.s.log.Info("CONFIG REWRITE executed with success")
	c.w.OK()
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
	c.w.MapHeader(len(found))
	for _, p := range found {
		c.w.BulkString(p.name)
		c.w.BulkString(p.get(c.s))
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
	c.w.OK()
}

// parseConfigMemory parses a memory value (Redis's units) within [lo, hi].
func parseConfigMemory(v []byte, lo, hi int64) (int64, string) {
	n, ok := arg.Memory(string(v))
	if !ok {
		return 0, "argument must be a memory value"
	}
	if n < lo || n > hi {
		return 0, "argument must be between " + strconv.FormatInt(lo, 10) + " and " + strconv.FormatInt(hi, 10) + " inclusive"
	}
	return n, ""
}

// maxMemory is maxmemory in bytes (0: no limit).
func (s *Server) maxMemory() int64 {
	if s.cfg.MaxMemory == nil {
		return 0
	}
	return s.cfg.MaxMemory.Load()
}

// parseConfigInt parses an integer value of CONFIG SET within [lo, hi],
// with Redis's reasons.
func parseConfigInt(v []byte, lo, hi int64) (int64, string) {
	n, ok := commands.ParseInt(v)
	if !ok {
		return 0, "argument couldn't be parsed into an integer"
	}
	if n < lo || n > hi {
		return 0, "argument must be between " + strconv.FormatInt(lo, 10) + " and " + strconv.FormatInt(hi, 10) + " inclusive"
	}
	return n, ""
}

// findParam is the runtime parameter of that CONFIG name, nil if none.
func findParam(name string) *configParam {
	for i := range configParams {
		if strings.EqualFold(configParams[i].name, name) {
			return &configParams[i]
		}
	}
	return nil
}

// CheckParam validates a starting value for Config.StartParams, with
// CONFIG SET's reason on failure. Called before New (flags, config file).
func CheckParam(name, value string) error {
	p := findParam(name)
	if p == nil || p.parse == nil {
		return fmt.Errorf("%s is not a runtime parameter", name)
	}
	if _, reason := p.parse(nil, []byte(value)); reason != "" {
		return fmt.Errorf("%s %q: %s", name, value, reason)
	}
	return nil
}
