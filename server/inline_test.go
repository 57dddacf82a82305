package server

import (
	"fmt"
	"testing"
)

// refSplitArgs is Redis's sdssplitargs (src/sds.c), transcribed as literally
// as Go allows so that splitArgs can be compared with it: the line is a C
// string (it ends at the first NUL, reads past the end see NUL), characters
// are C's signed chars (isspace is false for bytes >= 0x80 in the C locale),
// and each token is built by appending. It returns nil, false where Redis
// returns NULL (unbalanced quotes).
func refSplitArgs(line []byte) ([]string, bool) {
	s := append(append([]byte(nil), line...), 0) // sdsnewlen + terminator
	at := func(i int) byte {
		if i < len(s) {
			return s[i]
		}
		return 0
	}
	cIsSpace := func(c byte) bool { // isspace() in the "C" locale
		return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
	}
	isHexDigit := func(c byte) bool {
		return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
	}
	hexDigitToInt := func(c byte) int {
		switch {
		case c >= '0' && c <= '9':
			return int(c - '0')
		case c >= 'a' && c <= 'f':
			return int(c-'a') + 10
		case c >= 'A' && c <= 'F':
			return int(c-'A') + 10
		}
		return 0
	}
	p := 0
	vector := []string{}
	for {
		// skip blanks
		for at(p) != 0 && cIsSpace(at(p)) {
			p++
		}
		if at(p) == 0 {
			return vector, true
		}
		inq, insq, done := false, false, false
		var current []byte
		for !done {
			if inq {
				if at(p) == '\\' && at(p+1) == 'x' && isHexDigit(at(p+2)) && isHexDigit(at(p+3)) {
					current = append(current, byte(hexDigitToInt(at(p+2))*16+hexDigitToInt(at(p+3))))
					p += 3
				} else if at(p) == '\\' && at(p+1) != 0 {
					p++
					var c byte
					switch at(p) {
					case 'n':
						c = '\n'
					case 'r':
						c = '\r'
					case 't':
						c = '\t'
					case 'b':
						c = '\b'
					case 'a':
						c = '\a'
					default:
						c = at(p)
					}
					current = append(current, c)
				} else if at(p) == '"' {
					// closing quote must be followed by a space or nothing at all
					if at(p+1) != 0 && !cIsSpace(at(p+1)) {
						return nil, false
					}
					done = true
				} else if at(p) == 0 {
					return nil, false // unterminated quotes
				} else {
					current = append(current, at(p))
				}
			} else if insq {
				if at(p) == '\\' && at(p+1) == '\'' {
					p++
					current = append(current, '\'')
				} else if at(p) == '\'' {
					if at(p+1) != 0 && !cIsSpace(at(p+1)) {
						return nil, false
					}
					done = true
				} else if at(p) == 0 {
					return nil, false
				} else {
					current = append(current, at(p))
				}
			} else {
				switch at(p) {
				case ' ', '\n', '\r', '\t', 0:
					done = true
				case '"':
					inq = true
				case '\'':
					insq = true
				default:
					current = append(current, at(p))
				}
			}
			if at(p) != 0 {
				p++
			}
		}
		vector = append(vector, string(current))
	}
}

func splitArgsStrings(line []byte) ([]string, bool) {
	buf := append([]byte(nil), line...) // splitArgs unescapes in place
	args, ok := splitArgs(buf, nil)
	if !ok {
		return nil, false
	}
	out := []string{}
	for _, a := range args {
		out = append(out, string(a))
	}
	return out, true
}

// TestSplitArgsAgainstRedis checks hand-picked lines against the reference
// and against the results Redis's own tests and docs show.
func TestSplitArgsAgainstRedis(t *testing.T) {
	tests := []struct {
		line string
		want []string // nil: unbalanced quotes
	}{
		{"", []string{}},
		{"   ", []string{}},
		{"foo bar", []string{"foo", "bar"}},
		{`foo bar "newline are supported\n" and "\xff\x00otherstuff"`, []string{"foo", "bar", "newline are supported\n", "and", "\xff\x00otherstuff"}},
		{`"foo"bar`, nil},
		{`"foo'`, nil},
		{`'foo"`, nil},
		{`"foo" bar`, []string{"foo", "bar"}},
		{`'it\'s' "q\"q"`, []string{"it's", `q"q`}},
		{`a"b c"`, []string{"ab c"}},
		{`a'b c'`, []string{"ab c"}},
		{`"\`, nil},
		{`"\"`, nil},
		{`"\\"`, []string{`\`}},
		{"\"a\x00b\"", nil}, // the C string ends inside the quotes
		{"a\x00\"", []string{"a"}},
		{"\"x\"\x00junk", []string{"x"}},
		{"\"x\"\vy", []string{"x", "y"}}, // \v is a blank after a closing quote
		{"x\vy", []string{"x\vy"}},       // but not inside a word
		{"\xa0x", []string{"\xa0x"}},     // no locale: 0xA0 is not a space
	}
	for _, tt := range tests {
		ref, refOK := refSplitArgs([]byte(tt.line))
		got, ok := splitArgsStrings([]byte(tt.line))
		if fmt.Sprintf("%v %q", refOK, ref) != fmt.Sprintf("%v %q", tt.want != nil, tt.want) {
			t.Errorf("reference(%q) = %v %q, want %q (the reference is wrong)", tt.line, refOK, ref, tt.want)
		}
		if fmt.Sprintf("%v %q", ok, got) != fmt.Sprintf("%v %q", refOK, ref) {
			t.Errorf("splitArgs(%q) = %v %q, Redis: %v %q", tt.line, ok, got, refOK, ref)
		}
	}
}

// FuzzSplitArgs compares splitArgs with the transcription of sdssplitargs.
func FuzzSplitArgs(f *testing.F) {
	for _, s := range []string{
		"", "set a b", `"a\x41" 'b\'' "\n\r\t\b\a\z"`, `"\x4`, `"\x`, `"\`, `'\`, `a"b"`, `"a"b`,
		"\x00", "a\x00b", "\"\x00\"", " \t\v\f\r\n x", `''""`, `"\xZZ"`, "\xff\xfe \x80",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		ref, refOK := refSplitArgs(line)
		got, ok := splitArgsStrings(line)
		if ok != refOK || fmt.Sprintf("%q", got) != fmt.Sprintf("%q", ref) {
			t.Fatalf("splitArgs(%q) = %v %q, Redis: %v %q", line, ok, got, refOK, ref)
		}
		total := 0
		for _, a := range got {
			total += len(a)
		}
		if total > len(line) {
			t.Fatalf("splitArgs(%q) produced %d bytes from %d", line, total, len(line))
		}
	})
}
