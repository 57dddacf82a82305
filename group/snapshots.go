package group

import (
	"time"

	"github.com/redcell/redcell/raftstore"
)

// Snapshots by log bytes. Raft snapshots by entry count (SnapshotThreshold),
// but what a restart costs is the bytes of log it replays, and an entry holds
// anything from one request (about 40 bytes) to thousands (16 KiB and more).
// So the group also snapshots whenever the log written since the newest
// snapshot (raftstore's LogBytesSinceSnapshot) reaches
//
//	max(SnapshotLogBytes, 2 × size of the newest snapshot)
//
// The first term bounds the replay after a restart; the second keeps a large
// keyspace from being snapshotted back to back: a snapshot costs about as
// much full-load throughput per byte as replaying the log costs per byte, so
// snapshots write at most half as much as the log does. The figures behind
// both are in DESIGN.md.
//
// After a snapshot raft keeps TrailingLogs entries behind it for followers
// that lag a little. The group sets TrailingLogs before each snapshot it
// takes so that those entries hold about as many bytes as a snapshot (at
// least SnapshotLogBytes/4): a follower further behind than that is cheaper
// to catch up with a snapshot than with the log. The count stays between
// minTrailingLogs and the configured TrailingLogs.

// DefaultSnapshotLogBytes is the default of Config.SnapshotLogBytes (and of
// redcell's --snapshot-log-bytes).
const DefaultSnapshotLogBytes = 64 << 20

// minTrailingLogs is the fewest entries kept behind a snapshot: enough for
// a follower's ordinary lag (a few hundred entries under full load).
const minTrailingLogs = 1024

// runSnapshotTrigger snapshots when the log since the newest snapshot
// reaches the limit. It wakes on every append to the log store (no polling)
// and does nothing while the node is loading.
func (g *Group) runSnapshotTrigger(st *raftstore.Store) {
	defer g.wg.Done()
	wake := make(chan struct{}, 1)
	st.NotifyAppends(wake)
	defer st.NotifyAppends(nil)
	prev := st.Stats() // for the average entry size since the last snapshot
	var retryAt uint64 // after a failure: BytesAppended to wait for
	for {
		select {
		case <-g.stopCh:
			return
		case <-wake:
		}
		s := st.Stats()
		limit := snapshotLimit(s, g.cfg.SnapshotLogBytes)
		if s.LogBytesSinceSnapshot < limit || s.BytesAppended < retryAt || g.Loading() {
			continue
		}
		g.tuneTrailingLogs(prev, s)
		prev = s
		start := time.Now()
		f := g.raft.Snapshot()
		if err := f.Error(); err != nil {
			if g.stopping.Load() {
				return
			}
			retryAt = s.BytesAppended + limit/4
			g.log.Warn("snapshot by log bytes failed; retrying after more log", "log_bytes", s.LogBytesSinceSnapshot, "err", err)
			continue
		}
		retryAt = 0
		meta, rc, err := f.Open()
		if err == nil {
			rc.Close()
			g.log.Info("snapshot by log bytes", "index", meta.Index, "log_bytes", s.LogBytesSinceSnapshot,
				"snapshot_bytes", meta.Size, "took", time.Since(start).Round(time.Millisecond),
				"trailing_logs", g.raft.ReloadableConfig().TrailingLogs)
		}
	}
}

// snapshotLimit is how many bytes of log since the newest snapshot call for
// the next: the configured bytes, or twice the newest snapshot's size if
// larger.
func snapshotLimit(s raftstore.Stats, logBytes uint64) uint64 {
	return max(logBytes, 2*s.LastSnapshotBytes)
}

// trailingLogs is the TrailingLogs that keeps about max(snapshot size,
// logBytes/4) bytes of log behind a snapshot, for entries of avg bytes,
// between minTrailingLogs (or most, if smaller) and most.
func trailingLogs(snapshotBytes, logBytes, avg, most uint64) uint64 {
	want := max(snapshotBytes, logBytes/4) / max(avg, 1)
	return min(max(want, min(minTrailingLogs, most)), most)
}

// tuneTrailingLogs sets raft's TrailingLogs so that the entries kept behind
// the next snapshot hold about max(snapshot size, SnapshotLogBytes/4) bytes,
// at the average entry size of the log written since prev.
func (g *Group) tuneTrailingLogs(prev, now raftstore.Stats) {
	entries := now.EntriesAppended - prev.EntriesAppended
	if entries == 0 {
		return
	}
	avg := (now.BytesAppended - prev.BytesAppended) / entries
	n := trailingLogs(now.LastSnapshotBytes, g.cfg.SnapshotLogBytes, avg, g.maxTrailingLogs)
	rc := g.raft.ReloadableConfig()
	if rc.TrailingLogs == n {
		return
	}
	rc.TrailingLogs = n
	if err := g.raft.ReloadConfig(rc); err != nil {
		g.log.Warn("setting raft's TrailingLogs failed", "trailing_logs", n, "err", err)
	}
}
