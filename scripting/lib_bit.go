package scripting

import (
	"math"

	lua "github.com/yuin/gopher-lua"
)

// The bit library is LuaBitOp 1.0.2 (lua_bit.c) on Lua 5.1's double numbers:
// every argument is reduced to 32 bits, every result is a signed 32-bit
// integer returned as a number.

// bitArg is LuaBitOp's barg: the number (strings convert as lua_tonumber
// converts them) plus 2^52+2^51, whose double has the integer part of the
// argument, rounded to nearest even and modulo 2^32, in its low 32 bits. Any
// non-number is "number expected".
func bitArg(L *lua.LState, n int) uint32 {
	v, ok := capiToNumber(L.Get(n))
	b := uint32(math.Float64bits(v + 6755399441055744.0))
	if b == 0 && !ok {
		capiTypeError(L, n, "number")
	}
	return b
}

func bitReturn(L *lua.LState, b uint32) int {
	L.Push(lua.LNumber(int32(b)))
	return 1
}

func newBitModule(L *lua.LState) *lua.LTable {
	module := L.NewTable()
	fold := func(op func(a, b uint32) uint32) lua.LGFunction {
		return func(L *lua.LState) int {
			b := bitArg(L, 1)
			// The C loop goes from the last argument down to the second.
			for i := L.GetTop(); i > 1; i-- {
				b = op(b, bitArg(L, i))
			}
			return bitReturn(L, b)
		}
	}
	shift := func(op func(b, n uint32) uint32) lua.LGFunction {
		return func(L *lua.LState) int {
			b := bitArg(L, 1)
			n := bitArg(L, 2) & 31
			return bitReturn(L, op(b, n))
		}
	}
	libSetFuncs(L, module, map[string]lua.LGFunction{
		"tobit":  func(L *lua.LState) int { return bitReturn(L, bitArg(L, 1)) },
		"bnot":   func(L *lua.LState) int { return bitReturn(L, ^bitArg(L, 1)) },
		"band":   fold(func(a, b uint32) uint32 { return a & b }),
		"bor":    fold(func(a, b uint32) uint32 { return a | b }),
		"bxor":   fold(func(a, b uint32) uint32 { return a ^ b }),
		"lshift": shift(func(b, n uint32) uint32 { return b << n }),
		"rshift": shift(func(b, n uint32) uint32 { return b >> n }),
		"arshift": shift(func(b, n uint32) uint32 {
			return uint32(int32(b) >> n)
		}),
		// In C, b >> 32 when n is 0 is undefined; x86 masks the count to 0,
		// so rol/ror by 0 give b|b = b, which Go's rotation gives as well.
		"rol": shift(func(b, n uint32) uint32 { return b<<n | b>>((32-n)&31) }),
		"ror": shift(func(b, n uint32) uint32 { return b<<((32-n)&31) | b>>n }),
		"bswap": func(L *lua.LState) int {
			b := bitArg(L, 1)
			b = b>>24 | (b>>8)&0xff00 | (b&0xff00)<<8 | b<<24
			return bitReturn(L, b)
		},
		"tohex": bitToHex,
	})
	return module
}

// bitToHex is bit.tohex(x [, n]): n hexadecimal digits (8 by default, at most
// 8), upper case when n is negative. A present nil n is an error, as in C
// (lua_isnone).
func bitToHex(L *lua.LState) int {
	b := bitArg(L, 1)
	n := int32(8)
	if L.GetTop() >= 2 {
		n = int32(bitArg(L, 2))
	}
	digits := "0123456789abcdef"
	if n < 0 {
		// Deliberate difference: C negates math.MinInt32 into itself and then
		// asks Lua for a string of 2^31 bytes (out of memory); LuaBitOp's
		// later releases clamp it to -(2^31-1), which gives 8 upper-case
		// digits, and so does this.
		if n == math.MinInt32 {
			n++
		}
		n = -n
		digits = "0123456789ABCDEF"
	}
	if n > 8 {
		n = 8
	}
	buf := make([]byte, n)
	for i := n - 1; i >= 0; i-- {
		buf[i] = digits[b&15]
		b >>= 4
	}
	L.Push(lua.LString(buf))
	return 1
}
