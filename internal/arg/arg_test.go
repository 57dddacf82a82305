package arg

import (
	"strconv"
	"testing"
)

// Int agrees with strconv.ParseInt on every input, including the edges.
func TestIntMatchesStrconv(t *testing.T) {
	for _, s := range []string{"", "0", "-0", "+0", "+", "-", "12", "-12", "+12", "007",
		"9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
		"18446744073709551615", "18446744073709551616", "99999999999999999999", "1e3", " 1", "1 ", "0x10", "１",
		"--1", "+-1", "922337203685477580", "9223372036854775799", "9223372036854775810", "١", "12a"} {
		want, werr := strconv.ParseInt(s, 10, 64)
		got, ok := Int([]byte(s))
		if ok != (werr == nil) || (ok && got != want) {
			t.Errorf("Int(%q) = %d, %v; strconv: %d, %v", s, got, ok, want, werr)
		}
	}
}

func FuzzInt(f *testing.F) {
	f.Add([]byte("-9223372036854775808"))
	f.Fuzz(func(t *testing.T, b []byte) {
		want, werr := strconv.ParseInt(string(b), 10, 64)
		got, ok := Int(b)
		if ok != (werr == nil) || (ok && got != want) {
			t.Fatalf("Int(%q) = %d, %v; strconv: %d, %v", b, got, ok, want, werr)
		}
	})
}

func TestEqualFold(t *testing.T) {
	for _, tt := range []struct {
		b, w string
		want bool
	}{{"COST", "cost", true}, {"cOsT", "cost", true}, {"cost", "cost", true}, {"cos", "cost", false}, {"coſt", "cost", false}, {"COST ", "cost", false}} {
		if got := EqualFold([]byte(tt.b), tt.w); got != tt.want {
			t.Errorf("EqualFold(%q, %q) = %v", tt.b, tt.w, got)
		}
	}
}

// Memory sizes read as Redis's configuration reads them.
func TestMemory(t *testing.T) {
	for s, want := range map[string]int64{"0": 0, "1024": 1024, "1kb": 1024, "1KB": 1024, "1k": 1000, "100mb": 100 << 20, "2gb": 2 << 30, "3m": 3_000_000, "5b": 5} {
		if got, ok := Memory(s); !ok || got != want {
			t.Errorf("Memory(%q) = %d, %v; want %d", s, got, ok, want)
		}
	}
	for _, s := range []string{"", "-1", "mb", "1tb", "1.5gb", "9223372036854775807kb", "x"} {
		if got, ok := Memory(s); ok {
			t.Errorf("Memory(%q) = %d; want refused", s, got)
		}
	}
}
