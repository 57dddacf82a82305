package shard

import "hash/maphash"

const (
	// sweepLockSpan is how many records Sweep examines under one hold of a
	// stripe's write lock, bounding how long readers of that stripe wait.
	sweepLockSpan = 1024
)

// Sweep examines up to budget records and drops every one among them that
// has been gone for Linger (Expire + Linger <= now: an expired key or a
// tombstone), returning how many it removed. It walks the stripes
// round robin, each stripe's arena sequentially, resuming where the previous
// call stopped, and never examines more than one full round, so its cost is
// O(budget) whatever the state of the table. Because every expired record it
// meets is removed, a caller that examines k records per insertion keeps
// expired-but-unswept records below 1/k of the table: memory stays flat while
// keys churn. Removing entries also compacts arenas and shrinks indexes when
// they have become sparse.
//
// Writer goroutine only (between batches). Expired entries are invisible to
// every other method, so when and whether Sweep runs never changes results.
// The returned count depends on layout (stripes, seed): use it for metrics,
// never in a reply or in replicated state.
func (s *Store) Sweep(now int64, budget int) int {
	if budget <= 0 {
		return 0
	}
	removed, examined := 0, 0
	// One full round: every stripe from its resume point, plus the first
	// stripe again so that its records before the resume point are covered.
	for visited := 0; visited <= len(s.stripes); visited++ {
		st := &s.stripes[s.sweepStripe]
		for examined < budget {
			r, e, done := st.sweep(now, min(sweepLockSpan, budget-examined))
			removed += r
			examined += e
			if done {
				break
			}
		}
		if examined >= budget {
			return removed
		}
		s.sweepStripe = (s.sweepStripe + 1) & (len(s.stripes) - 1)
	}
	return removed
}

// sweep examines up to span records of the stripe from sweepPos and removes
// the expired ones. done reports that the scan reached the end of the arena
// (sweepPos is then reset to 0 for the next round).
func (st *stripe) sweep(now int64, span int) (removed, examined int, done bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	for examined < span {
		off := st.sweepPos
		if off >= len(st.arena) {
			st.sweepPos = 0
			return removed, examined, true
		}
		end, _, drop := scanRecord(st.arena, off, now)
		st.sweepPos = end
		examined++
		if !drop {
			continue
		}
		key, _, _ := recordKey(st.arena, off)
		p, ok := st.idx.findOffset(maphash.Bytes(st.seed, key), off)
		if !ok {
			continue // unreachable while the invariants hold
		}
		// remove may compact the arena, which resets sweepPos to 0: the
		// scan then restarts on the compacted arena, still bounded by span.
		st.remove(p)
		removed++
	}
	return removed, examined, false
}
