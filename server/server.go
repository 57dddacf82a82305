// Package server serves the Redis protocol: it reads each connection's
// pipeline, dispatches commands through the command table (package
// commands), hands state-changing requests to its Backend (the node's Raft
// group) as one batch per pipeline read, and writes replies in order. See
// DESIGN.md.
package server

import (
	"cmp"
	"errors"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redcell/redcell/commands"
	"github.com/redcell/redcell/internal/lograte"
	"github.com/redcell/redcell/metrics"
	"github.com/redcell/redcell/mux"
)

// Version is what HELLO and INFO report as the Redis version: clients choose
// features by it, and Redcell speaks Redis 7.2's protocol.
const Version = "7.2.4"

// Config wires a Server to its node.
type Config struct {
	Backend     Backend          // decides requests; INFO and DEBUG CLOCK read it
	PeerStats   func() mux.Stats // for INFO; may be nil
	NodeID      string
	Addr        string // the client address as configured (bind:port)
	DataDir     string
	EnableDebug bool   // DEBUG CLOCK ... (testing hook)
	RedcellVer  string // build version for INFO
	Logger      *slog.Logger
	// SameSlot: the keyspace is split over several Raft groups, so an
	// atomic unit needs its keys in one hash slot or is refused with
	// CROSSSLOT, as on Redis Cluster (slots.go). False with one group.
	SameSlot bool
	// Metrics records each command's latency and each decision's outcome
	// (metrics.go); nil: nothing is recorded.
	Metrics *metrics.Commands

	// RequirePass is the password clients must give (AUTH, HELLO AUTH)
	// before anything else; "" for none. CONFIG SET requirepass changes it.
	RequirePass string
	// LogLevel is the level of the node's logger, which CONFIG SET loglevel
	// moves; nil: CONFIG SET loglevel is refused.
	LogLevel *slog.LevelVar
	// Save is what CONFIG GET save reports: the snapshot schedule as
	// Redis's "<seconds> <changes>" (see config.go).
	Save string
	// MaxClients and IdleTimeout are the starting values of CONFIG's
	// maxclients (0: Redis's 10000) and timeout (seconds; 0: never).
	MaxClients  int64
	IdleTimeout int64
	// ProtoMaxBulkLen and QueryBufferLimit start CONFIG's
	// proto-max-bulk-len and client-query-buffer-limit (0: Redis's 512 MB
	// and 1 GB).
	ProtoMaxBulkLen, QueryBufferLimit int64
	// OutputBufferLimit starts CONFIG's client-output-buffer-limit
	// (Redis's syntax; "" or invalid: Redis's defaults, none for normal
	// clients). Validate it with ValidOutputBufferLimit first.
	OutputBufferLimit string
	// MaxMemory is maxmemory (bytes; 0 none), shared with the group that
	// enforces it; CONFIG SET changes it. nil: fixed at 0.
	MaxMemory *atomic.Int64
	// ProtectedMode is Redis's protected-mode (CONFIG SET protected-mode):
	// with it on and no password set, clients from beyond the loopback
	// interface are answered -DENIED and closed (protected.go).
	ProtectedMode bool
	// TLSPort, TLSAuthClients and TLSCluster are what CONFIG GET reports
	// of the node's TLS setup (tls-port 0: no client TLS port).
	TLSPort        int
	TLSAuthClients string
	TLSCluster     bool
	// RewriteConfig writes the runtime parameters' current values into the
	// config file the node started with (CONFIG REWRITE): params maps each
	// CONFIG SET parameter's name to its CONFIG GET value. It runs on the
	// connection goroutine that asked and blocks it on the disk (fsyncs);
	// calls from two connections may overlap, so it must serialise its
	// own. nil: the node has no config file, and CONFIG REWRITE answers
	// Redis's "running without a config file".
	RewriteConfig func(params map[string]string) error
	// StartParams are starting values of runtime parameters that have no
	// field above, by CONFIG name (slowlog-log-slower-than, ...), applied as
	// CONFIG SET applies them. Check each with CheckParam first: New
	// skips an invalid one.
	StartParams map[string]string
	// Shutdown asks the owner of the node to stop it (SHUTDOWN): it must
	// return at once and stop the node from another goroutine, since Close
	// waits for the connection that called it. handOver is false for
	// SHUTDOWN NOW: a leader stops without handing its leadership over
	// first. nil: SHUTDOWN is refused.
	Shutdown func(handOver bool)

	// BusyPoll is how long a connection may spin for its client's next
	// request after answering, while Quiet reports true, before it parks
	// (busypoll_linux.go; Linux only). Zero, or a nil Quiet: never.
	BusyPoll time.Duration
	// Quiet reports whether the node is idle enough for that: alone, with
	// nothing of its own on the way through the log. Called by connection
	// goroutines, often; must not block.
	Quiet func() bool
}

// Server serves Redis clients. Serve runs one goroutine per connection.
type Server struct {
	cfg      Config
	log      *slog.Logger
	warnings *lograte.Limiter // warnClient's: one line per message per interval
	started  time.Time

	mu     sync.Mutex
	conns  map[*conn]struct{}
	closed bool
	wg     sync.WaitGroup

	auth    authState
	nextID  atomic.Int64
	closing atomic.Bool // Close has begun: connections keep its write deadlines
	stats   serverStats
	diag    diagnostics // commandstats, errorstats, slow log, latency (cmdstats.go)
	rates   *rates
	trk     *tracker // client-side caching (tracking.go)

	// CONFIG SET's parameters, SAVE/BGSAVE, the idle timeout (config.go,
	// persistence.go, idle.go).
	params  runtimeParams
	persist persistState
	idle    *idleCloser
	busy    *busyPoll // nil: connections never spin (busypoll_linux.go)
}

type serverStats struct {
	connsReceived atomic.Int64
	commands      atomic.Int64
	errors        atomic.Int64
	rejected      atomic.Int64
	netIn, netOut atomic.Int64
}

// reset sets the counters back to zero (CONFIG RESETSTAT).
func (st *serverStats) reset() {
	for _, v := range []*atomic.Int64{&st.connsReceived, &st.commands, &st.errors, &st.rejected, &st.netIn, &st.netOut} {
		v.Store(0)
	}
}

// New makes a server.
func New(cfg Config) *Server {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	s := &Server{cfg: cfg, log: cfg.Logger, warnings: lograte.New(clientWarningEvery), started: time.Now(), conns: make(map[*conn]struct{}), trk: newTracker()}
	s.rates = newRates(s.sampleCounters, time.Second)
	s.diag.init()
	s.auth.set(cfg.RequirePass)
	s.params.maxClients.Store(cmp.Or(cfg.MaxClients, defaultMaxClients))
	s.params.idleTimeout.Store(cfg.IdleTimeout)
	s.params.reader = newReaderLimits()
	lim := defaultOutputLimits
	if cfg.OutputBufferLimit != "" {
		l, reason := parseOutputLimits(lim, cfg.OutputBufferLimit)
		if reason == "" {
			lim = l
		}
	}
	s.params.outLimits.Store(&lim)
	if cfg.ProtoMaxBulkLen > 0 {
		s.params.reader.maxBulk.Store(cfg.ProtoMaxBulkLen)
	}
	if cfg.QueryBufferLimit > 0 {
		s.params.reader.maxQuery.Store(cfg.QueryBufferLimit)
	}
	s.params.protectedMode.Store(cfg.ProtectedMode)
	for name, v := range cfg.StartParams {
		if p := findParam(name); p != nil && p.parse != nil {
			if apply, reason := p.parse(s, []byte(v)); reason == "" {
				apply()
			}
		}
	}
	s.idle = startIdleCloser(s, time.Second)
	busy, err := newBusyPoll(cfg.BusyPoll, cfg.Quiet, &s.closing)
	if err != nil {
		s.log.Warn("busy polling off: no epoll instance", "err", err)
	}
	s.busy = busy
	return s
}

func (s *Server) sampleCounters() rateSample {
	ops, entries, fsyncs := s.cfg.Backend.Counters()
	return rateSample{at: time.Now(), commands: s.stats.commands.Load(), ops: ops, entries: entries, fsyncs: fsyncs, netOut: s.stats.netOut.Load()}
}

// Serve accepts client connections from ln until it is closed.
func (s *Server) Serve(ln net.Listener) error {
	for {
		nc, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			nc.Close()
			continue
		}
		if int64(len(s.conns)) >= s.params.maxClients.Load() {
			s.mu.Unlock()
			s.refuse(nc)
			continue
		}
		if s.protectedRefuses(nc) {
			s.mu.Unlock()
			go s.deny(nc)
			continue
		}
		c := s.newConn(nc)
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		s.stats.connsReceived.Add(1)
		go func() {
			defer s.wg.Done()
			c.serve()
			s.mu.Lock()
			delete(s.conns, c)
			s.mu.Unlock()
		}()
	}
}

// Close stops serving clients without tearing a reply: every connection
// stops reading (a read deadline in the past), finishes the pipeline it is
// executing (its writes are answered by the group: result, or TRYAGAIN if
// the group is already stopping), flushes the replies and closes. Writes to a
// client that does not read get closeGrace to drain.
func (s *Server) Close() {
	const closeGrace = 5 * time.Second
	s.mu.Lock()
	s.closed = true
	s.closing.Store(true)
	now := time.Now()
	for c := range s.conns {
		_ = c.nc.SetReadDeadline(now)
		_ = c.nc.SetWriteDeadline(now.Add(closeGrace))
	}
	s.mu.Unlock()
	s.wg.Wait()
	s.persist.bg.Wait()
	s.idle.close()
	s.rates.close()
	if s.busy != nil {
		s.busy.close()
	}
}

// refuse answers a connection beyond maxclients as Redis does, and closes it.
func (s *Server) refuse(nc net.Conn) {
	s.stats.rejected.Add(1)
	_ = nc.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = nc.Write([]byte("-" + commands.ErrMaxClients + "\r\n"))
	nc.Close()
}

// clientCount is the number of connected clients.
func (s *Server) clientCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// forget takes c out of the client table ahead of its goroutine's exit
// (CLIENT KILL); false if it was no longer there. The goroutine's own
// removal then finds nothing, and Close no longer sets its deadlines: its
// socket is closed already, so it stops at its next read or write.
func (s *Server) forget(c *conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.conns[c]
	delete(s.conns, c)
	return ok
}

// forEachConn calls fn for each connection (CLIENT LIST).
func (s *Server) forEachConn(fn func(*conn)) {
	s.mu.Lock()
	cs := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		cs = append(cs, c)
	}
	s.mu.Unlock()
	for _, c := range cs {
		fn(c)
	}
}

// ValidOutputBufferLimit reports why a client-output-buffer-limit value is
// invalid ("" when it is valid), for flag checking.
func ValidOutputBufferLimit(v string) string {
	_, reason := parseOutputLimits(defaultOutputLimits, v)
	return reason
}

// clientWarningEvery is how often one kind of warning about a client is
// logged at most (warnClient).
const clientWarningEvery = 10 * time.Second

// warnClient logs a warning about one client (closed for a buffer limit,
// speaking HTTP to the port) at most once per clientWarningEvery for each
// message, with how many were held back since: one client or a health
// checker that does it on every connection must not flood the log. Called
// from connection goroutines.
func (s *Server) warnClient(msg string, args ...any) {
	n, ok := s.warnings.Allow(msg)
	if !ok {
		return
	}
	if n > 0 {
		args = append(args, "suppressed_since_last", n)
	}
	s.log.Warn(msg, args...)
}
