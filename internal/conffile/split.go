// Package conffile reads and rewrites configuration files in Redis's form:
// one directive a line, "name value [value ...]", split as Redis's
// sdssplitargs splits them, '#' comments and blank lines between.
package conffile

import (
	"strconv"
	"strings"

	"github.com/redcell/redcell/internal/sdsargs"
)

// SplitArgs splits a line into arguments exactly as Redis's sdssplitargs
// does (package sdsargs, which the server's inline-command reader uses
// too), as strings. ok is false for unbalanced quotes.
func SplitArgs(line string) (args []string, ok bool) {
	parts, ok := sdsargs.Split([]byte(line), nil) // a copy: Split unescapes in place
	if !ok || len(parts) == 0 {
		return nil, ok
	}
	args = make([]string, len(parts))
	for i, p := range parts {
		args[i] = string(p)
	}
	return args, true
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
