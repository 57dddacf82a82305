package main

import (
	"flag"
	"io"
	"strings"

	"github.com/redcell/redcell/internal/conffile"
)

// exampleConfigHeader opens the example config file (redcell.conf at the
// repository's root).
const exampleConfigHeader = `# redcell.conf: an example config file for Redcell (redcell --config redcell.conf).
#
# Every setting is a flag of the same name: --port 6380 on the command line is
# "port 6380" here. Each is shown commented out, at its default. The form is
# redis.conf's: one directive a line, "name value"; "double quotes" take \n \t
# \xHH escapes, 'single quotes' none; names are case-insensitive; on/off settings
# take yes or no; "include /path/other.conf" reads another file in its place.
# Flags given on the command line override this file.
#
# CONFIG SET changes some settings at runtime (maxclients, timeout, maxmemory,
# log-level as loglevel, protected-mode, requirepass, proto-max-bulk-len and the
# client buffer limits); CONFIG REWRITE writes their current values back into the
# file the node started with, keeping its comments and order.
#
# Generated from redcell's flag definitions, and checked against them by a test;
# regenerate: go test ./cmd/redcell -run TestExampleConfig -update
`

// exampleConfig is the example config file: every directive by --help's
// groups, with its help as a comment and its default.
func exampleConfig() string {
	var c config
	fs := defineFlags(&c, io.Discard)
	var b strings.Builder
	b.WriteString(exampleConfigHeader)
	for _, g := range flagGroups {
		var names []string
		for _, name := range g.names {
			if !notDirectives[name] && fs.Lookup(name) != nil {
				names = append(names, name)
			}
		}
		if len(names) == 0 {
			continue
		}
		title := " " + g.title + " "
		pad := (78 - len(title)) / 2
		b.WriteString("\n" + strings.Repeat("#", pad) + title + strings.Repeat("#", 78-pad-len(title)) + "\n")
		for _, name := range names {
			f := fs.Lookup(name)
			_, usage := flag.UnquoteUsage(f)
			b.WriteString("\n")
			for _, l := range strings.Split(usage, "\n") {
				b.WriteString("# " + l + "\n")
			}
			b.WriteString("# " + name + " " + exampleValue(f) + "\n")
		}
	}
	return b.String()
}

// exampleValue is a flag's default as a directive's value.
func exampleValue(f *flag.Flag) string {
	if isBoolFlag(f) {
		v, _ := parseBool(f.DefValue)
		return yesNo(v)
	}
	if multiArgDirectives[f.Name] {
		return f.DefValue
	}
	return conffile.QuoteIfNeeded(f.DefValue)
}
