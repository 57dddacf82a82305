package group

import (
	"github.com/redcell/redcell/request"
)

// maxmemory: refuse new keys, never evict.
//
// A rate limiter must not forget a live limit to make room (that would let
// its traffic through), so the only policy is Redis's noeviction, narrowed
// to what can grow: while the node's guard says the process is above the
// limit (package guard, which polls the heap once for all of a node's
// groups), the leader refuses every request that would create a key
// (request.Code.CreatesKey on a missing key) or may grow a value by what
// the client chooses (request.Code.Grows: APPEND, SET, HSET, LPUSH, SADD,
// ZADD, … even on a live key, as Redis refuses its denyoom commands) with
// request.ErrOOM, while limiter decisions and INCR on existing keys,
// deletions and reads go on. A script is proposed with the mark
// request.MarkAboveMaxmemory, and the state machine refuses the same
// writes inside it (fsm/scripts.go). The check is the leader's, before
// proposing, so replicas never disagree about what was refused: nothing
// refused enters the log.

// proposeWithinMemory is Propose above maxmemory: the requests that would
// create a key are answered ErrOOM and left out of the entry; the rest are
// proposed as usual (and keep their order).
func (g *Group) proposeWithinMemory(b *Batch) error {
	now := max(g.cfg.Clock.Now(), g.fsm.Clock())
	refused := make([]bool, len(b.Ops))
	any := false
	for i := range b.Ops {
		op := &b.Ops[i]
		if op.Code == request.Eval || op.Code == request.EvalSha {
			// A script runs: the state machine refuses the writes inside
			// it that would grow the keyspace, as Redis does, from the mark.
			op.Mark(request.MarkAboveMaxmemory)
			continue
		}
		if op.Code.Grows() {
			refused[i], any = true, true
			continue
		}
		if op.Code.CreatesKey() {
			op.ForEachKey(func(k []byte) {
				if !refused[i] && !g.isLive(k, now) {
					refused[i], any = true, true
				}
			})
		}
	}
	if !any {
		return g.propose(b)
	}
	b.Results = readyResults(b.Results, len(b.Ops))
	return proposeExcept(b.Ops, b.Results, refused, g.proposeBatch(g.propose), // featurelevel.go
		func(_ int, res *request.Result) { res.SetErr(request.ErrOOM) })
}

// guardKeeps lowers a WatchGuard's count of the transaction's requests
// that follow it (its last argument) by those left out of the entry, so
// that it still guards exactly the transaction. The guard is a copy in the
// new batch; the caller's request is untouched.
func guardKeeps(guard *request.Request, refusedAfter []bool) {
	n := guard.Args[1]
	kept := n
	for j := 0; j < int(n) && j < len(refusedAfter); j++ {
		if refusedAfter[j] {
			kept--
		}
	}
	guard.Args[1] = kept
}

// isLive reports whether key holds a live limiter at now.
func (g *Group) isLive(key []byte, now int64) bool {
	var res request.Result
	g.fsm.Read(&request.Request{Code: request.Exists, Keys: [][]byte{key}}, now, &res)
	return res.Err == request.ErrNone && res.Ints[0] > 0
}
