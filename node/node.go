// Package node assembles one Redcell node from its parts — the Raft store on
// Pebble, the shared port and its peer authentication, the Raft group, the
// state machine and the Redis server — and stops them in order. The redcell
// binary is flags plus this package; tests start real nodes with it. See
// DESIGN.md.
package node

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/redcell/redcell/forward"
	"github.com/redcell/redcell/group"
	"github.com/redcell/redcell/guard"
	"github.com/redcell/redcell/internal/tlscert"
	"github.com/redcell/redcell/mux"
	"github.com/redcell/redcell/raftstore"
	"github.com/redcell/redcell/server"
	"github.com/redcell/redcell/slots"
)

// raftDir is the Pebble directory inside the data dir.
const raftDir = "raft"

// dataGroup is the node's one Raft group, which holds the whole keyspace:
// every call the node forwards and every key of its Raft state names it.
// The Pebble database, the node's identity and the key layout are ready
// for more groups; the transport, the router and the disk gate are not
// (DESIGN.md, "Sharding").
const dataGroup slots.GroupID = 0

// Config is everything that shapes a node. Zero values are the defaults.
type Config struct {
	Bind      string // default 127.0.0.1
	Port      int    // 0: any free port (tests)
	Advertise string // host:port peers use; default the bound address
	DataDir   string
	NodeID    string // default: kept in the data dir, or generated once
	// ClusterSecret admits peers (see package mux). Empty: the node accepts
	// no peer connections at all, which is right for a single node.
	ClusterSecret []byte
	// Join is the address of any member of an existing cluster: a node
	// without Raft state asks to be added (or, if it was a member whose
	// state was lost, to be added back as a new member) instead of
	// bootstrapping. Ignored once the node has Raft state (a restart needs
	// no join).
	Join string
	// Bootstrap starts a new one-node cluster on an empty data dir, for
	// this start only: it is refused on a data dir that holds Raft state.
	// A node without ClusterSecret bootstraps an empty data dir without
	// it (no peer can reach it); a node with one needs Bootstrap or Join.
	Bootstrap bool
	// Groups is how many Raft groups the keyspace is split over (--groups),
	// chosen when the cluster is bootstrapped and kept in the data dir
	// (groupcount.go): 0 takes the kept count (1 for a new cluster). With
	// more than one, atomic units need their keys in one hash slot, as on
	// Redis Cluster (request/routing.go).
	Groups int
	// JoinTimeout bounds a join that keeps failing (unreachable, no
	// leader) before the node stops with the cause (default
	// DefaultJoinTimeout); a secret or TLS mismatch stops it sooner.
	JoinTimeout time.Duration
	// WriteTimeout bounds how long a request waits for a leader that can
	// decide it (default DefaultWriteTimeout).
	WriteTimeout time.Duration
	// Raft timeouts (defaults in group: DefaultHeartbeatTimeout and so on).
	HeartbeatTimeout   time.Duration
	ElectionTimeout    time.Duration
	LeaderLeaseTimeout time.Duration

	EnableDebug bool
	// RequirePass is the password Redis clients must give before anything
	// else (server.Config.RequirePass); "" for none. Peers are admitted by
	// ClusterSecret, not by this.
	RequirePass string
	// LogLevel is Logger's level, which CONFIG SET loglevel moves; nil
	// refuses that.
	LogLevel *slog.LevelVar
	// MaxClients and IdleTimeout (seconds) start CONFIG's maxclients and
	// timeout (server.Config).
	MaxClients int64
	// MaxMemory is maxmemory's starting value in bytes (0: none): above it
	// new keys are refused with OOM (package guard, group/memoryguard.go); CONFIG SET
	// changes it.
	MaxMemory int64
	// waitForElectionTimer, tests only: group.Config.WaitForElectionTimer.
	waitForElectionTimer bool
	// ProtoMaxBulkLen and QueryBufferLimit start CONFIG's
	// proto-max-bulk-len and client-query-buffer-limit (0: Redis's
	// defaults, 512 MB and 1 GB).
	ProtoMaxBulkLen, QueryBufferLimit int64
	// OutputBufferLimit starts CONFIG's client-output-buffer-limit
	// (Redis's syntax; "": Redis's defaults).
	OutputBufferLimit string
	IdleTimeout       int64
	Stripes           int
	MaxInflight       int
	// MaxInflightWithPeers is group.Config.MaxInflightWithPeers
	// (--max-inflight-with-peers).
	MaxInflightWithPeers int
	// DirectWALSync turns on direct WAL syncs while the node is alone
	// (group.Config.DirectWALSync; --direct-wal-sync).
	DirectWALSync bool
	// AfterWALSync is raftstore.Options.AfterWALSync: run after every WAL
	// sync, for benchmarks that emulate a slower disk (cmd/redcell's
	// redcell_slowdisk build); nil, the default, in production.
	AfterWALSync func(direct bool)
	// ScriptMaxInstructions and ScriptMaxMemory are a script call's
	// budgets (fsm.Config.Scripts; --script-max-instructions,
	// --script-max-memory), which every member must share; 0: the
	// engine's defaults.
	ScriptMaxInstructions int64
	ScriptMaxMemory       int64
	// BusyPoll is server.Config.BusyPoll (--busy-poll-usec): how long a
	// connection may spin for its client's next request while the node is
	// alone and idle (group.Group.Quiet).
	BusyPoll   time.Duration
	MaxAppend  int
	SnapThresh uint64
	SnapEvery  time.Duration
	Version    string
	Logger     *slog.Logger
	// MetricsAddr is host:port of the HTTP server for /metrics, /healthz
	// and /readyz (package metrics; --metrics-addr); "" for none.
	MetricsAddr string

	// RewriteConfig is server.Config.RewriteConfig (CONFIG REWRITE); nil
	// without a config file.
	RewriteConfig func(params map[string]string) error

	// TLS is the node's certificate, key and CA (package tlscert); nil
	// without TLS. TLSPort > 0 opens a client port that speaks TLS on
	// Bind, whose clients must present a certificate as TLSAuthClients
	// says; TLSCluster puts every peer connection under mutual TLS (see
	// mux.Config). Both need TLS.
	TLS            *tlscert.Store
	TLSPort        int
	TLSAuthClients tlscert.ClientAuth
	TLSCluster     bool
	// ProtectedMode is Redis's protected-mode (server.Config).
	ProtectedMode bool
	// ServerParams are the starting values of the other runtime parameters
	// (server.Config.StartParams: the slow log, the latency monitor).
	ServerParams map[string]string

	// SnapshotLogBytes: snapshot once the log since the newest snapshot
	// holds this many bytes (or twice the newest snapshot's size, if larger);
	// default group.DefaultSnapshotLogBytes.
	SnapshotLogBytes uint64
	// MinFreeDisk is the data dir's free-space reserve below which writes
	// are refused with MISCONF (package guard): 0 means
	// guard.DefaultMinFreeDisk, negative disables the guard.
	MinFreeDisk int64
}

// Node is a running Redcell node.
//
// Goroutines: Open starts the mux's accept loop and the server's; Fatal may
// be read from any goroutine; Close is called once, by the owner.
type Node struct {
	ID        string
	Addr      net.Addr // the bound client (and peer) address
	Advertise net.Addr

	log     *slog.Logger
	dataDir string
	db      *raftstore.DB // the Pebble database: every group's Raft state and the node's identity
	mux     *mux.Mux
	// groups are the Raft groups this node runs, indexed by their ID;
	// base is group 0, the data group of a one-group cluster and the
	// group whose configuration is the cluster's membership (every node
	// is a member of every group). Fixed once Open returns.
	groups    []*localGroup
	base      *localGroup
	slots     *slotMap        // which group owns each hash slot (slotmap.go)
	maxMemory *atomic.Int64   // maxmemory, shared by the group (enforces) and the server (CONFIG)
	guard     *guard.Guard    // memory, disk and storage verdicts, shared by the node's groups
	raftGate  *raftGate       // closed until a node without Raft state has joined
	fwd       *forward.Client // to the leader
	fwdSrv    *forward.Server // from followers
	router    *router
	members   memberMonitor
	reach     reachState // members that cannot be reached (reach.go)
	srv       *server.Server
	tlsLn     *tlsListener // the client TLS port; nil without one
	tls       *tlscert.Store
	metrics   *nodeMetrics // --metrics-addr; nil without (metrics.go)
	fatal     chan error
	shutdown  chan ShutdownRequest // a client sent SHUTDOWN
	// closeClients stops the client ports and drains their connections
	// (once: a graceful stop does it before the router stops, Close after).
	closeClients func()
	stop         chan struct{} // ends join and promotion
	bg           sync.WaitGroup

	joinTimeout time.Duration // Config.JoinTimeout (join.go)
}

// Open starts a node: the data dir and the start mode decide whether it
// resumes, joins or bootstraps a new one-node cluster (resolveIdentity).
func Open(cfg Config) (n *Node, err error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Bind == "" {
		cfg.Bind = "127.0.0.1"
	}
	log := cfg.Logger
	if cfg.Bootstrap && cfg.Join != "" {
		return nil, errors.New("--bootstrap starts a new cluster and --join joins an existing one: give one of them")
	}
	n = &Node{log: log, dataDir: cfg.DataDir, joinTimeout: cfg.JoinTimeout, fatal: make(chan error, 1), shutdown: make(chan ShutdownRequest, 1), stop: make(chan struct{}), members: memberMonitor{views: map[string]memberView{}}}
	n.maxMemory = new(atomic.Int64)
	n.maxMemory.Store(cfg.MaxMemory)
	var closers []func() error
	defer func() {
		if err != nil {
			for i := len(closers) - 1; i >= 0; i-- {
				_ = closers[i]()
			}
		}
	}()

	// The port first: a start that cannot bind (the default 6379 is often
	// a Redis's) must fail before it has written anything.
	ln, err := net.Listen("tcp", net.JoinHostPort(cfg.Bind, strconv.Itoa(cfg.Port)))
	if err != nil {
		return nil, fmt.Errorf("listening: %w", err)
	}
	closers = append(closers, ln.Close)
	n.Addr = ln.Addr()
	if n.Advertise, err = advertiseAddr(cfg.Advertise, ln.Addr()); err != nil {
		return nil, err
	}
	if n.metrics, err = openMetrics(n, cfg.MetricsAddr); err != nil {
		return nil, err
	}
	closers = append(closers, n.metrics.close)

	created, err := makeDataDir(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	wasEmpty, err := dataDirWasEmpty(cfg.DataDir, cfg.Join != "")
	if err != nil {
		return nil, err
	}
	if wasEmpty {
		// Whatever fails from here on, the next start must find the data
		// dir as this one did: an empty one is new, while a data dir with
		// a node ID and no Raft state is refused as a lost state. (Closers
		// run last to first: this runs after the store has closed.)
		closers = append(closers, func() error {
			if rerr := emptyDataDir(cfg.DataDir, created); rerr != nil {
				log.Error("the failed start could not remove what it wrote to the data dir", "data_dir", cfg.DataDir, "err", rerr)
			}
			return nil
		})
	}

	// The node's guard watches memory and the data dir's disk once for
	// every group, and refuses their writes when the storage fails.
	// (Closures take gd, not n.guard: n is nil once a failed Open returns.)
	gd := guard.Start(guard.Config{MaxMemory: n.maxMemory, MinFreeDisk: minFreeDisk(cfg.MinFreeDisk), DataDir: cfg.DataDir, Logger: log})
	n.guard = gd
	closers = append(closers, func() error { gd.Stop(); return nil })
	n.db, err = raftstore.OpenDB(filepath.Join(cfg.DataDir, raftDir), n.metrics.storeOptions(raftstore.Options{Logger: log, AfterWALSync: cfg.AfterWALSync, OnFatal: func(err error) {
		// The storage engine is dead (a failed WAL write or fsync): new
		// writes of every group get MISCONF at once, and the owner stops
		// the process.
		gd.StorageFailed(err)
		select {
		case n.fatal <- err:
		default:
		}
	}}))
	if err != nil {
		return nil, fmt.Errorf("opening the raft store: %w", err)
	}
	closers = append(closers, n.db.Close)
	baseStore, err := n.db.Group(dataGroup)
	if err != nil {
		return nil, fmt.Errorf("opening the raft store: %w", err)
	}
	who, err := resolveIdentity(cfg.DataDir, wasEmpty, n.db, baseStore, cfg.NodeID,
		startMode{joining: cfg.Join != "", bootstrap: cfg.Bootstrap, peers: len(cfg.ClusterSecret) > 0})
	if err != nil {
		return nil, err
	}
	n.ID = who.id
	if who.lostState {
		log.Warn("this node's Raft state is gone: it joins the cluster again as a new member under its ID, and the leader replaces the old member",
			"node_id", n.ID, "data_dir", cfg.DataDir, "join", cfg.Join)
	}

	if (cfg.TLSPort > 0 || cfg.TLSCluster) && cfg.TLS == nil {
		return nil, errors.New("a TLS port or TLS between nodes needs a certificate and key")
	}
	n.tls = cfg.TLS
	muxCfg := mux.Config{Secret: cfg.ClusterSecret, NodeID: n.ID, Logger: log}
	if cfg.TLSCluster {
		if !cfg.TLS.HasCA() {
			return nil, errors.New("TLS between nodes needs the CA certificate that signs the nodes' certificates")
		}
		muxCfg.TLSServer, muxCfg.TLSClient = cfg.TLS.PeerServer(), cfg.TLS.PeerClient()
	}
	if n.mux, err = mux.New(ln, muxCfg); err != nil {
		return nil, err
	}
	closers = append(closers, n.mux.Close)
	raftLn, err := n.mux.Listen(mux.HeaderRaft)
	if err != nil {
		return nil, err
	}
	namedRaftLn, err := n.mux.Listen(mux.HeaderRaftGroup)
	if err != nil {
		return nil, err
	}
	fwdLn, err := n.mux.Listen(mux.HeaderForward)
	if err != nil {
		return nil, err
	}
	n.raftGate = newRaftGate(!who.rejoin, log)
	streams := newRaftStreams(n.mux, namedRaftLn, log) // ends when the mux closes
	m := n.mux
	fwd := forward.NewClient(func(addr string, timeout time.Duration) (net.Conn, error) {
		return m.Dial(addr, mux.HeaderForward, timeout)
	})
	// A peer that takes longer than this to complete a dial, or to answer
	// a ping, is taken as unreachable (forward/reach.go); on links slow
	// enough to want longer Raft timeouts it follows the heartbeat's.
	fwd.SetReachTimeout(max(forward.DefaultReachTimeout, cfg.HeartbeatTimeout))
	n.fwd = fwd
	closers = append(closers, func() error { fwd.Close(); return nil })
	count, err := resolveGroups(n.db, cfg.Groups, who)
	if err != nil {
		return nil, err
	}
	n.slots = evenSlotMap(count)
	n.db.SetGroupCommit(count > 1) // raftstore/groupcommit.go: the groups share fsyncs
	for id := range count {
		lg, err := n.openGroup(slots.GroupID(id), cfg, groupStart{bootstrap: who.bootstrap, unnamed: raftLn, streams: streams, gate: n.raftGate, slots: n.slots})
		if err != nil {
			return nil, fmt.Errorf("opening raft group %d: %w", id, err)
		}
		n.groups = append(n.groups, lg)
		closers = append(closers, lg.shutdown)
	}
	n.base = n.groups[dataGroup]
	closers = append(closers, func() error { close(n.stop); return nil }) // runs before the groups' Shutdown: ends the Raft dials' waits
	n.fwdSrv = forward.NewServer(n.handler, log)
	routes := make([]*groupRoute, len(n.groups))
	for i, lg := range n.groups {
		routes[i] = newGroupRoute(lg.id, lg.local, lg.group, n.fwd, n.checkJoin, cfg.WriteTimeout, n.stop)
	}
	n.router = newRouter(routes, n.slots)
	n.srv = server.New(server.Config{
		Backend: server.Backend{
			Decider: n.router, Reader: n.router, Administrator: n.router,
			Status: nodeStatus{n}, TestClock: nodeClock{n},
		},
		PeerStats: n.mux.Stats,
		SameSlot:  len(n.groups) > 1,
		Metrics:   n.metrics.serverCommands(),
		NodeID:    n.ID, Addr: ln.Addr().String(), DataDir: cfg.DataDir,
		EnableDebug: cfg.EnableDebug, RedcellVer: cfg.Version, Logger: log,
		RequirePass:     cfg.RequirePass,
		LogLevel:        cfg.LogLevel,
		MaxClients:      cfg.MaxClients,
		IdleTimeout:     cfg.IdleTimeout,
		MaxMemory:       n.maxMemory,
		ProtoMaxBulkLen: cfg.ProtoMaxBulkLen, QueryBufferLimit: cfg.QueryBufferLimit,
		OutputBufferLimit: cfg.OutputBufferLimit,
		ProtectedMode:     cfg.ProtectedMode,
		StartParams:       cfg.ServerParams,
		RewriteConfig:     cfg.RewriteConfig,
		TLSPort:           cfg.TLSPort,
		TLSAuthClients:    cfg.TLSAuthClients.String(),
		TLSCluster:        cfg.TLSCluster,
		Save:              saveSchedule(cfg),
		BusyPoll:          cfg.BusyPoll,
		Quiet:             n.quiet,
		Shutdown: func(handOver bool) {
			select {
			case n.shutdown <- ShutdownRequest{HandOver: handOver}:
			default: // already asked
			}
		},
	})
	n.closeClients = sync.OnceFunc(func() {
		if n.tlsLn != nil {
			n.tlsLn.Close()
		}
		n.srv.Close()
	})
	// Applied writes, whichever node took them, invalidate what tracking
	// clients of this node cache.
	for _, lg := range n.groups {
		lg.fsm.WatchWrites(n.srv.WriteWatcher())
	}
	if cfg.TLSPort > 0 {
		if cfg.TLSAuthClients != tlscert.ClientAuthNo && !cfg.TLS.HasCA() {
			return nil, errors.New("client certificates (tls-auth-clients yes or optional) need the CA certificate that signs them")
		}
		tln, err := net.Listen("tcp", net.JoinHostPort(cfg.Bind, strconv.Itoa(cfg.TLSPort)))
		if err != nil {
			return nil, fmt.Errorf("listening on the TLS port: %w", err)
		}
		n.tlsLn = newTLSListener(tln, cfg.TLS.ClientPort(cfg.TLSAuthClients), log)
		closers = append(closers, n.tlsLn.Close)
		go n.tlsLn.run()
		go func() {
			if err := n.srv.Serve(n.tlsLn); err != nil {
				log.Error("serving TLS clients", "err", err)
			}
		}()
	}
	go n.mux.Run()
	go func() {
		if err := n.srv.Serve(n.mux.Clients()); err != nil {
			log.Error("serving clients", "err", err)
		}
	}()
	go func() {
		if err := n.fwdSrv.Serve(fwdLn); err != nil {
			log.Error("serving forwarded requests", "err", err)
		}
	}()
	n.background(cfg.Join, who.rejoin)
	n.metrics.serve(n)
	warnIfExposed(cfg, n.Addr, log) // before "redcell started", so a reader of the log who sees that line sees this one too
	log.Info("redcell started", "addr", n.Addr.String(), "node_id", n.ID, "data_dir", cfg.DataDir,
		"version", cfg.Version, "peers", len(cfg.ClusterSecret) > 0, "tls_port", cfg.TLSPort, "tls_cluster", cfg.TLSCluster)
	return n, nil
}

// quiet reports whether the node is alone with nothing on the way through
// any group's log (group.Group.Quiet): the client server's busy poll spins
// only then.
func (n *Node) quiet() bool {
	for _, lg := range n.groups {
		if !lg.group.Quiet() {
			return false
		}
	}
	return true
}

// TLSAddr is the bound client TLS address, nil without a TLS port.
func (n *Node) TLSAddr() net.Addr {
	if n.tlsLn == nil {
		return nil
	}
	return n.tlsLn.Addr()
}

// ErrNoTLS is ReloadTLS's answer on a node without TLS.
var ErrNoTLS = errors.New("this node has no TLS configured")

// ReloadTLS reads the certificate, key and CA files again (SIGHUP); the
// new material applies to every later handshake, client and peer. On error
// the old material stays in use.
func (n *Node) ReloadTLS() error {
	if n.tls == nil {
		return ErrNoTLS
	}
	return n.tls.Reload()
}

// ShutdownRequest is a client's SHUTDOWN: HandOver is false for SHUTDOWN
// NOW, which skips the leadership handover (Redis's NOW skips waiting for
// lagging replicas, the step the handover takes the place of).
type ShutdownRequest struct{ HandOver bool }

// ShutdownRequested delivers a client's SHUTDOWN: the owner then calls
// Shutdown(req.HandOver) and exits successfully (the server has already
// taken the snapshot the client asked for).
func (n *Node) ShutdownRequested() <-chan ShutdownRequest { return n.shutdown }

// saveSchedule is CONFIG GET save: Raft's snapshot schedule in Redis's
// "<seconds> <changes>" form (every SnapshotInterval, if at least
// SnapshotThreshold entries were logged since the last snapshot).
func saveSchedule(cfg Config) string {
	def := raft.DefaultConfig()
	every, entries := cmp.Or(cfg.SnapEvery, def.SnapshotInterval), cmp.Or(cfg.SnapThresh, def.SnapshotThreshold)
	return strconv.FormatInt(int64(every.Seconds()), 10) + " " + strconv.FormatUint(entries, 10)
}

// Fatal delivers the error that made the state machine stop; the owner must
// then Close the node.
func (n *Node) Fatal() <-chan error { return n.fatal }

// Shutdown stops the node gracefully (SIGTERM, SIGINT, SHUTDOWN), so that
// no client sees an error reply or a torn one:
//
//  1. With handOver, a leader hands its leadership to the most caught-up
//     voter (group.HandOver: new requests are refused to be retried at the
//     next leader, those it took are committed and answered, then raft
//     transfers and the node waits to know the new leader). A follower, or
//     a leader alone, has nothing to hand over.
//  2. The client ports drain: no connection is accepted any more (a client
//     that dials is closed at once and goes to its next node), and every
//     connection answers what it has read — through the router, which
//     still forwards to the new leader, waiting for one within the write
//     timeout — then closes between two requests.
//  3. Close: raft, the forwarding server (which answers the calls it
//     holds), the transport, the port and the store.
//
// A handover that fails (no voter caught up within its bound) is logged and
// the stop goes on: the cluster then elects as it would after a crash.
func (n *Node) Shutdown(handOver bool) error {
	if handOver {
		for _, lg := range n.groups {
			switch err := lg.group.HandOver(); {
			case err == nil, errors.Is(err, group.ErrNotLeader), group.IsNoVoterToHandTo(err):
			default:
				n.log.Warn("stopping without a leadership handover", "group", lg.id, "err", err)
			}
		}
	}
	n.closeClients()
	return n.Close()
}

// Close shuts down in dependency order: clients (each waits for its
// answer), raft, the transport and the shared port, then the store, so
// nothing is torn. Requests still waiting for a leader are answered at once
// (TRYAGAIN) rather than through their write timeout: Close is the quick
// stop (after a fatal error, in tests); Shutdown is the graceful one.
func (n *Node) Close() error {
	close(n.stop)
	n.bg.Wait()
	n.metrics.close() // no scrape reads a node being taken down
	n.closeClients()
	n.fwd.Close()
	var err error
	for _, lg := range n.groups {
		err = errors.Join(err, lg.group.Shutdown())
	}
	n.fwdSrv.Close()
	for _, lg := range n.groups {
		lg.transport.Close()
	}
	n.mux.Close()
	err = errors.Join(err, n.db.Close())
	n.guard.Stop()
	return err
}

// background starts the membership work, the probes of the other members
// (reach.go) and, with several groups, the spreading of their leaders
// (balance.go): a node without Raft state joins
// every group (and only then opens its Raft gate, which covers them all);
// every node that finds itself a non-voter of a group asks for promotion
// once it has caught up there. A join that fails stops the node (Fatal).
func (n *Node) background(join string, rejoin bool) {
	n.bg.Add(3)
	go func() {
		defer n.bg.Done()
		n.pollMembers(n.stop)
	}()
	go func() {
		defer n.bg.Done()
		n.probePeers(n.stop) // reach.go
	}()
	if len(n.groups) > 1 {
		n.bg.Add(1)
		go func() {
			defer n.bg.Done()
			n.balanceLeaders(n.stop) // balance.go
		}()
	}
	go func() {
		defer n.bg.Done()
		if rejoin {
			for _, lg := range n.groups {
				if err := n.join(join, lg.id, n.stop); err != nil {
					select {
					case <-n.stop:
					case n.fatal <- err:
					default:
					}
					return
				}
			}
			n.raftGate.open()
		}
		var wg sync.WaitGroup
		for _, lg := range n.groups {
			wg.Add(1)
			go func() {
				defer wg.Done()
				n.promoteWhenCaughtUp(lg, n.stop)
			}()
		}
		wg.Wait()
	}()
}

func advertiseAddr(advertise string, bound net.Addr) (net.Addr, error) {
	s := advertise
	if s == "" {
		host, port, _ := net.SplitHostPort(bound.String())
		if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
			host = "127.0.0.1"
		}
		s = net.JoinHostPort(host, port)
	}
	a, err := net.ResolveTCPAddr("tcp", s)
	if err != nil {
		return nil, fmt.Errorf("--advertise %q: %w", s, err)
	}
	return a, nil
}

// minFreeDisk turns Config.MinFreeDisk into the guard's reserve (0: off).
func minFreeDisk(v int64) uint64 {
	switch {
	case v < 0:
		return 0
	case v == 0:
		return guard.DefaultMinFreeDisk
	}
	return uint64(v)
}

// warnIfExposed logs one warning at start when the node listens beyond the
// loopback interface with neither a client password nor a cluster secret:
// such a node was most likely meant to be reached from other hosts (as a
// cluster member or a shared server), and nothing it was given protects it
// there. What is exposed depends on protected mode, which the warning
// states rather than changes: with it (the default) other hosts' clients
// are answered -DENIED and no peer is admitted, so the node serves only
// this host until someone turns protected mode off; without it, every
// client that reaches the port is served.
func warnIfExposed(cfg Config, addr net.Addr, log *slog.Logger) {
	if isLoopbackBind(cfg.Bind) || cfg.RequirePass != "" || len(cfg.ClusterSecret) > 0 {
		return
	}
	exposed := "every client that reaches this port is served without a password (--protected-mode no): anyone on the network can read, reset and flush every limiter"
	if cfg.ProtectedMode {
		exposed = "protected mode answers clients from other hosts -DENIED and no peer is admitted, so only this host is served; " +
			"CONFIG SET protected-mode no from this host would serve every client that reaches the port, without a password"
	}
	log.Warn("listening beyond loopback with neither a client password nor a cluster secret",
		"bind", cfg.Bind, "addr", addr.String(), "exposed", exposed,
		"fix", "--requirepass-file (clients must AUTH), --cluster-secret-file (peers must prove it; needed for a cluster), or --bind 127.0.0.1 to serve this host only")
}

// isLoopbackBind reports whether bind (--bind) only reaches this host.
func isLoopbackBind(bind string) bool {
	if bind == "localhost" {
		return true
	}
	ip := net.ParseIP(bind)
	return ip != nil && ip.IsLoopback()
}
