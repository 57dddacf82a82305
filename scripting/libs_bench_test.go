package scripting

import (
	"testing"

	lua "github.com/yuin/gopher-lua"
)

// The libraries' cost per call on a small value, as a rate-limit script
// would use them (go test ./scripting -run XXX -bench Libs -benchmem).

func benchmarkLibCall(b *testing.B, lib, fn string, args ...lua.LValue) {
	L := libsNewState()
	defer L.Close()
	f := L.GetGlobal(lib).(*lua.LTable).RawGetString(fn)
	p := lua.P{Fn: f, NRet: 1, Protect: true}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := L.CallByParam(p, args...); err != nil {
			b.Fatal(err)
		}
		L.Pop(1)
	}
}

func benchmarkLibValue(L *lua.LState, chunk string) lua.LValue {
	if err := L.DoString("return " + chunk); err != nil {
		panic(err)
	}
	v := L.Get(-1)
	L.Pop(1)
	return v
}

func BenchmarkLibsCJSONEncode(b *testing.B) {
	L := libsNewState()
	defer L.Close()
	v := benchmarkLibValue(L, `{tokens = 17.5, last = 1732700000123, key = "user:42", hits = {1, 2, 3}}`)
	benchmarkLibCall(b, "cjson", "encode", v)
}

func BenchmarkLibsCJSONDecode(b *testing.B) {
	benchmarkLibCall(b, "cjson", "decode", lua.LString(`{"tokens":17.5,"last":1732700000123,"key":"user:42","hits":[1,2,3]}`))
}

func BenchmarkLibsCmsgpackPack(b *testing.B) {
	L := libsNewState()
	defer L.Close()
	v := benchmarkLibValue(L, `{tokens = 17.5, last = 1732700000123, key = "user:42", hits = {1, 2, 3}}`)
	benchmarkLibCall(b, "cmsgpack", "pack", v)
}

func BenchmarkLibsStructPack(b *testing.B) {
	benchmarkLibCall(b, "struct", "pack", lua.LString(">I4dc0"), lua.LNumber(42), lua.LNumber(17.5), lua.LString("user:42"))
}

func BenchmarkLibsBitBand(b *testing.B) {
	benchmarkLibCall(b, "bit", "band", lua.LNumber(0xfff), lua.LNumber(0x0f0))
}
