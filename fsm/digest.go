package fsm

import (
	"crypto/sha256"
	"fmt"
	"maps"
)

// Digest returns the index of the last applied entry and a SHA-256 of the
// whole replicated state at that index, in the canonical snapshot encoding
// (keys sorted with their change markers, gone keys kept for WATCH
// included, idle keys left out, the replicated clock and the last applied
// term included).
// Two replicas at the same applied index must return the same digest; the
// cluster tests compare them after load, snapshot installs and restarts.
//
// The index and the state are read under the same lock that apply holds
// for a whole entry, so they belong together. It costs a copy of the live
// keyspace and one pass to hash it (tens of milliseconds per million keys):
// an operator's and a test's tool, never on the request path.
func (f *FSM) Digest() (uint64, [sha256.Size]byte, error) {
	f.applyMu.RLock()
	index := f.applied.Load()
	clock := f.clock.Load()
	snap := &fsmSnapshot{clock: clock, term: f.term.Load(), snap: f.store.Snapshot(clock), scripts: maps.Clone(f.scripts)}
	f.applyMu.RUnlock()
	h := sha256.New()
	if err := snap.write(h); err != nil {
		return 0, [sha256.Size]byte{}, fmt.Errorf("fsm: digest: %w", err)
	}
	var sum [sha256.Size]byte
	copy(sum[:], h.Sum(nil))
	return index, sum, nil
}
