// Package shard holds a Redcell node's keyspace: lock-striped hash tables
// from a binary-safe key to a small fixed-size limiter State.
//
// # Goroutines
//
// A Store has exactly one writer: the goroutine applying committed Raft log
// entries (package fsm), or the goroutine restoring a snapshot before the
// Store is published. Only the writer may call Update, Put, Delete, Sweep,
// Clear and Snapshot; it never waits for another writer, only for readers
// holding a stripe's read lock.
//
// Any number of reader goroutines may call Get, Len and Stats concurrently
// with the writer and with each other. A reader sees each key either before or
// after a writer's call, never a torn State. Len and Stats visit the stripes
// one at a time, so under concurrent writes they are per-stripe consistent,
// not a global cut.
//
// A *Snapshot is immutable and may be read from any goroutine.
//
// # Determinism
//
// Results never depend on the number of stripes, on the hash seed, on table
// layout or on when the sweeper ran: an entry at or past its Expire behaves
// exactly like an absent one, and Snapshot.Range orders by key bytes.
package shard

import (
	"hash/maphash"
	"math/bits"
	"sync/atomic"
)

// MaxStripes caps the stripe count given to New.
const MaxStripes = 1 << 16

// Linger is how long a gone record (a tombstone, or a key past its expiry)
// stays in the table before the sweeper may drop it, in ns of the caller's
// clock: Linger after its Expire. Until then its change marker is kept (in
// snapshots too), which is what lets WATCH decide a key changed whatever
// the sweeper did (fsm/DESIGN.md, "WATCH"). Part of what the state machine
// decides: changing it changes which watched transactions abort.
const Linger int64 = 10e9

// droppable reports whether a record whose Expire is expire may be
// dropped at now: Linger has passed since it went. Exact over all int64s.
func droppable(expire, now int64) bool {
	return now >= expire && uint64(now)-uint64(expire) >= uint64(Linger)
}

// Store is the keyspace. The zero value is not usable; call New.
type Store struct {
	stripes []stripe
	shift   uint // stripe = hash >> shift; 64 with one stripe
	seed    maphash.Seed

	sweepStripe int // stripe where Sweep resumes; writer only

	// stamp is the change marker writes stamp (SetStamp); writer only.
	stamp uint64

	// moving holds a value while its record moves (put); writer only.
	moving []byte
	moves  atomic.Uint64 // records moved because their value outgrew its region
}

// New makes a store with stripes stripes, rounded up to a power of two and
// clamped to [1, MaxStripes].
//
// The hash seed is random per Store (hash/maphash): an attacker cannot craft
// keys that collide, and since results never depend on layout, replicas with
// different seeds still agree on every reply and every snapshot.
func New(stripes int) *Store {
	stripes = max(1, min(stripes, MaxStripes))
	n := 1 << bits.Len(uint(stripes-1)) // next power of two
	s := &Store{
		stripes: make([]stripe, n),
		shift:   uint(64 - bits.TrailingZeros(uint(n))),
		seed:    maphash.MakeSeed(),
	}
	for i := range s.stripes {
		s.stripes[i].seed = s.seed
	}
	return s
}

// locate hashes key and returns the hash and its stripe. Stripe choice uses
// the top bits of the hash; the index inside the stripe uses the low bits.
func (s *Store) locate(key []byte) (uint64, *stripe) {
	h := maphash.Bytes(s.seed, key)
	return h, &s.stripes[h>>s.shift] // h>>64 == 0 in Go: one stripe
}

// Update is the apply path. It looks key up, calls fn with its state and
// whether it is live (present and now < Expire), then applies fn's Action.
// A key that is absent or expired is passed as the zero State with
// live=false, so fn's input never depends on whether the sweeper has
// reclaimed it yet; an expired entry is reused in place by Put.
//
// Every action but Keep is a change of the key, and stamps its record with
// the current stamp (SetStamp): Put stores next; Put of a State that is not
// live at now (Expire <= now) leaves a tombstone instead (the key is gone,
// and its record remembers that it changed, see Delete), even where the
// key was absent; Delete of a live key leaves a tombstone, and Delete of a
// key that is not live is Keep (nothing changes). So a callback whose
// command changes nothing must return Keep.
//
// cur.Val aliases the stripe's memory: fn may read it, and may return it as
// next.Val, but must not keep it. cur.Mark is 0 (Watch and Record read
// markers). next (its Val included) is copied; its Mark is ignored.
//
// Writer goroutine only. fn runs with the key's stripe locked exclusively: it
// must be quick and must not call back into the Store. The key bytes are
// copied on Put; the caller keeps ownership of key. No allocation in steady
// state (only when a stripe's arena or index changes size). An Action other
// than Keep, Put or Delete is treated as Keep.
func (s *Store) Update(key []byte, now int64, fn func(cur State, live bool) (next State, act Action)) {
	h, st := s.locate(key)
	st.mu.Lock()
	defer st.mu.Unlock()
	p, want, found := st.find(h, key)
	var cur State
	live := false
	if found {
		off := st.offsetAt(p)
		readFieldsInto(st.arena, off, &cur)
		if live = cur.live(now); !live {
			cur = State{}
		} else if st.arena[off]&hasValue != 0 {
			cur.Val = recordValue(st.arena, off)
		}
	}
	next, act := fn(cur, live)
	switch {
	case act == Put && next.live(now):
		next.Mark = s.stamp
		s.put(st, h, key, next, p, want, found)
	case act == Put && found, act == Delete && live:
		s.bury(st, h, key, p, now)
	case act == Put:
		// Gone at once, but written: a tombstone remembers the write.
		st.insert(h, key, s.tombstone(now), p, want)
	}
}

// tombstone is the state of a record inserted gone at now (the kind and the
// fields of a gone record are never read).
func (s *Store) tombstone(now int64) State { return State{Expire: now, Mark: s.stamp} }

// bury makes the record of key in slot p of stripe st a tombstone at now,
// stamped: in place, unless the stamp is wider than the record's mark (from
// 2^40 on), when a tombstone record replaces it. Caller holds st.mu
// exclusively; writer goroutine only.
func (s *Store) bury(st *stripe, h uint64, key []byte, p uint64, now int64) {
	if bury(st.arena, st.offsetAt(p), now, s.stamp) {
		return
	}
	st.remove(p)
	p, want, _ := st.find(h, key) // remove may have rebuilt the index
	st.insert(h, key, s.tombstone(now), p, want)
}

// put stores next under key in stripe st, where a find left p, want and
// found. A record that next fits (its fixed fields, mark and value:
// writeInPlace) is overwritten in place, as a fixed-size family's always is
// while the key lives; otherwise the record moves: the old one dies and a
// new one is appended, with the value copied aside first, since it may
// alias the old record, which compaction could overwrite. Caller holds
// st.mu exclusively; writer goroutine only.
func (s *Store) put(st *stripe, h uint64, key []byte, next State, p, want uint64, found bool) {
	if found {
		if writeInPlace(st.arena, st.offsetAt(p), next) {
			return
		}
		s.moves.Add(1)
		s.moving = append(s.moving[:0], next.Val...)
		next.Val = s.moving
		st.remove(p)
		p, want, _ = st.find(h, key) // remove may have rebuilt the index
	}
	st.insert(h, key, next, p, want)
	if cap(s.moving) > 64<<10 {
		s.moving = nil // do not keep a huge value's buffer
	}
}

// Put stores st under key, replacing any entry, without looking at the
// clock (it stores st even if it is already expired), and stamps it: a
// write of the key (RENAME's destination). Writer goroutine only. The key
// bytes and the value are copied.
func (s *Store) Put(key []byte, st State) {
	st.Mark = s.stamp
	s.Load(key, st)
}

// Load is Put keeping st.Mark as given: the restore path (loading a
// snapshot, whose records carry their markers). Writer goroutine only.
func (s *Store) Load(key []byte, st State) {
	h, sp := s.locate(key)
	sp.mu.Lock()
	defer sp.mu.Unlock()
	p, want, found := sp.find(h, key)
	s.put(sp, h, key, st, p, want, found)
}

// SetStamp sets the change marker that every later write stamps on the
// records it changes: the raft index of the entry about to be applied.
// Writer goroutine only.
func (s *Store) SetStamp(stamp uint64) { s.stamp = stamp }

// Watch reports whether key is live at now, and the change marker of its
// record, whether live, expired or a tombstone, as long as the record has
// not been dropped (0 when there is none). Any goroutine; takes the
// stripe's read lock.
func (s *Store) Watch(key []byte, now int64) (live bool, mark uint64) {
	h, st := s.locate(key)
	st.mu.RLock()
	defer st.mu.RUnlock()
	p, _, found := st.find(h, key)
	if !found {
		return false, 0
	}
	off := st.offsetAt(p)
	return readExpire(st.arena, off) > now, readMark(st.arena, off)
}

// Get returns the state of key if it is live at now, without its value (Val
// nil; see GetValue). Any goroutine; takes the stripe's read lock. Does not
// allocate.
func (s *Store) Get(key []byte, now int64) (State, bool) {
	h, st := s.locate(key)
	st.mu.RLock()
	p, _, found := st.find(h, key)
	var cur State
	if found {
		cur = readState(st.arena, st.offsetAt(p))
	}
	st.mu.RUnlock()
	if !found || !cur.live(now) {
		return State{}, false
	}
	return cur, true
}

// GetValue is Get with the value: st.Val is the value appended to buf[:0]
// (nil when the key has none), so it stays valid after the lock is released.
// It allocates only when buf is too small. Any goroutine.
func (s *Store) GetValue(key []byte, now int64, buf []byte) (State, bool) {
	return s.readRecord(key, buf, func(cur State) bool { return cur.live(now) })
}

// readRecord is the record of key with its value appended to buf[:0] (nil
// when it has none), if it has one that keep accepts; the value is copied
// only then. Any goroutine; takes the stripe's read lock.
func (s *Store) readRecord(key, buf []byte, keep func(State) bool) (State, bool) {
	h, st := s.locate(key)
	st.mu.RLock()
	defer st.mu.RUnlock()
	p, _, found := st.find(h, key)
	if !found {
		return State{}, false
	}
	off := st.offsetAt(p)
	cur := readState(st.arena, off)
	if keep != nil && !keep(cur) {
		return State{}, false
	}
	if v := recordValue(st.arena, off); v != nil {
		cur.Val = append(buf[:0], v...)
	}
	return cur, true
}

// Delete removes key and reports whether it was live at now. The removal
// leaves a tombstone: the record stays, gone (Expire = now) and stamped,
// until the sweeper drops it Linger later, so that WATCH sees the deletion
// (fsm). Deleting a key that is not live changes nothing. Writer goroutine
// only.
func (s *Store) Delete(key []byte, now int64) bool {
	h, st := s.locate(key)
	st.mu.Lock()
	defer st.mu.Unlock()
	p, _, found := st.find(h, key)
	if !found {
		return false
	}
	if readExpire(st.arena, st.offsetAt(p)) <= now {
		return false
	}
	s.bury(st, h, key, p, now)
	return true
}

// Len counts the keys live at now: an O(n) sequential scan of the arenas,
// one stripe at a time under its read lock (fine for DBSIZE). Any goroutine.
func (s *Store) Len(now int64) int {
	n := 0
	for i := range s.stripes {
		st := &s.stripes[i]
		st.mu.RLock()
		a := st.arena
		for off := 0; off < len(a); {
			_, end, dead := recordKey(a, off)
			if !dead && readExpire(a, off) > now {
				n++
			}
			off = end
		}
		st.mu.RUnlock()
	}
	return n
}

// BuryAll removes every key live at now (FLUSHALL): each becomes a
// tombstone stamped with the current stamp, as Delete leaves, so that WATCH
// sees exactly the keys that existed change (as Redis 7.0's FLUSHALL
// touches only watched keys that exist). The memory is reclaimed when the
// sweeper drops the tombstones, Linger later. A sequential pass over the
// arenas, one stripe's lock at a time. Writer goroutine only.
func (s *Store) BuryAll(now int64) {
	var wider [][]byte // keys whose records cannot hold the stamp's width
	for i := range s.stripes {
		st := &s.stripes[i]
		st.mu.Lock()
		a := st.arena
		for off := 0; off < len(a); {
			key, end, dead := recordKey(a, off)
			if !dead && readExpire(a, off) > now && !bury(a, off, now, s.stamp) {
				wider = append(wider, append([]byte(nil), key...))
			}
			off = end
		}
		// Replacing a record appends to the arena: after the scan.
		for _, key := range wider {
			h := maphash.Bytes(s.seed, key)
			if p, _, found := st.find(h, key); found {
				s.bury(st, h, key, p, now)
			}
		}
		wider = wider[:0]
		st.mu.Unlock()
	}
}

// Clear removes every key and releases the memory of every stripe, leaving
// no tombstone. Writer goroutine only.
func (s *Store) Clear() {
	for i := range s.stripes {
		st := &s.stripes[i]
		st.mu.Lock()
		st.clear()
		st.mu.Unlock()
	}
	s.sweepStripe = 0
}
