// Package glob is Redis's glob matching (KEYS, SCAN MATCH, CONFIG GET), in
// one place for the command layer and the state machine.
package glob

// Match matches str against a Redis glob pattern, ported from Redis's
// util.c stringmatchlen: '*' any run, '?' any byte, '[...]' a class with
// ranges and '^' negation, '\' escapes the next byte; nocase folds ASCII.
// Like Redis, a non-empty pattern never matches an empty string.
func Match(pattern, str []byte, nocase bool) bool {
	skip := false
	return globMatch(pattern, str, nocase, &skip, 0)
}

func globMatch(p, s []byte, nocase bool, skipLonger *bool, nesting int) bool {
	if nesting > 1000 { // Redis bounds recursion the same way
		return false
	}
	for len(p) > 0 && len(s) > 0 {
		switch p[0] {
		case '*':
			for len(p) > 1 && p[1] == '*' {
				p = p[1:]
			}
			if len(p) == 1 {
				return true
			}
			for len(s) > 0 {
				if globMatch(p[1:], s, nocase, skipLonger, nesting+1) {
					return true
				}
				if *skipLonger {
					return false
				}
				s = s[1:]
			}
			*skipLonger = true
			return false
		case '?':
			s = s[1:]
		case '[':
			p = p[1:]
			not := len(p) > 0 && p[0] == '^'
			if not {
				p = p[1:]
			}
			match := false
			for {
				if len(p) >= 2 && p[0] == '\\' {
					p = p[1:]
					if p[0] == s[0] {
						match = true
					}
				} else if len(p) > 0 && p[0] == ']' {
					break
				} else if len(p) == 0 {
					p = []byte{0} // unterminated class: stop at the end, as Redis does
					break
				} else if len(p) >= 3 && p[1] == '-' {
					lo, hi, c := p[0], p[2], s[0]
					if lo > hi {
						lo, hi = hi, lo
					}
					if nocase {
						lo, hi, c = fold(lo), fold(hi), fold(c)
					}
					p = p[2:]
					if c >= lo && c <= hi {
						match = true
					}
				} else if eqByte(p[0], s[0], nocase) {
					match = true
				}
				p = p[1:]
			}
			if not {
				match = !match
			}
			if !match {
				return false
			}
			s = s[1:]
		case '\\':
			if len(p) >= 2 {
				p = p[1:]
			}
			if !eqByte(p[0], s[0], nocase) {
				return false
			}
			s = s[1:]
		default:
			if !eqByte(p[0], s[0], nocase) {
				return false
			}
			s = s[1:]
		}
		p = p[1:]
		if len(s) == 0 {
			for len(p) > 0 && p[0] == '*' {
				p = p[1:]
			}
			break
		}
	}
	return len(p) == 0 && len(s) == 0
}

func fold(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func eqByte(a, b byte, nocase bool) bool {
	if nocase {
		return fold(a) == fold(b)
	}
	return a == b
}
