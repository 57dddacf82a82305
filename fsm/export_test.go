package fsm

import (
	"github.com/redcell/redcell/request"
	"github.com/redcell/redcell/shard"
)

// Handled reports whether the state machine has a handler for code c.
func Handled(c request.Code) bool { return handlers[c].run != nil }

// KindRegistered is the family the state machine registered for keys of
// kind k (its request descriptor), nil if none.
func KindRegistered(k request.KeyKind) *request.Family {
	if fam := kindFamily(shard.Kind(k)); fam != nil {
		return fam.desc
	}
	return nil
}

// RegisteredFamilies are the request descriptors of the families the state
// machine registered, in order.
func RegisteredFamilies() []*request.Family {
	out := make([]*request.Family, len(families))
	for i, fam := range families {
		out[i] = fam.desc
	}
	return out
}

// SnapshotAs re-encodes snapshot b of the current version as version v (1
// to 3): its live keys, without markers, gone records or term.
func SnapshotAs(b []byte, v byte) []byte { return asOldVersion(b, v) }

// RestoredFromOld is what a state restored from an older version of
// snapshot b snapshots to: b's live keys with marker 0 and term 0.
func RestoredFromOld(b []byte) []byte { return restoredFromOld(b) }

// SnapshotHeaderLen is the size of a current snapshot's header.
const SnapshotHeaderLen = 29

// SnapshotVersion is the version this build writes.
const SnapshotVersion = snapshotVersion

// SweepAll drops every record the keyspace may drop at now, as a replica
// whose sweeper ran ahead would have.
func (f *FSM) SweepAll(now int64) { f.store.Sweep(now, 1<<40) }

// WatchMark is the change marker of key's record (0: none), for tests.
func (f *FSM) WatchMark(key []byte, now int64) (bool, uint64) { return f.store.Watch(key, now) }
