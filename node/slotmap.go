package node

import (
	"github.com/redcell/redcell/slots"
)

// slotMap says which group owns each hash slot. In this step the map is
// fixed when the cluster is bootstrapped: G groups own G contiguous ranges
// of nearly equal size (group g owns the slots s with s·G/16384 = g), so
// every node derives the same map from G alone and no slot ever moves.
// Moving slots (freeze → copy → flip, ../DESIGN.md "Sharding") will make
// the map replicated state with an epoch; the router reads it through
// this type either way.
//
// Goroutines: immutable; read from any goroutine.
type slotMap struct {
	groups int
	owner  [slots.Count]slots.GroupID
}

// evenSlotMap is the map of a cluster of groups groups.
func evenSlotMap(groups int) *slotMap {
	m := &slotMap{groups: max(groups, 1)}
	for s := range slots.Count {
		m.owner[s] = slots.GroupID(s * m.groups / slots.Count)
	}
	return m
}

// group is the owner of slot s.
func (m *slotMap) group(s slots.Slot) slots.GroupID { return m.owner[s] }

// slotRange is an inclusive range of slots.
type slotRange struct{ first, last slots.Slot }

// ranges are the slot ranges group g owns, in ascending order.
func (m *slotMap) ranges(g slots.GroupID) []slotRange {
	var out []slotRange
	for s := 0; s < slots.Count; s++ {
		if m.owner[s] != g {
			continue
		}
		if n := len(out); n > 0 && int(out[n-1].last) == s-1 {
			out[n-1].last = slots.Slot(s)
		} else {
			out = append(out, slotRange{slots.Slot(s), slots.Slot(s)})
		}
	}
	return out
}
