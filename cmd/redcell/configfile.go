package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/redcell/redcell/internal/conffile"
)

// notDirectives are flags a config file cannot give: they are about this
// invocation, not the node's settings (a file naming another file is
// "include").
var notDirectives = map[string]bool{"config": true, "version": true}

// directiveAliases are directive names a file may use for a flag of
// another name: Redis's loglevel, the name CONFIG SET and CONFIG GET use.
// CONFIG REWRITE rewrites such a line under the flag's name, as Redis does
// for its own aliases (slaveof becomes replicaof).
var directiveAliases = map[string]string{"loglevel": "log-level"}

// multiArgDirectives take several words, which the flag gets joined by
// spaces; each of their lines adds to the lines before it (one line per
// client class in Redis), where another directive's later line replaces an
// earlier one.
var multiArgDirectives = map[string]bool{"client-output-buffer-limit": true}

// directiveName is the flag a directive name (lower-cased) sets, with ok
// false for a name that is not a directive. "include" is conffile's.
func directiveName(fs *flag.FlagSet, name string) (string, bool) {
	if alias, ok := directiveAliases[name]; ok {
		name = alias
	}
	if name == "include" {
		return name, true
	}
	if notDirectives[name] || fs.Lookup(name) == nil {
		return "", false
	}
	return name, true
}

// configFileError is a config file that cannot be used: main prints it
// as it stands and exits with status 1, as redis-server does.
type configFileError struct{ err error }

func (e configFileError) Error() string { return e.err.Error() }
func (e configFileError) Unwrap() error { return e.err }

// parseWithConfigFile is parseFlags with --config path: the file's
// directives set the flags of a fresh flag set, then args set theirs over
// them. cmdline is the flag set args were parsed into first, which tells
// what the command line gave.
func parseWithConfigFile(path string, args []string, cmdline *flag.FlagSet, stderr io.Writer) (config, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return config{}, configFileError{err}
	}
	ds, err := conffile.Read(abs)
	if err != nil {
		return config{}, fileError(err)
	}
	var c config
	fs := defineFlags(&c, stderr)
	lineOf := map[string]conffile.Directive{} // flag -> the file's line that set it last
	joined := map[string]string{}             // a multi-word directive's lines so far
	for _, d := range ds {
		name, reason := applyDirective(fs, d, joined)
		if reason != "" {
			return c, fileError(&conffile.LineError{File: d.File, Line: d.Line, Text: d.Text, Reason: reason, Included: d.File != abs})
		}
		lineOf[name] = d
	}
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	c.configFile = abs
	c, err = c.check(fs)
	if err != nil {
		// A value the file gave that check refuses is reported at its line,
		// unless the command line gave that flag too.
		given := map[string]bool{}
		cmdline.Visit(func(f *flag.Flag) { given[f.Name] = true })
		for name, d := range lineOf {
			if !given[name] && strings.HasPrefix(err.Error(), "--"+name+" ") {
				return c, fileError(&conffile.LineError{File: d.File, Line: d.Line, Text: d.Text, Reason: err.Error(), Included: d.File != abs})
			}
		}
	}
	return c, err
}

// applyDirective sets the flag d names; reason is why it cannot, in
// Redis's words where Redis has some.
func applyDirective(fs *flag.FlagSet, d conffile.Directive, joined map[string]string) (name, reason string) {
	name, ok := directiveName(fs, d.Name)
	if !ok || name == "include" {
		return "", conffile.ReasonBadDirective
	}
	f := fs.Lookup(name)
	value := strings.Join(d.Args, " ")
	switch {
	case multiArgDirectives[name]:
		if len(d.Args) == 0 {
			return "", conffile.ReasonWrongArgs
		}
		if prev, ok := joined[name]; ok {
			value = prev + " " + value
		}
		joined[name] = value
	case len(d.Args) != 1:
		return "", conffile.ReasonWrongArgs
	}
	if isBoolFlag(f) {
		// yes/no for any boolean flag, a flag.BoolVar's too.
		b, ok := parseBool(value)
		if !ok {
			return "", badValueReason(f)
		}
		value = strconv.FormatBool(b)
	}
	if err := fs.Set(name, value); err != nil {
		return "", badValueReason(f)
	}
	return name, ""
}

// isBoolFlag reports whether f is a boolean flag (a bare --name sets it).
func isBoolFlag(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// badValueReason is Redis's reason for a value a flag's type refuses.
func badValueReason(f *flag.Flag) string {
	if isBoolFlag(f) {
		return "argument must be 'yes' or 'no'"
	}
	switch kind, _ := flag.UnquoteUsage(f); kind {
	case "int", "uint":
		return "argument couldn't be parsed into an integer"
	case "duration":
		return "argument couldn't be parsed into a duration (a number with a unit: 500ms, 2s, 1m)"
	}
	return "argument couldn't be parsed"
}

// fileError wraps a config file's fault for main, with the version in a
// line error's heading.
func fileError(err error) error {
	var le *conffile.LineError
	if errors.As(err, &le) {
		le.Version = buildVersion()
		return configFileError{le}
	}
	return configFileError{fmt.Errorf("Fatal error, %w", err)}
}

// parseBool reads yes/no (Redis) and true/false (Go), in any case.
func parseBool(s string) (v, ok bool) {
	switch strings.ToLower(s) {
	case "yes", "true":
		return true, true
	case "no", "false":
		return false, true
	}
	return false, false
}

func yesNo(v bool) string {
	if v {
		return "yes"
	}
	return "no"
}

// joinBoolValues lets the boolean flags take Redis's yes and no, and a
// separate value, like every other flag: "--bootstrap yes",
// "--bootstrap=yes" and "--bootstrap=true" all become "--bootstrap=true"
// (package flag alone reads true/false only after "=", and would take a
// separate "yes" for a stray argument). A bare "--bootstrap" stays as it is.
func joinBoolValues(fs *flag.FlagSet, args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" || !strings.HasPrefix(a, "-") {
			out = append(out, a)
			if a == "--" {
				return append(out, args[i+1:]...)
			}
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		f := fs.Lookup(name)
		if f == nil || !isBoolFlag(f) {
			out = append(out, a)
			continue
		}
		if !hasValue && i+1 < len(args) {
			if _, ok := parseBool(args[i+1]); ok {
				value, hasValue = args[i+1], true
				i++
			}
		}
		if b, ok := parseBool(value); hasValue && ok {
			a = "--" + name + "=" + strconv.FormatBool(b)
		}
		out = append(out, a)
	}
	return out
}

// logLevels are --log-level's names: slog's and Redis's (CONFIG SET
// loglevel's), verbose between debug and info as in Redis, nothing above
// every level.
var logLevels = []struct {
	name  string
	level slog.Level
}{
	{"debug", slog.LevelDebug}, {"verbose", slog.LevelDebug + 2}, {"info", slog.LevelInfo}, {"notice", slog.LevelInfo},
	{"warn", slog.LevelWarn}, {"warning", slog.LevelWarn}, {"error", slog.LevelError}, {"nothing", slog.LevelError + 100},
}

// parseLogLevel reads --log-level: a name above, or slog's own text
// (INFO+2).
func parseLogLevel(s string) (slog.Level, error) {
	for _, l := range logLevels {
		if strings.EqualFold(s, l.name) {
			return l.level, nil
		}
	}
	var l slog.Level
	err := l.UnmarshalText([]byte(s))
	return l, err
}

// logLevelText is the --log-level value for l, in slog's vocabulary where
// it has the level (CONFIG REWRITE writes it): "warn", not Redis's
// "warning", which would read back the same.
func logLevelText(l slog.Level) string {
	for _, n := range logLevels {
		if n.level == l && n.name != "notice" && n.name != "warning" {
			return n.name
		}
	}
	return strings.ToLower(l.String())
}
