package main

import (
	"errors"
	"flag"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"

	"github.com/redcell/redcell/internal/arg"
	"github.com/redcell/redcell/internal/conffile"
)

// configRewriter is CONFIG REWRITE for a node started with --config: it
// turns the server's runtime parameters (CONFIG GET's names and values)
// into directives in the flags' names and Redis's formats (memory as
// 100mb, one client-output-buffer-limit line per class, strings quoted)
// and has conffile rewrite the file with them. Settings fixed at start
// (port, data-dir, ...) are not written: the file's lines for them stay as
// they are, and a command-line override of one is not carried into the
// file (Redis writes every setting; Redcell's fixed ones are the
// operator's to edit).
//
// rewrite is called from connection goroutines, concurrently; mu makes
// one rewrite wait for another.
type configRewriter struct {
	path     string
	fs       *flag.FlagSet // the flag definitions: directive names
	defaults config        // every flag's default
	level    *slog.LevelVar

	mu sync.Mutex
	// pass is the client password as the file (or where it came from)
	// last recorded it; passFile is --requirepass-file, and passGiven
	// whether --requirepass (flag or directive) gave the password.
	pass      string
	passFile  string
	passGiven bool
}

func newConfigRewriter(cfg config, startPass string, level *slog.LevelVar) *configRewriter {
	r := &configRewriter{path: cfg.configFile, level: level, pass: startPass, passFile: cfg.requirePassFile, passGiven: cfg.requirePass != ""}
	r.fs = defineFlags(&r.defaults, io.Discard)
	return r
}

// rewrite writes params (server.Config.RewriteConfig's) into the file.
func (r *configRewriter) rewrite(params map[string]string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var settings []conffile.Setting
	line := func(name, value string, force bool) {
		settings = append(settings, conffile.Setting{Name: name, Lines: []conffile.SettingLine{{Text: name + " " + value, Force: force}}})
	}
	integer := func(name string, def int64) {
		if v, ok := params[name]; ok {
			line(name, v, v != strconv.FormatInt(def, 10))
		}
	}
	memory := func(name, def string) {
		if v, ok := params[name]; ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			line(name, conffile.FormatMemory(n), n != mustMemory(def))
		}
	}
	integer("maxclients", r.defaults.maxClients)
	integer("timeout", r.defaults.idleTimeout)
	memory("maxmemory", r.defaults.maxMemory)
	memory("proto-max-bulk-len", r.defaults.protoMaxBulkLen)
	memory("client-query-buffer-limit", r.defaults.queryBufferLimit)
	if v, ok := params["client-output-buffer-limit"]; ok {
		settings = append(settings, outputLimitSetting(v, r.defaults.outputBufferLimit))
	}
	if r.level != nil {
		l := r.level.Level()
		def, _ := parseLogLevel(r.defaults.logLevel)
		line("log-level", logLevelText(l), l != def)
	}
	integer("slowlog-log-slower-than", r.defaults.slowlogSlowerThan)
	integer("slowlog-max-len", r.defaults.slowlogMaxLen)
	integer("latency-monitor-threshold", r.defaults.latencyThreshold)
	if v, ok := params["latency-tracking"]; ok {
		line("latency-tracking", v, v != r.defaults.latencyTracking)
	}
	if v, ok := params["protected-mode"]; ok {
		line("protected-mode", v, v != r.defaults.protectedMode)
	}
	if v, ok := params["requirepass"]; ok {
		s, err := r.passwordSetting(v)
		if err != nil {
			return err
		}
		settings = append(settings, s...)
	}
	canonical := func(name string) (string, bool) { return directiveName(r.fs, name) }
	if err := conffile.Rewrite(r.path, settings, canonical); err != nil {
		return err
	}
	r.pass = params["requirepass"]
	return nil
}

// passwordSetting is how the rewrite keeps the password cur. A password
// from --requirepass-file stays out of the config file (a file of secrets
// is why that flag exists, and both directives at once are refused at
// start): a changed one is written to that file instead. Otherwise it is
// a requirepass directive, as in Redis, added to the file only when it
// differs from the password at start or --requirepass gave it: one that
// came from REDCELL_REQUIREPASS is not copied into the file.
func (r *configRewriter) passwordSetting(cur string) ([]conffile.Setting, error) {
	if r.passFile != "" {
		if cur == r.pass {
			return nil, nil
		}
		if cur == "" {
			return nil, errors.New("the password comes from --requirepass-file, which cannot hold none: remove that directive to run without one")
		}
		return nil, conffile.WriteAtomically(r.passFile, []byte(cur+"\n"))
	}
	force := cur != r.pass || r.passGiven
	return []conffile.Setting{{Name: "requirepass", Lines: []conffile.SettingLine{{Text: "requirepass " + conffile.Quote(cur), Force: force}}}}, nil
}

// outputLimitSetting is client-output-buffer-limit as Redis rewrites it:
// a line per class ("normal 0 0 0"; memory as 256mb), each added only if
// it differs from the class's default. v is CONFIG GET's value, every
// class's four words.
func outputLimitSetting(v, flagDefault string) conffile.Setting {
	classes := func(s string) map[string]string {
		out := map[string]string{}
		f := strings.Fields(s)
		for i := 0; i+3 < len(f); i += 4 {
			class := f[i]
			if class == "slave" {
				class = "replica"
			}
			hard, _ := arg.Memory(f[i+1])
			soft, _ := arg.Memory(f[i+2])
			out[class] = class + " " + conffile.FormatMemory(hard) + " " + conffile.FormatMemory(soft) + " " + f[i+3]
		}
		return out
	}
	// Redis 7's defaults, and the flag's for normal clients.
	def := classes("replica 256mb 64mb 60 pubsub 32mb 8mb 60 " + flagDefault)
	cur := classes(v)
	s := conffile.Setting{Name: "client-output-buffer-limit"}
	for _, class := range []string{"normal", "replica", "pubsub"} {
		if l, ok := cur[class]; ok {
			s.Lines = append(s.Lines, conffile.SettingLine{Text: "client-output-buffer-limit " + l, Force: l != def[class]})
		}
	}
	return s
}
