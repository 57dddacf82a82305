package group

import (
	"time"

	"github.com/hashicorp/raft"

	"github.com/redcell/redcell/raftstore"
)

// What a node does differently while it is alone.
//
// Three choices depend on whether this node is the only server of its Raft
// configuration:
//
// Direct WAL syncs (when Config.DirectWALSync is set; the redcell
// binary sets it unless --direct-wal-sync=false). raftstore can fsync the log
// without handing its thread to Go's scheduler (raftstore/walsync.go), but
// the sleeping thread keeps its P, so nothing else runs on it until the disk
// answers. A node alone loses little by that (none of its waiting requests
// can be answered before the sync anyway); a node with peers loses the
// overlap of replication and apply with its own fsync. So direct syncs are
// on at most while alone.
//
// Entries in flight. Alone, the proposer keeps up to MaxInflight entries in
// raft: the batcher already holds all but one of them off the disk, and
// the others cost nothing. With peers it keeps MaxInflightWithPeers (1 by
// default): every entry then costs an fsync on every node and a round of
// RPCs, and an entry that waits for the previous one's commit carries
// everything that queued meanwhile (DESIGN.md, "What changes while alone").
//
// Yielding before a cut. Alone, the batcher lets every runnable goroutine
// queue before it cuts an entry for a free log (batcher.go). With peers it
// does not: an entry waits for the previous one's commit anyway, and a cut
// that yields first only starts the next round of RPCs and fsyncs later
// (-11 % on a 3-node leader at -c 50 -P 16).
//
// The configuration is read when leadership changes (which every start and
// election is), when this node changes the membership (AddNonvoter, Promote,
// Remove poke it), and every aloneModeEvery, which also covers a node that
// learns a new configuration from its leader. Until then a leader that just
// gained a follower runs as if alone for up to a second: slower, never wrong
// (the same fdatasync either way; the in-flight limit only shapes batches).

// aloneModeEvery is how often the configuration is read regardless.
const aloneModeEvery = time.Second

// runAloneMode keeps direct WAL syncs (on st, nil for another log store),
// the in-flight limit, the yield before an entry and the cache of recent
// entries (recentlogs.go: only a node with peers reads its newest entries
// back) following whether this node is alone.
func (g *Group) runAloneMode(st *raftstore.Store) {
	defer g.wg.Done()
	if st != nil {
		defer st.SetDirectWALSync(false)
	}
	tick := time.NewTicker(aloneModeEvery)
	defer tick.Stop()
	for {
		changed := g.LeaderChanged()
		alone := g.alone()
		if st != nil {
			st.SetDirectWALSync(alone && g.cfg.DirectWALSync)
		}
		g.setInflightLimit(alone)
		g.batcher.yieldFirst.Store(alone)
		g.recent.setEnabled(!alone)
		select {
		case <-g.stopCh:
			return
		case <-changed:
		case <-g.alonePoke:
		case <-tick.C:
		}
	}
}

// setInflightLimit sets how many entries the proposer keeps in raft: every
// slot alone, MaxInflightWithPeers otherwise. A lower limit takes effect as
// entries complete; a higher one may let queued batches go at once.
func (g *Group) setInflightLimit(alone bool) {
	limit := int32(g.cfg.MaxInflight)
	if !alone {
		limit = int32(g.cfg.MaxInflightWithPeers) // Open caps it at MaxInflight
	}
	if g.batcher.inflightLimit.Swap(limit) < limit {
		g.proposeQueued()
	}
}

// Quiet reports whether this node is alone with nothing of its own on the
// way through the log: no entry in raft, no batch queued for one. The
// client server's busy poll spins for a lone client's next request only
// then (server/busypoll_linux.go), never while the node has work. Any
// goroutine; it takes the queue's lock for a moment.
func (g *Group) Quiet() bool {
	if !g.batcher.yieldFirst.Load() || g.batcher.inflight.Load() != 0 {
		return false
	}
	g.qmu.Lock()
	queued := len(g.queue)
	g.qmu.Unlock()
	return queued == 0
}

// pokeAloneMode makes runAloneMode read the configuration now.
func (g *Group) pokeAloneMode() {
	select {
	case g.alonePoke <- struct{}{}:
	default: // a look is already due
	}
}

// alone reports whether this node is the only server of its latest
// configuration.
func (g *Group) alone() bool {
	f := g.raft.GetConfiguration()
	if f.Error() != nil {
		return false
	}
	s := f.Configuration().Servers
	return len(s) == 1 && s[0].ID == raft.ServerID(g.cfg.NodeID)
}
