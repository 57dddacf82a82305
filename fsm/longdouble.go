package fsm

import (
	"math/big"
	"strings"
)

// INCRBYFLOAT's arithmetic as Redis 7.0 does it on x86-64: strtold into an
// x87 long double (a 64-bit mantissa, exponents to ±16384), one addition
// rounded to nearest even, printed with %.17Lf and its trailing zeros
// trimmed. math/big at precision 64 rounds exactly as the x87 unit does.

// longDoublePrec is the x87 long double's mantissa.
const longDoublePrec = 64

// maxLongDoubleChars is Redis's MAX_LONG_DOUBLE_CHARS: a longer string is
// not a float to string2ld.
const maxLongDoubleChars = 5 * 1024

// The binary exponents (big.Float's MantExp, mantissa in [0.5, 1)) past
// which strtold overflows (ERANGE, HUGE_VAL) or underflows to zero.
const (
	maxLongDoubleExp = 16384
	minLongDoubleExp = -16444
)

// parseLongDouble is Redis's string2ld: strtold's syntax (a sign, then a
// decimal or 0x hexadecimal mantissa with an optional exponent, or inf /
// infinity), the whole string, no leading space, no NaN, no overflow and
// no underflow to zero. inf is ±1 for an infinity (f is then nil).
func parseLongDouble(b []byte) (f *big.Float, inf int, ok bool) {
	if len(b) == 0 || len(b) >= maxLongDoubleChars {
		return nil, 0, false
	}
	s := string(b)
	sign := ""
	if s[0] == '+' || s[0] == '-' {
		sign, s = s[:1], s[1:]
	}
	if l := strings.ToLower(s); l == "inf" || l == "infinity" {
		if sign == "-" {
			return nil, -1, true
		}
		return nil, 1, true
	}
	hex := len(s) > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')
	digits := s
	if hex {
		digits = s[2:]
	}
	if !validMantissa(digits, hex) {
		return nil, 0, false
	}
	base := 10
	if hex {
		base = 0
	}
	f, _, err := big.ParseFloat(sign+s, base, longDoublePrec, big.ToNearestEven)
	if err != nil {
		return nil, 0, false
	}
	if f.Sign() != 0 {
		if e := f.MantExp(nil); e > maxLongDoubleExp || e < minLongDoubleExp {
			return nil, 0, false
		}
	}
	return f, 0, true
}

// validMantissa checks strtold's syntax after the sign and the 0x: digits
// with at most one '.', at least one digit, then optionally an exponent
// marker (e, or p for hexadecimal) with an optional sign and digits.
func validMantissa(s string, hex bool) bool {
	isDigit := func(c byte) bool {
		return '0' <= c && c <= '9' || hex && ('a' <= c|0x20 && c|0x20 <= 'f')
	}
	exp := byte('e')
	if hex {
		exp = 'p'
	}
	i, n, dot := 0, 0, false
	for ; i < len(s); i++ {
		switch c := s[i]; {
		case isDigit(c):
			n++
		case c == '.' && !dot:
			dot = true
		default:
			goto mantissaEnd
		}
	}
mantissaEnd:
	if n == 0 {
		return false
	}
	if i == len(s) {
		return true
	}
	if s[i]|0x20 != exp {
		return false
	}
	i++
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	if i == len(s) {
		return false
	}
	for ; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// addLongDouble is value + incr in long double; ok false when the sum is
// NaN or infinite (an infinite operand, or an overflow).
func addLongDouble(value, incr *big.Float) (*big.Float, bool) {
	sum := new(big.Float).SetPrec(longDoublePrec).SetMode(big.ToNearestEven).Add(value, incr)
	if sum.Sign() != 0 && sum.MantExp(nil) > maxLongDoubleExp {
		return nil, false
	}
	return sum, true
}

// formatLongDouble is ld2string's LD_STR_HUMAN: %.17Lf with the trailing
// zeros and point trimmed, and "-0" as "0".
func formatLongDouble(dst []byte, f *big.Float) []byte {
	start := len(dst)
	dst = f.Append(dst, 'f', 17)
	if strings.IndexByte(string(dst[start:]), '.') >= 0 {
		for dst[len(dst)-1] == '0' {
			dst = dst[:len(dst)-1]
		}
		if dst[len(dst)-1] == '.' {
			dst = dst[:len(dst)-1]
		}
	}
	if string(dst[start:]) == "-0" {
		dst = append(dst[:start], '0')
	}
	return dst
}
