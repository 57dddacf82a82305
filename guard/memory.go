package guard

import (
	"runtime/metrics"
	"sync/atomic"
)

// maxmemory: refuse new keys, never evict.
//
// A rate limiter must not forget a live limit to make room (that would let
// its traffic through), so the only policy is Redis's noeviction, narrowed
// to what can grow: above the limit a group's leader refuses every request
// that would create a key or may grow a value by what the client chooses
// (package group, memoryguard.go), while limiter decisions on existing
// keys, deletions and reads go on. The guard only says whether the node is
// above the limit.
//
// Used memory is the Go heap's live objects (runtime/metrics), polled every
// PollInterval, once for the whole process: every group's keyspace is in
// the same heap. Between two polls a burst of new keys can pass the limit by
// what arrives in that time.
type memoryState struct {
	used atomic.Uint64 // heap bytes at the last poll
	over atomic.Bool
}

// heapObjectsMetric is the live (and not yet swept) heap, Redis's
// used_memory in spirit.
const heapObjectsMetric = "/memory/classes/heap/objects:bytes"

// pollMemory reads the heap once and logs a change of verdict.
func (g *Guard) pollMemory() {
	sample := []metrics.Sample{{Name: heapObjectsMetric}}
	metrics.Read(sample)
	used := sample[0].Value.Uint64()
	g.mem.used.Store(used)
	limit := g.cfg.MaxMemory.Load()
	over := limit > 0 && used > uint64(limit)
	if over != g.mem.over.Swap(over) {
		if over {
			g.log.Warn("above maxmemory: refusing new keys (existing limiters keep deciding)", "used_bytes", used, "maxmemory", limit)
		} else {
			g.log.Info("below maxmemory again: accepting new keys", "used_bytes", used, "maxmemory", limit)
		}
	}
}
