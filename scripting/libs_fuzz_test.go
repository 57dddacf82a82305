package scripting

import (
	"errors"
	"math"
	"strings"
	"testing"

	lua "github.com/yuin/gopher-lua"
)

// The fuzz targets call the libraries' entry points with arbitrary input. A
// Lua error is a fine outcome; a Go panic (which gopher-lua's PCall turns
// into an ApiErrorPanic) is a failure, and so is a run that allocates from a
// length read out of the input (the fuzzer's memory limit catches that).
// `go test` runs their seeds; `go test -fuzz FuzzX ./scripting` explores.

// libsCall calls lib.fn(args...) protected and returns its results, or the
// Lua error; it fails the test on a Go panic.
func libsCall(t testing.TB, L *lua.LState, lib, fn string, args ...lua.LValue) ([]lua.LValue, error) {
	t.Helper()
	f := L.GetGlobal(lib).(*lua.LTable).RawGetString(fn)
	top := L.GetTop()
	err := L.CallByParam(lua.P{Fn: f, NRet: lua.MultRet, Protect: true}, args...)
	var apiErr *lua.ApiError
	if errors.As(err, &apiErr) && apiErr.Type == lua.ApiErrorPanic {
		t.Fatalf("%s.%s(%v) panicked: %v", lib, fn, args, err)
	}
	var out []lua.LValue
	if err == nil {
		for i := top + 1; i <= L.GetTop(); i++ {
			out = append(out, L.Get(i))
		}
	}
	L.SetTop(top)
	return out, err
}

func FuzzCJSONDecode(f *testing.F) {
	for _, s := range []string{
		`{"a":[1,2,{"b":null}],"c":"\u00e9\ud83d\ude00"}`, `[1e400,-0,0x1F,+1,nan,-Infinity]`, `"\u12`,
		`{"a":1,}`, strings.Repeat("[", 1100), `"\\\"\/\b\f\n\r\t"`, "\x00[", "[1]\x00x", `-`, `1e`, `007`,
	} {
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, s string, invalidNumbers bool) {
		L := libsNewState()
		defer L.Close()
		if _, err := libsCall(t, L, "cjson", "decode_invalid_numbers", lua.LBool(invalidNumbers)); err != nil {
			t.Fatal(err)
		}
		out, err := libsCall(t, L, "cjson", "decode", lua.LString(s))
		if err != nil {
			return
		}
		// Whatever decodes encodes, up to an error (NaN, Inf, sparse).
		enc, err := libsCall(t, L, "cjson", "encode", out[0])
		if err != nil {
			return
		}
		if _, err := libsCall(t, L, "cjson", "decode", enc[0]); err != nil && !strings.Contains(err.Error(), "nesting") {
			t.Fatalf("cjson.decode(cjson.encode(cjson.decode(%q))) = %v", s, err)
		}
	})
}

func FuzzCmsgpackUnpack(f *testing.F) {
	for _, s := range []string{
		"\x93\x01\xa1a\xc0", "\x82\x01\x02\xa1a\x91\xc3", "\xdd\xff\xff\xff\xff\x01", "\xdb\xff\xff\xff\xffabc",
		"\xcf\xff\xff\xff\xff\xff\xff\xff\xff", "\xcb\x7f\xf8\x00\x00\x00\x00\x00\x00", "\x81\xc0\x01", "\xc1",
		strings.Repeat("\x91", 50) + "\x01", strings.Repeat("\x81\x01", 30),
	} {
		f.Add(s, int64(0), int64(0))
	}
	f.Fuzz(func(t *testing.T, s string, limit, offset int64) {
		L := libsNewState()
		defer L.Close()
		_, _ = libsCall(t, L, "cmsgpack", "unpack_one", lua.LString(s), lua.LNumber(offset))
		_, _ = libsCall(t, L, "cmsgpack", "unpack_limit", lua.LString(s), lua.LNumber(limit), lua.LNumber(offset))
		out, err := libsCall(t, L, "cmsgpack", "unpack", lua.LString(s))
		if err != nil {
			return
		}
		// What unpacks packs again, and encodes to JSON or fails cleanly.
		if _, err := libsCall(t, L, "cmsgpack", "pack", out...); err != nil && len(out) > 0 {
			t.Fatalf("cmsgpack.pack(cmsgpack.unpack(%q)) = %v", s, err)
		}
		for _, v := range out {
			_, _ = libsCall(t, L, "cjson", "encode", v)
		}
	})
}

func FuzzStructUnpack(f *testing.F) {
	for _, c := range []struct{ format, data string }{
		{">I2", "\x01\x02"}, {"!4 b i", "\x01\x00\x00\x00\x02\x00\x00\x00"}, {"b c0", "\x03abc"}, {"s s", "ab\x00c"},
		{"c2147483647", "ab"}, {"i33", ""}, {"!3", ""}, {"<i16 >I9 d f x", strings.Repeat("\xff", 64)}, {"c1 c0", "9ab"},
	} {
		f.Add(c.format, c.data, int64(1))
	}
	f.Fuzz(func(t *testing.T, format, data string, pos int64) {
		L := libsNewState()
		defer L.Close()
		_, _ = libsCall(t, L, "struct", "unpack", lua.LString(format), lua.LString(data), lua.LNumber(pos))
		_, _ = libsCall(t, L, "struct", "size", lua.LString(format))
		// pack with the data as every argument, as a number and a string
		args := []lua.LValue{lua.LString(format)}
		for i := 0; i < 8; i++ {
			if i%2 == 0 {
				args = append(args, lua.LNumber(float64(pos)*float64(i+1)))
			} else {
				args = append(args, lua.LString(data))
			}
		}
		_, _ = libsCall(t, L, "struct", "pack", args...)
	})
}

func FuzzBit(f *testing.F) {
	for _, v := range []float64{0, -1, 1.5, 2.5, math.Pow(2, 32), math.Pow(2, 53) + 2, 1e300, math.Inf(1), math.NaN()} {
		f.Add(v, v*3, int64(-8))
	}
	f.Fuzz(func(t *testing.T, a, b float64, n int64) {
		L := libsNewState()
		defer L.Close()
		for _, fn := range []string{"tobit", "bnot", "band", "bor", "bxor", "lshift", "rshift", "arshift", "rol", "ror", "bswap"} {
			if _, err := libsCall(t, L, "bit", fn, lua.LNumber(a), lua.LNumber(b)); err != nil {
				t.Fatalf("bit.%s(%v, %v): %v", fn, a, b, err)
			}
		}
		out, err := libsCall(t, L, "bit", "tohex", lua.LNumber(a), lua.LNumber(n))
		if err != nil {
			t.Fatalf("bit.tohex(%v, %v): %v", a, n, err)
		}
		if s := string(out[0].(lua.LString)); len(s) > 8 {
			t.Fatalf("bit.tohex(%v, %v) = %q", a, n, s)
		}
	})
}
