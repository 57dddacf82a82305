package group

import (
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/redcell/redcell/raftstore"
)

// Writing past SnapshotLogBytes on a real single-node group (Pebble on
// disk, hashicorp/raft) takes a snapshot and compacts the log behind it,
// with raft's own entry-count trigger out of reach; the snapshot is a
// complete state, which a restart loads.
func Test_Snapshots_ByLogBytes(t *testing.T) {
	const logBytes = 64 << 10
	n := newTestNode(t, "node1")
	n.clock.Set(frozenAt)
	n.open(t, func(c *Config) {
		c.SnapshotLogBytes = logBytes
		c.Tune = func(rc *raft.Config) {
			fastTimeouts(rc)
			rc.SnapshotThreshold = 1 << 40 // never by count
			rc.SnapshotInterval = time.Hour
			rc.TrailingLogs = 16
		}
	})
	waitFor(t, 10*time.Second, "a ready leader", n.g.Ready)

	prefix := strings.Repeat("x", 40)
	// Below the threshold nothing happens.
	writeKeys(t, n.g, prefix+"a", 10, 20)
	if st := n.store.Stats(); st.LogBytesSinceSnapshot >= logBytes || st.SnapshotsCompleted != 0 {
		t.Fatalf("after a few entries: %+v", st)
	}
	first0, _ := n.store.FirstIndex()

	// Past it: a snapshot, and the log compacted to TrailingLogs entries.
	writeKeys(t, n.g, prefix+"b", 190, 20)
	if got := n.store.Stats().BytesAppended; got < logBytes {
		t.Fatalf("wrote only %d bytes of log", got)
	}
	// The first snapshot may start while the writes go on (on a slow
	// machine, at a third of them); the appends meanwhile call for another,
	// so wait until the trigger has caught up with the last write.
	waitFor(t, 10*time.Second, "a snapshot, a compacted log and less than the limit since", func() bool {
		first, _ := n.store.FirstIndex()
		st := n.store.Stats()
		return st.SnapshotsCompleted >= 1 && first > first0 && st.LogBytesSinceSnapshot < snapshotLimit(st, logBytes)
	})
	st := n.store.Stats()
	metas, err := n.store.SnapshotStore(2).List()
	if err != nil || len(metas) == 0 {
		t.Fatalf("List: %v, %v", metas, err)
	}
	first, _ := n.store.FirstIndex()
	last, _ := n.store.LastIndex()
	t.Logf("snapshot at %d (%d bytes), log %d..%d, %d bytes since the snapshot", metas[0].Index, metas[0].Size, first, last, st.LogBytesSinceSnapshot)
	if first > metas[0].Index+1 {
		t.Errorf("log starts at %d: compacted past the snapshot at %d", first, metas[0].Index)
	}
	// Raft keeps TrailingLogs entries behind its last entry (not behind
	// the snapshot) when it compacts.
	if rc := n.g.raft.ReloadableConfig(); rc.TrailingLogs != 16 {
		t.Errorf("TrailingLogs = %d, want the configured 16 (below the 1024 floor)", rc.TrailingLogs)
	}
	if limit := snapshotLimit(st, logBytes); st.LogBytesSinceSnapshot >= limit || st.LastSnapshotBytes != uint64(metas[0].Size) {
		t.Errorf("after the snapshots: %+v (limit %d)", st, limit)
	}

	// The snapshot and the log after it are the whole state.
	n.restart(t, func(c *Config) { c.SnapshotLogBytes = logBytes })
	waitFor(t, 10*time.Second, "a ready leader after the restart", n.g.Ready)
	if got := dbsize(t, n.g); got != 200*20 {
		t.Fatalf("DBSIZE after the restart = %d, want %d", got, 200*20)
	}
}

// The limit is the configured bytes or twice the newest snapshot's size,
// whichever is larger, so a keyspace larger than the limit is not snapshotted back to
// back; TrailingLogs keeps about a snapshot's worth of bytes (at least a
// quarter of the limit), between 1024 entries and the configured maximum.
func Test_Snapshots_LimitsFollowTheSnapshotSize(t *testing.T) {
	for _, c := range []struct {
		snapshot, logBytes, want uint64
	}{
		{0, 64 << 20, 64 << 20},
		{30 << 20, 64 << 20, 64 << 20},
		{38 << 20, 64 << 20, 76 << 20},
		{400 << 20, 64 << 20, 800 << 20},
	} {
		if got := snapshotLimit(raftstore.Stats{LastSnapshotBytes: c.snapshot}, c.logBytes); got != c.want {
			t.Errorf("snapshotLimit(snapshot %d, limit %d) = %d, want %d", c.snapshot, c.logBytes, got, c.want)
		}
	}
	for _, c := range []struct {
		snapshot, logBytes, avg, most, want uint64
	}{
		{38 << 20, 64 << 20, 16 << 10, 10240, 2432},  // 1M keys, full load: 38 MiB of 16 KiB entries
		{38 << 20, 64 << 20, 4 << 10, 10240, 9728},   // smaller entries
		{38 << 20, 64 << 20, 40, 10240, 10240},       // idle: one request an entry
		{100 << 10, 64 << 20, 16 << 10, 10240, 1024}, // small keyspace: a quarter of the limit
		{1 << 30, 64 << 20, 16 << 10, 10240, 10240},  // huge keyspace: the configured maximum
		{100 << 10, 64 << 20, 16 << 10, 16, 16},      // a maximum below 1024 wins
		{100 << 10, 64 << 20, 0, 10240, 10240},       // no entries measured
	} {
		if got := trailingLogs(c.snapshot, c.logBytes, c.avg, c.most); got != c.want {
			t.Errorf("trailingLogs(%d, %d, %d, %d) = %d, want %d", c.snapshot, c.logBytes, c.avg, c.most, got, c.want)
		}
	}
}
