package shard

import "hash/maphash"

// Iterating the keyspace: SCAN's cursor and KEYS.
//
// A SCAN cursor is a position in hash order that no table change can move:
// stripe<<32 | t, where t is a threshold on the low 32 bits of the keys'
// hashes (h32). The index maps h32 to a home slot with a multiply-shift
// (home = h32·homes >> 32), which is monotone in h32, and Robin Hood keeps
// every cluster sorted by home with no wrap-around, so the slots of a stripe
// hold its keys in non-decreasing home order. A call visits the keys with
// h32 ≥ t, home after home, and stops at a home boundary: the keys it
// returned are exactly those with t ≤ h32 < t', where t' is the first h32
// of the next home. Growth, shrinking, compaction and sweeps change homes
// and slots but not h32, so the next call, which starts from t', neither
// repeats nor skips a key that stayed in the table all along — a stronger
// guarantee than Redis's SCAN (which may repeat keys after a rehash).
//
// The hash seed is per Store (random, see store.go), so a cursor means
// nothing to another replica or to the Store a snapshot restore builds;
// Redis's cursors are likewise tied to one server process.

// ScanCursorDone is the cursor Scan returns when the scan is complete (and
// the one that starts it).
const ScanCursorDone = 0

// Scan continues a scan from cursor: it visits entries until count of them
// were live at now or scanVisitsPerCount×count were visited (more to finish
// the last home slot it reached, fewer when the scan ends), calls fn for
// each entry live at now in hash order, and returns
// the cursor to continue from, ScanCursorDone at the end. key and st (Val
// nil) are valid during the call only; fn must not call into the Store. A
// cursor Scan never returned (from a client) is safe: past the last stripe
// it ends the scan.
//
// Any goroutine; takes each visited stripe's read lock in turn.
func (s *Store) Scan(cursor uint64, count int, now int64, fn func(key []byte, st State)) uint64 {
	count = max(count, 1)
	si, t := cursor>>32, cursor&(1<<32-1)
	b := scanBudget{live: count, visits: scanVisitsPerCount * count}
	for si < uint64(len(s.stripes)) {
		next, done := s.stripes[si].scan(t, &b, now, fn)
		if !done {
			return si<<32 | next
		}
		si, t = si+1, 0
		if b.spent() {
			break
		}
	}
	if si >= uint64(len(s.stripes)) {
		return ScanCursorDone
	}
	return si << 32
}

// scanVisitsPerCount bounds what one SCAN call visits: COUNT live entries,
// or this many times COUNT entries of any kind. Gone records (tombstones,
// which linger for WATCH, and expired entries not yet swept) count toward
// the second bound only, so a small keyspace with a few deleted keys is
// still one page, as in Redis (whose dict holds no deleted keys), while a
// stretch of gone records cannot make one call unbounded (Redis's SCAN
// likewise stops after COUNT×10 empty buckets).
const scanVisitsPerCount = 10

// scanBudget is what a SCAN call has left: live entries and visits.
type scanBudget struct{ live, visits int }

func (b *scanBudget) spent() bool { return b.live <= 0 || b.visits <= 0 }

// scan visits the entries of one stripe with h32 ≥ t, as Scan describes,
// spending b (a live entry one of b.live and one of b.visits, any other one
// of b.visits) until it is spent, and stopping at a home boundary. done
// reports that the stripe has no entry at or after the returned threshold
// next.
func (st *stripe) scan(t uint64, b *scanBudget, now int64, fn func(key []byte, st State)) (next uint64, done bool) {
	st.mu.RLock()
	defer st.mu.RUnlock()
	x := &st.idx
	if x.count == 0 {
		return 0, true
	}
	home0 := (t * x.homes) >> 32
	last := uint64(0)
	started := false
	for p := home0; p < x.nslots(); p++ {
		v := x.load(p)
		if v == 0 {
			continue
		}
		home := p + 1 - (v & distMask)
		if home < home0 {
			continue // displaced from an earlier home: before t
		}
		if started && home != last && b.spent() {
			// t' = the first h32 whose home is past last: ⌈(last+1)·2^32 / homes⌉.
			next = ((last+1)<<32 + x.homes - 1) / x.homes
			return next, next >= 1<<32
		}
		off := int(v >> offShift)
		key, _, _ := recordKey(st.arena, off)
		if home == home0 && t > 0 && uint64(uint32(maphash.Bytes(st.seed, key))) < t {
			continue // same home as t, but before it: an earlier call returned it
		}
		started, last = true, home
		b.visits--
		if cur := readState(st.arena, off); cur.live(now) {
			b.live--
			fn(key, cur)
		}
	}
	return 0, true
}

// RangeLive calls fn for every entry live at now, stripe by stripe in arena
// order (no particular key order), until fn returns false. key and st (Val
// nil) are valid during the call only; fn must not call into the Store.
// O(entries): KEYS. Any goroutine; takes each stripe's read lock in turn.
func (s *Store) RangeLive(now int64, fn func(key []byte, st State) bool) {
	for i := range s.stripes {
		st := &s.stripes[i]
		st.mu.RLock()
		a := st.arena
		for off := 0; off < len(a); {
			key, end, dead := recordKey(a, off)
			if !dead {
				if cur := readState(a, off); cur.live(now) && !fn(key, cur) {
					st.mu.RUnlock()
					return
				}
			}
			off = end
		}
		st.mu.RUnlock()
	}
}

// LiveStats counts the entries live at now, and among them those that
// expire (whose Expire is not never, the instant the caller's families use
// for "no expiry"), and sums the remaining lifetimes (ns) of those that
// expire: INFO keyspace's keys, expires and avg_ttl. A sequential scan of
// the arenas, one stripe's read lock at a time.
func (s *Store) LiveStats(now, never int64) (keys, expiring int, ttlSum float64) {
	for i := range s.stripes {
		st := &s.stripes[i]
		st.mu.RLock()
		a := st.arena
		for off := 0; off < len(a); {
			_, end, dead := recordKey(a, off)
			if !dead {
				if e := readExpire(a, off); e > now {
					keys++
					if e != never {
						expiring++
						ttlSum += float64(e - now)
					}
				}
			}
			off = end
		}
		st.mu.RUnlock()
	}
	return keys, expiring, ttlSum
}
