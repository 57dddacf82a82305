package group

import (
	"time"

	"github.com/hashicorp/raft"

	"github.com/redcell/redcell/raftstore"
)

// Direct WAL syncs follow the membership.
//
// raftstore can fsync the log without handing its thread to Go's scheduler
// (raftstore/walsync.go): far cheaper on a VM where every thread handoff is a
// costly context switch, but the sleeping thread keeps its P, so nothing
// else runs on it until the disk answers. A node alone loses nothing by that
// (none of its waiting requests can be answered before the sync anyway). A
// node with peers does: its leader replicates one entry while its disk takes
// the next, and a follower applies while it syncs. So direct syncs are on
// exactly while this node is the only server of its configuration.
//
// The configuration is read when leadership changes (which every start and
// election is), when this node changes the membership (AddNonvoter, Promote,
// Remove poke it), and every walSyncModeEvery, which also covers a node that
// learns a new configuration from its leader. Until then a leader that just
// gained a follower syncs directly for up to a second: slower, never wrong
// (the same fdatasync either way).

// walSyncModeEvery is how often the configuration is read regardless.
const walSyncModeEvery = time.Second

// runWALSyncMode keeps st's direct WAL syncs on while this node is alone.
func (g *Group) runWALSyncMode(st *raftstore.Store) {
	defer g.wg.Done()
	defer st.SetDirectWALSync(false)
	tick := time.NewTicker(walSyncModeEvery)
	defer tick.Stop()
	for {
		changed := g.LeaderChanged()
		st.SetDirectWALSync(g.alone())
		select {
		case <-g.stopCh:
			return
		case <-changed:
		case <-g.walSyncPoke:
		case <-tick.C:
		}
	}
}

// pokeWALSyncMode makes runWALSyncMode read the configuration now.
func (g *Group) pokeWALSyncMode() {
	select {
	case g.walSyncPoke <- struct{}{}:
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
