package scripting

import (
	"encoding/binary"
	"math"

	lua "github.com/yuin/gopher-lua"
)

// The cmsgpack library is lua-cmsgpack 0.4.0 (lua_cmsgpack.c) on Lua 5.1 as
// Redis 7.0 builds it on x86-64.
//
// pack: a number with an exact int64 value packs as the smallest msgpack
// integer, any other as float32 when the conversion is exact, else float64;
// strings as str (fixstr, str8, str16, str32); a table whose keys are exactly
// 1..n as an array, any other as a map; tables nested deeper than 16 levels,
// nil, functions and userdata as nil.
//
// unpack: every value of a stream; uint64 above 2^63 comes back negative (the
// C code pushes it through a signed lua_Integer); bin, ext and the reserved
// byte 0xc1 are "Bad data format in input.", a truncated input "Missing bytes
// in input.".

const cmsgpackMaxNesting = 16

func newCmsgpackModule(L *lua.LState) *lua.LTable {
	module := L.NewTable()
	libSetFuncs(L, module, map[string]lua.LGFunction{
		"pack":   cmsgpackPack,
		"unpack": func(L *lua.LState) int { return cmsgpackUnpackFull(L, 0, 0) },
		"unpack_one": func(L *lua.LState) int {
			offset := capiOptInteger(L, 2, 0)
			cmsgpackKeepFirstArg(L)
			return cmsgpackUnpackFull(L, 1, offset)
		},
		"unpack_limit": func(L *lua.LState) int {
			limit := capiCheckInteger(L, 2)
			offset := capiOptInteger(L, 3, 0)
			cmsgpackKeepFirstArg(L)
			return cmsgpackUnpackFull(L, limit, offset)
		},
	})
	module.RawSetString("_NAME", lua.LString("cmsgpack"))
	module.RawSetString("_VERSION", lua.LString("lua-cmsgpack 0.4.0"))
	module.RawSetString("_COPYRIGHT", lua.LString("Copyright (C) 2012, Salvatore Sanfilippo"))
	module.RawSetString("_DESCRIPTION", lua.LString("MessagePack C implementation for Lua"))
	return module
}

// cmsgpackKeepFirstArg is the C code's lua_pop(L, lua_gettop(L)-1): the
// arguments after the first go; with no argument at all, none is added.
func cmsgpackKeepFirstArg(L *lua.LState) {
	if L.GetTop() > 1 {
		L.SetTop(1)
	}
}

func cmsgpackPack(L *lua.LState) int {
	nargs := L.GetTop()
	if nargs == 0 {
		capiArgError(L, 0, "MessagePack pack needs input.")
	}
	var buf []byte
	guard := &libOutputGuard{L: L, tooLarge: "MessagePack pack result larger than 536870912 bytes"}
	for i := 1; i <= nargs; i++ {
		buf = msgpackEncode(L, guard, buf, L.Get(i), 0)
	}
	L.Push(lua.LString(buf))
	return 1
}

func msgpackEncode(L *lua.LState, guard *libOutputGuard, buf []byte, v lua.LValue, level int) []byte {
	guard.check(len(buf))
	switch x := v.(type) {
	case lua.LString:
		return msgpackEncodeBytes(buf, string(x))
	case lua.LBool:
		if x {
			return append(buf, 0xc3)
		}
		return append(buf, 0xc2)
	case lua.LNumber:
		n := float64(x)
		if !math.IsInf(n, 0) && n >= -9223372036854775808.0 && n < 9223372036854775808.0 && float64(int64(n)) == n {
			return msgpackEncodeInt(buf, int64(n))
		}
		return msgpackEncodeDouble(buf, n)
	case *lua.LTable:
		if level == cmsgpackMaxNesting {
			return append(buf, 0xc0)
		}
		if n, ok := msgpackTableIsArray(x); ok {
			buf = msgpackEncodeHeader(buf, 0x90, 0xdc, 0xdd, uint64(n))
			for j := 1; j <= n; j++ {
				// lua_gettable: the C code honours __index here.
				buf = msgpackEncode(L, guard, buf, L.GetTable(x, lua.LNumber(j)), level+1)
			}
			return buf
		}
		count := 0
		for k, _ := x.Next(lua.LNil); k != lua.LNil; k, _ = x.Next(k) {
			count++
		}
		buf = msgpackEncodeHeader(buf, 0x80, 0xde, 0xdf, uint64(count))
		for k, val := x.Next(lua.LNil); k != lua.LNil; k, val = x.Next(k) {
			buf = msgpackEncode(L, guard, buf, k, level+1)
			buf = msgpackEncode(L, guard, buf, val, level+1)
		}
		return buf
	}
	return append(buf, 0xc0)
}

// msgpackTableIsArray is table_is_an_array: every key a positive number that
// is an exact C int, and the largest equal to their count.
func msgpackTableIsArray(t *lua.LTable) (int, bool) {
	count, max := 0, 0
	for k, _ := t.Next(lua.LNil); k != lua.LNil; k, _ = t.Next(k) {
		n, ok := k.(lua.LNumber)
		if !ok || n <= 0 || float64(cDoubleToInt32(float64(n))) != float64(n) {
			return 0, false
		}
		if int(n) > max {
			max = int(n)
		}
		count++
	}
	return count, max == count
}

func msgpackEncodeBytes(buf []byte, s string) []byte {
	n := len(s)
	switch {
	case n < 32:
		buf = append(buf, 0xa0|byte(n))
	case n <= 0xff:
		buf = append(buf, 0xd9, byte(n))
	case n <= 0xffff:
		buf = append(buf, 0xda, byte(n>>8), byte(n))
	default:
		buf = append(buf, 0xdb, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
	}
	return append(buf, s...)
}

func msgpackEncodeDouble(buf []byte, d float64) []byte {
	f := float32(d)
	if float64(f) == d {
		return binary.BigEndian.AppendUint32(append(buf, 0xca), math.Float32bits(f))
	}
	return binary.BigEndian.AppendUint64(append(buf, 0xcb), math.Float64bits(d))
}

func msgpackEncodeInt(buf []byte, n int64) []byte {
	if n >= 0 {
		switch {
		case n <= 127:
			return append(buf, byte(n))
		case n <= 0xff:
			return append(buf, 0xcc, byte(n))
		case n <= 0xffff:
			return binary.BigEndian.AppendUint16(append(buf, 0xcd), uint16(n))
		case n <= 0xffffffff:
			return binary.BigEndian.AppendUint32(append(buf, 0xce), uint32(n))
		}
		return binary.BigEndian.AppendUint64(append(buf, 0xcf), uint64(n))
	}
	switch {
	case n >= -32:
		return append(buf, byte(int8(n)))
	case n >= -128:
		return append(buf, 0xd0, byte(n))
	case n >= -32768:
		return binary.BigEndian.AppendUint16(append(buf, 0xd1), uint16(n))
	case n >= -2147483648:
		return binary.BigEndian.AppendUint32(append(buf, 0xd2), uint32(n))
	}
	return binary.BigEndian.AppendUint64(append(buf, 0xd3), uint64(n))
}

// msgpackEncodeHeader writes an array or map header: the fix form up to 15
// elements, the 16-bit form up to 65535, the 32-bit form above.
func msgpackEncodeHeader(buf []byte, fix, b16, b32 byte, n uint64) []byte {
	switch {
	case n <= 15:
		return append(buf, fix|byte(n))
	case n <= 0xffff:
		return binary.BigEndian.AppendUint16(append(buf, b16), uint16(n))
	}
	return binary.BigEndian.AppendUint32(append(buf, b32), uint32(n))
}

// msgpackDecodeError is how a decode stops: the C code's cursor error, or a
// Lua "stack overflow" the C code raises through luaL_checkstack.
type msgpackDecodeError int

const (
	msgpackOK msgpackDecodeError = iota
	msgpackEOF
	msgpackBadFormat
)

// msgpackDecoder is mp_cur plus the count of the C function's stack slots, so
// that what overflows Lua 5.1's C stack in Redis fails here too (it is also
// what bounds the recursion on nested containers).
type msgpackDecoder struct {
	L     *lua.LState
	data  string
	pos   int
	err   msgpackDecodeError
	slots int
}

func (d *msgpackDecoder) left() int { return len(d.data) - d.pos }

func (d *msgpackDecoder) need(n uint64) bool {
	if uint64(d.left()) < n {
		d.err = msgpackEOF
		return false
	}
	return true
}

func (d *msgpackDecoder) checkStack(msg string) {
	if d.slots+1 > capiCStackLimit {
		capiRaise(d.L, "stack overflow (%s)", msg)
	}
}

func (d *msgpackDecoder) u8(i int) uint64 { return uint64(d.data[d.pos+i]) }

func (d *msgpackDecoder) be(i, n int) uint64 {
	var v uint64
	for j := 0; j < n; j++ {
		v = v<<8 | d.u8(i+j)
	}
	return v
}

// decode is mp_decode_to_lua_type: one value, or nil with d.err set.
func (d *msgpackDecoder) decode() lua.LValue {
	if !d.need(1) {
		return lua.LNil
	}
	d.checkStack("too many return values at once; use unpack_one or unpack_limit instead.")
	fixed := func(n int, v lua.LValue) lua.LValue {
		if !d.need(uint64(n)) {
			return lua.LNil
		}
		d.pos += n
		return v
	}
	str := func(hdr int, n uint64) lua.LValue {
		if !d.need(uint64(hdr) + n) {
			return lua.LNil
		}
		s := d.data[d.pos+hdr : d.pos+hdr+int(n)]
		d.pos += hdr + int(n)
		return lua.LString(s)
	}
	c := d.data[d.pos]
	switch c {
	case 0xcc:
		if !d.need(2) {
			return lua.LNil
		}
		return fixed(2, lua.LNumber(d.u8(1)))
	case 0xd0:
		if !d.need(2) {
			return lua.LNil
		}
		return fixed(2, lua.LNumber(int8(d.u8(1))))
	case 0xcd:
		if !d.need(3) {
			return lua.LNil
		}
		return fixed(3, lua.LNumber(d.be(1, 2)))
	case 0xd1:
		if !d.need(3) {
			return lua.LNil
		}
		return fixed(3, lua.LNumber(int16(d.be(1, 2))))
	case 0xce:
		if !d.need(5) {
			return lua.LNil
		}
		return fixed(5, lua.LNumber(d.be(1, 4)))
	case 0xd2:
		if !d.need(5) {
			return lua.LNil
		}
		return fixed(5, lua.LNumber(int32(d.be(1, 4))))
	case 0xcf, 0xd3:
		// Both through a signed 64-bit integer, as the C code pushes them.
		if !d.need(9) {
			return lua.LNil
		}
		return fixed(9, lua.LNumber(int64(d.be(1, 8))))
	case 0xc0:
		return fixed(1, lua.LNil)
	case 0xc3:
		return fixed(1, lua.LTrue)
	case 0xc2:
		return fixed(1, lua.LFalse)
	case 0xca:
		if !d.need(5) {
			return lua.LNil
		}
		return fixed(5, lua.LNumber(math.Float32frombits(uint32(d.be(1, 4)))))
	case 0xcb:
		if !d.need(9) {
			return lua.LNil
		}
		return fixed(9, lua.LNumber(math.Float64frombits(d.be(1, 8))))
	case 0xd9:
		if !d.need(2) {
			return lua.LNil
		}
		return str(2, d.u8(1))
	case 0xda:
		if !d.need(3) {
			return lua.LNil
		}
		return str(3, d.be(1, 2))
	case 0xdb:
		if !d.need(5) {
			return lua.LNil
		}
		return str(5, d.be(1, 4))
	case 0xdc, 0xdd, 0xde, 0xdf:
		// array 16, array 32, map 16, map 32: a count of 2 or 4 bytes.
		width := 2
		if c == 0xdd || c == 0xdf {
			width = 4
		}
		if !d.need(uint64(1 + width)) {
			return lua.LNil
		}
		n := d.be(1, width)
		d.pos += 1 + width
		if c <= 0xdd {
			return d.decodeArray(n)
		}
		return d.decodeMap(n)
	}
	switch {
	case c&0x80 == 0:
		return fixed(1, lua.LNumber(c))
	case c&0xe0 == 0xe0:
		return fixed(1, lua.LNumber(int8(c)))
	case c&0xe0 == 0xa0:
		return str(1, uint64(c&0x1f))
	case c&0xf0 == 0x90:
		d.pos++
		return d.decodeArray(uint64(c & 0xf))
	case c&0xf0 == 0x80:
		d.pos++
		return d.decodeMap(uint64(c & 0xf))
	}
	d.err = msgpackBadFormat
	return lua.LNil
}

// decodeArray reads n elements into a table. n comes from the input, and a
// short input ends the loop with msgpackEOF long before n.
func (d *msgpackDecoder) decodeArray(n uint64) lua.LValue {
	// Sized for what the input can still hold (an element takes a byte at
	// least), never for the header's claim.
	t := d.L.CreateTable(int(min(n, uint64(d.left()))), 0)
	d.slots++ // the table
	d.checkStack("in function mp_decode_to_lua_array")
	d.slots++ // the index pushed before each element
	defer func() { d.slots -= 2 }()
	for i := uint64(1); i <= n; i++ {
		v := d.decode()
		if d.err != msgpackOK {
			return lua.LNil
		}
		t.RawSet(lua.LNumber(i), v)
	}
	return t
}

func (d *msgpackDecoder) decodeMap(n uint64) lua.LValue {
	t := d.L.CreateTable(0, int(min(n, uint64(d.left()/2))))
	d.slots++ // the table
	defer func() { d.slots-- }()
	for ; n > 0; n-- {
		k := d.decode()
		if d.err != msgpackOK {
			return lua.LNil
		}
		d.slots++ // the key, while the value is decoded
		v := d.decode()
		d.slots--
		if d.err != msgpackOK {
			return lua.LNil
		}
		// lua_settable: a nil or NaN key is an error, as in C.
		if k == lua.LNil {
			capiRaiseRuntime(d.L, "table index is nil")
		}
		if kn, ok := k.(lua.LNumber); ok && math.IsNaN(float64(kn)) {
			capiRaiseRuntime(d.L, "table index is NaN")
		}
		t.RawSet(k, v)
	}
	return t
}

// cmsgpackUnpackFull is mp_unpack_full: limit values (all when limit and
// offset are both 0) from offset; with a limit or an offset the next offset
// comes first (-1 at the end of the input).
func cmsgpackUnpackFull(L *lua.LState, limit, offset int64) int {
	s := capiCheckLString(L, 1)
	decodeAll := limit == 0 && offset == 0
	if offset < 0 || limit < 0 {
		// The C code prints the input's length where it says limit.
		capiRaise(L, "Invalid request to unpack with offset of %d and limit of %d.", int32(offset), int32(len(s)))
	} else if offset > int64(len(s)) {
		capiRaise(L, "Start offset %d greater than input length %d.", int32(offset), int32(len(s)))
	}
	if decodeAll {
		limit = math.MaxInt32
	}
	d := &msgpackDecoder{L: L, data: s, pos: int(offset), slots: L.GetTop()}
	var results []lua.LValue
	for cnt := int64(0); d.left() > 0 && cnt < limit; cnt++ {
		v := d.decode()
		switch d.err {
		case msgpackEOF:
			capiRaise(L, "Missing bytes in input.")
		case msgpackBadFormat:
			capiRaise(L, "Bad data format in input.")
		}
		results = append(results, v)
		d.slots++
	}
	if !decodeAll {
		next := int64(d.pos)
		if d.left() == 0 {
			next = -1
		}
		L.Push(lua.LNumber(next))
	}
	for _, v := range results {
		L.Push(v)
	}
	if !decodeAll {
		return len(results) + 1
	}
	return len(results)
}
