package arg

import (
	"math"
	"testing"
)

// TestStrtod pins what glibc's strtod consumes and returns (checked with C
// on glibc): the longest prefix it reads, and ERANGE.
func TestStrtod(t *testing.T) {
	inf := math.Inf(1)
	for _, tc := range []struct {
		in     string
		v      float64
		n      int
		erange bool
	}{
		{"1", 1, 1, false}, {" \t\n1.5x", 1.5, 6, false}, {"+.5", 0.5, 3, false}, {"5.", 5, 2, false},
		{"1e3", 1000, 3, false}, {"1e", 1, 1, false}, {"1e+", 1, 1, false}, {"1E-2", 0.01, 4, false},
		{"0x10", 16, 4, false}, {"0X1p3", 8, 5, false}, {"0x1.8", 1.5, 5, false}, {"0x.8p1", 1, 6, false},
		{"0x", 0, 1, false}, {"0xg", 0, 1, false}, {"-0x", math.Copysign(0, -1), 2, false}, {"0x1p", 1, 3, false},
		{"inf", inf, 3, false}, {"-Infinity", -inf, 9, false}, {"infinit", inf, 3, false}, {"INFx", inf, 3, false},
		{"nan", math.NaN(), 3, false}, {"nan(123)", math.NaN(), 8, false}, {"nan(12", math.NaN(), 3, false},
		{"1e400", inf, 5, true}, {"-1e400", -inf, 6, true}, {"1e-400", 0, 6, true}, {"0e-400", 0, 6, false},
		{"4.9e-324", 5e-324, 8, false}, {"1_0", 1, 1, false}, {"", 0, 0, false}, {"-", 0, 0, false}, {" ", 0, 0, false},
		{".", 0, 0, false}, {"e5", 0, 0, false}, {"0.1", 0.1, 3, false}, {"-0", math.Copysign(0, -1), 2, false},
	} {
		v, n, erange := Strtod([]byte(tc.in))
		same := v == tc.v && math.Signbit(v) == math.Signbit(tc.v) || math.IsNaN(v) && math.IsNaN(tc.v)
		if !same || n != tc.n || erange != tc.erange {
			t.Errorf("Strtod(%q) = %v, %d, %v; want %v, %d, %v", tc.in, v, n, erange, tc.v, tc.n, tc.erange)
		}
	}
}

// TestDoubleAndScoreBound: ZADD's rule (the whole argument, no leading
// space, no NaN, nothing out of range) and zslParseRange's (up to the
// first NUL, "(" for exclusive, leading space and empty accepted).
func TestDoubleAndScoreBound(t *testing.T) {
	for in, ok := range map[string]bool{
		"1": true, "-0": true, "inf": true, "0x10": true, " 1": false, "1 ": false, "": false, "nan": false,
		"1e400": false, "1e-400": false, "1\x00": false, "abc": false,
	} {
		if _, got := Double([]byte(in)); got != ok {
			t.Errorf("Double(%q): %v", in, got)
		}
	}
	for in, want := range map[string]struct {
		v      float64
		ex, ok bool
	}{
		"1": {1, false, true}, "(1": {1, true, true}, "": {0, false, true}, "(": {0, true, true}, " 2": {2, false, true},
		"2 ": {0, false, false}, "3\x00x": {3, false, true}, "1e400": {math.Inf(1), false, true}, "nan": {0, false, false},
		"((1": {0, false, false}, "x": {0, false, false},
	} {
		v, ex, ok := ScoreBound([]byte(in))
		if v != want.v || ex != want.ex || ok != want.ok {
			t.Errorf("ScoreBound(%q) = %v, %v, %v; want %+v", in, v, ex, ok, want)
		}
	}
}
