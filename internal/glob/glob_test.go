package glob

import (
	"strings"
	"testing"
	"time"
)

// refStringMatch is Redis's stringmatchlen_impl (src/util.c, 7.x),
// transcribed with its pointer arithmetic kept: p and s are offsets into
// NUL-terminated copies, plen and slen the lengths left, and reads past a
// length see what C would (the terminator), since every recursive call works
// on a suffix of the original buffers. Characters are compared as unsigned
// bytes (Redis on a platform whose char is unsigned; on x86, where char is
// signed, a range like [a-\xff] differs for bytes >= 0x80).
func refStringMatch(pattern, str []byte, nocase bool) bool {
	pat := append(append([]byte(nil), pattern...), 0)
	s := append(append([]byte(nil), str...), 0)
	skip := false
	return refMatchImpl(pat, 0, len(pattern), s, 0, len(str), nocase, &skip, 0)
}

func cToLower(c int) int {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func refMatchImpl(pat []byte, p, plen int, str []byte, s, slen int, nocase bool, skipLonger *bool, nesting int) bool {
	if nesting > 1000 {
		return false
	}
	for plen > 0 && slen > 0 {
		switch pat[p] {
		case '*':
			for plen > 0 && pat[p+1] == '*' {
				p++
				plen--
			}
			if plen == 1 {
				return true
			}
			for slen > 0 {
				if refMatchImpl(pat, p+1, plen-1, str, s, slen, nocase, skipLonger, nesting+1) {
					return true
				}
				if *skipLonger {
					return false
				}
				s++
				slen--
			}
			*skipLonger = true
			return false
		case '?':
			s++
			slen--
		case '[':
			p++
			plen--
			not := pat[p] == '^'
			if not {
				p++
				plen--
			}
			match := false
			for {
				if pat[p] == '\\' && plen >= 2 {
					p++
					plen--
					if pat[p] == str[s] {
						match = true
					}
				} else if pat[p] == ']' {
					break
				} else if plen == 0 {
					p--
					plen++
					break
				} else if plen >= 3 && pat[p+1] == '-' {
					start, end, c := int(pat[p]), int(pat[p+2]), int(str[s])
					if start > end {
						start, end = end, start
					}
					if nocase {
						start, end, c = cToLower(start), cToLower(end), cToLower(c)
					}
					p += 2
					plen -= 2
					if c >= start && c <= end {
						match = true
					}
				} else if !nocase {
					if pat[p] == str[s] {
						match = true
					}
				} else if cToLower(int(pat[p])) == cToLower(int(str[s])) {
					match = true
				}
				p++
				plen--
			}
			if not {
				match = !match
			}
			if !match {
				return false
			}
			s++
			slen--
		case '\\':
			if plen >= 2 {
				p++
				plen--
			}
			fallthrough
		default:
			if !nocase {
				if pat[p] != str[s] {
					return false
				}
			} else if cToLower(int(pat[p])) != cToLower(int(str[s])) {
				return false
			}
			s++
			slen--
		}
		p++
		plen--
		if slen == 0 {
			for pat[p] == '*' {
				p++
				plen--
			}
			break
		}
	}
	return plen == 0 && slen == 0
}

func TestMatch(t *testing.T) {
	tests := []struct {
		pattern, str string
		nocase, want bool
	}{
		// From Redis's tests/unit/keyspace.tcl (KEYS).
		{"foo*", "foo_a", false, true},
		{"foo*", "key_x", false, false},
		{"*", "key_x", false, true},
		{"{a}*", "{a}x", false, true},
		{"{a}*", "{b}a", false, false},
		{"*{b}*", "{b}c", false, true},
		{"a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b", strings.Repeat("a", 105), false, false},

		// '*' never matches an empty string; an empty pattern matches only "".
		{"*", "", false, false},
		{"**", "", false, false},
		{"", "", false, true},
		{"", "a", false, false},
		{"a*", "a", false, true},
		{"*a", "a", false, true},
		{"a**", "a", false, true},
		{"?", "", false, false},
		{"*b", "aaa", false, false},
		{"a*b*c", "axxbyyc", false, true},
		{"a*b*c", "axxbyyc_", false, false},
		{"h?llo", "hello", false, true},
		{"h?llo", "hllo", false, false},

		// Classes.
		{"h[ae]llo", "hallo", false, true},
		{"h[ae]llo", "hillo", false, false},
		{"h[^e]llo", "hallo", false, true},
		{"h[^e]llo", "hello", false, false},
		{"h[a-b]llo", "hbllo", false, true},
		{"h[b-a]llo", "hallo", false, true}, // reversed range
		{"h[a-b]llo", "hcllo", false, false},
		{"[]]", "]", false, false}, // ']' right after '[' closes an empty class
		{"[\\]]", "]", false, true},
		{"[^]", "x", false, true}, // empty negated class: anything
		{"[a-", "a", false, true}, // unterminated class ends at the pattern's end
		{"[a-", "-", false, true},
		{"[", "a", false, false},
		{"[^", "a", false, true},
		{"[\\", "\\", false, true},
		{"[a\\-z]", "-", false, true},
		{"[a\\-z]", "b", false, false},

		// Escapes.
		{"\\*", "*", false, true},
		{"\\*", "a", false, false},
		{"\\?", "?", false, true},
		{"a\\", "a\\", false, true}, // a trailing backslash is literal
		{"\\[a]", "[a]", false, true},

		// nocase folds ASCII letters only.
		{"HELLO", "hello", true, true},
		{"HELLO", "hello", false, false},
		{"[A-Z]", "q", true, true},
		{"[a-z]", "Q", true, true},
		{"[a-z]", "Q", false, false},
		{"[Q]", "q", true, true},
		{"\xc1", "\xe1", true, false}, // Latin-1 letters do not fold
		{"@", "`", true, false},
		{"SAVE", "save", true, true},
	}
	for _, tt := range tests {
		ref := refStringMatch([]byte(tt.pattern), []byte(tt.str), tt.nocase)
		if ref != tt.want {
			t.Errorf("reference(%q, %q, nocase=%v) = %v, want %v (the reference is wrong)", tt.pattern, tt.str, tt.nocase, ref, tt.want)
		}
		if got := Match([]byte(tt.pattern), []byte(tt.str), tt.nocase); got != tt.want {
			t.Errorf("Match(%q, %q, nocase=%v) = %v, want %v", tt.pattern, tt.str, tt.nocase, got, tt.want)
		}
	}
}

// TestMatchAbusivePatterns: Redis's regression tests for patterns that
// made stringmatchlen exponential or overflow the stack finish at once.
func TestMatchAbusivePatterns(t *testing.T) {
	start := time.Now()
	if Match([]byte(strings.Repeat("*?", 50000)), []byte(strings.Repeat("a", 50000)), false) {
		t.Errorf("*?×50000 matched 50000 a's; Redis gives up past 1000 levels of nesting")
	}
	if Match([]byte(strings.Repeat("a*", 1000)+"b"), []byte(strings.Repeat("a", 5000)), false) {
		t.Errorf("a*…b matched a's")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("abusive patterns took %v", d)
	}
}

// FuzzMatch compares Match with the transcription of Redis's C.
func FuzzMatch(f *testing.F) {
	for _, s := range [][2]string{
		{"h*llo", "hello"}, {"[a-z]*", "abc"}, {"[^a-", "b"}, {"\\", "\\"}, {"*?*", "ab"}, {"[\\", "x"},
		{"a*b*c*", "aabbcc"}, {"[]-]", "-"}, {"**a", "ba"},
	} {
		f.Add([]byte(s[0]), []byte(s[1]), false)
		f.Add([]byte(s[0]), []byte(s[1]), true)
	}
	f.Fuzz(func(t *testing.T, pattern, str []byte, nocase bool) {
		if len(pattern) > 64 || len(str) > 64 {
			return // the reference is exponential on long inputs without skipLonger help
		}
		want := refStringMatch(pattern, str, nocase)
		if got := Match(pattern, str, nocase); got != want {
			t.Fatalf("Match(%q, %q, nocase=%v) = %v, Redis: %v", pattern, str, nocase, got, want)
		}
	})
}
