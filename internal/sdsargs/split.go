// Package sdsargs splits a line into arguments as Redis's sdssplitargs
// does. Redis uses it for inline commands and for its config file, and so
// does Redcell (server's inline reader, internal/conffile).
package sdsargs

// Split splits line into arguments exactly as Redis's sdssplitargs does:
// blanks separate words; "double quotes" take \n \r \t \b \a and \xHH
// escapes (and \<c> for any other c); 'single quotes' take \' ; a closing
// quote must be followed by a blank or the end; a NUL byte ends the line
// (it is a C string there). It returns false for unbalanced quotes.
//
// Arguments are unescaped in place: every input byte yields at most one
// output byte, so the write cursor never passes the read cursor. The results
// alias line and are appended to args; nothing is allocated but args' growth.
func Split(line []byte, args [][]byte) ([][]byte, bool) {
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
		w := p // write cursor for this word
		start := w
		inq, insq, done := false, false, false
		for !done {
			c := at(p)
			switch {
			case inq:
				switch {
				case c == '\\' && at(p+1) == 'x' && isHex(at(p+2)) && isHex(at(p+3)):
					line[w] = hexVal(at(p+2))<<4 | hexVal(at(p+3))
					w++
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
					line[w] = e
					w++
				case c == '"':
					if n := at(p + 1); n != 0 && !isSpace(n) {
						return args, false
					}
					done = true
				case c == 0:
					return args, false
				default:
					line[w] = c
					w++
				}
			case insq:
				switch {
				case c == '\\' && at(p+1) == '\'':
					p++
					line[w] = '\''
					w++
				case c == '\'':
					if n := at(p + 1); n != 0 && !isSpace(n) {
						return args, false
					}
					done = true
				case c == 0:
					return args, false
				default:
					line[w] = c
					w++
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
					line[w] = c
					w++
				}
			}
			if at(p) != 0 {
				p++
			}
		}
		args = append(args, line[start:w:w])
	}
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
