package group

import (
	"time"
)

// A leader on a full disk hands its leadership away.
//
// The node's guard (package guard) refuses every write while the data dir
// is below its reserve, and every group of the node then proposes nothing.
// A follower with a full disk only falls behind, but a leader with one
// stops its group: so a leader whose node's disk is low transfers its
// leadership to another voter, whose disk may be healthy, and the group
// keeps deciding there. Every group of the node does this for itself; the
// guard is read, not polled, so the cost is an atomic load per group and
// interval.

// diskHandoverEvery is how often a group looks at the guard's verdict, and
// diskHandoverPause how long it waits after a transfer before the next.
const (
	diskHandoverEvery = time.Second
	diskHandoverPause = 10 * time.Second
)

// runDiskHandover transfers leadership away while the guard says the disk
// is low, until the group stops.
func (g *Group) runDiskHandover() {
	defer g.wg.Done()
	t := time.NewTicker(diskHandoverEvery)
	defer t.Stop()
	var lastTransfer time.Time
	for {
		select {
		case <-t.C:
		case <-g.stopCh:
			return
		}
		if !g.cfg.Guard.DiskLow() || g.raft.State().String() != "Leader" || time.Since(lastTransfer) < diskHandoverPause {
			continue
		}
		lastTransfer = time.Now()
		if g.otherVoters() > 0 {
			go func() {
				if err := g.raft.LeadershipTransfer().Error(); err != nil {
					g.log.Warn("handing leadership away from a full disk failed", "err", err)
				}
			}()
		}
	}
}

// otherVoters counts the voters besides this node.
func (g *Group) otherVoters() int {
	f := g.raft.GetConfiguration()
	if f.Error() != nil {
		return 0
	}
	n := 0
	for _, s := range f.Configuration().Servers {
		if s.Suffrage.String() == "Voter" && string(s.ID) != g.cfg.NodeID {
			n++
		}
	}
	return n
}
