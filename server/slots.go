package server

import (
	"github.com/redcell/redcell/request"
	"github.com/redcell/redcell/slots"
)

// Same-slot rules: with the keyspace split over several Raft groups
// (Config.SameSlot), an atomic unit is decided in one entry of one group, so
// its keys must hash to one slot, as on Redis Cluster, or the unit is
// refused with CROSSSLOT before it reaches the backend:
//
//   - a request whose code is not split (request.SplitNone: a script's
//     declared KEYS, MSET, RENAME, every limiter) — when it is parsed,
//     outside MULTI, or when it is queued inside one (the transaction is
//     then discarded at EXEC, as Redis discards it after a refusal while
//     queueing);
//   - WATCH of keys in several slots;
//   - EXEC of a transaction whose requests and watched keys together lie in
//     several slots (it answers CROSSSLOT and is discarded, as on Redis
//     Cluster).
//
// A multi-key command its code lets split (DEL, EXISTS, TOUCH, MGET) is not
// refused: the node splits it (package node). With one group none of this
// applies: any unit works, as on a standalone Redis.

// crossSlot reports whether r is an atomic request whose keys lie in more
// than one slot while the same-slot rules apply.
func (c *conn) crossSlot(r *request.Request) bool {
	if !c.s.cfg.SameSlot || r.Code.SplitOf() != request.SplitNone {
		return false
	}
	_, _, cross := r.Slot()
	return cross
}

// keysCrossSlots reports whether keys lie in more than one slot while the
// same-slot rules apply (WATCH's keys).
func (c *conn) keysCrossSlots(keys [][]byte) bool {
	if !c.s.cfg.SameSlot || len(keys) == 0 {
		return false
	}
	first := slots.KeySlot(keys[0])
	for _, k := range keys[1:] {
		if slots.KeySlot(k) != first {
			return true
		}
	}
	return false
}

// unitCrossesSlots reports whether a transaction's requests and watched keys
// together lie in more than one slot while the same-slot rules apply.
func (c *conn) unitCrossesSlots(reqs []request.Request, watched []request.WatchedKey) bool {
	if !c.s.cfg.SameSlot {
		return false
	}
	var first slots.Slot
	seen, cross := false, false
	note := func(s slots.Slot) {
		switch {
		case !seen:
			first, seen = s, true
		case s != first:
			cross = true
		}
	}
	for _, w := range watched {
		note(slots.KeySlot(w.Key))
	}
	for i := range reqs {
		if s, keyed, x := reqs[i].Slot(); keyed {
			note(s)
			cross = cross || x
		}
	}
	return cross
}
