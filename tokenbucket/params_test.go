package tokenbucket

import (
	"math"
	"strings"
	"testing"
)

// The texts are the wire contract (commands.md, limiters.md); the command
// layer answers them verbatim.
func TestErrorTexts(t *testing.T) {
	for _, tc := range []struct {
		err  Error
		text string
	}{
		{ErrNotInteger, "ERR value is not an integer or out of range"},
		{ErrSyntax, "ERR syntax error"},
		{ErrCapacity, "ERR capacity must be positive"},
		{ErrRefillTokens, "ERR refill_tokens must be positive"},
		{ErrRefillPeriod, "ERR refill_period_ms must be positive"},
	} {
		if tc.err.Error() != tc.text {
			t.Errorf("%q != %q", tc.err.Error(), tc.text)
		}
	}
}

func words(s string) [][]byte {
	var out [][]byte
	for _, w := range strings.Split(s, "|") {
		out = append(out, []byte(w))
	}
	return out
}

// TestParse: rule 5's order, rule 6's options, the integer syntax. Words are
// separated by '|' so that empty words and spaces inside words can be given.
func TestParse(t *testing.T) {
	for _, tc := range []struct {
		args string
		err  error
		want Params // exported fields only
	}{
		{"TB.TAKE", ErrArity, Params{}},
		{"TB.TAKE|k|1|1", ErrArity, Params{}},
		{"TB.TAKE|k|10|10|1000", nil, Params{Capacity: 10, RefillTokens: 10, PeriodMs: 1000, Cost: 1}},
		{"TB.TAKE|k|+5|007|1000|COST|-0", nil, Params{Capacity: 5, RefillTokens: 7, PeriodMs: 1000, Cost: 0}},
		{"TB.TAKE|k|1|1|1|COST|1|COST|1|INTERVAL", nil, Params{Capacity: 1, RefillTokens: 1, PeriodMs: 1, Cost: 1, Interval: true}},
		{"TB.TAKE|k|10|10|1000|CoSt|2|cost|3|interval|INTERVAL", nil, Params{Capacity: 10, RefillTokens: 10, PeriodMs: 1000, Cost: 3, Interval: true}},
		// Integers: strconv.ParseInt(s, 10, 64) exactly.
		{"TB.TAKE|k|x|1|1000", ErrNotInteger, Params{}},
		{"TB.TAKE|k| 1|1|1000", ErrNotInteger, Params{}},
		{"TB.TAKE|k||1|1000", ErrNotInteger, Params{}},
		{"TB.TAKE|k|+|1|1000", ErrNotInteger, Params{}},
		{"TB.TAKE|k|++1|1|1000", ErrNotInteger, Params{}},
		{"TB.TAKE|k|1_000|1|1000", ErrNotInteger, Params{}},
		{"TB.TAKE|k|9223372036854775808|1|1000", ErrNotInteger, Params{}},
		{"TB.TAKE|k|-9223372036854775809|1|1000", ErrNotInteger, Params{}},
		{"TB.TAKE|k|99999999999999999999|1|1000", ErrNotInteger, Params{}},
		{"TB.TAKE|k|1|1|1000|COST|9223372036854775807", nil, Params{Capacity: 1, RefillTokens: 1, PeriodMs: 1000, Cost: math.MaxInt64}},
		{"TB.TAKE|k|1|1|1000|COST|-9223372036854775808|INTERVAL", nil, Params{Capacity: 1, RefillTokens: 1, PeriodMs: 1000, Cost: math.MinInt64, Interval: true}},
		// Positional slots are parameters: a keyword there is an integer error.
		{"TB.TAKE|k|COST|1|1000", ErrNotInteger, Params{}},
		// Options: left to right, first failure wins.
		{"TB.TAKE|k|1|1|1000|FOO", ErrSyntax, Params{}},
		{"TB.TAKE|k|1|1|1000|COST", ErrSyntax, Params{}},
		{"TB.TAKE|k|1|1|1000|INTERVAL|COST", ErrSyntax, Params{}},
		{"TB.TAKE|k|1|1|1000|5", ErrSyntax, Params{}},
		{"TB.TAKE|k|1|1|1000|MINGAP|0", ErrSyntax, Params{}},
		{"TB.TAKE|k|1|1|1000|DENIED|COUNT", ErrSyntax, Params{}},
		{"TB.TAKE|k|1|1|1000|coſt|1", ErrSyntax, Params{}},
		{"TB.TAKE|k|1|1|1000|COST|COST|1", ErrNotInteger, Params{}},
		{"TB.TAKE|k|0|1|1000|COST|x|FOO", ErrNotInteger, Params{}},
		{"TB.TAKE|k|0|1|1000|FOO|COST|x", ErrSyntax, Params{}},
		{"TB.TAKE|k|x|0|1000|FOO", ErrNotInteger, Params{}},
		// Ranges, in order, after all parsing.
		{"TB.TAKE|k|0|0|0", ErrCapacity, Params{}},
		{"TB.TAKE|k|-0|1|1000", ErrCapacity, Params{}},
		{"TB.TAKE|k|1|-5|-5", ErrRefillTokens, Params{}},
		{"TB.TAKE|k|1|1|0", ErrRefillPeriod, Params{}},
		{"TB.TAKE|k|0|1|9223372036855", ErrCapacity, Params{}},
		// Overflow (clock-free part), after the ranges.
		{"TB.TAKE|k|1|1|9223372036855", ErrNotInteger, Params{}},
		{"TB.TAKE|k|1|1000001|1", ErrNotInteger, Params{}},
		{"TB.TAKE|k|1|1000001|1|INTERVAL", nil, Params{Capacity: 1, RefillTokens: 1000001, PeriodMs: 1, Cost: 1, Interval: true}},
		{"TB.TAKE|k|10|10|1000|COST|-92233720369", ErrNotInteger, Params{}},
		{"TB.TAKE|k|10|10|1000|COST|-92233720368", nil, Params{Capacity: 10, RefillTokens: 10, PeriodMs: 1000, Cost: -92233720368}},
	} {
		key, p, err := Parse(words(tc.args))
		if err != tc.err {
			t.Errorf("%s: err %v, want %v", tc.args, err, tc.err)
			continue
		}
		if err != nil {
			continue
		}
		p.period, p.emission, p.span = 0, 0, 0
		if string(key) != "k" || p != tc.want {
			t.Errorf("%s: key %q %+v, want %+v", tc.args, key, p, tc.want)
		}
	}
}

// TestNewParams_Boundaries: rules 8–11 at their exact limits.
func TestNewParams_Boundaries(t *testing.T) {
	const now = 1700000000123456789
	type c struct {
		name                       string
		capacity, rt, period, cost int64
		interval                   bool
		err, errAt                 error // from NewParams, then CheckAt(now)
	}
	for _, tc := range []c{
		{"period fits", 1, 1, MaxPeriodMs, 1, true, nil, ErrNotInteger},
		{"period too long", 1, 1, MaxPeriodMs + 1, 1, true, ErrNotInteger, nil},
		{"T = 1 ns", 1, 1_000_000, 1, 1, false, nil, nil},
		{"T = 0", 1, 1_000_001, 1, 1, false, ErrNotInteger, nil},
		{"T = 0 accepted by INTERVAL", 1, 1_000_001, 1, 1, true, nil, nil},
		{"capacity·T = 2^63−1", math.MaxInt64, 1_000_000, 1, 1, false, nil, ErrNotInteger},
		{"capacity·T > 2^63−1", math.MaxInt64/2 + 1, 500_000, 1, 1, false, ErrNotInteger, nil},
		{"now + capacity·T = 2^63−1", math.MaxInt64 - now, 1_000_000, 1, 1, false, nil, nil},
		{"now + capacity·T = 2^63", math.MaxInt64 - now + 1, 1_000_000, 1, 1, false, nil, ErrNotInteger},
		{"refund |n|·T = 2^63−1", 1, 1_000_000, 1, -math.MaxInt64, false, nil, nil},
		{"refund −2^63", 1, 1_000_000, 1, math.MinInt64, false, ErrNotInteger, nil},
		{"INTERVAL refund −2^63", 1, 1_000_000, 1, math.MinInt64, true, nil, nil},
		{"COST 2^63−1 greedy: no check", 1, 1, MaxPeriodMs / 2, math.MaxInt64, false, nil, nil},
		{"INTERVAL ⌈c/r⌉·P fits at now", 3, 2, 3761686018365, 1, true, nil, nil},
		{"INTERVAL ⌈c/r⌉·P too long at now", 3, 2, 3761686018366, 1, true, nil, ErrNotInteger},
		{"INTERVAL ⌈c/r⌉·P > 2^63−1", 3, 2, 4611686018428, 1, true, ErrNotInteger, nil},
		{"INTERVAL huge capacity, huge rate", math.MaxInt64, math.MaxInt64, MaxPeriodMs / 2, 1, true, nil, nil},
		{"INTERVAL huge capacity, rate 1", math.MaxInt64, 1, 1, 1, true, ErrNotInteger, nil},
	} {
		p, err := NewParams(tc.capacity, tc.rt, tc.period, tc.cost, tc.interval)
		if err != tc.err {
			t.Errorf("%s: NewParams err %v, want %v", tc.name, err, tc.err)
			continue
		}
		if err != nil {
			continue
		}
		if err := p.CheckAt(now); err != tc.errAt {
			t.Errorf("%s: CheckAt err %v, want %v", tc.name, err, tc.errAt)
		}
	}
}

func TestCheckAt_RejectsForeignParamsAndNegativeClock(t *testing.T) {
	if err := (Params{Capacity: 1, RefillTokens: 1, PeriodMs: 1, Cost: 1}).CheckAt(0); err != ErrNotInteger {
		t.Errorf("hand-built Params accepted: %v", err)
	}
	p, _ := NewParams(1, 1, 1, 1, false)
	if err := p.CheckAt(-1); err != ErrNotInteger {
		t.Errorf("now = -1 accepted: %v", err)
	}
	if err := p.CheckAt(0); err != nil {
		t.Errorf("now = 0 rejected: %v", err)
	}
	if r, _, o := Take(State{}, 0, Params{Capacity: 1}); o != Reject || r != (Reply{}) {
		t.Errorf("Take with hand-built Params = %v, %v", r, o)
	}
	if _, err := Peek(State{}, -5, p); err != ErrNotInteger {
		t.Errorf("Peek at now −5: %v", err)
	}
}
