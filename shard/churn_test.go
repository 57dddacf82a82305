package shard

import (
	"fmt"
	"testing"
)

// putState is an Update callback storing st unconditionally.
func putState(st State) func(State, bool) (State, Action) {
	return func(State, bool) (State, Action) { return st, Put }
}

// liveRecordBytes is the arena footprint the live entries need at minimum.
func liveRecordBytes(s *Store, now int64) int {
	n := 0
	sn := s.Snapshot(now)
	for off := 0; off < len(sn.data); {
		_, end, _ := recordKey(sn.data, off)
		n += end - off
		off = end
	}
	return n
}

// Keys arrive and expire forever. Memory must track the live set: bounded by
// a small multiple of what the live entries need, and flat from one
// generation to the next instead of creeping up.
func Test_Store_ChurnKeepsMemoryFlat(t *testing.T) {
	const (
		perRound = 2_000
		ttl      = 10 // rounds a key lives
		rounds   = 150
		warmup   = 2 * ttl
	)
	for _, tt := range []struct {
		name    string
		stripes int
		budget  int // Sweep budget per round; 0 = unlimited
	}{
		{"1 stripe, sweep all", 1, 1 << 30},
		// Examining 4 records per insert: a full pass every ~3 rounds.
		{"8 stripes, bounded sweep", 8, perRound * 4},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := New(tt.stripes)
			key := make([]byte, 0, 32)
			var now int64
			var peakEarly, peakLate Stats
			for round := range rounds {
				for i := range perRound {
					// Varying key lengths leave holes of varying sizes.
					key = fmt.Appendf(key[:0], "gen%d:key%0*d", round, 1+i%9, i)
					st := State{Kind: kindA, Expire: now + ttl*Linger, A: int64(round), B: int64(i)}
					s.Update(key, now, putState(st))
				}
				now += Linger // a round: what expired a round ago is droppable
				removed := s.Sweep(now, tt.budget)
				if removed > tt.budget {
					t.Fatalf("round %d: Sweep removed %d > budget %d", round, removed, tt.budget)
				}
				if round < warmup {
					continue
				}
				st := s.Stats()
				live := s.Len(now)
				if live != perRound*ttl-perRound {
					t.Fatalf("round %d: %d live keys, want %d", round, live, perRound*(ttl-1))
				}
				// The sweeper keeps up: expired leftovers stay below what one
				// full pass over the table takes (a round when unbounded).
				leftover := 3 * perRound // one round more: expired records linger
				if tt.budget < 1<<30 {
					leftover = (st.Entries/tt.budget + 3) * perRound
				}
				if st.Entries > live+leftover {
					t.Fatalf("round %d: %d entries for %d live keys", round, st.Entries, live)
				}
				need := liveRecordBytes(s, now)
				if st.ArenaCap > 3*need {
					t.Fatalf("round %d: arena capacity %d for %d live record bytes", round, st.ArenaCap, need)
				}
				if st.IndexBytes > 3*live*slotBytes+tt.stripes*1024 {
					t.Fatalf("round %d: index %d bytes for %d live keys", round, st.IndexBytes, live)
				}
				peak := &peakEarly
				if round >= (rounds+warmup)/2 {
					peak = &peakLate
				}
				peak.ArenaCap = max(peak.ArenaCap, st.ArenaCap)
				peak.IndexBytes = max(peak.IndexBytes, st.IndexBytes)
				if round%4 == 0 {
					s.checkInvariants(t)
				}
			}
			// Flat: the second half of the run needs no more memory than the
			// first. Slack for where each stripe is in its compaction cycle
			// and, with a bounded sweep, for leftovers that swing between
			// none and a few rounds' worth; a leak grows with every round.
			slack := int64(110)
			if tt.budget < 1<<30 {
				slack = 125
			}
			if int64(peakLate.ArenaCap)*100 > int64(peakEarly.ArenaCap)*slack || int64(peakLate.IndexBytes)*100 > int64(peakEarly.IndexBytes)*slack {
				t.Fatalf("memory creeps: early peak %+v, late peak %+v", peakEarly, peakLate)
			}
			t.Logf("peak arena %d, index %d bytes for %d live keys", peakLate.ArenaCap, peakLate.IndexBytes, perRound*(ttl-1))

			// Everything expires: sweeping releases all memory.
			now += ttl*Linger + Linger
			for i := 0; i < 1000 && s.Stats().Entries > 0; i++ {
				s.Sweep(now, 500)
				s.checkInvariants(t)
			}
			if st := s.Stats(); st.Entries != 0 || st.TotalBytes != 0 || st.ArenaBytes != 0 {
				t.Fatalf("after expiring everything: %+v", st)
			}
			s.checkInvariants(t)
		})
	}
}

// Clear releases all memory and leaves a usable store.
func Test_Store_ClearReleasesMemory(t *testing.T) {
	s := New(4)
	for i := range 10_000 {
		s.Update(fmt.Appendf(nil, "k%d", i), 0, putState(State{Expire: 100}))
	}
	if st := s.Stats(); st.Entries != 10_000 || st.TotalBytes == 0 {
		t.Fatalf("before Clear: %+v", st)
	}
	s.Clear()
	if st := s.Stats(); st.Entries != 0 || st.TotalBytes != 0 || st.Stripes != 4 {
		t.Fatalf("after Clear: %+v", st)
	}
	if s.Len(0) != 0 || s.Sweep(1000, 10) != 0 {
		t.Fatal("cleared store not empty")
	}
	s.Put([]byte("k1"), State{Kind: kindB, Expire: 5, A: 1, B: 2})
	if st, ok := s.Get([]byte("k1"), 4); !ok || !st.Equal(State{Kind: kindB, Expire: 5, A: 1, B: 2}) {
		t.Fatalf("after Clear and Put: %+v %v", st, ok)
	}
	s.checkInvariants(t)
}

// Deleting most keys compacts the arena and shrinks the index even when no
// new key arrives to trigger it.
func Test_Store_DeletesShrinkMemory(t *testing.T) {
	s := New(1)
	const n = 50_000
	for i := range n {
		s.Put(fmt.Appendf(nil, "key:%08d", i), State{Expire: 1})
	}
	full := s.Stats()
	for i := range n - 100 {
		if !s.Delete(fmt.Appendf(nil, "key:%08d", i), 0) {
			t.Fatalf("Delete(%d) = false", i)
		}
	}
	if st := s.Stats(); st.Entries != n {
		t.Fatalf("after the deletes: %d entries, want %d tombstones and live keys", st.Entries, n)
	}
	s.Sweep(Linger, n) // the tombstones have lingered: dropped
	st := s.Stats()
	if st.Entries != 100 || st.ArenaCap > full.ArenaCap/50 || st.IndexBytes > full.IndexBytes/50 {
		t.Fatalf("full %+v, after deleting all but 100: %+v", full, st)
	}
	s.checkInvariants(t)
}
