package shard

import "unsafe"

// Prefetching: hiding the keyspace's memory latency from the apply loop.
//
// A log entry carries hundreds of decisions on keys spread over the whole
// keyspace, and each Update touches two cache lines nobody touched
// recently: the key's index slot and its record in the arena (whose address
// is in the slot). Between entries the node reads sockets, encodes replies
// and syncs the log, which evicts both from the caches and, on VMs with page
// table isolation and no PCID (the 2-core VMs Redcell is measured on), from
// the TLB at every system call. Profiled in a 3-node cluster at -P 16, the
// two misses were ~0.5 µs per Update, half of each node's apply time.
//
// The apply loop knows its keys in advance (they are all in the entry), so a
// Prefetcher is fed the keys a few requests ahead of the Updates: it asks
// the CPU for a key's index slot when the key is fed, and for its record
// (read from that slot, by then in cache) Distance keys later. The CPU
// fetches those lines while the loop works on earlier requests. Measured
// with BenchmarkApplyEntry in fsm with the caches flushed between entries
// (BenchmarkApplyEntryCold): 540 → 270 ns per decision; with a warm
// cache it costs ~5 %.
//
// A prefetch is a hint: it changes nothing, cannot fault, and a wrong
// address (the key is absent, a same-home neighbour came first) costs only
// a wasted fetch.

// Distance is how many keys a record's prefetch follows its slot's. A
// Prefetcher runs 2*Distance keys ahead of the lookups (Lead).
const Distance = 4

// Lead is how far ahead of the Updates a Prefetcher is fed.
const Lead = 2 * Distance

// Prefetcher is the ring of hashed keys between their slot's prefetch and
// their record's. The zero value is unusable; Reset it onto a store. Writer
// goroutine only: it reads the index and arena without the stripe's lock,
// which only that goroutine ever changes.
type Prefetcher struct {
	s      *Store
	hashes [Lead]uint64
	valid  [Lead]bool
	n      int // keys (and gaps) fed since Reset

	trace func(record bool, addr unsafe.Pointer) // tests: sees every prefetch
}

// Reset starts a new loop over s.
func (pf *Prefetcher) Reset(s *Store) {
	*pf = Prefetcher{s: s, trace: pf.trace}
}

// Feed prefetches key's index slot and the record of the key fed Distance
// calls ago. A nil key is a gap (a request without a key to look up): it
// only moves the ring on.
func (pf *Prefetcher) Feed(key []byte) {
	i := pf.n % Lead
	pf.valid[i] = key != nil
	if key != nil {
		h, st := pf.s.locate(key)
		pf.hashes[i] = h
		if p, ok := st.idx.homeSlot(h); ok {
			pf.fetch(false, unsafe.Pointer(&st.idx.slots[p*slotBytes]))
		}
	}
	if m := pf.n - Distance; m >= 0 {
		if j := m % Lead; pf.valid[j] {
			pf.valid[j] = false
			if st, off, ok := pf.s.recordAt(pf.hashes[j]); ok {
				// A record of a short key (~30 bytes) often spans two lines.
				pf.fetch(true, unsafe.Pointer(&st.arena[off]))
				pf.fetch(true, unsafe.Pointer(&st.arena[off+prefetchReach]))
			}
		}
	}
	pf.n++
}

func (pf *Prefetcher) fetch(record bool, addr unsafe.Pointer) {
	if pf.trace != nil {
		pf.trace(record, addr)
	}
	prefetch(addr)
}

// prefetchReach is the offset into a record of the byte the second
// prefetch asks for: the last byte of a CL record (15 bytes before its key:
// layout byte, key header, TAT, change marker; record.go) whose key takes
// up to 16 bytes, as typical rate-limit keys ("user:12345678") do.
const prefetchReach = 30

// homeSlot is the position of the home slot of hash h; false when the table
// is empty.
func (x *index) homeSlot(h uint64) (uint64, bool) {
	if x.count == 0 {
		return 0, false
	}
	return x.home(h), true
}

// recordAt is the stripe and arena offset of the first record whose slot
// matches hash h's home and fragment (the key's own record, unless one of
// ~32 same-home neighbours comes first), with room for both of Feed's
// prefetches; false when the key is surely absent.
func (s *Store) recordAt(h uint64) (*stripe, int, bool) {
	st := &s.stripes[h>>s.shift]
	x := &st.idx
	if x.count == 0 {
		return nil, 0, false
	}
	want := 1 | hashFragment(h)<<distBits
	for p := x.home(h); ; p, want = p+1, want+1 {
		v := x.load(p)
		if v&distMask < want&distMask {
			return nil, 0, false // empty, or closer to its home: absent
		}
		if v&metaMask == want {
			off := int(v >> offShift)
			if off+prefetchReach >= len(st.arena) {
				return nil, 0, false
			}
			return st, off, true
		}
	}
}
