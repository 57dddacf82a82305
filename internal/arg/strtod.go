package arg

import (
	"math"
	"strconv"
)

// Redis parses a sorted set's scores with C's strtod (glibc): ZADD through
// getDoubleFromObject, which wants the whole argument and refuses a leading
// space, NaN and a value out of range; score ranges through zslParseRange,
// which accepts whatever strtod consumes up to the end of the C string.
// Strtod is that parse; Double and ScoreBound are Redis's two uses of it.

// Strtod parses the longest prefix of b that glibc's strtod accepts: white
// space, a sign, then "inf" or "infinity", "nan" with an optional
// "(chars)", a 0x hexadecimal mantissa with an optional p exponent, or a
// decimal mantissa with an optional e exponent (either only when digits
// follow the marker). n is how many bytes it consumed (0: none, and v is
// 0); erange is strtod's ERANGE of an overflow to ±inf or of a nonzero
// number that underflowed to zero.
func Strtod(b []byte) (v float64, n int, erange bool) {
	i := 0
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	start := i
	neg := false
	if i < len(b) && (b[i] == '+' || b[i] == '-') {
		neg = b[i] == '-'
		i++
	}
	switch {
	case hasPrefixFold(b[i:], "inf"):
		i += 3
		if hasPrefixFold(b[i:], "inity") {
			i += 5
		}
		return math.Copysign(math.Inf(1), sign(neg)), i, false
	case hasPrefixFold(b[i:], "nan"):
		i += 3
		if i < len(b) && b[i] == '(' {
			j := i + 1
			for j < len(b) && (isAlnum(b[j]) || b[j] == '_') {
				j++
			}
			if j < len(b) && b[j] == ')' {
				i = j + 1
			}
		}
		return math.NaN(), i, false
	}
	mant := i
	if i+1 < len(b) && b[i] == '0' && b[i+1]|0x20 == 'x' {
		if end, nonzero, ok := mantissa(b, i+2, true); ok {
			i = exponent(b, end, 'p')
			s := string(b[start:i])
			if i == end {
				s += "p0" // Go wants the exponent strtod does not
			}
			return finish(s, nonzero, i)
		}
		// "0x" without a digit: strtod reads the 0.
		return math.Copysign(0, sign(neg)), mant + 1, false
	}
	end, nonzero, ok := mantissa(b, i, false)
	if !ok {
		return 0, 0, false
	}
	i = exponent(b, end, 'e')
	return finish(string(b[start:i]), nonzero, i)
}

// finish converts what Strtod consumed, s (sign, mantissa, exponent, in
// Go's syntax), ending at n.
func finish(s string, nonzero bool, n int) (float64, int, bool) {
	v, _ := strconv.ParseFloat(s, 64) // the syntax is checked: only a range error
	return v, n, math.IsInf(v, 0) || v == 0 && nonzero
}

// mantissa scans digits with at most one '.' from i: the end, whether a
// digit is not 0, and ok false when there is no digit.
func mantissa(b []byte, i int, hex bool) (end int, nonzero, ok bool) {
	digits, dot := 0, false
	for ; i < len(b); i++ {
		c := b[i]
		switch {
		case '0' <= c && c <= '9' || hex && 'a' <= c|0x20 && c|0x20 <= 'f':
			digits++
			nonzero = nonzero || c != '0'
		case c == '.' && !dot:
			dot = true
		default:
			return i, nonzero, digits > 0
		}
	}
	return i, nonzero, digits > 0
}

// exponent consumes an exponent marker (e or p, either case), an optional
// sign and digits from i, when digits follow; otherwise nothing.
func exponent(b []byte, i int, marker byte) int {
	if i >= len(b) || b[i]|0x20 != marker {
		return i
	}
	j := i + 1
	if j < len(b) && (b[j] == '+' || b[j] == '-') {
		j++
	}
	k := j
	for k < len(b) && '0' <= b[k] && b[k] <= '9' {
		k++
	}
	if k == j {
		return i
	}
	return k
}

// Double is Redis's getDoubleFromObject: the whole of b is a number for
// strtod, without leading space, neither NaN nor out of range (an overflow,
// or a nonzero number underflowing to 0). "ERR value is not a valid float"
// otherwise.
func Double(b []byte) (float64, bool) {
	if len(b) == 0 || isSpace(b[0]) {
		return 0, false
	}
	v, n, erange := Strtod(b)
	if n != len(b) || erange || math.IsNaN(v) {
		return 0, false
	}
	return v, true
}

// ScoreBound is one end of a score range as zslParseRange reads it: "(" for
// exclusive, then strtod up to the end of the C string (its first NUL):
// leading space, an empty number (0) and out-of-range values are accepted,
// NaN is not ("ERR min or max is not a float").
func ScoreBound(b []byte) (v float64, exclusive, ok bool) {
	for i, c := range b {
		if c == 0 {
			b = b[:i]
			break
		}
	}
	if len(b) > 0 && b[0] == '(' {
		exclusive, b = true, b[1:]
	}
	v, n, _ := Strtod(b)
	if n != len(b) || math.IsNaN(v) {
		return 0, false, false
	}
	return v, exclusive, true
}

func isSpace(c byte) bool { return c == ' ' || c >= '\t' && c <= '\r' }

func isAlnum(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c|0x20 && c|0x20 <= 'z'
}

func sign(neg bool) float64 {
	if neg {
		return -1
	}
	return 1
}

// hasPrefixFold reports whether b starts with the lower-case ASCII word w,
// ASCII case folded.
func hasPrefixFold(b []byte, w string) bool {
	return len(b) >= len(w) && EqualFold(b[:len(w)], w)
}
