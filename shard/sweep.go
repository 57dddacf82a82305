package shard

import "hash/maphash"

const (
	// sweepExamineFactor bounds the work of one Sweep call: it looks at no
	// more than this many records per entry it is allowed to remove, so a
	// call costs O(budget) even when almost nothing has expired.
	sweepExamineFactor = 16
	// sweepLockSpan is how many records Sweep examines under one hold of a
	// stripe's write lock, bounding how long readers of that stripe wait.
	sweepLockSpan = 1024
)

// Sweep removes up to budget entries that have expired (Expire <= now) and
// returns how many it removed. It walks the stripes round robin, each stripe's
// arena sequentially, resuming where the previous call stopped, and examines
// at most budget*16 records per call (and never more than one full round), so
// its cost is bounded whatever the state of the table. Removing entries also
// compacts arenas and shrinks indexes when they have become sparse, which is
// what keeps memory flat while keys churn.
//
// Writer goroutine only (between batches). Expired entries are invisible to
// every other method, so when and whether Sweep runs never changes results.
// The returned count depends on layout (stripes, seed): use it for metrics,
// never in a reply or in replicated state.
func (s *Store) Sweep(now int64, budget int) int {
	if budget <= 0 {
		return 0
	}
	examineLimit := budget * sweepExamineFactor
	if examineLimit/sweepExamineFactor != budget {
		examineLimit = int(^uint(0) >> 1) // overflow: no limit but one round
	}
	removed, examined := 0, 0
	// One full round: every stripe from its resume point, plus the first
	// stripe again so that its records before the resume point are covered.
	for visited := 0; visited <= len(s.stripes); visited++ {
		st := &s.stripes[s.sweepStripe]
		for removed < budget && examined < examineLimit {
			span := min(sweepLockSpan, examineLimit-examined)
			r, e, done := st.sweep(now, budget-removed, span)
			removed += r
			examined += e
			if done {
				break
			}
		}
		if removed >= budget || examined >= examineLimit {
			return removed
		}
		s.sweepStripe = (s.sweepStripe + 1) & (len(s.stripes) - 1)
	}
	return removed
}

// sweep examines up to span records of the stripe from sweepPos, removing at
// most budget expired ones. done reports that the scan reached the end of the
// arena (sweepPos is then reset to 0 for the next round).
func (st *stripe) sweep(now int64, budget, span int) (removed, examined int, done bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	for removed < budget && examined < span {
		off := st.sweepPos
		if off >= len(st.arena) {
			st.sweepPos = 0
			return removed, examined, true
		}
		key, end, dead := recordKey(st.arena, off)
		st.sweepPos = end
		examined++
		if dead || readExpire(st.arena, off) > now {
			continue
		}
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
