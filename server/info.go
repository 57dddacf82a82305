package server

import (
	"fmt"
	"net"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/redcell/redcell/commands"
)

// infoSections are INFO's sections in the order it writes them: Redis
// 7.0's, with Redcell's raft after replication.
var infoSections = []string{"server", "clients", "memory", "persistence", "stats", "replication", "raft", "cpu",
	"commandstats", "errorstats", "latencystats", "cluster", "keyspace"}

// infoNotDefault are the sections INFO writes only when asked for by name,
// "all" or "everything", as in Redis 7.0.
var infoNotDefault = map[string]bool{"commandstats": true, "latencystats": true}

// INFO [section [section ...]]
// Sections: server, clients, memory, persistence, stats, replication, raft,
// cpu, commandstats, errorstats, latencystats, cluster, keyspace; "default" (all but
// commandstats and latencystats, also with no argument), "all" and
// "everything" as in Redis. Unknown sections answer nothing (ioredis and
// others only need INFO to answer, and loading:0).
func cmdInfo(c *conn, _ *commands.Spec, args [][]byte) {
	all := infoSections
	want := map[string]bool{}
	if len(args) == 1 {
		for _, s := range all {
			want[s] = !infoNotDefault[s]
		}
	}
	for _, a := range args[1:] {
		s := strings.ToLower(string(a))
		switch s {
		case "default":
			for _, s := range all {
				want[s] = want[s] || !infoNotDefault[s]
			}
		case "all", "everything":
			for _, s := range all {
				want[s] = true
			}
		default:
			want[s] = true
		}
	}
	var b strings.Builder
	for _, s := range all {
		if !want[s] {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\r\n")
		}
		c.s.infoSection(&b, s)
	}
	c.w.Verbatim(b.String())
}

func (s *Server) infoSection(b *strings.Builder, section string) {
	kv := func(k string, v any) { fmt.Fprintf(b, "%s:%v\r\n", k, v) }
	now := time.Now()
	switch section {
	case "server":
		b.WriteString("# Server\r\n")
		host, port := splitHostPort(s.cfg.Addr)
		_ = host
		kv("redis_version", Version)
		kv("redcell_version", s.cfg.RedcellVer)
		kv("redis_mode", "standalone")
		kv("os", runtime.GOOS+" "+runtime.GOARCH)
		kv("arch_bits", 64)
		kv("go_version", runtime.Version())
		kv("gomaxprocs", runtime.GOMAXPROCS(0))
		// Not a Redis field: leak checks (the soak test) watch it level off.
		kv("goroutines", runtime.NumGoroutine())
		kv("process_id", os.Getpid())
		kv("run_id", s.cfg.NodeID)
		kv("node_id", s.cfg.NodeID)
		kv("tcp_port", port)
		kv("server_time_usec", now.UnixMicro())
		kv("uptime_in_seconds", int64(now.Sub(s.started).Seconds()))
		kv("uptime_in_days", int64(now.Sub(s.started).Hours()/24))
		kv("data_dir", s.cfg.DataDir)
	case "clients":
		b.WriteString("# Clients\r\n")
		kv("connected_clients", s.clientCount())
		kv("blocked_clients", 0)
		kv("maxclients", s.params.maxClients.Load())
		trackingClients, _, _, _ := s.trk.stats()
		kv("tracking_clients", trackingClients)
	case "memory":
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		b.WriteString("# Memory\r\n")
		kv("used_memory", ms.HeapAlloc)
		kv("used_memory_rss", readRSS())
		kv("used_memory_sys", ms.Sys)
		kv("maxmemory", s.maxMemory())
		kv("maxmemory_policy", "noeviction")
		kv("gc_cycles", ms.NumGC)
		s.cfg.Backend.Memory().Fields(kv)
	case "persistence":
		b.WriteString("# Persistence\r\n")
		// ioredis's ready check waits for loading:0 before it sends
		// anything; the backend adds loading_* details while loading.
		loading := 0
		if s.cfg.Backend.Loading() {
			loading = 1
		}
		kv("loading", loading)
		kv("async_loading", 0)
		// Every decision is in the fsynced Raft log (appendonly yes,
		// appendfsync always); "saves" are Raft snapshots (persistence.go).
		kv("aof_enabled", 1)
		kv("rdb_bgsave_in_progress", boolInt(s.persist.saving.Load()))
		kv("rdb_last_save_time", s.lastSave())
		kv("rdb_last_bgsave_status", map[bool]string{false: "ok", true: "err"}[s.persist.lastFail.Load()])
		kv("durability", "raft-log-fsync-per-entry")
		s.cfg.Backend.Persistence().Fields(kv)
	case "stats":
		b.WriteString("# Stats\r\n")
		kv("total_connections_received", s.stats.connsReceived.Load())
		kv("total_commands_processed", s.stats.commands.Load())
		kv("total_error_replies", s.stats.errors.Load())
		kv("rejected_connections", s.stats.rejected.Load())
		kv("total_net_output_bytes", s.stats.netOut.Load())
		rv := s.rates.view()
		kv("instantaneous_ops_per_sec", int64(rv.OpsPerSec))
		kv("instantaneous_output_kbps", fmt.Sprintf("%.2f", rv.NetOutKbps))
		_, tkeys, titems, tprefixes := s.trk.stats()
		kv("tracking_total_keys", tkeys)
		kv("tracking_total_items", titems)
		kv("tracking_total_prefixes", tprefixes)
		// Redcell's: the busy poll for lone clients' next requests
		// (busypoll_linux.go).
		var spins, hits, pauses uint64
		if s.busy != nil {
			spins, hits, pauses = s.busy.spins.Load(), s.busy.hits.Load(), s.busy.pauses.Load()
		}
		kv("busy_poll_usec", s.cfg.BusyPoll.Microseconds())
		kv("busy_poll_active", boolInt(s.BusyPolling()))
		kv("busy_polls", spins)
		kv("busy_poll_hits", hits)
		kv("busy_poll_pauses", pauses)
		if s.cfg.PeerStats != nil {
			ps := s.cfg.PeerStats()
			kv("peer_connections_accepted", ps.PeersAccepted)
			kv("peer_connections_rejected", ps.PeersRejected)
		}
	case "replication":
		b.WriteString("# Replication\r\n")
		role := "master"
		if !s.cfg.Backend.Leading() {
			role = "slave"
		}
		kv("role", role)
		// The backend's view of the cluster: leader, members, their lag.
		if r := s.cfg.Backend.Replication(); r != nil {
			r.Fields(kv)
		}
	case "raft":
		b.WriteString("# Raft\r\n")
		// The backend's fields (raft_*, fsm_*), then the rates the server
		// samples from its Counters.
		s.cfg.Backend.Raft().Fields(kv)
		rv := s.rates.view()
		kv("raft_instantaneous_decisions_per_sec", int64(rv.DecisionsPerSec))
		kv("raft_instantaneous_entries_per_sec", int64(rv.EntriesPerSec))
		kv("raft_instantaneous_fsyncs_per_sec", int64(rv.FsyncsPerSec))
		kv("raft_instantaneous_ops_per_entry", fmt.Sprintf("%.2f", rv.OpsPerEntry))
	case "cpu":
		b.WriteString("# CPU\r\n")
		cpuFields(kv) // rusage_unix.go
	case "commandstats":
		b.WriteString("# Commandstats\r\n")
		s.writeCommandStats(b) // cmdstats.go
	case "errorstats":
		b.WriteString("# Errorstats\r\n")
		s.diag.errs.write(b)
	case "latencystats":
		b.WriteString("# Latencystats\r\n")
		s.writeLatencyStats(b)
	case "cluster":
		// Redis Cluster's one field: cluster clients (older redis-py)
		// read it to tell a cluster from a standalone server. Redcell
		// always speaks the cluster protocol (handlers_cluster.go).
		b.WriteString("# Cluster\r\n")
		kv("cluster_enabled", 1)
	case "keyspace":
		b.WriteString("# Keyspace\r\n")
		s.cfg.Backend.Keyspace().Fields(kv) // db0:keys=...
	}
}

// readRSS returns the resident set size in bytes (Linux), 0 elsewhere.
func readRSS() int64 {
	data, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	var size, rss int64
	fmt.Sscan(string(data), &size, &rss)
	return rss * int64(os.Getpagesize())
}

func splitHostPort(addr string) (string, string) {
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		return addr, ""
	}
	return h, p
}

func boolInt(v bool) int {
	if v {
		return 1
	}
	return 0
}
