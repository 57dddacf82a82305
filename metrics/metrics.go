// Package metrics is a node's Prometheus metrics and its health endpoints:
// /metrics, /healthz and /readyz over plain HTTP on --metrics-addr. It owns
// its own registry (never the global default): the Go and process
// collectors, the histograms the storage and the state machine feed
// (ObserveWALSync, ObserveApply, ObserveSnapshot), what the server records
// per command (Commands), and a collector that reads the node's INFO
// figures (Status) at scrape time, so most series cost nothing between
// scrapes. It imports none of its callers: package node hands it a Status
// and a few functions. See DESIGN.md.
package metrics

import (
	"runtime"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/redcell/redcell/nodeinfo"
)

// Status is what the node reports about itself: the figures INFO prints.
// Its methods are called from the HTTP server's goroutines, concurrently,
// and return promptly (a scrape, like INFO, never waits on apply).
type Status interface {
	Loading() bool
	Raft() nodeinfo.Raft
	Memory() nodeinfo.Memory
	Persistence() nodeinfo.Persistence
	Keyspace() nodeinfo.Keyspace
	// Replication is the cluster's view; on the leader each member's lag.
	Replication() *nodeinfo.Replication
}

// Config is what a node hands its metrics. Status and the functions are
// read only at scrape time and by /readyz, never before Serve, so they may
// reach parts of the node that are built after New.
type Config struct {
	Status Status
	// Clients is the number of connected clients (INFO's
	// connected_clients).
	Clients func() int
	// BusyPolling is server.Server.BusyPolling: whether answered
	// connections may spin for their clients' next requests.
	BusyPolling func() bool
	// MaxMemory is maxmemory in bytes (0: none).
	MaxMemory func() int64
	// ReadyLag is how far this node's applied index may be behind the
	// commit index it knows for /readyz to answer 200 (default
	// DefaultReadyLag).
	ReadyLag uint64
}

// DefaultReadyLag is Config.ReadyLag's default: a follower applies in
// batches of up to 64 entries (--max-append-entries), and a loaded one is
// a few batches behind what it has heard is committed; a node further
// behind than this is catching up, not serving current state.
const DefaultReadyLag = 256

// Metrics is one node's registry. Its Observe methods are safe from any
// goroutine and allocation-free.
type Metrics struct {
	cfg      Config
	reg      *prometheus.Registry
	commands *Commands

	walSync, apply, snapshot prometheus.Histogram
}

// New builds a node's registry with cmds (the server's per-command
// figures) and the node's collector.
func New(cfg Config, cmds *Commands) *Metrics {
	if cfg.ReadyLag == 0 {
		cfg.ReadyLag = DefaultReadyLag
	}
	m := &Metrics{cfg: cfg, reg: prometheus.NewRegistry(), commands: cmds}
	m.walSync = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "redcell_fsync_duration_seconds",
		Help:    "Time of each sync of the log store's write-ahead log: what the disk costs an append.",
		Buckets: prometheus.ExponentialBuckets(50e-6, 2, 16), // 50µs .. 1.6s
	})
	m.apply = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "redcell_apply_duration_seconds",
		Help:    "Time the state machine took to apply each batch of committed log entries.",
		Buckets: prometheus.ExponentialBuckets(10e-6, 2, 18), // 10µs .. 1.3s
	})
	m.snapshot = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "redcell_snapshot_duration_seconds",
		Help:    "Time to write each snapshot to the store, taken here or installed from the leader.",
		Buckets: prometheus.ExponentialBuckets(1e-3, 2, 16), // 1ms .. 33s
	})
	m.reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.walSync, m.apply, m.snapshot,
		nodeCollector{m},
	)
	if cmds != nil {
		m.reg.MustRegister(cmds)
	}
	return m
}

// Registry is the registry /metrics serves (tests gather it directly).
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// ObserveWALSync records one sync of the log store's WAL. Called from the
// storage engine's WAL goroutine on every sync: it must stay cheap.
func (m *Metrics) ObserveWALSync(d time.Duration) { m.walSync.Observe(d.Seconds()) }

// ObserveApply records the state machine's apply of one batch of entries.
// Called from raft's FSM goroutine.
func (m *Metrics) ObserveApply(d time.Duration) { m.apply.Observe(d.Seconds()) }

// ObserveSnapshot records one snapshot written to the store (its size is
// read from the store at scrape time). Called from raft's snapshot
// goroutine, or its main goroutine while installing the leader's.
func (m *Metrics) ObserveSnapshot(_ int64, d time.Duration) { m.snapshot.Observe(d.Seconds()) }

// nodeCollector reads the node's figures at scrape time.
type nodeCollector struct{ m *Metrics }

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, labels, nil)
}

var (
	roleDesc        = desc("redcell_raft_role", "1 for this node's Raft role in the group (leader, follower, candidate, shutdown), 0 for the others.", "group", "role")
	termDesc        = desc("redcell_raft_term", "This node's current Raft term in the group.", "group")
	commitDesc      = desc("redcell_raft_commit_index", "The commit index this node knows of the group.", "group")
	appliedDesc     = desc("redcell_raft_applied_index", "The index of the group's last entry this node's state machine applied.", "group")
	lastLogDesc     = desc("redcell_raft_last_log_index", "The index of the last entry in this node's log.")
	leaderDesc      = desc("redcell_raft_leader_known", "1 when this node knows the group's leader (itself included).", "group")
	votersDesc      = desc("redcell_raft_voters", "Voters in the configuration.")
	peerLagDesc     = desc("redcell_raft_peer_lag_entries", "On the leader: entries each other member has yet to apply (its applied index against the leader's last log index, sampled every second).", "peer")
	peerContactDesc = desc("redcell_raft_peer_last_contact_seconds", "On the leader: time since each other member last answered the leader's status poll.", "peer")
	batchDesc       = desc("redcell_batch_requests", "Requests per log entry this node proposed as leader (the buckets are powers of two).")
	mergingDesc     = desc("redcell_batch_merging", "1 while the batcher waits for every client in play before it cuts an entry (the merge of cohorts on a slow disk).")
	inPlayDesc      = desc("redcell_batch_clients_in_play", "The clients in play the batcher's merge waits for: the recent high-water mark of the batches in the group.")
	busyPollDesc    = desc("redcell_busy_poll_active", "1 when a connection that has answered may spin for its client's next request (a budget, more than one CPU, and the last spins paid), 0 when it parks at once.")
	walDirectDesc   = desc("redcell_wal_sync_direct", "1 when the log's next WAL sync is direct (the node alone, no slow sync has suspended them), 0 when ordinary.")
	snapBytesDesc   = desc("redcell_snapshot_last_bytes", "Size of the newest snapshot's data.")
	snapIndexDesc   = desc("redcell_snapshot_last_index", "Log index of the newest snapshot.")
	logBytesDesc    = desc("redcell_log_bytes_since_snapshot", "Log bytes appended since the newest snapshot: what a restart replays.")
	keysDesc        = desc("redcell_keys", "Live keys in the keyspace (INFO keyspace's keys).")
	expiresDesc     = desc("redcell_keys_with_expiry", "Live keys with an expiry.")
	usedMemDesc     = desc("redcell_memory_used_bytes", "Go heap in use (INFO memory's used_memory).")
	sysMemDesc      = desc("redcell_memory_sys_bytes", "Memory obtained from the OS (INFO memory's used_memory_sys).")
	keyspaceMemDesc = desc("redcell_memory_keyspace_bytes", "The keyspace's footprint by part (INFO memory's keyspace_*_bytes).", "part")
	maxMemDesc      = desc("redcell_maxmemory_bytes", "maxmemory (0: none).")
	clientsDesc     = desc("redcell_connected_clients", "Connected clients.")
	loadingDesc     = desc("redcell_loading", "1 while the node loads its state after a restart.")
	readyDesc       = desc("redcell_ready", "1 when /readyz answers 200.")
)

var roles = [...]string{"leader", "follower", "candidate", "shutdown"}

// Describe implements prometheus.Collector.
func (nodeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{roleDesc, termDesc, commitDesc, appliedDesc, lastLogDesc, leaderDesc, votersDesc,
		peerLagDesc, peerContactDesc, batchDesc, mergingDesc, inPlayDesc, walDirectDesc, busyPollDesc, snapBytesDesc, snapIndexDesc, logBytesDesc, keysDesc, expiresDesc,
		usedMemDesc, sysMemDesc, keyspaceMemDesc, maxMemDesc, clientsDesc, loadingDesc, readyDesc} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c nodeCollector) Collect(ch chan<- prometheus.Metric) {
	cfg := c.m.cfg
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	loading := cfg.Status.Loading()
	r := cfg.Status.Raft()
	// Each group's standing, labelled with its ID (one group: "0"); the
	// other figures are group 0's or the node's.
	groups := r.Groups
	if len(groups) == 0 {
		groups = []nodeinfo.GroupRaft{{State: r.State, Term: r.Term, LeaderID: r.LeaderID, CommitIndex: r.CommitIndex, AppliedIndex: r.AppliedIndex}}
	}
	for _, g := range groups {
		id := strconv.FormatUint(uint64(g.ID), 10)
		for _, role := range roles {
			gauge(roleDesc, boolFloat(g.State == role), id, role)
		}
		gauge(termDesc, float64(g.Term), id)
		gauge(commitDesc, float64(g.CommitIndex), id)
		gauge(appliedDesc, float64(g.AppliedIndex), id)
		gauge(leaderDesc, boolFloat(g.LeaderID != ""), id)
	}
	gauge(lastLogDesc, float64(r.LastLogIndex))
	gauge(votersDesc, float64(r.Voters))
	gauge(snapIndexDesc, float64(r.LastSnapshotIndex))
	ch <- batchHistogram(r)
	gauge(mergingDesc, boolFloat(r.BatchMerging))
	gauge(inPlayDesc, float64(r.ClientsInPlay))
	if rep := cfg.Status.Replication(); rep != nil && rep.Leading {
		for _, mb := range rep.Members {
			if mb.Self || mb.Contact == nil || mb.Contact.Lag < 0 {
				continue
			}
			gauge(peerLagDesc, float64(mb.Contact.Lag), mb.ID)
			gauge(peerContactDesc, float64(mb.Contact.LastContactMS)/1e3, mb.ID)
		}
	}
	if p := cfg.Status.Persistence(); p.Log != nil {
		gauge(snapBytesDesc, float64(p.Log.LastSnapshotBytes))
		gauge(logBytesDesc, float64(p.Log.BytesSinceSnapshot))
		gauge(walDirectDesc, boolFloat(p.Log.WALSyncDirect))
	}
	ks := cfg.Status.Keyspace()
	gauge(keysDesc, float64(ks.Keys))
	gauge(expiresDesc, float64(ks.Expires))
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms) // as INFO memory does
	gauge(usedMemDesc, float64(ms.HeapAlloc))
	gauge(sysMemDesc, float64(ms.Sys))
	mem := cfg.Status.Memory()
	gauge(keyspaceMemDesc, float64(mem.KeyspaceIndexBytes), "index")
	gauge(keyspaceMemDesc, float64(mem.KeyspaceEntryBytes), "entry")
	gauge(keyspaceMemDesc, float64(mem.KeyspaceArenaBytes), "arena")
	if cfg.MaxMemory != nil {
		gauge(maxMemDesc, float64(cfg.MaxMemory()))
	}
	if cfg.Clients != nil {
		gauge(clientsDesc, float64(cfg.Clients()))
	}
	if cfg.BusyPolling != nil {
		gauge(busyPollDesc, boolFloat(cfg.BusyPolling()))
	}
	gauge(loadingDesc, boolFloat(loading))
	ready, _ := Readiness(loading, r, cfg.ReadyLag)
	gauge(readyDesc, boolFloat(ready))
}

// batchHistogram is INFO raft's raft_entry_ops_histogram as a Prometheus
// histogram: EntryOps[i] counts entries of 2^i to 2^(i+1)-1 requests, so
// bucket i's upper bound is 2^(i+1)-1; the last of EntryOps is open-ended.
func batchHistogram(r nodeinfo.Raft) prometheus.Metric {
	buckets := make(map[float64]uint64, len(r.EntryOps))
	var n uint64
	for i, c := range r.EntryOps {
		n += c
		if i < len(r.EntryOps)-1 {
			buckets[float64(uint64(1)<<(i+1)-1)] = n
		}
	}
	return prometheus.MustNewConstHistogram(batchDesc, n, float64(r.OpsProposed), buckets)
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
