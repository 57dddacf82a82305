package shard

import (
	"fmt"
	"testing"
	"unsafe"
)

// keyRecord is the stripe and arena offset of key's record, found the way
// Update finds it.
func keyRecord(t *testing.T, s *Store, key []byte) (*stripe, int) {
	t.Helper()
	h, st := s.locate(key)
	p, _, found := st.find(h, key)
	if !found {
		t.Fatalf("%s: not in the store", key)
	}
	return st, st.offsetAt(p)
}

// recordAt names the key's own record for (almost) every key: only a
// same-home neighbour with the same 5-bit fragment placed before it can
// take its place, and any record it names is a live one with a matching
// slot.
func TestRecordAt_IsTheKeysOwnRecord(t *testing.T) {
	s := New(4)
	const n = 20_000
	for i := range n {
		s.Put(fmt.Appendf(nil, "user:%d", i), State{Expire: 1 << 62, A: int64(i)})
	}
	own := 0
	for i := range n {
		key := fmt.Appendf(nil, "user:%d", i)
		wantSt, wantOff := keyRecord(t, s, key)
		h, _ := s.locate(key)
		st, off, ok := s.recordAt(h)
		if !ok {
			if wantOff+prefetchReach < len(wantSt.arena) {
				t.Fatalf("%s: recordAt found nothing for a present key", key)
			}
			continue // the arena's last record: left out on purpose
		}
		if st != wantSt {
			t.Fatalf("%s: recordAt in another stripe", key)
		}
		if off == wantOff {
			own++
			continue
		}
		other, _, dead := recordKey(st.arena, off)
		oh, _ := s.locate(other)
		if dead || oh>>s.shift != h>>s.shift || st.idx.home(oh) != st.idx.home(h) || hashFragment(oh) != hashFragment(h) {
			t.Fatalf("%s: recordAt named %q, which does not share its home and fragment", key, other)
		}
	}
	if own < n*95/100 {
		t.Errorf("recordAt named the key's own record for %d of %d keys, want ≥ 95%%", own, n)
	}
	absent := 0
	for i := range n {
		h, _ := s.locate(fmt.Appendf(nil, "absent:%d", i))
		if _, _, ok := s.recordAt(h); !ok {
			absent++
		}
	}
	if absent < n*9/10 { // a match needs the same home and fragment: ~1 in 32 per neighbour
		t.Errorf("recordAt found nothing for %d of %d absent keys, want ≥ 90%%", absent, n)
	}
}

// Feed asks for a key's slot when it is fed and for its record Distance
// feeds later; gaps only move the ring on, and nothing is fetched twice.
func TestPrefetcher_SlotThenRecordDistanceLater(t *testing.T) {
	s := New(2)
	keys := make([][]byte, 40)
	for i := range keys {
		if i%7 == 3 {
			continue // a gap: a request without a key
		}
		keys[i] = fmt.Appendf(nil, "k%d", i)
		s.Put(keys[i], State{Expire: 1 << 62})
	}
	type fetch struct {
		record bool
		addr   unsafe.Pointer
	}
	var got []fetch
	var pf Prefetcher
	pf.trace = func(record bool, addr unsafe.Pointer) { got = append(got, fetch{record, addr}) }
	pf.Reset(s)
	for call := 0; call < len(keys)+Distance; call++ {
		var key []byte
		if call < len(keys) {
			key = keys[call]
		}
		got = got[:0]
		pf.Feed(key)
		var want []fetch
		if key != nil {
			h, st := s.locate(key)
			want = append(want, fetch{false, unsafe.Pointer(&st.idx.slots[st.idx.home(h)*slotBytes])})
		}
		if k := call - Distance; k >= 0 && keys[k] != nil {
			// The record recordAt names: the key's own but for a same-home,
			// same-fragment neighbour before it (TestRecordAt_IsTheKeysOwnRecord;
			// the hash seed is random, so that happens now and then).
			h, _ := s.locate(keys[k])
			if st, off, ok := s.recordAt(h); ok {
				want = append(want,
					fetch{true, unsafe.Pointer(&st.arena[off])},
					fetch{true, unsafe.Pointer(&st.arena[off+prefetchReach])})
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("call %d (key %q): fetched %v, want %v", call, key, got, want)
		}
	}
}

// An empty store has no slots to fetch; Feed must not touch the table.
func TestPrefetcher_EmptyStore(t *testing.T) {
	var pf Prefetcher
	n := 0
	pf.trace = func(bool, unsafe.Pointer) { n++ }
	pf.Reset(New(8))
	for i := range 3 * Lead {
		pf.Feed(fmt.Appendf(nil, "k%d", i))
	}
	if n != 0 {
		t.Errorf("%d prefetches in an empty store", n)
	}
}
