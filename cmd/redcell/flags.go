package main

import (
	"bytes"
	"flag"
	"fmt"
	"github.com/redcell/redcell/internal/arg"
	"github.com/redcell/redcell/scripting"
	"github.com/redcell/redcell/server"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/redcell/redcell/group"
	"github.com/redcell/redcell/guard"
	"github.com/redcell/redcell/internal/tlscert"
	"github.com/redcell/redcell/mux"
	"github.com/redcell/redcell/node"
)

// config is everything the command line can set.
type config struct {
	bind        string
	port        int
	advertise   string
	dataDir     string
	nodeID      string
	enableDebug bool
	showVersion bool
	configFile  string // --config: absolute path, "" without one
	logLevel    string
	logFormat   string
	stripes     int
	pprofAddr   string
	metricsAddr string
	// The slow log and the latency monitor: CONFIG SET's parameters of
	// the same names (server.CheckParam validates them).
	slowlogSlowerThan int64
	slowlogMaxLen     int64
	latencyThreshold  int64
	latencyTracking   string
	maxInflight       int
	maxInflightPeers  int
	directSync        bool
	busyPollUsec      int
	maxAppend         int
	snapThresh        uint64
	snapEvery         time.Duration
	snapBytes         uint64
	procs             int
	minFreeDisk       int64
	scriptMaxInstr    int64
	scriptMaxMemory   string

	clusterSecret     string
	clusterSecretFile string
	requirePass       string
	requirePassFile   string
	maxClients        int64
	maxMemory         string
	protoMaxBulkLen   string
	queryBufferLimit  string
	outputBufferLimit string
	idleTimeout       int64
	join              string
	bootstrap         bool
	groups            int
	joinTimeout       time.Duration

	tlsPort          int
	tlsCertFile      string
	tlsKeyFile       string
	tlsCACertFile    string
	tlsAuthClients   string
	tlsCluster       string
	protectedMode    string
	writeTimeout     time.Duration
	heartbeatTimeout time.Duration
	electionTimeout  time.Duration
	leaseTimeout     time.Duration
}

// parseFlags reads the command line and, with --config, the config file
// under it (configfile.go): the file first, then the command line again
// over it, so a flag given there overrides the file's directive.
func parseFlags(args []string, stderr io.Writer) (config, error) {
	var c config
	fs := defineFlags(&c, stderr)
	args = joinBoolValues(fs, args)
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if c.configFile == "" {
		return c.check(fs)
	}
	return parseWithConfigFile(c.configFile, args, fs, stderr)
}

// defineFlags is the flag set that fills c.
func defineFlags(c *config, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("redcell", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.bind, "bind", "127.0.0.1", "address to listen on for Redis clients (and, on the same port, Raft peers)")
	fs.IntVar(&c.port, "port", 6379, "TCP port for Redis clients and Raft peers")
	fs.BoolVar(&c.showVersion, "version", false, "print the version and exit")
	fs.StringVar(&c.configFile, "config", "", "read settings from this Redis-style config file first: one \"name value\" a line, every flag (but --config and\n--version) by its name; flags on the command line override it. CONFIG REWRITE writes the runtime settings back to it")
	fs.StringVar(&c.advertise, "advertise", "", "host:port peers use to reach this node (default: bind:port, or 127.0.0.1:port when bind is 0.0.0.0 or ::)")
	fs.StringVar(&c.dataDir, "data-dir", "./redcell-data", "directory holding the Raft log, stable store and snapshots (Pebble); created if missing.\nAn empty directory bootstraps a new one-node cluster; an existing one resumes it")
	fs.StringVar(&c.nodeID, "node-id", "", "this node's Raft ID (default: generated on first start and kept in <data-dir>/node-id)")
	fs.BoolVar(&c.enableDebug, "enable-debug-command", false, "accept DEBUG CLOCK SET/ADVANCE/REAL, which freezes and moves the clock this node stamps decisions with (tests only)")
	fs.StringVar(&c.logLevel, "log-level", "info", "log level: debug, info, warn or error (or Redis's names: verbose, notice, warning, nothing)")
	fs.Int64Var(&c.slowlogSlowerThan, "slowlog-log-slower-than", 10000, "commands slower than this many microseconds go in SLOWLOG (negative: none, 0: every command; CONFIG SET slowlog-log-slower-than)")
	fs.Int64Var(&c.slowlogMaxLen, "slowlog-max-len", 128, "entries SLOWLOG keeps, the oldest dropped first (CONFIG SET slowlog-max-len)")
	fs.Int64Var(&c.latencyThreshold, "latency-monitor-threshold", 0, "commands at least this many milliseconds slow are LATENCY events (0: off; CONFIG SET latency-monitor-threshold)")
	fs.StringVar(&c.latencyTracking, "latency-tracking", "yes", "yes: keep per-command latency histograms for INFO latencystats and LATENCY HISTOGRAM (CONFIG SET latency-tracking)")
	fs.StringVar(&c.metricsAddr, "metrics-addr", "", "host:port for plain HTTP: /metrics (Prometheus), /healthz (200 while alive) and /readyz (200 when a leader is known,\nthis node is caught up and not loading; else 503 with the reason); off by default. Bind it where only your monitoring reaches")
	fs.StringVar(&c.logFormat, "log-format", "text", "log line format on stderr: text (key=value) or json (one object a line, with time, level and msg)")
	fs.StringVar(&c.pprofAddr, "pprof", "", "serve Go's /debug/pprof on this address (e.g. 127.0.0.1:6060) for profiling; off by default")
	fs.BoolVar(&c.directSync, "direct-wal-sync", true, "while the node is the only member of its cluster, fsync the log without handing the thread to Go's scheduler (tuning; on by default,\n"+
		"--direct-wal-sync=false for the ordinary call): no thread handoff per fsync; off for a while after a sync slower than 20 ms, and never with peers")
	fs.IntVar(&c.busyPollUsec, "busy-poll-usec", 50, "while the node is alone and idle, how long (µs) a connection that has just answered may spin for its client's next request before it parks (tuning; 0: never):\n"+
		"a waiting client may then skip a halted vCPU's wake-up; never on one CPU, and paused while fewer than half of the spins find the request (INFO busy_poll_active; Linux)")
	fs.IntVar(&c.maxInflight, "max-inflight", group.DefaultMaxInflight, "log entries the proposer keeps in Raft at once while the node is alone (tuning): at most one of them is waiting for the local disk, the rest for apply")
	fs.IntVar(&c.maxInflightPeers, "max-inflight-with-peers", group.DefaultMaxInflightWithPeers, "log entries the proposer keeps in Raft at once while the node has peers (tuning; at most --max-inflight): each costs an fsync on every node, so fewer, larger entries are faster")
	fs.IntVar(&c.maxAppend, "max-append-entries", 64, "Raft MaxAppendEntries: entries per append RPC and per apply batch (tuning)")
	fs.Uint64Var(&c.snapThresh, "snapshot-threshold", 16384, "log entries since the last snapshot before the next one is taken (tuning, tests)")
	fs.DurationVar(&c.snapEvery, "snapshot-interval", 30*time.Second, "how often Raft checks whether a snapshot is due (tuning, tests)")
	fs.Uint64Var(&c.snapBytes, "snapshot-log-bytes", group.DefaultSnapshotLogBytes, "snapshot once the log written since the last snapshot holds this many bytes (or twice that snapshot's\nsize, if larger): bounds the log a restart replays (64 MiB: under 2 s on a 2-core VM)")
	fs.Int64Var(&c.minFreeDisk, "min-free-disk", guard.DefaultMinFreeDisk, "bytes the data dir's filesystem must keep free: below it, commands that change state are refused\nwith MISCONF (reads work) until space returns, and a leader hands over leadership; 0 disables the guard")
	fs.Int64Var(&c.scriptMaxInstr, "script-max-instructions", scripting.DefaultMaxInstructions, "Lua VM instructions one script call may run before it stops with an error (its writes so far stand);\nevery member of a cluster must have the same value, so that a script stops at the same instruction on every replica")
	fs.StringVar(&c.scriptMaxMemory, "script-max-memory", strconv.Itoa(scripting.DefaultMaxMemory>>20)+"mb", "bytes one script call may allocate, counted the same way on every replica (strings, table slots),\nbefore it stops with an error; every member of a cluster must have the same value")
	fs.IntVar(&c.procs, "procs", 0, "OS threads running Go code at once (GOMAXPROCS); 0 = half the available CPUs, at least 1 (GOMAXPROCS in the environment wins)")
	fs.StringVar(&c.clusterSecretFile, "cluster-secret-file", "", "file holding the cluster secret (at least 16 bytes; one trailing newline is ignored). Peers must prove it\nin a challenge-response handshake before Raft sees a byte; without a secret the node accepts no peers")
	fs.StringVar(&c.clusterSecret, "cluster-secret", "", "the cluster secret itself (visible in the process list: prefer --cluster-secret-file or REDCELL_CLUSTER_SECRET)")
	fs.StringVar(&c.requirePassFile, "requirepass-file", "", "file holding the password Redis clients must give (AUTH, HELLO AUTH) before any other command\n(one trailing newline is ignored); empty: no password, as Redis without requirepass. CONFIG SET requirepass changes it at runtime")
	fs.StringVar(&c.requirePass, "requirepass", "", "the client password itself (visible in the process list: prefer --requirepass-file or REDCELL_REQUIREPASS)")
	fs.StringVar(&c.maxMemory, "maxmemory", "0", "memory limit (bytes, or with a unit: 100mb, 2gb): above it commands that would create a key get\n\"-OOM command not allowed when used memory > 'maxmemory'.\"; existing limiters keep deciding and nothing is evicted; 0 = none (CONFIG SET maxmemory)")
	fs.StringVar(&c.protoMaxBulkLen, "proto-max-bulk-len", "512mb", "longest argument a client may send (Redis's proto-max-bulk-len; at least 1mb; CONFIG SET)")
	fs.StringVar(&c.queryBufferLimit, "client-query-buffer-limit", "1gb", "unparsed input one client may make the node hold before it is closed (Redis's client-query-buffer-limit; at least 1mb; CONFIG SET)")
	fs.StringVar(&c.outputBufferLimit, "client-output-buffer-limit", "normal 0 0 0", "Redis's client-output-buffer-limit for normal clients, \"normal <hard> <soft> <soft-seconds>\": a client whose\nreplies exceed hard, or whose reply writes stall for soft-seconds, is closed (0 0 0: never, Redis's default; CONFIG SET)")
	fs.Int64Var(&c.maxClients, "maxclients", 10000, "connected clients at most: one more is answered \"-ERR max number of clients reached\" and closed (CONFIG SET maxclients)")
	fs.Int64Var(&c.idleTimeout, "timeout", 0, "close a client idle for this many seconds; 0 = never (CONFIG SET timeout)")
	fs.StringVar(&c.join, "join", "", "host:port of any member of an existing cluster: a node without Raft state (a new node, or a member whose disk was lost)\njoins it as a non-voter, replacing any member with its ID or address, and is promoted to voter once caught up; ignored once the node has data")
	fs.IntVar(&c.groups, "groups", 0, "Raft groups the keyspace is split over by hash slot, chosen when the cluster is bootstrapped (default 1; refused\nlater with another value). More than one: atomic units (MULTI/EXEC, scripts, MSET) need their keys in one slot, as on Redis Cluster")
	fs.BoolVar(&c.bootstrap, "bootstrap", false, "start a new cluster with this node as its only member. For the first start of the first node only: refused on a data dir\nthat holds Raft state. Without a cluster secret an empty data dir bootstraps anyway; with one, it needs --bootstrap or --join")
	fs.DurationVar(&c.joinTimeout, "join-timeout", node.DefaultJoinTimeout, "how long a joining node keeps trying while the member is unreachable or knows no leader; then (or sooner, at the\nsecond identical cluster-secret or TLS mismatch) it exits with status 1 and an error naming the cause")
	fs.DurationVar(&c.writeTimeout, "write-timeout", node.DefaultWriteTimeout, "how long a request waits for a leader that can decide it before it is answered TRYAGAIN or CLUSTERDOWN")
	fs.DurationVar(&c.heartbeatTimeout, "raft-heartbeat-timeout", group.DefaultHeartbeatTimeout, "Raft: a follower that hears nothing from the leader for this long (checked every 1-2x this) starts an election;\n"+
		"a failover takes about 1-3x this. Raise it for a WAN or a busy host; the next two follow it unless given")
	fs.DurationVar(&c.electionTimeout, "raft-election-timeout", group.DefaultElectionTimeout, "Raft: a candidate without a majority retries after this long (randomised up to 2x; at least --raft-heartbeat-timeout;\ndefault: --raft-heartbeat-timeout)")
	fs.DurationVar(&c.leaseTimeout, "raft-lease-timeout", group.DefaultLeaderLeaseTimeout, "Raft: a leader that cannot reach a quorum for this long steps down (at most --raft-heartbeat-timeout;\ndefault: --raft-heartbeat-timeout)")
	fs.IntVar(&c.tlsPort, "tls-port", 0, "TCP port for Redis clients over TLS, on --bind (0: none). The plain --port still serves clients too;\nfirewall it, or bind it to loopback, if only TLS clients may come from the network")
	fs.StringVar(&c.tlsCertFile, "tls-cert-file", "", "PEM certificate (chain) this node presents to TLS clients and, with --tls-cluster, to peers; reread on SIGHUP")
	fs.StringVar(&c.tlsKeyFile, "tls-key-file", "", "PEM private key of --tls-cert-file; reread on SIGHUP")
	fs.StringVar(&c.tlsCACertFile, "tls-ca-cert-file", "", "PEM certificates of the CA that signs client certificates and, with --tls-cluster, the nodes' certificates; reread on SIGHUP")
	fs.StringVar(&c.tlsAuthClients, "tls-auth-clients", "yes", "client certificates on the TLS port: yes (required, as Redis), optional (verified if sent) or no (not asked for)")
	fs.StringVar(&c.tlsCluster, "tls-cluster", "no", "yes: mutual TLS on every connection between nodes (Raft and forwarding), each side presenting --tls-cert-file\nand verifying the other's against --tls-ca-cert-file; the cluster-secret handshake still runs inside it. Every node must agree")
	fs.StringVar(&c.protectedMode, "protected-mode", "yes", "yes: without a password (--requirepass), clients from beyond the loopback interface get Redis's -DENIED\nexplanation and are closed, as Redis 7 does; no: serve them (CONFIG SET protected-mode changes it at runtime)")
	fs.IntVar(&c.stripes, "stripes", 64, "lock stripes of the in-memory keyspace (never changes results, only contention)")
	fs.Usage = func() { printUsage(stderr, fs) } // usage.go
	return fs
}

// check validates the parsed flags.
func (c config) check(fs *flag.FlagSet) (config, error) {
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	if c.port <= 0 || c.port > 65535 {
		return c, fmt.Errorf("--port %d is not a TCP port", c.port)
	}
	// Every number is checked here, loudly: a zero stripe count or a
	// negative thread count must not start a node that misbehaves later.
	switch {
	case c.stripes < 1 || c.stripes > 1<<16:
		return c, fmt.Errorf("--stripes %d: want 1 to 65536", c.stripes)
	case c.procs < 0:
		return c, fmt.Errorf("--procs %d: want 0 (automatic) or more", c.procs)
	case c.busyPollUsec < 0 || c.busyPollUsec > 1_000_000:
		return c, fmt.Errorf("--busy-poll-usec %d: want 0 (never) to 1000000", c.busyPollUsec)
	case c.maxInflight < 1 || c.maxInflight > 64:
		return c, fmt.Errorf("--max-inflight %d: want 1 to 64", c.maxInflight)
	case c.maxInflightPeers < 1 || c.maxInflightPeers > 64:
		return c, fmt.Errorf("--max-inflight-with-peers %d: want 1 to 64", c.maxInflightPeers)
	case c.maxAppend < 1:
		return c, fmt.Errorf("--max-append-entries %d: want 1 or more", c.maxAppend)
	case c.snapThresh < 1:
		return c, fmt.Errorf("--snapshot-threshold %d: want 1 or more", c.snapThresh)
	case c.snapEvery < time.Millisecond:
		return c, fmt.Errorf("--snapshot-interval %v: want at least 1ms", c.snapEvery)
	case c.snapBytes < 1:
		return c, fmt.Errorf("--snapshot-log-bytes %d: want 1 or more", c.snapBytes)
	case c.minFreeDisk < 0:
		return c, fmt.Errorf("--min-free-disk %d: want 0 (off) or more bytes", c.minFreeDisk)
	case !atLeastMB(c.protoMaxBulkLen):
		return c, fmt.Errorf("--proto-max-bulk-len %q: want a memory value of at least 1mb", c.protoMaxBulkLen)
	case !atLeastMB(c.queryBufferLimit):
		return c, fmt.Errorf("--client-query-buffer-limit %q: want a memory value of at least 1mb", c.queryBufferLimit)
	case server.ValidOutputBufferLimit(c.outputBufferLimit) != "":
		return c, fmt.Errorf("--client-output-buffer-limit %q: %s", c.outputBufferLimit, server.ValidOutputBufferLimit(c.outputBufferLimit))
	case c.scriptMaxInstr < 1000:
		return c, fmt.Errorf("--script-max-instructions %d: want at least 1000", c.scriptMaxInstr)
	case !atLeastMB(c.scriptMaxMemory):
		return c, fmt.Errorf("--script-max-memory %q: want a memory value of at least 1mb", c.scriptMaxMemory)
	case !validMemory(c.maxMemory):
		return c, fmt.Errorf("--maxmemory %q: want bytes, optionally with a unit (kb, mb, gb)", c.maxMemory)
	case c.maxClients < 1 || c.maxClients > 1<<32-1:
		return c, fmt.Errorf("--maxclients %d: want 1 to 4294967295", c.maxClients)
	case c.idleTimeout < 0 || c.idleTimeout > 1<<31-1:
		return c, fmt.Errorf("--timeout %d: want 0 to 2147483647 seconds", c.idleTimeout)
	case !validLogLevel(c.logLevel):
		return c, fmt.Errorf("--log-level %q: want debug, info, warn or error (or verbose, notice, warning, nothing)", c.logLevel)
	case c.dataDir == "":
		return c, fmt.Errorf("--data-dir must not be empty")
	case c.joinTimeout <= 0:
		return c, fmt.Errorf("--join-timeout %v: want a positive duration", c.joinTimeout)
	}
	// A heartbeat timeout given alone sets the whole failover's pace: the
	// election and lease timeouts not given follow it (Raft requires
	// election >= heartbeat >= lease).
	given := make(map[string]bool)
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if !given["raft-election-timeout"] {
		c.electionTimeout = c.heartbeatTimeout
	}
	if !given["raft-lease-timeout"] {
		c.leaseTimeout = c.heartbeatTimeout
	}
	if c.leaseTimeout > c.heartbeatTimeout {
		return c, fmt.Errorf("--raft-lease-timeout %v exceeds --raft-heartbeat-timeout %v", c.leaseTimeout, c.heartbeatTimeout)
	}
	if c.electionTimeout < c.heartbeatTimeout {
		return c, fmt.Errorf("--raft-election-timeout %v is shorter than --raft-heartbeat-timeout %v", c.electionTimeout, c.heartbeatTimeout)
	}
	if c.heartbeatTimeout < 5*time.Millisecond || c.electionTimeout < 5*time.Millisecond || c.leaseTimeout < 5*time.Millisecond || c.writeTimeout <= 0 {
		return c, fmt.Errorf("the Raft timeouts must be at least 5ms and --write-timeout positive")
	}
	if c.tlsPort < 0 || c.tlsPort > 65535 || (c.tlsPort != 0 && c.tlsPort == c.port) {
		return c, fmt.Errorf("--tls-port %d: want 0 (none) or a TCP port other than --port", c.tlsPort)
	}
	if b, ok := parseBool(c.latencyTracking); ok {
		c.latencyTracking = yesNo(b)
	}
	for name, v := range c.diagnosticParams() {
		if err := server.CheckParam(name, v); err != nil {
			return c, fmt.Errorf("--%w", err)
		}
	}
	if c.logFormat != "text" && c.logFormat != "json" {
		return c, fmt.Errorf("--log-format %q: want text or json", c.logFormat)
	}
	for _, f := range []struct {
		name string
		v    *string
	}{{"--tls-cluster", &c.tlsCluster}, {"--protected-mode", &c.protectedMode}} {
		b, ok := parseBool(*f.v) // yes/no as Redis, true/false as Go
		if !ok {
			return c, fmt.Errorf("%s %q: want yes or no", f.name, *f.v)
		}
		*f.v = yesNo(b)
	}
	if _, err := tlscert.ParseClientAuth(c.tlsAuthClients); err != nil {
		return c, fmt.Errorf("--%w", err)
	}
	if (c.tlsPort != 0 || c.tlsCluster == "yes") && (c.tlsCertFile == "" || c.tlsKeyFile == "") {
		return c, fmt.Errorf("--tls-port and --tls-cluster need --tls-cert-file and --tls-key-file")
	}
	if c.clusterSecret != "" && c.clusterSecretFile != "" {
		return c, fmt.Errorf("--cluster-secret and --cluster-secret-file both given; use one")
	}
	if c.requirePass != "" && c.requirePassFile != "" {
		return c, fmt.Errorf("--requirepass and --requirepass-file both given; use one")
	}
	return c, nil
}

// password returns the client password from --requirepass, the file of
// --requirepass-file, or the REDCELL_REQUIREPASS environment variable, in
// that order; "" if none.
func (c config) password() (string, error) {
	switch {
	case c.requirePass != "":
		return c.requirePass, nil
	case c.requirePassFile != "":
		data, err := os.ReadFile(c.requirePassFile)
		if err != nil {
			return "", fmt.Errorf("--requirepass-file: %w", err)
		}
		p := bytes.TrimSuffix(bytes.TrimSuffix(data, []byte("\n")), []byte("\r"))
		if len(p) == 0 {
			return "", fmt.Errorf("--requirepass-file %s is empty", c.requirePassFile)
		}
		return string(p), nil
	}
	return os.Getenv("REDCELL_REQUIREPASS"), nil
}

// secret returns the cluster secret from the flag, the file, or the
// REDCELL_CLUSTER_SECRET environment variable, in that order; nil if none.
func (c config) secret() ([]byte, error) {
	var s []byte
	switch {
	case c.clusterSecret != "":
		s = []byte(c.clusterSecret)
	case c.clusterSecretFile != "":
		data, err := os.ReadFile(c.clusterSecretFile)
		if err != nil {
			return nil, fmt.Errorf("--cluster-secret-file: %w", err)
		}
		s = bytes.TrimSuffix(bytes.TrimSuffix(data, []byte("\n")), []byte("\r"))
	default:
		s = []byte(os.Getenv("REDCELL_CLUSTER_SECRET"))
	}
	if len(s) == 0 {
		return nil, nil
	}
	if len(s) < mux.MinSecretLen {
		return nil, fmt.Errorf("the cluster secret has %d bytes; at least %d are needed", len(s), mux.MinSecretLen)
	}
	return s, nil
}

func (c config) slogLevel() (slog.Level, error) { return parseLogLevel(c.logLevel) }

func validLogLevel(s string) bool { _, err := parseLogLevel(s); return err == nil }

func validMemory(s string) bool { _, ok := arg.Memory(s); return ok }

func atLeastMB(s string) bool { n, ok := arg.Memory(s); return ok && n >= 1<<20 }

// tls loads the TLS material the flags name; nil when no TLS is asked for.
func (c config) tls() (*tlscert.Store, error) {
	if c.tlsPort == 0 && c.tlsCluster != "yes" {
		return nil, nil
	}
	return tlscert.Load(tlscert.Files{Cert: c.tlsCertFile, Key: c.tlsKeyFile, CA: c.tlsCACertFile})
}

// diagnosticParams are the slow log's and the latency monitor's flags as
// the server's runtime parameters (server.Config.StartParams).
func (c config) diagnosticParams() map[string]string {
	return map[string]string{
		"slowlog-log-slower-than":   strconv.FormatInt(c.slowlogSlowerThan, 10),
		"slowlog-max-len":           strconv.FormatInt(c.slowlogMaxLen, 10),
		"latency-monitor-threshold": strconv.FormatInt(c.latencyThreshold, 10),
		"latency-tracking":          c.latencyTracking,
	}
}
