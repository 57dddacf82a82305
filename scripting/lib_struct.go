package scripting

import (
	"bytes"
	"encoding/binary"
	"math"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// The struct library is Roberto Ierusalimschy's struct 0.2 (lua_struct.c) as
// Redis 7.0 builds it on x86-64: long and size_t are 8 bytes, int 4, short 2,
// the native byte order little endian, integers handled as 64-bit longs.
//
// Format: '<' '>' byte order, '!n' alignment (n a power of two, 8 without
// n), ' ' ignored, 'x' a zero byte, 'b'/'B' 'h'/'H' 'l'/'L' 'T' 'i'/'I[n]'
// integers (n bytes, at most 32), 'f' 'd' floats, 'c[n]' n bytes ('c0' the
// whole string when packing, the previous result as the length when
// unpacking), 's' a zero-terminated string. Nothing else ('=' included).

const (
	structMaxIntSize = 32
	structMaxAlign   = 8 // offsetof the double in struct{char; double}
)

type structHeader struct {
	little bool
	align  int
}

// structFormat walks a format as the C code does, one byte at a time; a NUL
// ends it, since the C code reads a C string.
type structFormat struct {
	fmt string
	pos int
}

func newStructFormat(L *lua.LState) *structFormat {
	f := capiCheckLString(L, 1)
	if i := strings.IndexByte(f, 0); i >= 0 {
		f = f[:i]
	}
	return &structFormat{fmt: f}
}

func (f *structFormat) more() bool { return f.pos < len(f.fmt) }

func (f *structFormat) next() byte {
	c := f.fmt[f.pos]
	f.pos++
	return c
}

// getNum reads a decimal count after an option, or returns df.
func (f *structFormat) getNum(L *lua.LState, df int) int {
	if !f.more() || !cIsDigit(f.fmt[f.pos]) {
		return df
	}
	a := 0
	for f.more() && cIsDigit(f.fmt[f.pos]) {
		d := int(f.fmt[f.pos] - '0')
		if a > math.MaxInt32/10 || a*10 > math.MaxInt32-d {
			capiRaise(L, "integral size overflow")
		}
		a = a*10 + d
		f.pos++
	}
	return a
}

// optSize is the size of option opt, reading its count when it has one.
func (f *structFormat) optSize(L *lua.LState, opt byte) int {
	switch opt {
	case 'B', 'b':
		return 1
	case 'H', 'h':
		return 2
	case 'L', 'l', 'T':
		return 8
	case 'f':
		return 4
	case 'd':
		return 8
	case 'x':
		return 1
	case 'c':
		return f.getNum(L, 1)
	case 'i', 'I':
		sz := f.getNum(L, 4)
		if sz > structMaxIntSize {
			capiRaise(L, "integral size %d is larger than limit of %d", sz, structMaxIntSize)
		}
		return sz
	}
	return 0
}

// toAlign is the padding before an item of size at offset length.
func (h *structHeader) toAlign(length int, opt byte, size int) int {
	if size == 0 || opt == 'c' {
		return 0
	}
	if size > h.align {
		size = h.align
	}
	return (size - (length & (size - 1))) & (size - 1)
}

// control applies a byte-order, alignment or blank option; anything else is
// an invalid option.
func (f *structFormat) control(L *lua.LState, opt byte, h *structHeader) {
	switch opt {
	case ' ':
	case '>':
		h.little = false
	case '<':
		h.little = true
	case '!':
		a := f.getNum(L, structMaxAlign)
		if a <= 0 || a&(a-1) != 0 {
			capiRaise(L, "alignment %d is not a power of 2", a)
		}
		h.align = a
	default:
		capiArgError(L, 1, "invalid format option '"+string([]byte{opt})+"'")
	}
}

func newStructModule(L *lua.LState) *lua.LTable {
	module := L.NewTable()
	libSetFuncs(L, module, map[string]lua.LGFunction{
		"pack":   structPack,
		"unpack": structUnpack,
		"size":   structSize,
	})
	return module
}

func structPack(L *lua.LState) int {
	f := newStructFormat(L)
	h := structHeader{little: true, align: 1}
	arg := 2
	// The C function pushes a nil to mark the end of its arguments, so a
	// missing first argument is "got nil", a later one "got no value".
	L.Push(lua.LNil)
	var out bytes.Buffer
	total := 0
	for f.more() {
		opt := f.next()
		size := f.optSize(L, opt)
		pad := h.toAlign(total, opt, size)
		total += pad
		for ; pad > 0; pad-- {
			out.WriteByte(0)
		}
		switch opt {
		case 'b', 'B', 'h', 'H', 'l', 'L', 'T', 'i', 'I':
			n := capiCheckNumber(L, arg)
			arg++
			var value uint64
			if n < 0 {
				value = uint64(cDoubleToInt64(n))
			} else {
				value = cDoubleToUint64(n)
			}
			buf := make([]byte, size)
			for i := 0; i < size; i++ {
				j := i
				if !h.little {
					j = size - 1 - i
				}
				buf[j] = byte(value)
				value >>= 8
			}
			out.Write(buf)
		case 'x':
			out.WriteByte(0)
		case 'f':
			v := math.Float32bits(float32(capiCheckNumber(L, arg)))
			arg++
			out.Write(putOrder(h.little, 4, uint64(v)))
		case 'd':
			v := math.Float64bits(capiCheckNumber(L, arg))
			arg++
			out.Write(putOrder(h.little, 8, v))
		case 'c', 's':
			s := capiCheckLString(L, arg)
			arg++
			if size == 0 {
				size = len(s)
			}
			if len(s) < size {
				// The C code reports the argument after the string.
				capiArgError(L, arg, "string too short")
			}
			out.WriteString(s[:size])
			if opt == 's' {
				out.WriteByte(0)
				size++
			}
		default:
			f.control(L, opt, &h)
		}
		total += size
	}
	L.Push(lua.LString(out.String()))
	return 1
}

func putOrder(little bool, size int, v uint64) []byte {
	buf := make([]byte, 8)
	if little {
		binary.LittleEndian.PutUint64(buf, v)
		return buf[:size]
	}
	binary.BigEndian.PutUint64(buf, v<<(64-8*size))
	return buf[:size]
}

// structGetInteger reads size bytes as the C code does with a 64-bit
// unsigned accumulator: bytes past the eighth shift the first ones out, and
// the sign mask's shift count is taken modulo 64 as x86 does.
func structGetInteger(data string, little, signed bool, size int) float64 {
	var l uint64
	if !little {
		for i := 0; i < size; i++ {
			l = l<<8 | uint64(data[i])
		}
	} else {
		for i := size - 1; i >= 0; i-- {
			l = l<<8 | uint64(data[i])
		}
	}
	if !signed {
		return float64(l)
	}
	mask := ^uint64(0) << (uint(size*8-1) & 63)
	if l&mask != 0 {
		l |= mask
	}
	return float64(int64(l))
}

func structUnpack(L *lua.LState) int {
	f := newStructFormat(L)
	data := capiCheckLString(L, 2)
	ld := uint64(len(data))
	// size_t arithmetic, as in C: a negative offset passes the "> 0" check
	// and then fails as "data string too short".
	pos := uint64(capiOptInteger(L, 3, 1))
	if pos == 0 {
		capiArgError(L, 3, "offset must be 1 or greater")
	}
	pos--
	h := structHeader{little: true, align: 1}
	var results []lua.LValue
	base := L.GetTop()
	for f.more() {
		opt := f.next()
		size := uint64(f.optSize(L, opt))
		pos += uint64(h.toAlign(int(pos), opt, int(size)))
		if !(size <= ld && pos <= ld-size) {
			capiArgError(L, 2, "data string too short")
		}
		if base+len(results)+2 > capiCStackLimit {
			capiRaise(L, "stack overflow (too many results)")
		}
		switch opt {
		case 'b', 'B', 'h', 'H', 'l', 'L', 'T', 'i', 'I':
			signed := opt >= 'a' && opt <= 'z'
			results = append(results, lua.LNumber(structGetInteger(data[pos:pos+size], h.little, signed, int(size))))
		case 'x':
		case 'f':
			var v uint32
			if h.little {
				v = binary.LittleEndian.Uint32([]byte(data[pos : pos+4]))
			} else {
				v = binary.BigEndian.Uint32([]byte(data[pos : pos+4]))
			}
			results = append(results, lua.LNumber(math.Float32frombits(v)))
		case 'd':
			var v uint64
			if h.little {
				v = binary.LittleEndian.Uint64([]byte(data[pos : pos+8]))
			} else {
				v = binary.BigEndian.Uint64([]byte(data[pos : pos+8]))
			}
			results = append(results, lua.LNumber(math.Float64frombits(v)))
		case 'c':
			if size == 0 {
				var prev float64
				ok := false
				if len(results) > 0 {
					prev, ok = capiToNumber(results[len(results)-1])
				}
				if !ok {
					capiRaise(L, "format 'c0' needs a previous size")
				}
				size = cDoubleToUint64(prev)
				results = results[:len(results)-1]
				if !(size <= ld && pos <= ld-size) {
					capiArgError(L, 2, "data string too short")
				}
			}
			results = append(results, lua.LString(data[pos:pos+size]))
		case 's':
			e := strings.IndexByte(data[pos:], 0)
			if e < 0 {
				capiRaise(L, "unfinished string in data")
			}
			size = uint64(e) + 1
			results = append(results, lua.LString(data[pos:pos+uint64(e)]))
		default:
			f.control(L, opt, &h)
		}
		pos += size
	}
	for _, v := range results {
		L.Push(v)
	}
	L.Push(lua.LNumber(float64(int64(pos + 1))))
	return len(results) + 1
}

func structSize(L *lua.LState) int {
	f := newStructFormat(L)
	h := structHeader{little: true, align: 1}
	pos := 0
	for f.more() {
		opt := f.next()
		size := f.optSize(L, opt)
		pos += h.toAlign(pos, opt, size)
		if opt == 's' {
			capiArgError(L, 1, "option 's' has no fixed size")
		} else if opt == 'c' && size == 0 {
			capiArgError(L, 1, "option 'c0' has no fixed size")
		}
		if !cIsAlnum(opt) {
			f.control(L, opt, &h)
		}
		pos += size
	}
	L.Push(lua.LNumber(pos))
	return 1
}
