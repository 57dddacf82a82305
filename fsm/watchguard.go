package fsm

import (
	"github.com/redcell/redcell/request"
	"github.com/redcell/redcell/shard"
)

// WATCH across nodes (data-types.md, "WATCH"): the decision whether a
// watched key changed between WATCH and EXEC is made here, at apply, against
// what every replica agrees on, never on a node's possibly stale view.
//
// Every record of the keyspace carries a change marker: the raft index of
// the last entry that changed the key (shard stamps it on every write that
// is not Keep, and on deletions, which leave a tombstone for shard.Linger of
// replicated time; FLUSHALL leaves one for every key that existed, so it
// changes exactly those, as in Redis 7.0). WATCH k… reads, on the node the client is connected to,
// WatchMark: the applied index w, the term of the last applied entry, the
// replicated clock tw and whether each key is live; each key keeps the w and
// tw of the WATCH that first named it, as Redis keeps a key's first watch.
// EXEC then proposes a WatchGuard first in its batch, and the guard decides
// "changed" iff for some key
//
//	(a) a key's liveness now differs from what WATCH saw, or
//	(b) a key's record (live, expired or a tombstone) has a marker > w, or
//	(c) a key was missing at WATCH and Linger has passed since tw (a record
//	    written after w and gone since may have been dropped), or
//	(d) w is not before the guard's own entry (a WatchMark from another
//	    log), or for the transaction: the guard's entry has another term
//	    than the last entry WATCH saw applied (a leader change in between).
//
// Deterministic on every replica: markers are only compared as "> w"; a
// record stamped after w was stamped at an instant >= tw, so when (c) does
// not fire it is younger than Linger and no replica has dropped it (and
// snapshots keep it); and nothing depends on when a replica swept. A stale
// WatchMark (a lagging follower) only makes (a), (b) or (e) fire more often:
// extra aborts, never a missed change.

var watchOps = []op{
	{code: request.WatchGuard, valid: watchGuardValid, run: (*FSM).watchGuard},
	{code: request.WatchMark, run: (*FSM).watchMark},
}

// watchGuardValid: the term and N, N not negative, and watched keys in
// pairs with their items (request.WatchedItem).
func watchGuardValid(r *request.Request) string {
	switch {
	case r.NArgs != 2:
		return "a watch guard takes two arguments"
	case r.Args[1] < 0:
		return "a watch guard guarding a negative number of requests"
	case len(r.Keys) == 0 || len(r.Keys)%2 != 0:
		return "a watch guard without its keys and their items"
	}
	for i := 1; i < len(r.Keys); i += 2 {
		if _, _, _, ok := request.WatchedItem(r.Keys[i]); !ok {
			return "a watch guard's key item is malformed"
		}
	}
	return ""
}

// watchGuard answers 1 when a watched key may have changed since the
// WatchMark its arguments carry (applyEntry then skips the transaction's
// requests), 0 when none did.
func (f *FSM) watchGuard(r *request.Request, now int64, res *request.Result) {
	res.SetInt(0)
	if f.watchedChanged(r, now) {
		res.Ints[0] = 1
	}
}

func (f *FSM) watchedChanged(r *request.Request, now int64) bool {
	if uint64(r.Args[0]) != f.entryTerm {
		return true
	}
	for i := 0; i < len(r.Keys); i += 2 {
		was, w, tw, _ := request.WatchedItem(r.Keys[i+1]) // valid: checked
		if w >= f.entryIndex || now < tw {
			return true // not read from this log before this entry
		}
		lapsed := uint64(now)-uint64(tw) >= uint64(shard.Linger)
		live, mark := f.store.Watch(r.Keys[i], now)
		if live != was || mark > w || !was && lapsed {
			return true
		}
	}
	return false
}

// guardSkips is how many requests after a guard that answered res the
// entry skips: its N when it found a change (at most what remains).
func guardSkips(r *request.Request, res *request.Result) int64 {
	if r.Code != request.WatchGuard || res.Kind != request.KindInt || res.Ints[0] == 0 {
		return 0
	}
	return r.Args[1]
}

// watchMark answers WATCH's read: the applied index, the term of the last
// applied entry, the replicated clock, and per key whether it is live at
// now (the read's instant: the key as the client sees it when it watches).
// Read holds applyMu for reading, so the index and the keys belong
// together.
func (f *FSM) watchMark(r *request.Request, now int64, res *request.Result) {
	res.Kind = request.KindBulk
	res.Ints[0] = int64(f.applied.Load())
	res.Ints[1] = int64(f.term.Load())
	res.Ints[2] = f.clock.Load()
	data := make([]byte, len(r.Keys))
	for i, k := range r.Keys {
		if _, live := f.store.Get(k, now); live {
			data[i] = 1
		}
	}
	res.Data = data
}
