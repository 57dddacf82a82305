package scripting

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// The Lua 5.1 C API as the four C libraries use it (lua_tonumber,
// luaL_checknumber, luaL_error, luaL_argerror, ...) and the C library
// conversions under it (strtod, printf's %g, double to integer casts as
// x86-64 executes them), so that the Go libraries convert, fail and word
// their errors as the C ones do. gopher-lua's own helpers differ: other
// string/number conversions, other function names in errors, a position even
// when a Go function called the failing one.

// capiCStackLimit is LUAI_MAXCSTACK of Lua 5.1: a C function may hold at most
// this many values on its stack frame. The C libraries hit it (and fail with
// "stack overflow (...)") when asked for too many results or too deep a
// structure; the Go versions count the same slots so that they fail at the
// same inputs instead of growing without bound.
const capiCStackLimit = 8000

// capiRaise is luaL_error: msg prefixed with the position of the function
// that called the running Go function ("user_script:3: "), when that is a Lua
// function with a current line, as luaL_where(L, 1) gives it; nothing when it
// was called by a Go function such as pcall.
func capiRaise(L *lua.LState, format string, args ...any) {
	msg := format
	if len(args) > 0 {
		msg = fmt.Sprintf(format, args...)
	}
	L.Error(lua.LString(capiWhere(L)+msg), 0)
}

// capiRaiseRuntime raises msg without a position, as the Lua core does for
// errors raised while a C function runs (luaG_runerror adds a position only
// in a Lua function).
func capiRaiseRuntime(L *lua.LState, msg string) {
	L.Error(lua.LString(msg), 0)
}

// capiWhere is luaL_where(L, 1).
func capiWhere(L *lua.LState) string {
	dbg, ok := L.GetStack(1)
	if !ok {
		return ""
	}
	if _, err := L.GetInfo("Sl", dbg, nil); err != nil || dbg.What == "G" || dbg.CurrentLine <= 0 {
		return ""
	}
	return fmt.Sprintf("%s:%d: ", dbg.Source, dbg.CurrentLine)
}

// capiCalledName is the name luaL_argerror reports for the running Go function:
// the field, global or local it was called through, or "?" when Lua 5.1 would
// know none (called by pcall or another Go function, or from an expression).
func capiCalledName(L *lua.LState) string {
	dbg, ok := L.GetStack(0)
	if !ok {
		return "?"
	}
	if _, err := L.GetInfo("n", dbg, nil); err != nil {
		return "?"
	}
	name := dbg.Name
	if name == "" || name == "(anonymous)" || name == "main chunk" || strings.HasPrefix(name, "<") {
		return "?"
	}
	return name
}

// capiArgError is luaL_argerror.
func capiArgError(L *lua.LState, n int, msg string) {
	capiRaise(L, "bad argument #%d to '%s' (%s)", n, capiCalledName(L), msg)
}

// capiTypeError is luaL_typerror: "number expected, got no value".
func capiTypeError(L *lua.LState, n int, expected string) {
	capiArgError(L, n, expected+" expected, got "+capiTypeName(L, n))
}

// capiTypeName is luaL_typename: "no value" past the top of the stack.
func capiTypeName(L *lua.LState, n int) string {
	if n > L.GetTop() {
		return "no value"
	}
	return L.Get(n).Type().String()
}

// capiToNumber is lua_tonumber with its success flag (lua_isnumber): numbers, and
// strings that Lua 5.1 converts to numbers.
func capiToNumber(v lua.LValue) (float64, bool) {
	switch x := v.(type) {
	case lua.LNumber:
		return float64(x), true
	case lua.LString:
		return capiStr2Number(string(x))
	}
	return 0, false
}

// capiStr2Number is Lua 5.1's luaO_str2d: strtod over the whole string (up to a
// NUL, which ends a C string), trailing white space allowed.
func capiStr2Number(s string) (float64, bool) {
	if i := strings.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	v, n := cStrtod(s)
	if n == 0 {
		return 0, false
	}
	for i := n; i < len(s); i++ {
		if !cIsSpace(s[i]) {
			return 0, false
		}
	}
	return v, true
}

func cIsSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

// capiCheckNumber is luaL_checknumber.
func capiCheckNumber(L *lua.LState, n int) float64 {
	v, ok := capiToNumber(L.Get(n))
	if !ok {
		capiTypeError(L, n, "number")
	}
	return v
}

// capiCheckInteger is luaL_checkinteger on a 64-bit build: the number truncated
// toward zero as the C cast does on x86-64.
func capiCheckInteger(L *lua.LState, n int) int64 {
	return cDoubleToInt64(capiCheckNumber(L, n))
}

// capiOptInteger is luaL_optinteger: def when the argument is absent or nil.
func capiOptInteger(L *lua.LState, n int, def int64) int64 {
	if L.Get(n) == lua.LNil {
		return def
	}
	return capiCheckInteger(L, n)
}

// capiCheckLString is luaL_checklstring: strings, and numbers converted as Lua
// 5.1 converts them ("%.14g").
func capiCheckLString(L *lua.LState, n int) string {
	switch x := L.Get(n).(type) {
	case lua.LString:
		return string(x)
	case lua.LNumber:
		return cFormatG(float64(x), 14)
	}
	capiTypeError(L, n, "string")
	return ""
}

// cDoubleToInt64 is the C conversion (int64_t)d as x86-64 executes it
// (cvttsd2si): truncation toward zero, and the "integer indefinite" value
// math.MinInt64 for NaN and anything out of range.
func cDoubleToInt64(d float64) int64 {
	if d != d || d >= 9223372036854775808.0 || d < -9223372036854775808.0 {
		return math.MinInt64
	}
	return int64(d)
}

// cDoubleToUint64 is the C conversion (uint64_t)d as gcc compiles it for
// x86-64: below 2^63 (and for NaN) the signed conversion, otherwise the signed
// conversion of d-2^63 with the top bit flipped.
func cDoubleToUint64(d float64) uint64 {
	if d != d || d < 9223372036854775808.0 {
		return uint64(cDoubleToInt64(d))
	}
	return uint64(cDoubleToInt64(d-9223372036854775808.0)) ^ (1 << 63)
}

// cDoubleToInt32 is (int)d on x86-64: truncation, math.MinInt32 when the
// result does not fit.
func cDoubleToInt32(d float64) int32 {
	if d != d || d >= 2147483648.0 || d <= -2147483649.0 {
		return math.MinInt32
	}
	return int32(d)
}

// cFormatG is C's printf("%.<prec>g", d) as glibc prints it, which is how Lua
// 5.1 turns numbers into strings (prec 14) and how cjson encodes them.
func cFormatG(d float64, prec int) string {
	var scratch [64]byte
	return string(cAppendFormatG(scratch[:0], d, prec))
}

// cAppendFormatG appends cFormatG(d, prec) to buf without allocating.
func cAppendFormatG(buf []byte, d float64, prec int) []byte {
	switch {
	case math.IsNaN(d):
		if math.Signbit(d) {
			return append(buf, "-nan"...)
		}
		return append(buf, "nan"...)
	case math.IsInf(d, 1):
		return append(buf, "inf"...)
	case math.IsInf(d, -1):
		return append(buf, "-inf"...)
	}
	if prec < 1 {
		prec = 1
	}
	// The common case, an integer with at most prec digits, prints as one.
	if d == math.Trunc(d) && math.Abs(d) < cPow10[prec] && (d != 0 || !math.Signbit(d)) {
		return strconv.AppendInt(buf, int64(d), 10)
	}
	// The exponent %g decides with is the one of the number rounded to prec
	// significant digits, which %e computes.
	var scratch [48]byte
	e := strconv.AppendFloat(scratch[:0], d, 'e', prec-1, 64)
	ei := bytes.LastIndexByte(e, 'e')
	exp, _ := strconv.Atoi(string(e[ei+1:]))
	if exp < -4 || exp >= prec {
		buf = append(buf, cTrimFractionZeros(e[:ei])...)
		return append(buf, e[ei:]...)
	}
	var fscratch [400]byte
	f := strconv.AppendFloat(fscratch[:0], d, 'f', prec-1-exp, 64)
	return append(buf, cTrimFractionZeros(f)...)
}

// cPow10[n] is 10^n for the precisions %g takes here (1..14, and 17).
var cPow10 = func() [18]float64 {
	var t [18]float64
	p := 1.0
	for i := range t {
		t[i] = p
		p *= 10
	}
	return t
}()

func cTrimFractionZeros(s []byte) []byte {
	if bytes.IndexByte(s, '.') < 0 {
		return s
	}
	s = bytes.TrimRight(s, "0")
	return bytes.TrimSuffix(s, []byte("."))
}

// cStrtod is glibc's strtod: it converts the longest prefix of s that is a
// number (white space first, a sign, decimal or hexadecimal digits with an
// exponent, "inf", "infinity", "nan", "nan(chars)") and returns the value and
// the length of that prefix; 0 when there is none. Values out of range become
// ±Inf or 0, as strtod returns them (with an errno nobody here reads).
func cStrtod(s string) (float64, int) {
	i := 0
	for i < len(s) && cIsSpace(s[i]) {
		i++
	}
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	signed := func(v float64) float64 {
		if neg {
			return -v
		}
		return v
	}
	rest := s[i:]
	if cHasPrefixFold(rest, "inf") {
		if cHasPrefixFold(rest, "infinity") {
			return signed(math.Inf(1)), i + 8
		}
		return signed(math.Inf(1)), i + 3
	}
	if cHasPrefixFold(rest, "nan") {
		n := i + 3
		if n < len(s) && s[n] == '(' {
			j := n + 1
			for j < len(s) && (cIsAlnum(s[j]) || s[j] == '_') {
				j++
			}
			if j < len(s) && s[j] == ')' {
				n = j + 1
			}
		}
		return signed(math.NaN()), n
	}
	if len(rest) >= 2 && rest[0] == '0' && (rest[1]|0x20) == 'x' {
		if v, n, ok := cHexStrtod(rest[2:]); ok {
			return signed(v), i + 2 + n
		}
		// "0x" with no hex digits after it: strtod reads the "0" alone.
		return signed(0), i + 1
	}
	start := i
	digits := 0
	for i < len(s) && cIsDigit(s[i]) {
		i++
		digits++
	}
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && cIsDigit(s[i]) {
			i++
			digits++
		}
	}
	if digits == 0 {
		return 0, 0
	}
	if i < len(s) && (s[i]|0x20) == 'e' {
		j := i + 1
		if j < len(s) && (s[j] == '+' || s[j] == '-') {
			j++
		}
		if j < len(s) && cIsDigit(s[j]) {
			for j < len(s) && cIsDigit(s[j]) {
				j++
			}
			i = j
		}
	}
	v, err := strconv.ParseFloat(s[start:i], 64)
	if err != nil && !cIsRangeError(err) {
		return 0, 0
	}
	return signed(v), i
}

// cHexStrtod converts hexadecimal digits (with a point and a binary exponent)
// after "0x"; ok is false when no digit follows.
func cHexStrtod(s string) (float64, int, bool) {
	i, digits := 0, 0
	for i < len(s) && cIsHexDigit(s[i]) {
		i++
		digits++
	}
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && cIsHexDigit(s[i]) {
			i++
			digits++
		}
	}
	if digits == 0 {
		return 0, 0, false
	}
	mant := s[:i]
	exp := "0"
	if i < len(s) && (s[i]|0x20) == 'p' {
		j := i + 1
		if j < len(s) && (s[j] == '+' || s[j] == '-') {
			j++
		}
		if j < len(s) && cIsDigit(s[j]) {
			for j < len(s) && cIsDigit(s[j]) {
				j++
			}
			exp = s[i+1 : j]
			i = j
		}
	}
	if strings.HasPrefix(mant, ".") {
		mant = "0" + mant
	}
	v, err := strconv.ParseFloat("0x"+mant+"p"+exp, 64)
	if err != nil && !cIsRangeError(err) {
		return 0, 0, false
	}
	return v, i, true
}

func cIsRangeError(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

func cHasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

func cIsDigit(c byte) bool    { return c >= '0' && c <= '9' }
func cIsHexDigit(c byte) bool { return cIsDigit(c) || (c|0x20) >= 'a' && (c|0x20) <= 'f' }
func cIsAlnum(c byte) bool    { return cIsDigit(c) || (c|0x20) >= 'a' && (c|0x20) <= 'z' }
