package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
)

// flagGroups orders --help: what a first start needs, then a cluster,
// then the rest, tuning and diagnostics last. Every flag is in exactly one
// group (TestFlagGroupsCoverEveryFlag).
var flagGroups = []struct {
	title string
	names []string
}{
	{"Essentials", []string{"port", "bind", "data-dir", "config", "requirepass-file", "maxmemory", "log-level", "log-format", "version"}},
	{"Cluster", []string{"bootstrap", "groups", "join", "cluster-secret-file", "cluster-secret", "advertise", "node-id", "join-timeout", "write-timeout"}},
	{"TLS", []string{"tls-port", "tls-cert-file", "tls-key-file", "tls-ca-cert-file", "tls-auth-clients", "tls-cluster"}},
	{"Operations", []string{"metrics-addr", "slowlog-log-slower-than", "slowlog-max-len", "latency-monitor-threshold", "latency-tracking"}},
	{"Clients", []string{"requirepass", "protected-mode", "maxclients", "timeout", "proto-max-bulk-len", "client-query-buffer-limit", "client-output-buffer-limit"}},
	{"Lua scripts", []string{"script-max-instructions", "script-max-memory"}},
	{"Disk and snapshots", []string{"min-free-disk", "snapshot-log-bytes", "snapshot-threshold", "snapshot-interval"}},
	{"Raft timing", []string{"raft-heartbeat-timeout", "raft-election-timeout", "raft-lease-timeout"}},
	{"Tuning", []string{"procs", "stripes", "max-inflight", "max-inflight-with-peers", "max-append-entries", "direct-wal-sync", "busy-poll-usec"}},
	{"Diagnostics and tests", []string{"pprof", "enable-debug-command"}},
}

// printUsage writes --help: what redcell is, then the flags by group, in
// the ecosystem's --name style.
func printUsage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprint(w, "redcell: a rate-limit server that speaks the Redis protocol (CL.THROTTLE as redis-cell),\n"+
		"with every decision durable in a Raft log before it is answered.\n\n"+
		"Usage: redcell [--config redcell.conf] [--flag value ...]\n")
	for _, g := range flagGroups {
		fmt.Fprintf(w, "\n%s:\n", g.title)
		for _, name := range g.names {
			f := fs.Lookup(name)
			if f == nil {
				continue
			}
			kind, usage := flag.UnquoteUsage(f)
			line := "  --" + f.Name
			if kind != "" {
				line += " " + kind
			}
			if f.DefValue != "" && f.DefValue != "0" && f.DefValue != "false" {
				line += " (default " + f.DefValue + ")"
			}
			fmt.Fprintln(w, line)
			for _, l := range strings.Split(usage, "\n") {
				fmt.Fprintln(w, "      "+l)
			}
		}
	}
}
