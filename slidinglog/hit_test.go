package slidinglog

import (
	"math"
	"slices"
	"testing"
)

func mustParams(t testing.TB, limit, windowMs, cost, minGapMs int64, deniedCount bool) Params {
	t.Helper()
	p, err := NewParams(limit, windowMs, cost, minGapMs, deniedCount)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func logOf(runs ...Run) State {
	if len(runs) == 0 {
		return State{}
	}
	return State{Expire: math.MaxInt64, Log: Encode(nil, runs)}
}

// TestHit_Cases pins decisions the vectors do not reach, worked out by hand
// from limiters.md, including the resulting runs.
func TestHit_Cases(t *testing.T) {
	const ms = nanosPerMilli
	const now = now0
	for _, tc := range []struct {
		name string
		st   State
		p    Params
		want Reply
		runs []Run // stored after the call; nil: Keep
	}{
		{"10,000 hits at one instant stay one run",
			logOf(Run{now, 9999}), mustParams(t, 20000, 1000, 1, 0, false),
			Reply{0, 20000, 10000, -1, 1000}, []Run{{now, 10000}}},
		{"recording drops dead runs and trims the oldest live one",
			logOf(Run{now - 2000*ms, 5}, Run{now - 900*ms, 3}, Run{now - 500*ms, 2}, Run{now - 100*ms, 1}),
			mustParams(t, 5, 1000, 2, 0, true),
			Reply{1, 5, 0, 500, 1000}, []Run{{now - 500*ms, 2}, {now - 100*ms, 1}, {now, 2}}},
		{"a lowered limit keeps only the newest entries, part of the newest older run",
			logOf(Run{now - 300*ms, 4}, Run{now - 200*ms, 4}, Run{now - 100*ms, 4}),
			mustParams(t, 6, 1000, 1, 0, true),
			Reply{1, 6, 0, 800, 1000}, []Run{{now - 200*ms, 1}, {now - 100*ms, 4}, {now, 1}}},
		{"recording at the newest instant merges into its run",
			logOf(Run{now - 300*ms, 1}, Run{now, 2}),
			mustParams(t, 10, 1000, 3, 0, false),
			Reply{0, 10, 4, -1, 1000}, []Run{{now - 300*ms, 1}, {now, 5}}},
		{"merge and trim: only part of the newest run stays",
			logOf(Run{now - 300*ms, 3}, Run{now, 5}),
			mustParams(t, 6, 1000, 4, 0, true),
			Reply{1, 6, 0, 1000, 1000}, []Run{{now, 6}}},
		{"a shorter window sees only the newest run; a recording call forgets the rest",
			logOf(Run{now - 900*ms, 2}, Run{now - 50*ms, 1}),
			mustParams(t, 3, 100, 1, 0, false),
			Reply{0, 3, 1, -1, 100}, []Run{{now - 50*ms, 1}, {now, 1}}},
		{"all entries outside the call's window: fresh",
			logOf(Run{now - 900*ms, 2}, Run{now - 500*ms, 1}),
			mustParams(t, 3, 500, 3, 500, false),
			Reply{0, 3, 0, -1, 500}, []Run{{now, 3}}},
		{"DENIED FREE denial writes nothing, not even trimming",
			logOf(Run{now - 1500*ms, 2}, Run{now - 100*ms, 3}),
			mustParams(t, 3, 1000, 1, 0, false),
			Reply{1, 3, 0, 900, 900}, nil},
		{"MINGAP denial recorded with DENIED COUNT answers MINGAP",
			logOf(Run{now - 30*ms, 1}),
			mustParams(t, 10, 1000, 1, 50, true),
			Reply{1, 10, 8, 50, 1000}, []Run{{now - 30*ms, 1}, {now, 1}}},
		{"retry is the larger of the count wait and the gap wait",
			logOf(Run{now - 990*ms, 1}, Run{now - 10*ms, 1}),
			mustParams(t, 2, 1000, 1, 300, false),
			Reply{1, 2, 0, 290, 990}, nil},
		{"DENIED COUNT with COST > limit blocks for a window",
			logOf(Run{now - 10*ms, 1}),
			mustParams(t, 3, 1000, math.MaxInt64, 0, true),
			Reply{1, 3, 0, -1, 1000}, []Run{{now, 3}}},
		{"COST > limit with DENIED FREE: -1, nothing written",
			logOf(Run{now - 10*ms, 1}),
			mustParams(t, 3, 1000, 4, 0, false),
			Reply{1, 3, 2, -1, 990}, nil},
		{"c + n past 2^63−1 compared exactly",
			logOf(Run{now - 10*ms, math.MaxInt64 - 1}),
			mustParams(t, math.MaxInt64, 1000, math.MaxInt64, 0, false),
			Reply{1, math.MaxInt64, 1, 990, 990}, nil},
		{"limit reached exactly, boundary inclusive",
			logOf(Run{now - 10*ms, math.MaxInt64 - 1}),
			mustParams(t, math.MaxInt64, 1000, 1, 0, false),
			Reply{0, math.MaxInt64, 0, -1, 1000}, []Run{{now - 10*ms, math.MaxInt64 - 1}, {now, 1}}},
		{"an entry leaves exactly at t + W",
			logOf(Run{now - 1000*ms, 1}),
			mustParams(t, 1, 1000, 1, 1000, false),
			Reply{0, 1, 0, -1, 1000}, []Run{{now, 1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, next, o := Hit(tc.st, now, tc.p, nil)
			if r != tc.want {
				t.Errorf("reply %v, want %v", r, tc.want)
			}
			if tc.runs == nil {
				if o != Keep {
					t.Errorf("outcome %v, want Keep", o)
				}
				return
			}
			got, err := Decode(nil, next.Log)
			if o != Store || err != nil || !slices.Equal(got, tc.runs) || next.Expire != now+tc.p.WindowMs*nanosPerMilli {
				t.Errorf("%v: runs %v expiring %d (%v), want %v", o, got, next.Expire, err, tc.runs)
			}
		})
	}
}

func TestHit_Corrupt(t *testing.T) {
	p := mustParams(t, 3, 1000, 1, 0, false)
	for name, st := range map[string]State{
		"garbage":            {Expire: now0 + 1, Log: []byte{1, 2, 3}},
		"entry after now":    logOf(Run{now0 + 1, 1}),
		"body short":         {Expire: now0 + 1, Log: Encode(nil, []Run{{now0 - 10, 2}, {now0 - 5, 1}})[:19]},
		"older runs too big": {Expire: now0 + 1, Log: append(Encode(nil, []Run{{now0 - 10, 1}, {now0 - 5, 1}})[:19], 5)},
	} {
		if _, next, o := Hit(st, now0, p, nil); o != Corrupt || !slices.Equal(next.Log, st.Log) {
			t.Errorf("%s: %v", name, o)
		}
		if _, err := Peek(st, now0, p); err != ErrCorrupt {
			t.Errorf("%s: Peek %v", name, err)
		}
	}
	// An expired key is fresh whatever it holds.
	if r, _, o := Hit(State{Expire: now0, Log: []byte{1}}, now0, p, nil); o != Store || r.Remaining != 2 {
		t.Errorf("expired garbage: %v %v", r, o)
	}
}

func TestPTTL(t *testing.T) {
	for _, tc := range []struct{ expire, now, want int64 }{
		{100, 100, -2}, {0, 0, -2}, {101, 100, 1}, {100 + 1e6, 100, 1}, {101 + 1e6, 100, 2},
	} {
		if got := PTTL(tc.expire, tc.now); got != tc.want || Live(tc.expire, tc.now) != (tc.want != -2) {
			t.Errorf("PTTL(%d, %d) = %d, want %d", tc.expire, tc.now, got, tc.want)
		}
	}
}

func TestOutcome_String(t *testing.T) {
	for o, s := range map[Outcome]string{Keep: "Keep", Store: "Store", Reject: "Reject", Corrupt: "Corrupt", 9: "Outcome(?)"} {
		if o.String() != s {
			t.Errorf("%d: %q", o, o.String())
		}
	}
}

// FuzzHit: an arbitrary stored value, clock and parameters. Hit must never
// panic; when the value is a log Hit could have written (it decodes, no
// entry after now), Hit and Peek must agree with the big.Int run model,
// state included, and keep checkHit's invariants.
func FuzzHit(f *testing.F) {
	f.Add(Encode(nil, []Run{{now0 - 5e8, 2}, {now0 - 1e8, 1}}), int64(now0+9e8), int64(now0), int64(3), int64(1000), int64(1), int64(0), false)
	f.Add(Encode(nil, []Run{{now0, 3}}), int64(now0+1e9), int64(now0), int64(3), int64(1000), int64(1), int64(100), true)
	f.Add([]byte{}, int64(0), int64(now0), int64(math.MaxInt64), int64(60000), int64(math.MaxInt64), int64(0), true)
	f.Fuzz(func(t *testing.T, log []byte, expire, now, limit, windowMs, cost, minGap int64, denied bool) {
		p, err := NewParams(limit, windowMs, cost, minGap, denied)
		if err != nil {
			return
		}
		st := State{Expire: expire, Log: log}
		r, next, o := Hit(st, now, p, nil)
		if p.CheckAt(now) != nil {
			if o != Reject {
				t.Fatalf("CheckAt fails, Hit says %v", o)
			}
			return
		}
		runs, err := Decode(nil, log)
		if Live(expire, now) && (err != nil || (len(runs) > 0 && runs[len(runs)-1].Time > now)) {
			// Not a log Hit writes: any outcome but a panic was acceptable.
			// Go on with a valid log built from the same bytes.
			runs = runsFrom(now, log)
			st.Log = Encode(nil, runs)
			r, next, o = Hit(st, now, p, nil)
		}
		if !Live(expire, now) {
			runs = nil
		}
		m := &runModel{log: runs, expire: max(expire, now+1)}
		mp := *m
		want := m.call(now, p, false)
		if r != want {
			t.Fatalf("%+v at %d, log %v: Hit %v, model %v", p, now, runs, r, want)
		}
		checkHit(t, st, now, p, r, next, o)
		if o == Store {
			if got := decodeOK(t, next.Log); !slices.Equal(got, m.log) {
				t.Fatalf("stored %v, model %v", got, m.log)
			}
		}
		pr, err := Peek(st, now, p)
		if want := mp.call(now, p, true); err != nil || pr != want {
			t.Fatalf("Peek %v %v, model %v", pr, err, want)
		}
	})
}

// runsFrom builds a valid log ending at or before now from arbitrary bytes:
// each pair is a gap back in time and a count.
func runsFrom(now int64, b []byte) []Run {
	var rev []Run
	t, left := now, int64(math.MaxInt64)
	for i := 0; i+1 < len(b); i += 2 {
		gap, count := int64(b[i]), int64(b[i+1])+1
		if b[i] >= 0xf0 {
			gap = int64(b[i]&0x0f) << 40
		}
		if i == 0 {
			gap = int64(b[0] & 0x03) // the newest run is often at now
		}
		if b[i+1] == 0xff {
			count = left / 2
		}
		if count < 1 || count > left || t < math.MinInt64+gap+1 {
			break
		}
		if i > 0 {
			gap++
		}
		t -= gap
		rev = append(rev, Run{t, count})
		left -= count
	}
	slices.Reverse(rev)
	return rev
}

func TestRunsFrom(t *testing.T) {
	runs := runsFrom(now0, []byte{1, 4, 9, 0, 0xf3, 0xff, 7, 7})
	if len(runs) != 4 || runs[3] != (Run{now0 - 1, 5}) || Valid(runs) != nil {
		t.Fatalf("runsFrom = %v", runs)
	}
}
