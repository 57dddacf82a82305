package scripting

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
)

// Generated cases for TestLibsAgainstRedis: inputs drawn from a fixed seed
// (so the recorded answers stay valid) out of the alphabets that reach the
// libraries' corners, many inputs per chunk, each call under its own pcall.

// libsLuaString is s as a Lua string literal with every byte escaped.
func libsLuaString(s string) string {
	var b strings.Builder
	b.WriteByte('\'')
	for i := 0; i < len(s); i++ {
		fmt.Fprintf(&b, "\\%d", s[i])
	}
	b.WriteByte('\'')
	return b.String()
}

// libsLuaNumber is d as Lua source that both interpreters read as d. Both
// compilers merge the constants 0 and -0 of a chunk (their constant tables
// are keyed by value), each its own way, so no -0 is ever a constant here: it
// is computed at run time by a call no compiler folds. (math.huge is no
// help: gopher-lua's is the largest finite double, not +Inf.)
func libsLuaNumber(d float64) string {
	switch {
	case math.IsNaN(d):
		return "(0/0)"
	case math.IsInf(d, 1):
		return "(1/0)"
	case math.IsInf(d, -1):
		return "(-1/0)"
	case d == 0 && math.Signbit(d):
		return "(-tonumber('0'))"
	}
	return "(" + fmt.Sprintf("%.17g", d) + ")"
}

// libsGenLoop is a chunk applying body (a Lua expression list over x) to
// every input, each under pcall, results kept with their count.
func libsGenLoop(inputs []string, body string) string {
	return "local inputs = {" + strings.Join(inputs, ",\n") + "}\n" +
		"local out = {}\n" +
		"for i, x in ipairs(inputs) do out[i] = (function(...) return {n = select('#', ...), ...} end)(pcall(function() return " + body + " end)) end\n" +
		"return out"
}

func libsGenString(r *rand.Rand, alphabet []string, maxParts int) string {
	var b strings.Builder
	for n := r.IntN(maxParts + 1); n > 0; n-- {
		b.WriteString(alphabet[r.IntN(len(alphabet))])
	}
	return b.String()
}

func libsGenNumber(r *rand.Rand) float64 {
	switch r.IntN(9) {
	case 0:
		return float64(r.IntN(2001) - 1000)
	case 1:
		return math.Ldexp(float64(r.Int64N(1<<53)), r.IntN(140)-70)
	case 2:
		return -math.Ldexp(float64(r.Int64N(1<<53)), r.IntN(140)-70)
	case 3:
		return math.Ldexp(1, r.IntN(70)) + float64(r.IntN(5)-2)
	case 4:
		return -math.Ldexp(1, r.IntN(70)) + float64(r.IntN(5)-2)
	case 5:
		return float64(r.IntN(100000)) / float64(r.IntN(999)+1)
	case 6:
		return math.Float64frombits(r.Uint64())
	case 7:
		return []float64{0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), math.NaN(), 0.5, 1.5, 2.5, -0.5, math.MaxFloat64, math.SmallestNonzeroFloat64}[r.IntN(11)]
	}
	return float64(r.Int32())
}

func libsGeneratedCases() []libsOracleCase {
	r := rand.New(rand.NewPCG(34, 7))
	var cases []libsOracleCase
	add := func(name, chunk string) {
		cases = append(cases, libsOracleCase{name: fmt.Sprintf("generated %s/%d", name, len(cases)), chunk: chunk})
	}
	jsonAlphabet := []string{"{", "}", "[", "]", ",", ":", "\"", "\\", "\\u", "\\ud83d", "\\ude00", "0", "1", "9", "-", "+",
		"e", "E", ".", "x", "true", "false", "null", "nan", "inf", "Infinity", "t", "n", " ", "\n", "\x00", "\xff", "a", "/", "\"a\"", "1e400", "0x1F"}
	msgpackAlphabet := []string{"\x00", "\x7f", "\x80", "\x81", "\x8f", "\x90", "\x91", "\x9f", "\xa0", "\xa1", "\xbf", "\xc0", "\xc1", "\xc2", "\xc3",
		"\xc4", "\xca", "\xcb", "\xcc", "\xcd", "\xce", "\xcf", "\xd0", "\xd1", "\xd2", "\xd3", "\xd9", "\xda", "\xdb", "\xdc", "\xdd", "\xde", "\xdf",
		"\xe0", "\xff", "\x01\x02", "\x00\x00\x00", "\x7f\xf8\x00\x00\x00\x00\x00\x00", "\x3f\x80\x00\x00", "abc"}
	structAlphabet := []string{"<", ">", "!", "!4", "!2", " ", "x", "b", "B", "h", "H", "l", "L", "T", "i", "I", "i3", "I9", "i16", "c", "c0", "c2", "s", "f", "d", "=", "z", "0", "5"}

	for c := 0; c < 8; c++ {
		var inputs []string
		for i := 0; i < 60; i++ {
			inputs = append(inputs, libsLuaString(libsGenString(r, jsonAlphabet, 8)))
		}
		add("cjson.decode", libsGenLoop(inputs, "cjson.decode(x)"))
	}
	for c := 0; c < 8; c++ {
		var inputs []string
		for i := 0; i < 60; i++ {
			inputs = append(inputs, libsLuaString(libsGenString(r, msgpackAlphabet, 10)))
		}
		add("cmsgpack.unpack", libsGenLoop(inputs, "cmsgpack.unpack(x)"))
		add("cmsgpack.unpack_limit", libsGenLoop(inputs, "cmsgpack.unpack_limit(x, 2, #x % 3)"))
	}
	for c := 0; c < 8; c++ {
		var inputs []string
		for i := 0; i < 60; i++ {
			format := libsGenString(r, structAlphabet, 6)
			data := libsGenString(r, msgpackAlphabet, 6)
			inputs = append(inputs, "{"+libsLuaString(format)+","+libsLuaString(data)+"}")
		}
		add("struct.unpack", libsGenLoop(inputs, "struct.unpack(x[1], x[2])"))
		add("struct.size", libsGenLoop(inputs, "struct.size(x[1])"))
		add("struct.pack", libsGenLoop(inputs, "struct.pack(x[1], 1, -2, 'abc', 3.5, 2^40, x[2], -1e300, 0.25)"))
	}
	for c := 0; c < 6; c++ {
		var inputs []string
		for i := 0; i < 80; i++ {
			inputs = append(inputs, fmt.Sprintf("{%s,%s,%d}", libsLuaNumber(libsGenNumber(r)), libsLuaNumber(libsGenNumber(r)), r.IntN(21)-10))
		}
		add("bit", libsGenLoop(inputs, "bit.tobit(x[1]), bit.tohex(x[1], x[3]), bit.band(x[1], x[2]), bit.bxor(x[1], x[2]), "+
			"bit.lshift(x[1], x[2]), bit.arshift(x[1], x[2]), bit.rol(x[1], x[2]), bit.ror(x[1], x[2]), bit.bswap(x[1])"))
		add("cjson.encode", libsGenLoop(inputs, "cjson.encode(x[1]), cjson.encode({x[2]})"))
		add("cmsgpack.pack", libsGenLoop(inputs, "cmsgpack.pack(x[1], x[2]), cmsgpack.unpack(cmsgpack.pack(x[1]))"))
		add("struct numbers", libsGenLoop(inputs, "struct.pack('>l L i3 I5 b B f d', x[1], x[1], x[2], x[2], x[1], x[2], x[1], x[2])"))
	}
	return cases
}
