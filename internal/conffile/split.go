// Package conffile reads and rewrites configuration files in Redis's form:
// one directive a line, "name value [value ...]", split as Redis's
// sdssplitargs splits them, '#' comments and blank lines between.
package conffile

import (
	"strconv"
	"strings"
)

// SplitArgs splits a line into arguments exactly as Redis's sdssplitargs
// does: blanks separate words; "double quotes" take \n \r \t \b \a and \xHH
// escapes (and \<c> for any other c); 'single quotes' take \' ; a closing
// quote must be followed by a blank or the end; a NUL byte ends the line
// (a C string there). ok is false for unbalanced quotes.
//
// The same algorithm as the server's inline-command reader
// (server/inline.go), which works in place on a read buffer; this one
// copies, since a config line is read once.
func SplitArgs(line string) (args []string, ok bool) {
	at := func(i int) byte { // C-string view of line
		if i < len(line) {
			return line[i]
		}
		return 0
	}
	p := 0
	for {
		for at(p) != 0 && isSpace(at(p)) {
			p++
		}
		if at(p) == 0 {
			return args, true
		}
		var w strings.Builder
		inq, insq, done := false, false, false
		for !done {
			c := at(p)
			switch {
			case inq:
				switch {
				case c == '\\' && at(p+1) == 'x' && isHex(at(p+2)) && isHex(at(p+3)):
					w.WriteByte(hexVal(at(p+2))<<4 | hexVal(at(p+3)))
					p += 3
				case c == '\\' && at(p+1) != 0:
					p++
					e := at(p)
					switch e {
					case 'n':
						e = '\n'
					case 'r':
						e = '\r'
					case 't':
						e = '\t'
					case 'b':
						e = '\b'
					case 'a':
						e = '\a'
					}
					w.WriteByte(e)
				case c == '"':
					if n := at(p + 1); n != 0 && !isSpace(n) {
						return nil, false
					}
					done = true
				case c == 0:
					return nil, false
				default:
					w.WriteByte(c)
				}
			case insq:
				switch {
				case c == '\\' && at(p+1) == '\'':
					p++
					w.WriteByte('\'')
				case c == '\'':
					if n := at(p + 1); n != 0 && !isSpace(n) {
						return nil, false
					}
					done = true
				case c == 0:
					return nil, false
				default:
					w.WriteByte(c)
				}
			default:
				switch c {
				case ' ', '\n', '\r', '\t', 0:
					done = true
				case '"':
					inq = true
				case '\'':
					insq = true
				default:
					w.WriteByte(c)
				}
			}
			if at(p) != 0 {
				p++
			}
		}
		args = append(args, w.String())
	}
}

// Quote is Redis's sdscatrepr: s in double quotes, with \\ \" \n \r \t \a
// \b escaped and other bytes outside printable ASCII as \xHH. SplitArgs
// reads it back as s. CONFIG REWRITE writes string values this way.
func Quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\', '"':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\a':
			b.WriteString(`\a`)
		case '\b':
			b.WriteString(`\b`)
		default:
			if c >= 0x20 && c < 0x7f {
				b.WriteByte(c)
			} else {
				b.WriteString(`\x`)
				h := strconv.FormatUint(uint64(c), 16)
				if len(h) == 1 {
					b.WriteByte('0')
				}
				b.WriteString(h)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

// QuoteIfNeeded is s as it stands when SplitArgs reads it back as one
// argument unchanged, else Quote(s): the example file and the rewrite
// write plain words plainly.
func QuoteIfNeeded(s string) string {
	if s == "" || strings.ContainsAny(s, " \t\r\n\v\f\"'\\#") || strings.IndexFunc(s, func(r rune) bool { return r < 0x20 || r >= 0x7f }) >= 0 {
		return Quote(s)
	}
	return s
}

// FormatMemory is Redis's rewriteConfigFormatMemory: bytes in the largest
// of gb, mb, kb that divides them exactly, else plain bytes.
func FormatMemory(n int64) string {
	const kb, mb, gb = 1 << 10, 1 << 20, 1 << 30
	switch {
	case n != 0 && n%gb == 0:
		return strconv.FormatInt(n/gb, 10) + "gb"
	case n != 0 && n%mb == 0:
		return strconv.FormatInt(n/mb, 10) + "mb"
	case n != 0 && n%kb == 0:
		return strconv.FormatInt(n/kb, 10) + "kb"
	}
	return strconv.FormatInt(n, 10)
}

// isSpace is C's isspace in the "C" locale.
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

func isHex(c byte) bool {
	return ('0' <= c && c <= '9') || ('a' <= c && c <= 'f') || ('A' <= c && c <= 'F')
}

func hexVal(c byte) byte {
	switch {
	case '0' <= c && c <= '9':
		return c - '0'
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10
	default:
		return c - 'A' + 10
	}
}
