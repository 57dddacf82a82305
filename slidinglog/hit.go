// Package slidinglog decides SL.HIT and SL.PEEK: an exact sliding-window
// log with COST, MINGAP and DENIED FREE|COUNT, exactly as the contract's
// limiters.md sections A, E and F state it.
//
// Everything here is a pure function of (state, parameters, now): no clock,
// no locks, no I/O, no floating point, and no allocation when the caller
// lends a large enough output buffer. The log is stored as (time, count)
// runs in a compact deterministic encoding (encoding.go), holding at most
// limit entries: 10,000 hits at one instant are one run, and a call reads
// only the runs it needs — those leaving the window, those a recording call
// drops beyond the limit, and, for a limited reply, those up to the entry
// whose expiry ends the wait — never one step per entry or per attempt.
// See DESIGN.md.
package slidinglog

import "github.com/redcell/redcell/internal/expiry"

// State is one key's log as the keyspace keeps it.
//
// The key exists iff now < Expire; at or after Expire it is equivalent to a
// fresh (empty) log, whatever Log holds. The zero State is therefore a
// missing key for every now ≥ 0, which is every now Redcell has.
type State struct {
	// Expire is newest entry + W of the call that last recorded (rule 2).
	Expire int64
	// Log is the encoded runs (see Encode), at most that call's limit
	// entries, all of them live under its window when it wrote them.
	Log []byte
}

// Reply is the five-integer SL.* reply, in wire order.
type Reply struct {
	Limited    int64 // 0 allowed, 1 limited
	Limit      int64 // limit
	Remaining  int64 // max(0, limit − live entries after the call)
	RetryAfter int64 // ms until the same call would be allowed; −1 when allowed or when COST > limit
	ResetAfter int64 // ms until the log is empty; 0 when it is
}

// Ints returns the reply as the five integers of the wire array.
func (r Reply) Ints() [5]int64 {
	return [5]int64{r.Limited, r.Limit, r.Remaining, r.RetryAfter, r.ResetAfter}
}

// Outcome says what the caller must do with the key after Hit.
type Outcome uint8

const (
	// Keep: write nothing (a DENIED FREE denial). The key stays as it was.
	Keep Outcome = iota
	// Store: store the returned State; its Expire = now + W > now.
	Store
	// Reject: p.CheckAt(now) fails; answer its ErrNotInteger, change
	// nothing. The state machine checks CheckAt before WRONGTYPE, so it
	// never sees this from Hit.
	Reject
	// Corrupt: the stored log is not one Hit writes; answer ErrCorrupt,
	// change nothing.
	Corrupt
)

// String names the outcome for test failures and logs.
func (o Outcome) String() string {
	switch o {
	case Keep:
		return "Keep"
	case Store:
		return "Store"
	case Reject:
		return "Reject"
	case Corrupt:
		return "Corrupt"
	}
	return "Outcome(?)"
}

// Hit decides one SL.HIT at now (Unix ns, the replicated clock) with the
// call's parameters p. st is the key's stored state, or the zero State when
// the key is missing; a State whose Expire is at or before now is a missing
// key too (rule 2). The caller has already answered WRONGTYPE for a live key
// of another family.
//
// On Store, the new log is written to dst[:0] (next.Log aliases dst's array
// when it has room: MaxGrowth bytes more than len(st.Log) always suffice)
// and next.Expire = now + W; dst must not overlap st.Log. On Keep, next ==
// st. A recording call always leaves at least one entry, so Hit never
// deletes a key: it goes when its Expire passes.
//
// Hit is pure; it allocates only when dst is too small.
func Hit(st State, now int64, p Params, dst []byte) (r Reply, next State, o Outcome) {
	return decide(st, now, p, dst, false)
}

// Peek answers SL.PEEK: exactly the reply SL.HIT with DENIED FREE would give
// (when allowed: remaining = max(0, limit − c − n), reset_after =
// window_ms), with no effect. p.DeniedCount is ignored. The error is
// ErrNotInteger where Hit would Reject and ErrCorrupt where it would say
// Corrupt. Peek does not allocate.
func Peek(st State, now int64, p Params) (Reply, error) {
	r, _, o := decide(st, now, p, nil, true)
	switch o {
	case Reject:
		return Reply{}, ErrNotInteger
	case Corrupt:
		return Reply{}, ErrCorrupt
	}
	return r, nil
}

// Live reports whether a key whose state expires at expire exists at now.
func Live(expire, now int64) bool { return expiry.Live(expire, now) }

// PTTL is the key's PTTL at now (see expiry.PTTL).
func PTTL(expire, now int64) int64 { return expiry.PTTL(expire, now) }

// view is what a call sees of the stored log under its own window: c live
// entries, the newest at h.newest, and the first live older run (where
// reading resumes). The entries of a log are live from some run onwards,
// because the runs are in time order.
type view struct {
	h    header
	c    int64    // live entries (0: the log is empty under this window)
	body bodyIter // positioned after the first live older run, if any
	// The first live older run; firstC = 0 when no older run is live.
	firstT, firstC int64
}

// look reads the live part of log at now with window W: only the header
// and the older runs that have left the window, plus the first that has
// not.
func look(log []byte, now, window int64) (v view, ok bool) {
	if len(log) == 0 {
		return v, true
	}
	h, ok := readHeader(log)
	if !ok || h.newest > now {
		return v, false // the clock never goes back, so no entry is after now
	}
	v.h = h
	liveFrom := now - window // live iff t > liveFrom (t + W > now); now ≥ 0, W > 0: no overflow
	if h.newest <= liveFrom {
		return v, true // every entry has left the window
	}
	dead := int64(0)
	if h.gap != 0 {
		v.body = bodyIter{b: log, off: h.body, first: true}
		for {
			if v.body.off == len(log) {
				break // no older run is live
			}
			t, c, ok := v.body.next()
			if !ok || c > h.total-h.last-dead {
				return v, false
			}
			if t > liveFrom {
				v.firstT, v.firstC = t, c
				break
			}
			dead += c
		}
	}
	v.c = h.total - dead
	return v, true
}

// decide is Hit (peek = false) and Peek (peek = true): rules 24–28, 32.
func decide(st State, now int64, p Params, dst []byte, peek bool) (Reply, State, Outcome) {
	if p.CheckAt(now) != nil {
		return Reply{}, st, Reject
	}
	limit, n, window := p.Limit, p.Cost, p.window
	var log []byte
	if now < st.Expire {
		log = st.Log
	}
	v, ok := look(log, now, window)
	if !ok {
		return Reply{}, st, Corrupt
	}

	// Rule 25, both boundaries inclusive; n ≤ limit − c is c + n ≤ limit
	// on exact values (limit − c cannot wrap: both are in [0, 2^63−1]).
	countOK := n <= limit-v.c
	gapOK := p.gap == 0 || v.c == 0 || now-v.h.newest >= p.gap
	allowed := countOK && gapOK

	if peek {
		if allowed { // rule 32: as if the n entries were recorded
			return Reply{0, limit, limit - v.c - n, -1, p.WindowMs}, st, Keep
		}
	} else if allowed || p.DeniedCount { // rule 26: record
		out, total, ok := record(dst[:0], log, v, now, n, limit)
		if !ok {
			return Reply{}, st, Corrupt
		}
		r := Reply{0, limit, limit - total, -1, p.WindowMs}
		if !allowed {
			r.Limited = 1
			if n <= limit { // rule 27 on the log as written; rule 28 otherwise
				wait := p.gap // the newest entry is now: w_gap = G
				if n > limit-total {
					// The (limit − n + 1)-th newest of total entries is the
					// (total − limit + n)-th oldest.
					t, ok := nthLive(out, now-window, total-(limit-n))
					if !ok {
						return Reply{}, st, Corrupt
					}
					wait = max(wait, t+window-now)
				}
				r.RetryAfter = expiry.MsUp(wait)
			}
		}
		return r, State{Expire: now + window, Log: out}, Store
	}

	// Denied and nothing written (DENIED FREE, or any SL.PEEK denial).
	r := Reply{1, limit, max(0, limit-v.c), -1, 0}
	if v.c > 0 {
		r.ResetAfter = expiry.MsUp(v.h.newest + window - now)
	}
	if n <= limit {
		wait := int64(0)
		if p.gap > 0 && v.c > 0 {
			wait = max(0, v.h.newest+p.gap-now)
		}
		if n > limit-v.c {
			t, ok := nthLiveFrom(v, v.c-(limit-n))
			if !ok {
				return Reply{}, st, Corrupt
			}
			wait = max(wait, t+window-now)
		}
		r.RetryAfter = expiry.MsUp(wait)
	}
	return r, st, Keep
}

// record writes the log a recording call leaves (rule 26): the live
// entries plus n at now, of which only the newest limit are kept. It reads
// only the older runs it drops; the runs it keeps are copied byte for byte,
// except the oldest kept one, rewritten with its absolute time and
// possibly a smaller count.
func record(dst, log []byte, v view, now, n, limit int64) (out []byte, total int64, ok bool) {
	if n >= limit { // the n entries at now alone fill the log (rule 28)
		return appendHeader(dst, now, limit, limit, 0), limit, true
	}
	keepOld := min(v.c, limit-n) // live entries that stay; total ≤ limit
	total = keepOld + n
	if keepOld == 0 {
		return appendHeader(dst, now, total, n, 0), total, true
	}
	h := v.h
	bodyLive := v.c - h.last // live entries in older runs
	drop := v.c - keepOld    // the oldest live entries beyond the limit

	if drop >= bodyLive {
		// Only (part of) the newest run stays: keepOld ≤ h.last.
		if h.newest == now {
			return appendHeader(dst, now, total, total, 0), total, true
		}
		dst = appendHeader(dst, now, total, n, uint64(now)-uint64(h.newest))
		return appendFirstRun(dst, h.newest, keepOld), total, true
	}

	// Drop whole older runs from the oldest live one, then part of one.
	it := v.body
	t, c := v.firstT, v.firstC
	for drop >= c {
		drop -= c
		if t, c, ok = it.next(); !ok {
			return nil, 0, false
		}
	}
	if h.newest == now { // the n entries join the newest run
		dst = appendHeader(dst, now, total, h.last+n, h.gap)
		dst = appendFirstRun(dst, t, c-drop)
		return append(dst, log[it.off:]...), total, true
	}
	// A new newest run; the old one joins the end of the older runs, gap
	// after the run before it.
	dst = appendHeader(dst, now, total, n, uint64(now)-uint64(h.newest))
	dst = appendFirstRun(dst, t, c-drop)
	dst = append(dst, log[it.off:]...)
	return appendRun(dst, h.gap, h.last), total, true
}

// nthLive returns the time of the k-th oldest entry live after liveFrom in
// log (1 ≤ k ≤ the live entries).
func nthLive(log []byte, liveFrom, k int64) (int64, bool) {
	h, ok := readHeader(log)
	if !ok {
		return 0, false
	}
	it := bodyIter{b: log, off: h.body, first: true}
	for h.gap != 0 && it.off < len(log) {
		t, c, ok := it.next()
		if !ok {
			return 0, false
		}
		if t <= liveFrom {
			continue
		}
		if k <= c {
			return t, true
		}
		k -= c
	}
	return h.newest, k <= h.last
}

// nthLiveFrom is nthLive on the log a view looked at, resuming after its
// first live older run.
func nthLiveFrom(v view, k int64) (int64, bool) {
	if v.firstC > 0 {
		if k <= v.firstC {
			return v.firstT, true
		}
		k -= v.firstC
		it := v.body
		for it.off < len(it.b) {
			t, c, ok := it.next()
			if !ok {
				return 0, false
			}
			if k <= c {
				return t, true
			}
			k -= c
		}
	}
	return v.h.newest, k <= v.h.last
}
