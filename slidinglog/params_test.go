package slidinglog

import (
	"math"
	"strings"
	"testing"
)

func TestErrorTexts(t *testing.T) {
	for _, tc := range []struct {
		err  Error
		text string
	}{
		{ErrNotInteger, "ERR value is not an integer or out of range"},
		{ErrSyntax, "ERR syntax error"},
		{ErrLimit, "ERR limit must be positive"},
		{ErrWindow, "ERR window_ms must be positive"},
		{ErrCost, "ERR COST must be positive"},
		{ErrMinGap, "ERR MINGAP must be between 0 and window_ms"},
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

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		args string
		peek bool
		err  error
		want Params // exported fields only
	}{
		{"SL.HIT", false, ErrArity, Params{}},
		{"SL.HIT|k|1", false, ErrArity, Params{}},
		{"SL.PEEK|k|1", true, ErrArity, Params{}},
		{"SL.HIT|k|3|1000", false, nil, Params{Limit: 3, WindowMs: 1000, Cost: 1}},
		{"SL.HIT|k|3|1000|denied|count|mingap|5|cost|2", false, nil, Params{Limit: 3, WindowMs: 1000, Cost: 2, MinGapMs: 5, DeniedCount: true}},
		{"SL.HIT|k|3|1000|DENIED|COUNT|DENIED|free|COST|2|COST|+1|MINGAP|007", false, nil, Params{Limit: 3, WindowMs: 1000, Cost: 1, MinGapMs: 7}},
		{"SL.PEEK|k|3|1000|MINGAP|1000|COST|3", true, nil, Params{Limit: 3, WindowMs: 1000, Cost: 3, MinGapMs: 1000}},
		// Integers.
		{"SL.HIT|k|x|1000", false, ErrNotInteger, Params{}},
		{"SL.HIT|k|1|1.5", false, ErrNotInteger, Params{}},
		{"SL.HIT|k|1|1000|COST|x", false, ErrNotInteger, Params{}},
		{"SL.HIT|k|1|1000|MINGAP|x", false, ErrNotInteger, Params{}},
		{"SL.HIT|k|1|1000|COST|99999999999999999999", false, ErrNotInteger, Params{}},
		{"SL.HIT|k|MINGAP|1000", false, ErrNotInteger, Params{}},
		// Syntax.
		{"SL.HIT|k|1|1000|FOO", false, ErrSyntax, Params{}},
		{"SL.HIT|k|1|1000|COST", false, ErrSyntax, Params{}},
		{"SL.HIT|k|1|1000|MINGAP", false, ErrSyntax, Params{}},
		{"SL.HIT|k|1|1000|DENIED", false, ErrSyntax, Params{}},
		{"SL.HIT|k|1|1000|DENIED|MAYBE", false, ErrSyntax, Params{}},
		{"SL.HIT|k|1|1000|INTERVAL", false, ErrSyntax, Params{}},
		{"SL.PEEK|k|1|1000|DENIED|FREE", true, ErrSyntax, Params{}},
		{"SL.HIT|k|1|1000|DENIED|ſree", false, ErrSyntax, Params{}},
		{"SL.HIT|k|1|1000|COST|x|FOO", false, ErrNotInteger, Params{}},
		{"SL.HIT|k|1|1000|FOO|COST|x", false, ErrSyntax, Params{}},
		{"SL.HIT|k|1|10|MINGAP|11|DENIED|X", false, ErrSyntax, Params{}},
		{"SL.HIT|k|0|10|COST|y", false, ErrNotInteger, Params{}},
		// Ranges, in order.
		{"SL.HIT|k|0|1000", false, ErrLimit, Params{}},
		{"SL.HIT|k|1|0", false, ErrWindow, Params{}},
		{"SL.HIT|k|0|0|COST|0", false, ErrLimit, Params{}},
		{"SL.HIT|k|1|0|MINGAP|5", false, ErrWindow, Params{}},
		{"SL.HIT|k|1|1000|COST|0", false, ErrCost, Params{}},
		{"SL.HIT|k|1|1000|COST|-1", false, ErrCost, Params{}},
		{"SL.HIT|k|1|10|COST|0|MINGAP|11", false, ErrCost, Params{}},
		{"SL.HIT|k|1|1000|MINGAP|-1", false, ErrMinGap, Params{}},
		{"SL.HIT|k|1|1000|MINGAP|1001", false, ErrMinGap, Params{}},
		{"SL.HIT|k|1|9223372036855|MINGAP|9223372036856", false, ErrMinGap, Params{}},
		// Overflow after ranges.
		{"SL.HIT|k|1|9223372036855", false, ErrNotInteger, Params{}},
		{"SL.HIT|k|9223372036854775807|9223372036854|COST|9223372036854775807|MINGAP|9223372036854", false, nil,
			Params{Limit: math.MaxInt64, WindowMs: MaxWindowMs, Cost: math.MaxInt64, MinGapMs: MaxWindowMs}},
	} {
		parse := ParseHit
		if tc.peek {
			parse = ParsePeek
		}
		key, p, err := parse(words(tc.args))
		if err != tc.err {
			t.Errorf("%s: err %v, want %v", tc.args, err, tc.err)
			continue
		}
		if err != nil {
			continue
		}
		p.window, p.gap = 0, 0
		if string(key) != "k" || p != tc.want {
			t.Errorf("%s: key %q %+v, want %+v", tc.args, key, p, tc.want)
		}
	}
}

func TestCheckAt(t *testing.T) {
	const now = 1700000000123456789
	for _, tc := range []struct {
		windowMs, now int64
		err           error
	}{
		{7523372036731, now, nil},
		{7523372036732, now, ErrNotInteger},
		{MaxWindowMs, 0, nil},
		{MaxWindowMs, math.MaxInt64 - MaxWindowMs*nanosPerMilli, nil},
		{MaxWindowMs, math.MaxInt64 - MaxWindowMs*nanosPerMilli + 1, ErrNotInteger},
		{1, -1, ErrNotInteger},
		{1, math.MaxInt64, ErrNotInteger},
	} {
		p, err := NewParams(1, tc.windowMs, 1, 0, false)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.CheckAt(tc.now); err != tc.err {
			t.Errorf("window %d at %d: %v, want %v", tc.windowMs, tc.now, err, tc.err)
		}
	}
	if err := (Params{Limit: 1, WindowMs: 1, Cost: 1}).CheckAt(0); err != ErrNotInteger {
		t.Errorf("hand-built Params accepted")
	}
	if _, _, o := Hit(State{}, 0, Params{Limit: 1, WindowMs: 1, Cost: 1}, nil); o != Reject {
		t.Errorf("Hit with hand-built Params: %v", o)
	}
}
