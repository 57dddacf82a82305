package group

import (
	"errors"
	"io"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// Loading: after a restart a node rebuilds its state from its snapshot and
// its log, and until it has, it answers LOADING (as Redis does while it loads
// its dataset) instead of making clients wait. The rule, in full in
// DESIGN.md ("Loading"):
//
// A node that starts with Raft state is loading from Open until its state
// machine holds every committed command of the log it started with. With T
// the log's last index at Open, that is the first moment at which one of
// these holds:
//
//  1. the startup snapshot is restored, and no command entry lies between
//     the last entry the state machine applied and min(T, C), where C is the
//     commit index this node has learned since it started (from its leader,
//     or as leader); before C is known (C == 0), min(T, C) is T;
//  2. this node is a ready leader (its barrier applied everything committed
//     before its term, which includes every committed entry it holds);
//  3. the state machine restored a snapshot sent by the leader since Open
//     (the leader sends one only when this node's log ends before the
//     leader's first entry, so it covers every committed entry of that log);
//  4. the startup snapshot is restored and this node was removed from the
//     cluster (standing.go): no leader will tell it which of its entries
//     committed, so it would load forever, and answer LOADING where it must
//     say that it was removed.
//
// Loading never starts again once it has ended. A node with no Raft state
// (new, or joining) is never loading.

// loadState is the group's loading status.
type loadState struct {
	active   atomic.Bool
	done     chan struct{} // closed when loading ends (at Open if it never starts)
	target   uint64        // T: the log's last index at Open
	began    time.Time     // Open
	restores uint64        // the state machine's Restores() at Open
	why      string        // which part of the rule ended it; written before done closes
	// scanned: the committed entries after the last applied one, up to
	// here, are not commands (commandsApplied; used by Open, then only by
	// the loading watcher).
	scanned uint64
}

// loadingRecheck is how often the loading watcher looks again when nothing
// woke it: a commit index learned with no command to apply (only no-ops or
// barriers after the last command) changes nothing the state machine would
// report.
const loadingRecheck = 100 * time.Millisecond

// maxNoCommandScan bounds how many log entries after the last applied one
// the watcher reads looking for a command. Entries that are not commands
// (no-ops, barriers, configurations) come a few per election, so more than
// this many in a row means there is more to apply.
const maxNoCommandScan = 1024

// Loading reports whether this node is still loading its state after a
// restart (see loadState). Goroutines: any; an atomic load.
func (g *Group) Loading() bool { return g.load.active.Load() }

// Loaded returns a channel that is closed once this node is not loading
// (already closed for a node that never was).
func (g *Group) Loaded() <-chan struct{} { return g.load.done }

// runLoading watches the node load and ends loading once the rule holds. It
// wakes when the state machine applies or restores something, when
// leadership or readiness changes, and every loadingRecheck.
func (g *Group) runLoading() {
	defer g.wg.Done()
	applied := make(chan struct{}, 1)
	g.fsm.NotifyApplied(applied)
	defer g.fsm.NotifyApplied(nil)
	tick := time.NewTicker(loadingRecheck)
	defer tick.Stop()
	for {
		changed := g.LeaderChanged()
		g.readyMu.Lock()
		readyCh := g.readyCh
		g.readyMu.Unlock()
		if !g.load.active.Load() {
			return // ended by setReady
		}
		if why := g.loaded(); why != "" {
			g.endLoading(why)
			return
		}
		select {
		case <-g.stopCh:
			return
		case <-applied:
		case <-changed:
		case <-readyCh:
		case <-tick.C:
		}
	}
}

// endLoading ends loading once (the watcher, or setReady for a node that
// becomes a ready leader, so that raft_ready:1 is never seen with loading:1).
func (g *Group) endLoading(why string) {
	if !g.load.active.CompareAndSwap(true, false) {
		return
	}
	g.load.why = why
	close(g.load.done)
	g.log.Info("loaded", "how", why, "took", time.Since(g.load.began).Round(time.Millisecond),
		"log_last_index_at_start", g.load.target, "applied_index", g.fsm.AppliedIndex())
}

// loaded reports which part of the rule holds, or "" while none does.
func (g *Group) loaded() string {
	if g.fsm.Restores() != g.load.restores {
		return "snapshot from the leader"
	}
	if g.fsm.StartupPending() {
		return ""
	}
	if g.ready.Load() {
		return "ready leader"
	}
	if g.Removed() {
		return "removed from the cluster"
	}
	x, why := g.load.target, "replayed the log"
	c := g.raft.CommitIndex()
	if c > 0 && c < x {
		x, why = c, "replayed the log up to the commit index"
	}
	if g.commandsApplied(g.fsm.AppliedIndex(), x, c) {
		return why
	}
	return ""
}

// commandsApplied reports whether no command entry lies in (applied, x] of
// the log (whose entries up to committed are committed), i.e. the state machine, having applied every command up to
// applied, holds every command up to x. It reads at most maxNoCommandScan
// entries a call, remembering how far it has found only other entries
// among the committed ones (which cannot change), so a long run of no-ops
// is crossed over several calls. An entry below the log's first index was
// compacted behind a snapshot the state machine holds (loaded checks the
// startup restore first) and is skipped; any other entry it cannot read
// counts as a command not yet applied.
func (g *Group) commandsApplied(applied, x, committed uint64) bool {
	from := max(applied, g.load.scanned) + 1
	first, err := g.cfg.LogStore.FirstIndex()
	if err != nil {
		return false
	}
	from = max(from, first)
	for i := from; i <= x; i++ {
		if i-from >= maxNoCommandScan {
			return false
		}
		var l raft.Log
		if err := g.cfg.LogStore.GetLog(i, &l); err != nil || l.Type == raft.LogCommand {
			return false
		}
		if i <= committed {
			g.load.scanned = i
		}
	}
	return true
}

// restoreAtStart restores the snapshot raft started from (raft was told not
// to: NoSnapshotRestoreOnStart) while the node already serves clients. See
// fsm/startup.go: raft's calls into the state machine wait until it is done.
// A snapshot that cannot be restored stops the state machine (fatal); a node
// that stops meanwhile abandons the restore.
func (g *Group) restoreAtStart(meta *raft.SnapshotMeta) {
	defer g.wg.Done()
	start := time.Now()
	_, rc, err := g.cfg.Snapshots.Open(meta.ID)
	if err == nil {
		err = g.fsm.RestoreStartup(&stopReader{rc: rc, stop: g.stopCh}, meta.Index)
	}
	switch {
	case err == nil:
		g.log.Info("restored from snapshot", "id", meta.ID, "index", meta.Index, "bytes", meta.Size,
			"took", time.Since(start).Round(time.Millisecond))
	case g.stopping.Load():
		g.fsm.AbortStartup(nil)
	default:
		g.fsm.AbortStartup(err)
	}
}

// errStopping ends a startup restore when the group shuts down.
var errStopping = errors.New("group: shutting down")

// stopReader reads rc until stop is closed.
type stopReader struct {
	rc   io.ReadCloser
	stop <-chan struct{}
}

func (r *stopReader) Read(p []byte) (int, error) {
	select {
	case <-r.stop:
		return 0, errStopping
	default:
	}
	return r.rc.Read(p)
}

func (r *stopReader) Close() error { return r.rc.Close() }
