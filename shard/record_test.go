package shard

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"
)

// layoutStates are states at the edges of every form: TATs around zero and
// the ends of int64, expiries on and next to the millisecond a TAT gives,
// including where that millisecond's end leaves int64.
func layoutStates(rng *rand.Rand) []State {
	as := []int64{0, 1, -1, 999_999, nsPerMs, -nsPerMs, -nsPerMs - 1, math.MaxInt64, math.MaxInt64 - nsPerMs,
		math.MinInt64, math.MinInt64 + nsPerMs, 1_800_000_000_123_456_789, int64(rng.Uint64())}
	var out []State
	for _, a := range as {
		ms := a / nsPerMs
		if a%nsPerMs < 0 {
			ms--
		}
		// The next millisecond's start as int64 arithmetic wraps it: a
		// value no TAT form may claim where it wrapped.
		es := []int64{0, 1, math.MaxInt64, math.MinInt64, int64(rng.Uint64()), int64(uint64(ms+1) * nsPerMs)}
		// Millisecond starts near A in wrapping arithmetic: across an end
		// of int64, A and such an Expire differ by under a millisecond
		// only modulo 2^64, which no TAT form may take for closeness.
		for _, w := range []uint64{uint64(a) + nsPerMs, uint64(a) - nsPerMs} {
			r := uint64(int64(w) % nsPerMs)
			for _, e := range []uint64{w - r, w - r + nsPerMs, w - r - nsPerMs} {
				es = append(es, int64(e))
			}
		}
		for _, m := range []int64{ms - 1, ms, ms + 1, ms + 2} {
			if m <= math.MaxInt64/nsPerMs && m >= math.MinInt64/nsPerMs {
				es = append(es, m*nsPerMs, m*nsPerMs+1, m*nsPerMs-1)
			}
		}
		for _, e := range es {
			for _, b := range []int64{0, 1, int64(rng.Uint64())} {
				out = append(out, State{Kind: Kind(rng.IntN(int(MaxKind) + 1)), Expire: e, A: a, B: b})
			}
		}
	}
	return out
}

// Every state round-trips through a new record and through an in-place
// write, bit for bit, in the smallest form that holds it; an in-place write
// that does not fit changes nothing.
func TestLayoutRoundTrips(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	states := layoutStates(rng)
	marks := []uint64{0, 1, maxNarrowMark, maxNarrowMark + 1, math.MaxUint64}
	key := []byte("user:0000012345")
	small := 0
	for _, st := range states {
		for _, m := range marks {
			st.Mark = m
			rec := appendRecord(nil, key, st)
			if got := readState(rec, 0); !got.Equal(st) || got.Mark != st.Mark {
				t.Fatalf("%+v: new record reads %+v", st, got)
			}
			if got := readExpire(rec, 0); got != st.Expire {
				t.Fatalf("%+v: readExpire %d", st, got)
			}
			if got := readMark(rec, 0); got != m {
				t.Fatalf("%+v: readMark %d", st, got)
			}
			for _, now := range []int64{st.A - nsPerMs - 1, st.A - nsPerMs, st.A - nsPerMs + 1, st.A, st.A + nsPerMs,
				st.Expire - 1, st.Expire, st.Expire + Linger - 1, st.Expire + Linger, st.Expire + Linger + 1,
				st.A + Linger - nsPerMs, st.A + Linger + nsPerMs, math.MinInt64, math.MaxInt64, 0} {
				if end, dead, got := scanRecord(rec, 0, now); got != droppable(st.Expire, now) || dead || end != len(rec) {
					t.Fatalf("%+v: scanRecord at %d = %d %v %v, want %d false %v", st, now, end, dead, got, len(rec), droppable(st.Expire, now))
				}
			}
			if k, end, dead := recordKey(rec, 0); !bytes.Equal(k, key) || end != len(rec) || dead || len(rec) != recordSize(len(key), st) {
				t.Fatalf("%+v: key %q end %d dead %v, record %d bytes, recordSize %d", st, k, end, dead, len(rec), recordSize(len(key), st))
			}
			if rec[0]&formMask != formFull {
				small++
			}
			if wantWide := m > maxNarrowMark; rec[0]&wideMark != 0 != wantWide {
				t.Fatalf("%+v: layout %#x", st, rec[0])
			}
		}
	}
	if small == 0 {
		t.Fatal("no state took a small form")
	}
	// In place: each state over records of other states' layouts.
	for range 20_000 {
		from, to := states[rng.IntN(len(states))], states[rng.IntN(len(states))]
		from.Mark, to.Mark = marks[rng.IntN(len(marks))], marks[rng.IntN(len(marks))]
		rec := appendRecord(nil, key, from)
		before := bytes.Clone(rec)
		l := rec[0]
		fits := (l&wideMark != 0 || to.Mark <= maxNarrowMark) && (l&formMask == formFull || smallForm(to) != formFull)
		if got := writeInPlace(rec, 0, to); got != fits {
			t.Fatalf("writeInPlace(%+v over %+v) = %v, want %v", to, from, got, fits)
		}
		if !fits {
			if !bytes.Equal(rec, before) {
				t.Fatalf("writeInPlace(%+v over %+v) refused and changed the record", to, from)
			}
			continue
		}
		if got := readState(rec, 0); !got.Equal(to) || got.Mark != to.Mark || fixedLen(rec[0]) != fixedLen(l) {
			t.Fatalf("writeInPlace(%+v over %+v) reads %+v, layout %#x from %#x", to, from, got, rec[0], l)
		}
		if k, _, _ := recordKey(rec, 0); !bytes.Equal(k, key) {
			t.Fatalf("writeInPlace changed the key: %q", k)
		}
	}
}

// bury makes any record a tombstone at now whose mark it holds, keeping its
// size, and refuses (changing nothing) a mark wider than the record's.
func TestBuryEveryLayout(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	key := []byte("k")
	for _, st := range layoutStates(rng) {
		for _, m := range []uint64{3, maxNarrowMark + 1} {
			st.Mark = 7
			rec := appendRecord(nil, key, st)
			size := len(rec)
			before := bytes.Clone(rec)
			ok := bury(rec, 0, 12345, m)
			if ok != (m <= maxNarrowMark) {
				t.Fatalf("bury(%+v, mark %d) = %v", st, m, ok)
			}
			if !ok {
				if !bytes.Equal(rec, before) {
					t.Fatalf("a refused bury changed the record")
				}
				continue
			}
			if got := readState(rec, 0); got.Expire != 12345 || got.Mark != m || len(rec) != size || got.Kind != st.Kind {
				t.Fatalf("buried %+v reads %+v", st, got)
			}
			if k, end, _ := recordKey(rec, 0); !bytes.Equal(k, key) || end != size {
				t.Fatalf("buried record's key %q end %d", k, end)
			}
		}
	}
}
