package shard

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// model is the reference: a plain map holding what the Store should show.
// Liveness is decided at read time from Expire, as the contract says.
type model map[string]State

// Kinds the tests store: any numbers up to MaxKind do, the shard never
// interprets them.
const (
	kindA Kind = 1
	kindB Kind = 4
	kindC Kind = 2
)

func (m model) get(key string, now int64) (State, bool) {
	st, ok := m[key]
	if !ok || now >= st.Expire {
		return State{}, false
	}
	return st, true
}

func (m model) live(now int64) []string {
	var keys []string
	for k, st := range m {
		if now < st.Expire {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys) // string order is bytes.Compare order
	return keys
}

// differential drives several Stores (different stripe counts) and the model
// with the same random operations and compares every observable result.
type differential struct {
	t        *testing.T
	rng      *rand.Rand
	stores   []*Store
	m        model
	marks    markModel // the change marker and Expire of every record a store may hold
	stamp    uint64    // the stores' stamp (SetStamp)
	keys     [][]byte  // universe of keys operations draw from
	now      int64
	steps    int
	fullScan int    // compare every key of the universe every fullScan steps
	ttl      int64  // states expire within ~ttl ticks of being written
	tick     int64  // ns the clock moves per unit: with 1e6 and more, Linger passes and the sweeper drops records
	clearOdd int    // Clear happens on 1 in 100*clearOdd steps
	buf      []byte // GetValue's buffer, reused
}

// markRec is what the model knows of a key's record: its change marker and
// its Expire (a gone record's is the instant it went).
type markRec struct {
	mark   uint64
	expire int64
}

// markModel is every record a store holds or may hold, gone ones included:
// a store may have dropped one once it is droppable, never before.
type markModel map[string]markRec

func newDifferential(t *testing.T, seed uint64, stripes []int, keys [][]byte, fullScan int) *differential {
	d := &differential{
		t:        t,
		rng:      rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		m:        model{},
		marks:    markModel{},
		keys:     keys,
		now:      1_000,
		fullScan: fullScan,
		ttl:      400,
		tick:     1,
		clearOdd: 1,
	}
	// Marks start small or just below the width of a narrow mark, so that
	// records are written with 5-byte marks, 8-byte ones, and both over
	// the same key.
	d.stamp = 1
	if seed%2 == 0 {
		d.stamp = maxNarrowMark - 1_000
	}
	for _, n := range stripes {
		d.stores = append(d.stores, New(n))
	}
	return d
}

// withTick sets the clock's unit: now and the states' lifetimes scale by
// tick (and a state's Expire gets a random sub-tick part).
func (d *differential) withTick(tick int64) *differential {
	d.tick = tick
	d.now = 1_000 * tick
	return d
}

// randomState returns a state whose Expire is near now: some already
// expired, most live for a short while, so time advancing expires them. Its
// fixed fields take every layout a record has (record.go): A and B zero,
// B zero, the expiry a CL key's TAT gives (either of the two TAT forms),
// or anything. A third carry a value of random length (0 to 300 bytes),
// so records grow, shrink, move and compact.
func (d *differential) randomState() State {
	st := State{
		Kind:   Kind(d.rng.IntN(int(MaxKind) + 1)),
		Expire: d.now + (d.rng.Int64N(d.ttl)-d.ttl/10)*d.tick + d.rng.Int64N(d.tick),
		A:      int64(d.rng.Uint64()),
		B:      int64(d.rng.Uint64()),
	}
	switch d.rng.IntN(5) {
	case 0: // formExpire
		st.A, st.B = 0, 0
	case 1: // formFull with B = 0
		st.B = 0
	case 2: // a TAT form: Expire on a millisecond, A in the ms before it or in its own
		st.B = 0
		st.Expire -= st.Expire % nsPerMs
		st.A = st.Expire - nsPerMs + d.rng.Int64N(nsPerMs)
		if d.rng.IntN(2) == 0 {
			st.A += nsPerMs
		}
	}
	if d.rng.IntN(3) == 0 {
		st.Val = make([]byte, d.rng.IntN(301))
		for i := range st.Val {
			st.Val[i] = byte(d.rng.Uint32())
		}
	}
	return st
}

// fixed is st without its value: what Get answers.
func fixed(st State) State {
	st.Val = nil
	return st
}

func (d *differential) key() []byte { return d.keys[d.rng.IntN(len(d.keys))] }

// step applies one random operation to every store and to the model.
func (d *differential) step() {
	d.steps++
	key := d.key()
	if d.rng.IntN(4) == 0 {
		d.stamp += uint64(d.rng.IntN(3))
	}
	for _, s := range d.stores {
		s.SetStamp(d.stamp)
	}
	switch r := d.rng.IntN(100); {
	case r < 55:
		d.update(key)
	case r < 65:
		want := false
		if _, ok := d.m.get(string(key), d.now); ok {
			want = true
			d.marks[string(key)] = markRec{d.stamp, d.now}
		}
		delete(d.m, string(key))
		for i, s := range d.stores {
			if got := s.Delete(key, d.now); got != want {
				d.t.Fatalf("step %d store %d: Delete(%q) = %v, want %v", d.steps, i, key, got, want)
			}
		}
	case r < 70:
		st := d.randomState()
		d.m[string(key)] = st
		d.marks[string(key)] = markRec{d.stamp, st.Expire}
		for _, s := range d.stores {
			s.Put(bytes.Clone(key), st)
		}
	case r < 72:
		// Load keeps the marker it is given (restore, a script's undo):
		// any width, older or newer than the stamp.
		st := d.randomState()
		st.Mark = d.rng.Uint64N(4 * maxNarrowMark)
		d.m[string(key)] = st
		d.marks[string(key)] = markRec{st.Mark, st.Expire}
		for _, s := range d.stores {
			s.Load(bytes.Clone(key), st)
		}
	case r < 85:
		d.now += int64(d.rng.IntN(30)) * d.tick
	case r < 99:
		budget := d.rng.IntN(50)
		for i, s := range d.stores {
			if got := s.Sweep(d.now, budget); got < 0 || got > budget {
				d.t.Fatalf("step %d store %d: Sweep removed %d, budget %d", d.steps, i, got, budget)
			}
		}
	default:
		if d.rng.IntN(2) == 0 {
			// FLUSHALL: every live key becomes a tombstone.
			for k, st := range d.m {
				if d.now < st.Expire {
					d.marks[k] = markRec{d.stamp, d.now}
					delete(d.m, k)
				}
			}
			for _, s := range d.stores {
				s.BuryAll(d.now)
			}
			break
		}
		if d.rng.IntN(d.clearOdd) != 0 {
			break
		}
		clear(d.m)
		clear(d.marks)
		for _, s := range d.stores {
			s.Clear()
		}
	}
	d.check(key)
}

// update runs Update with a callback that checks its input against the
// model and picks a random action.
func (d *differential) update(key []byte) {
	wantCur, wantLive := d.m.get(string(key), d.now)
	next := d.randomState()
	var act Action
	switch r := d.rng.IntN(10); {
	case r < 5:
		act = Put
	case r < 7:
		act = Delete
	case r < 9:
		act = Keep
	default:
		act = Action(3 + d.rng.IntN(250)) // unknown actions are Keep
	}
	switch act {
	case Put:
		d.m[string(key)] = next
		if next.live(d.now) {
			d.marks[string(key)] = markRec{d.stamp, next.Expire}
		} else {
			d.marks[string(key)] = markRec{d.stamp, d.now} // a tombstone
		}
	case Delete:
		delete(d.m, string(key))
		if wantLive {
			d.marks[string(key)] = markRec{d.stamp, d.now}
		}
	}
	// The caller's buffer is reused: the store must have copied the key.
	buf := bytes.Clone(key)
	for i, s := range d.stores {
		calls := 0
		s.Update(buf, d.now, func(cur State, live bool) (State, Action) {
			calls++
			if !cur.Equal(wantCur) || live != wantLive {
				d.t.Fatalf("step %d store %d: Update(%q) saw (%+v, %v), want (%+v, %v)",
					d.steps, i, key, cur, live, wantCur, wantLive)
			}
			return next, act
		})
		if calls != 1 {
			d.t.Fatalf("step %d store %d: callback ran %d times", d.steps, i, calls)
		}
	}
	for i := range buf {
		buf[i] ^= 0xa5
	}
}

// check compares the key just touched (every step) and the whole universe,
// Len, the invariants and a snapshot (every fullScan steps).
func (d *differential) check(key []byte) {
	d.checkKey(key, d.now)
	if d.steps%d.fullScan != 0 {
		return
	}
	for _, k := range d.keys {
		d.checkKey(k, d.now)
		d.checkKey(k, d.now+int64(d.rng.IntN(100))) // Get is pure: any instant works
	}
	want := len(d.m.live(d.now))
	for i, s := range d.stores {
		if got := s.Len(d.now); got != want {
			d.t.Fatalf("step %d store %d: Len = %d, want %d", d.steps, i, got, want)
		}
		s.checkInvariants(d.t)
	}
	d.checkSnapshots()
}

func (d *differential) checkKey(key []byte, now int64) {
	want, wantLive := d.m.get(string(key), now)
	rec, hasRec := d.marks[string(key)]
	for i, s := range d.stores {
		got, live := s.Get(key, now)
		if !got.Equal(fixed(want)) || live != wantLive || live && got.Mark != rec.mark {
			d.t.Fatalf("step %d store %d: Get(%q, %d) = (%+v, %v), want (%+v, %v) marked %d",
				d.steps, i, key, now, got, live, want, wantLive, rec.mark)
		}
		// Watch sees the record, live or gone, until the sweeper may drop it.
		wl, wm := s.Watch(key, now)
		switch {
		case !hasRec:
			if wl || wm != 0 {
				d.t.Fatalf("step %d store %d: Watch(%q, %d) = %v %d for a key never written", d.steps, i, key, now, wl, wm)
			}
		case droppable(rec.expire, now):
			if wl || wm != 0 && wm != rec.mark {
				d.t.Fatalf("step %d store %d: Watch(%q, %d) = %v %d, want false and %d or 0", d.steps, i, key, now, wl, wm, rec.mark)
			}
		case wl != (now < rec.expire) || wm != rec.mark:
			d.t.Fatalf("step %d store %d: Watch(%q, %d) = %v %d, want %v %d", d.steps, i, key, now, wl, wm, now < rec.expire, rec.mark)
		}
		got, live = s.GetValue(key, now, d.buf)
		if !got.Equal(want) || live != wantLive {
			d.t.Fatalf("step %d store %d: GetValue(%q, %d) = (%+v, %v), want (%+v, %v)",
				d.steps, i, key, now, got, live, want, wantLive)
		}
		d.buf = got.Val
	}
}

// checkSnapshots takes a snapshot of every store, keeps mutating the stores
// (the snapshot must not change), then ranges it against the model's live
// entries in key order. All stores must produce the same sequence.
func (d *differential) checkSnapshots() {
	keys := d.m.live(d.now)
	states := make([]State, len(keys))
	for i, k := range keys {
		states[i] = d.m[k]
	}
	// The records a snapshot keeps: every one not droppable at now, live
	// or gone, with its marker (Snapshot's rule, whatever the sweeper did).
	kept := markModel{}
	for k, rec := range d.marks {
		if !droppable(rec.expire, d.now) {
			kept[k] = rec
		}
	}
	snaps := make([]*Snapshot, len(d.stores))
	for i, s := range d.stores {
		snaps[i] = s.Snapshot(d.now)
	}
	for range 20 {
		d.update(d.key())
	}
	for i, sn := range snaps {
		j, n := 0, 0
		sn.Range(func(key []byte, st State) bool {
			n++
			if rec, ok := kept[string(key)]; !ok || st.Mark != rec.mark || st.Expire <= sn.Now() && st.Expire != rec.expire {
				d.t.Fatalf("step %d store %d: snapshot holds %q with marker %d, Expire %d; want %+v (kept: %v)",
					d.steps, i, key, st.Mark, st.Expire, rec, ok)
			}
			if st.Expire <= sn.Now() {
				return true // gone: kept for WATCH's markers, not a key
			}
			if j >= len(keys) || string(key) != keys[j] || !st.Equal(states[j]) {
				d.t.Fatalf("step %d store %d: snapshot entry %d = (%q, %+v), want (%q, %+v)",
					d.steps, i, j, key, st, keys[min(j, len(keys)-1)], states[min(j, len(keys)-1)])
			}
			j++
			return true
		})
		if j != len(keys) || n != len(kept) {
			d.t.Fatalf("step %d store %d: snapshot ranged %d entries (%d records), want %d (%d)", d.steps, i, j, n, len(keys), len(kept))
		}
	}
}

// testKeys is a universe of n keys with the awkward cases mixed in: the empty
// key, binary bytes, keys that are prefixes of others, long keys whose length
// header takes 2 and 3 bytes.
func testKeys(rng *rand.Rand, n int) [][]byte {
	keys := [][]byte{
		{}, {0}, {0, 0}, {0xff}, {0xff, 0}, []byte("a"), []byte("a\x00"), []byte("ab"),
		bytes.Repeat([]byte("k"), 63), bytes.Repeat([]byte("k"), 64),
		bytes.Repeat([]byte("x"), 300), bytes.Repeat([]byte{0x80}, 20_000),
	}
	seen := map[string]bool{}
	for _, k := range keys {
		seen[string(k)] = true
	}
	for len(keys) < n {
		var k []byte
		switch rng.IntN(3) {
		case 0:
			k = fmt.Appendf(nil, "user:%010d", rng.IntN(n*4))
		case 1:
			k = make([]byte, rng.IntN(12))
			for i := range k {
				k[i] = byte(rng.Uint32())
			}
		default:
			k = []byte(strings.Repeat("p", rng.IntN(3)) + fmt.Sprint(rng.IntN(n)))
		}
		if !seen[string(k)] {
			seen[string(k)] = true
			keys = append(keys, k)
		}
	}
	return keys
}

// Seeds 1 to 4 run the clock in ns (no record lives out its Linger), 5 to
// 8 in tenths of a second (the sweeper drops gone records Linger after
// they went, and Watch and snapshots must still agree with the model).
func Test_Store_DifferentialSmallUniverse(t *testing.T) {
	for seed := uint64(1); seed <= 8; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			d := newDifferential(t, seed, []int{1, 3, 64}, testKeys(rng, 60), 50)
			if seed > 4 {
				d.withTick(100e6)
			}
			for range 8_000 {
				d.step()
			}
		})
	}
}

// The large universe makes stripes grow, compact and shrink many times.
func Test_Store_DifferentialLargeUniverse(t *testing.T) {
	rng := rand.New(rand.NewPCG(99, 7))
	d := newDifferential(t, 98, []int{1, 16}, testKeys(rng, 4_000), 2_000).withTick(1e6)
	d.ttl = 30_000
	d.clearOdd = 20
	for range 150_000 {
		d.step()
	}
}
