package shard

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestScanCursorIsStable: while a scan runs, random inserts, deletes,
// expiries and sweeps (which grow, shrink, compact and rebuild the tables)
// happen between its calls. Every key present for the whole scan must be
// returned, no key twice, and no key that was not live at the call that
// returned it. Stripe counts 1, 4 and 64; COUNT 1, 7 and 100.
func TestScanCursorIsStable(t *testing.T) {
	for _, stripes := range []int{1, 4, 64} {
		for _, count := range []int{1, 7, 100} {
			for seed := uint64(1); seed <= 5; seed++ {
				t.Run(fmt.Sprintf("stripes=%d/count=%d/seed=%d", stripes, count, seed), func(t *testing.T) {
					scanWhileChanging(t, stripes, count, seed)
				})
			}
		}
	}
}

func scanWhileChanging(t *testing.T, stripes, count int, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 99))
	s := New(stripes)
	now := int64(1000)
	live := map[string]bool{}
	n := 0
	insert := func(ttl int64) {
		k := fmt.Sprintf("k%06d", n)
		n++
		s.Update([]byte(k), now, putState(State{Kind: kindA, Expire: now + ttl}))
		if ttl > 1<<40 {
			live[k] = true
		}
	}
	for range 300 + rng.IntN(3000) {
		insert(1 << 50)
	}
	// stable: keys that stay live for the whole scan (never deleted below).
	stable := map[string]bool{}
	for k := range live {
		if rng.IntN(4) != 0 {
			stable[k] = true
		}
	}
	seen := map[string]int{}
	cursor := uint64(ScanCursorDone)
	for calls := 0; ; calls++ {
		cursor = s.Scan(cursor, count, now, func(key []byte, st State) {
			if !st.live(now) {
				t.Fatalf("Scan returned %q, expired at %d, now %d", key, st.Expire, now)
			}
			seen[string(key)]++
		})
		if cursor == ScanCursorDone {
			break
		}
		if calls > 1_000_000 {
			t.Fatal("the scan does not end")
		}
		// Changes between calls: growth (inserts), shrinking and compaction
		// (deletes of non-stable keys), expiry and sweeps.
		switch rng.IntN(6) {
		case 0, 1:
			for range rng.IntN(200) {
				insert(1 << 50)
			}
		case 2:
			for k := range live {
				if !stable[k] && rng.IntN(2) == 0 {
					s.Delete([]byte(k), now)
					delete(live, k)
				}
			}
		case 3:
			for range rng.IntN(100) {
				insert(int64(rng.IntN(5)))
			}
			now += Linger / 3 // deleted and expired records become droppable
			s.Sweep(now, rng.IntN(5000))
		case 4:
			s.Sweep(now, 1000)
		}
	}
	for k := range stable {
		if seen[k] == 0 {
			t.Errorf("key %q was live for the whole scan but never returned", k)
		}
	}
	for k, c := range seen {
		if c > 1 {
			t.Errorf("key %q returned %d times", k, c)
		}
	}
	s.checkInvariants(t)
}

// TestScanArbitraryCursor: a cursor the server never handed out (a client's
// guess, 2^64-1) neither panics nor loops.
func TestScanArbitraryCursor(t *testing.T) {
	s := New(4)
	for i := range 100 {
		s.Update([]byte(fmt.Sprint(i)), 0, putState(State{Kind: kindA, Expire: 10}))
	}
	for _, c := range []uint64{1<<64 - 1, 3<<32 | (1<<32 - 1), 1 << 32, 4 << 32, 12345} {
		for i := 0; c != ScanCursorDone; i++ {
			c = s.Scan(c, 10, 1, func([]byte, State) {})
			if i > 1000 {
				t.Fatalf("no end from cursor %d", c)
			}
		}
	}
}

// TestRangeLiveAndLiveStats: only live keys, their count and lifetimes.
func TestRangeLiveAndLiveStats(t *testing.T) {
	s := New(8)
	for i := range 50 {
		s.Update([]byte(fmt.Sprint(i)), 0, putState(State{Kind: kindA, Expire: int64(10 + i%2*10), Val: make([]byte, i%3)}))
	}
	got := 0
	s.RangeLive(15, func(key []byte, st State) bool {
		if st.Expire != 20 {
			t.Errorf("RangeLive gave %q expiring at %d, now 15", key, st.Expire)
		}
		got++
		return true
	})
	keys, expiring, sum := s.LiveStats(15, math.MaxInt64)
	if got != 25 || keys != 25 || expiring != 25 || sum != 25*5 {
		t.Errorf("RangeLive %d keys, LiveStats %d keys (%d expiring), ttl sum %v; want 25, 25, 125", got, keys, expiring, sum)
	}
	// Keys that never expire count as keys, not among the expiring.
	for i := range 5 {
		s.Update([]byte(fmt.Sprint("forever", i)), 0, putState(State{Kind: kindA, Expire: math.MaxInt64}))
	}
	keys, expiring, sum = s.LiveStats(15, math.MaxInt64)
	if keys != 30 || expiring != 25 || sum != 25*5 {
		t.Errorf("with 5 keys that never expire: LiveStats %d keys (%d expiring), ttl sum %v; want 30, 25, 125", keys, expiring, sum)
	}
}

// TestValueGrowsInPlace: a value rewritten a little longer or shorter stays
// in its record (no garbage: the slack of its region takes it); a value
// returned unchanged (aliasing the record) is written onto itself intact; a
// value that outgrows its region moves, and every version reads back.
func TestValueGrowsInPlace(t *testing.T) {
	s := New(1)
	key := []byte("log")
	val := func(n int) []byte {
		v := make([]byte, n)
		for i := range v {
			v[i] = byte(n + i)
		}
		return v
	}
	// In place: the arena neither grows nor holds garbage.
	arena := func() int { return len(s.stripes[0].arena) + s.stripes[0].garbage }
	s.Put([]byte("other"), State{Kind: kindA, Expire: 100})
	s.Put(key, State{Kind: kindB, Expire: 100, Val: val(40)})
	size := arena()
	for _, n := range []int{41, 44, 39, 1, 44} { // region 41 + max(4, 41/8) = 46 bytes
		s.Update(key, 0, putState(State{Kind: kindB, Expire: 100, Val: val(n)}))
		if got, _ := s.GetValue(key, 0, nil); string(got.Val) != string(val(n)) || arena() != size {
			t.Fatalf("rewritten with %d bytes: read %d bytes, arena %d bytes, was %d", n, len(got.Val), arena(), size)
		}
	}
	s.Update(key, 0, func(cur State, live bool) (State, Action) { return cur, Put })
	if got, _ := s.GetValue(key, 0, nil); string(got.Val) != string(val(44)) || arena() != size {
		t.Fatalf("the unchanged value put back: %d bytes, arena %d bytes, was %d", len(got.Val), arena(), size)
	}
	s.Update(key, 0, putState(State{Kind: kindB, Expire: 100, Val: val(46)}))
	if got, _ := s.GetValue(key, 0, nil); string(got.Val) != string(val(46)) || arena() == size {
		t.Fatalf("outgrown: read %d bytes, arena unchanged (want a move)", len(got.Val))
	}
	s.checkInvariants(t)
}

// TestScanSkipsGoneRecordsWithinABound: tombstones (deleted keys that
// linger for WATCH) do not use up a SCAN call's COUNT, so a few live keys
// among many deleted ones still come in one call ending the scan, as in
// Redis (whose dict holds no deleted keys); but a call visits at most
// scanVisitsPerCount×COUNT records, so a long stretch of tombstones takes
// several calls instead of one unbounded one.
func TestScanSkipsGoneRecordsWithinABound(t *testing.T) {
	s := New(1)
	const now = 1000
	for i := range 40 {
		s.Put([]byte(fmt.Sprintf("gone%02d", i)), State{Kind: 1, Expire: 1 << 62})
	}
	for i := range 40 {
		s.Delete([]byte(fmt.Sprintf("gone%02d", i)), now)
	}
	for i := range 5 {
		s.Put([]byte(fmt.Sprintf("live%d", i)), State{Kind: 1, Expire: 1 << 62})
	}
	var got []string
	cur := s.Scan(0, 10, now, func(k []byte, _ State) { got = append(got, string(k)) })
	if cur != ScanCursorDone || len(got) != 5 {
		t.Fatalf("5 live keys among 40 deleted: cursor %d, %d keys %v; want one call with all 5", cur, len(got), got)
	}

	s = New(1)
	for i := range 5000 {
		k := []byte(fmt.Sprintf("k%05d", i))
		s.Put(k, State{Kind: 1, Expire: 1 << 62})
		s.Delete(k, now)
	}
	calls := 0
	for cur := uint64(ScanCursorDone); ; {
		visited := 0
		cur = s.Scan(cur, 10, now, func([]byte, State) { visited++ })
		calls++
		if visited != 0 {
			t.Fatalf("a tombstone was returned as a live key")
		}
		if cur == ScanCursorDone {
			break
		}
	}
	if calls < 5000/(scanVisitsPerCount*10) {
		t.Errorf("5000 tombstones scanned in %d calls of COUNT 10: a call visited more than %d records", calls, scanVisitsPerCount*10)
	}
}
