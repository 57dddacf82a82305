package tokenbucket

import (
	"math"
	"strings"
	"testing"

	"github.com/redcell/redcell/internal/expiry"
)

func mustParams(t testing.TB, capacity, rt, periodMs, cost int64, interval bool) Params {
	t.Helper()
	p, err := NewParams(capacity, rt, periodMs, cost, interval)
	if err != nil {
		t.Fatalf("NewParams(%d, %d, %d, %d, %v): %v", capacity, rt, periodMs, cost, interval, err)
	}
	return p
}

// TestTake_Cases pins decisions the vectors do not reach, each worked out
// by hand from limiters.md.
func TestTake_Cases(t *testing.T) {
	const now = now0
	for _, tc := range []struct {
		name string
		st   State
		now  int64
		p    Params
		want Reply
		next State
		out  Outcome
	}{
		{"greedy full_at = 2^63−1, COST 0 still allowed",
			State{Expire: math.MaxInt64}, now, mustParams(t, math.MaxInt64-now, 1_000_000, 1, 0, false),
			Reply{0, math.MaxInt64 - now, 0, -1, expiry.MsUp(math.MaxInt64 - now)}, State{Expire: math.MaxInt64}, Keep},
		{"greedy full_at = 2^63−1, one more is limited by 1 ns",
			State{Expire: math.MaxInt64}, now, mustParams(t, math.MaxInt64-now, 1_000_000, 1, 1, false),
			Reply{1, math.MaxInt64 - now, 0, 1, expiry.MsUp(math.MaxInt64 - now)}, State{Expire: math.MaxInt64}, Keep},
		{"greedy debt beyond capacity·T: COST 0 limited",
			State{Expire: now + 900}, now, mustParams(t, 2, 1_000_000, 1, 0, false), // T = 1 ns
			Reply{1, 2, 0, 1, 1}, State{Expire: now + 900}, Keep},
		{"greedy refund keeps the excess debt",
			State{Expire: now + 5_000_000_000}, now, mustParams(t, 2, 1, 1000, -1, false), // T = 1 s
			Reply{0, 2, 0, -1, 4000}, State{Expire: now + 4_000_000_000}, Store},
		{"greedy refund on a missing key creates nothing",
			State{Expire: now}, now, mustParams(t, 2, 1, 1000, -1, false),
			Reply{0, 2, 2, -1, 0}, State{Expire: now}, Keep},
		{"greedy refund exactly to full deletes",
			State{Expire: now + 2_000_000_000}, now, mustParams(t, 2, 1, 1000, -2, false),
			Reply{0, 2, 2, -1, 0}, State{}, Delete},
		{"greedy refund of 2^63−1 tokens at T = 1 ns",
			State{Expire: now + 5}, now, mustParams(t, 7, 1_000_000, 1, -math.MaxInt64, false),
			Reply{0, 7, 7, -1, 0}, State{}, Delete},
		{"INTERVAL refund −2^63 fills the bucket",
			State{Expire: now + 1e9, Tokens: 3, Anchor: now}, now, mustParams(t, 10, 10, 1000, math.MinInt64, true),
			Reply{0, 10, 10, -1, 0}, State{}, Delete},
		{"INTERVAL stored tokens above a lowered capacity: full, a take starts a new anchor",
			State{Expire: now + 1e9, Tokens: 8, Anchor: now - 5}, now, mustParams(t, 5, 1, 1000, 2, true),
			Reply{0, 5, 3, -1, 2000}, State{Expire: now + 2e9, Tokens: 3, Anchor: now}, Store},
		{"INTERVAL refund on a key full under the call's parameters deletes it",
			State{Expire: now + 1e9, Tokens: 8, Anchor: now - 5}, now, mustParams(t, 5, 1, 1000, -1, true),
			Reply{0, 5, 5, -1, 0}, State{}, Delete},
		{"INTERVAL a refill landing exactly at now counts",
			State{Expire: now + 3e9, Tokens: 0, Anchor: now - 1e9}, now, mustParams(t, 4, 1, 1000, 1, true),
			Reply{0, 4, 0, -1, 4000}, State{Expire: now + 4e9, Tokens: 0, Anchor: now}, Store},
		{"INTERVAL one ns before the refill",
			State{Expire: now + 3e9, Tokens: 0, Anchor: now - 1e9 + 1}, now, mustParams(t, 4, 1, 1000, 1, true),
			Reply{1, 4, 0, 1, 3001}, State{Expire: now + 3e9, Tokens: 0, Anchor: now - 1e9 + 1}, Keep},
		{"INTERVAL more than one token per ns",
			State{}, now, mustParams(t, 5_000_000, 2_000_000, 1, 5_000_000, true),
			Reply{0, 5_000_000, 0, -1, 3}, State{Expire: now + 3_000_000, Tokens: 0, Anchor: now}, Store},
		{"INTERVAL a longer period finds fewer refills (rule 23)",
			State{Expire: now + 1e9, Tokens: 1, Anchor: now - 1500e6}, now, mustParams(t, 4, 1, 2000, 0, true),
			Reply{0, 4, 1, -1, 4500}, State{Expire: now + 1e9, Tokens: 1, Anchor: now - 1500e6}, Keep},
		{"INTERVAL huge k·refill_tokens compared exactly",
			State{Expire: now + 1, Tokens: 0, Anchor: 0}, now, mustParams(t, math.MaxInt64, math.MaxInt64/2, 1, 0, true),
			Reply{0, math.MaxInt64, math.MaxInt64, -1, 0}, State{Expire: now + 1, Tokens: 0, Anchor: 0}, Keep},
		{"expired state is a missing key whatever it holds",
			State{Expire: now, Tokens: -7, Anchor: now + 99}, now, mustParams(t, 3, 1, 1000, 1, true),
			Reply{0, 3, 2, -1, 1000}, State{Expire: now + 1e9, Tokens: 2, Anchor: now}, Store},
		{"corrupt: anchor after now",
			State{Expire: now + 10, Tokens: 0, Anchor: now + 1}, now, mustParams(t, 3, 1, 1000, 1, true),
			Reply{}, State{Expire: now + 10, Tokens: 0, Anchor: now + 1}, Corrupt},
		{"corrupt: negative tokens",
			State{Expire: now + 10, Tokens: -1, Anchor: now}, now, mustParams(t, 3, 1, 1000, 1, true),
			Reply{}, State{Expire: now + 10, Tokens: -1, Anchor: now}, Corrupt},
		{"clock at 0, zero State is missing",
			State{}, 0, mustParams(t, 3, 1, 1000, 1, false),
			Reply{0, 3, 2, -1, 1000}, State{Expire: 1e9}, Store},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, next, o := Take(tc.st, tc.now, tc.p)
			if r != tc.want || next != tc.next || o != tc.out {
				t.Errorf("Take = %v %+v %v\n  want %v %+v %v", r, next, o, tc.want, tc.next, tc.out)
			}
			pr, err := Peek(tc.st, tc.now, tc.p)
			if (err != nil) != (o == Corrupt) || (err == nil && pr != r) {
				t.Errorf("Peek = %v %v", pr, err)
			}
		})
	}
}

func TestPTTL(t *testing.T) {
	for _, tc := range []struct{ expire, now, want int64 }{
		{100, 100, -2}, {100, 101, -2}, {0, 0, -2}, {101, 100, 1}, {100 + 1e6, 100, 1},
		{101 + 1e6, 100, 2}, {math.MaxInt64, 0, expiry.MsUp(math.MaxInt64)},
	} {
		if got := PTTL(tc.expire, tc.now); got != tc.want {
			t.Errorf("PTTL(%d, %d) = %d, want %d", tc.expire, tc.now, got, tc.want)
		}
		if Live(tc.expire, tc.now) != (tc.want != -2) {
			t.Errorf("Live(%d, %d) disagrees with PTTL", tc.expire, tc.now)
		}
	}
}

func TestOutcome_String(t *testing.T) {
	for o, s := range map[Outcome]string{Keep: "Keep", Store: "Store", Delete: "Delete", Reject: "Reject", Corrupt: "Corrupt", 99: "Outcome(?)"} {
		if o.String() != s {
			t.Errorf("%d: %q", o, o.String())
		}
	}
}

// FuzzTake: arbitrary parameters, state and clock. Take must never panic,
// must agree with the big.Int transcription of the rules (specModel) and
// keep every invariant of checkInvariants.
func FuzzTake(f *testing.F) {
	f.Add(int64(10), int64(10), int64(1000), int64(1), false, int64(0), int64(0), int64(0), int64(now0))
	f.Add(int64(10), int64(3), int64(1000), int64(2), true, int64(now0+4e9), int64(0), int64(now0-5e8), int64(now0))
	f.Add(int64(7523372036731319018), int64(1000000), int64(1), int64(1), false, int64(math.MaxInt64), int64(0), int64(0), int64(now0))
	f.Fuzz(func(t *testing.T, capacity, rt, periodMs, cost int64, interval bool, expire, tokens, anchor, now int64) {
		p, err := NewParams(capacity, rt, periodMs, cost, interval)
		if err != nil {
			if _, ok := err.(Error); !ok || strings.HasPrefix(err.Error(), "ERR wrong") {
				t.Fatalf("NewParams error %v", err)
			}
			return
		}
		st := State{Expire: expire, Tokens: tokens, Anchor: anchor}
		r, next, o := Take(st, now, p)
		if p.CheckAt(now) != nil {
			if o != Reject || next != st {
				t.Fatalf("CheckAt fails but Take says %v", o)
			}
			if _, err := Peek(st, now, p); err != ErrNotInteger {
				t.Fatalf("CheckAt fails but Peek says %v", err)
			}
			return
		}
		live := now < expire
		if interval && live && (tokens < 0 || anchor > now) {
			if o != Corrupt || next != st {
				t.Fatalf("state %+v at %d: %v", st, now, o)
			}
			return
		}
		want, ws := specModel(toSpec(st, now), now, p)
		if r != want || (o != Keep && !sameState(next, ws, now, interval)) {
			t.Fatalf("%+v at %d, state %+v: Take %v %+v %v, spec %v %+v", p, now, st, r, next, o, want, ws)
		}
		checkInvariants(t, st, now, p, r, next, o)
	})
}

// FuzzParse: any words give either a valid Params or one of the package's
// errors; never a panic.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"TB.TAKE k 10 10 1000", "TB.TAKE k 1 1 1000 COST -5 INTERVAL", "TB.TAKE k 0 1 1000 FOO COST x",
		"TB.TAKE k 1 1 9223372036855", "TB.PEEK k 1 1000001 1 interval cost 9223372036854775807", "TB.TAKE k 1 1 1 coſt 1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		args := words(strings.ReplaceAll(s, " ", "|"))
		key, p, err := Parse(args)
		if err != nil {
			switch err {
			case ErrArity, ErrNotInteger, ErrSyntax, ErrCapacity, ErrRefillTokens, ErrRefillPeriod:
				return
			}
			t.Fatalf("%q: error %v", s, err)
		}
		q, err := NewParams(p.Capacity, p.RefillTokens, p.PeriodMs, p.Cost, p.Interval)
		if err != nil || q != p || string(key) != string(args[1]) {
			t.Fatalf("%q: %+v, NewParams again: %+v %v", s, p, q, err)
		}
	})
}
