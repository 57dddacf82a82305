package fsm

import (
	"fmt"
	"math"

	"github.com/redcell/redcell/internal/glob"
	"github.com/redcell/redcell/request"
	"github.com/redcell/redcell/shard"
)

// SCAN and KEYS. Both read the keyspace at the read's instant like any read
// (on the leader after it confirmed its leadership, or inside a MULTI's
// entry at the entry's now), so a key whose lifetime has passed is never
// listed, whether or not the sweeper has reclaimed it. The cursor is
// shard's (shard/scan.go): stable across writes, growth, compaction and
// sweeps on this node.

// scanArgs is how many arguments a Scan request carries: cursor, COUNT,
// TYPE filter, MATCH given.
const scanArgs = 4

// maxScanCount bounds the work of one SCAN call whatever COUNT says (Redis
// takes any COUNT; a page of a million keys is already more than a client
// should ask for).
const maxScanCount = 1 << 20

func scanValid(r *request.Request) string {
	if r.NArgs != scanArgs {
		return fmt.Sprintf("%d arguments, not SCAN's %d", r.NArgs, scanArgs)
	}
	if r.Args[1] < 1 {
		return fmt.Sprintf("COUNT %d", r.Args[1])
	}
	if !request.ValidScanType(r.Args[2]) {
		return fmt.Sprintf("TYPE filter %d", r.Args[2])
	}
	if r.Args[3] != 0 && r.Args[3] != 1 || r.Args[3] == 0 && len(r.Key) > 0 {
		return fmt.Sprintf("MATCH flag %d with a %d-byte pattern", r.Args[3], len(r.Key))
	}
	return ""
}

// scan answers SCAN: the next cursor and the page's live keys that pass
// MATCH and TYPE (filtered after the page is chosen, as Redis does, so a
// page may be empty with a cursor that is not 0).
func (f *FSM) scan(r *request.Request, now int64, res *request.Result) {
	filter, match := r.Args[2], r.Args[3] == 1
	var data []byte
	next := f.store.Scan(uint64(r.Args[0]), int(min(r.Args[1], maxScanCount)), now, func(key []byte, st shard.State) {
		if request.ScanMatches(filter, request.KeyKind(st.Kind)) && (!match || matches(r.Key, key)) {
			data = request.AppendItem(data, key)
		}
	})
	res.Kind = request.KindScan
	res.Ints[0] = int64(next)
	res.Data = data
}

// keys answers KEYS pattern: every live key that matches, in no particular
// order. O(keys), like Redis's.
func (f *FSM) keys(r *request.Request, now int64, res *request.Result) {
	var data []byte
	f.store.RangeLive(now, func(key []byte, _ shard.State) bool {
		if matches(r.Key, key) {
			data = request.AppendItem(data, key)
		}
		return true
	})
	res.Kind = request.KindKeys
	res.Data = data
}

// Keyspace counts the keys live at max(now, replicated clock) — the instant
// a read at now would use — those among them with an expiry, and the
// average remaining lifetime of those in whole milliseconds (rounded), for
// INFO keyspace's keys, expires and avg_ttl: a key whose lifetime has
// passed is not counted even before the sweeper reclaims it. A key without
// expiry (PERSIST) has Expire noExpiry; a CL key whose redis-cell expiry
// lies past 2262 has it too (its instant is in B) and is counted as one
// without expiry, which only INFO can tell. O(keys): a
// sequential scan of the arenas, which holds one stripe's read lock at a
// time and never applyMu (INFO, which some clients send on every connect,
// must not hold up apply for a whole scan; a count needs no cut across
// stripes). Any goroutine.
func (f *FSM) Keyspace(now int64) (keys, expires int, avgTTLms int64) {
	f.applyMu.RLock()
	store, clock := f.store, f.clock.Load() // Restore swaps the store
	f.applyMu.RUnlock()
	keys, expires, sum := store.LiveStats(max(now, clock), noExpiry)
	if expires == 0 {
		return keys, 0, 0
	}
	return keys, expires, int64(math.Round(sum / float64(expires) / 1e6))
}

// matches is KEYS's and SCAN MATCH's test of key against pattern, as Redis
// makes it: the pattern "*" alone takes every key without matching (so it
// lists the empty key, which Redis's glob matcher never matches against a
// non-empty pattern: its loop needs both strings non-empty).
func matches(pattern, key []byte) bool {
	return len(pattern) == 1 && pattern[0] == '*' || glob.Match(pattern, key, false)
}
