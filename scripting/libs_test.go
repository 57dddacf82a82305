package scripting

import (
	"context"
	"strconv"
	"strings"
	"testing"

	lua "github.com/yuin/gopher-lua"
)

// The deliberate differences from Redis 7.0 and what only Redcell has; the
// rest is compared with Redis by TestLibsAgainstRedis.

func libsEval(t *testing.T, L *lua.LState, chunk string) string {
	t.Helper()
	fn, err := L.Load(strings.NewReader(chunk), "user_script")
	if err != nil {
		t.Fatal(err)
	}
	L.Push(fn)
	if err := L.PCall(0, 1, nil); err != nil {
		return "error: " + err.Error()
	}
	defer L.Pop(1)
	return L.Get(-1).String()
}

func TestResetRedisLibsRestoresCJSONDefaults(t *testing.T) {
	L := libsNewState()
	defer L.Close()
	libsEval(t, L, `cjson.encode_number_precision(3) cjson.encode_max_depth(1) cjson.decode_invalid_numbers(false) cjson.encode_sparse_array(true, 1, 0) cjson.encode_invalid_numbers('null') return 1`)
	if got := libsEval(t, L, `return cjson.encode(1/3)`); got != "0.333" {
		t.Fatalf("precision 3 not in effect: %s", got)
	}
	resetRedisLibs(L)
	for chunk, want := range map[string]string{
		`return cjson.encode(1/3)`:                                         "0.33333333333333",
		`return cjson.encode({{}})`:                                        "[{}]",
		`return cjson.encode(cjson.decode('0x10'))`:                        "16",
		`return cjson.encode({[1]=1,[3]=3})`:                               "[1,null,3]",
		`return (select(2, pcall(cjson.encode, 1/0)))`:                     "Cannot serialise number: must not be NaN or Inf",
		`return table.concat({tostring(cjson.encode_sparse_array())}, '')`: "false",
	} {
		if got := libsEval(t, L, chunk); got != want {
			t.Errorf("after resetRedisLibs, %s = %q, want %q", chunk, got, want)
		}
	}
}

func TestCJSONNewHasItsOwnConfiguration(t *testing.T) {
	L := libsNewState()
	defer L.Close()
	got := libsEval(t, L, `local j = cjson.new() j.encode_number_precision(2) return j.encode(1/3) .. ' ' .. cjson.encode(1/3) .. ' ' .. tostring(j.decode('null') == cjson.null)`)
	if want := "0.33 0.33333333333333 true"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestBitToHexMinInt32(t *testing.T) {
	// C negates -2^31 into itself and asks for a 2^31-byte string; this
	// clamps as later LuaBitOp releases do.
	L := libsNewState()
	defer L.Close()
	if got := libsEval(t, L, `return bit.tohex(255, -2^31)`); got != "000000FF" {
		t.Fatalf("bit.tohex(255, -2^31) = %q", got)
	}
}

func TestLibOutputGuard(t *testing.T) {
	L := libsNewState()
	defer L.Close()
	check := func(ctx context.Context, size int) error {
		if ctx != nil {
			L.SetContext(ctx)
			defer L.RemoveContext()
		}
		fn := L.NewFunction(func(L *lua.LState) int {
			g := &libOutputGuard{L: L, tooLarge: "too large"}
			g.check(size)
			return 0
		})
		return L.CallByParam(lua.P{Fn: fn, Protect: true})
	}
	if err := check(nil, 1<<20); err != nil {
		t.Fatalf("1 MiB: %v", err)
	}
	if err := check(nil, libMaxResultBytes+1); err == nil || !strings.Contains(err.Error(), "too large") {
		t.Fatalf("past the limit: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := check(ctx, 1); err == nil {
		t.Fatal("a cancelled context did not stop the encoding")
	}
}

func TestLibOutputGuardTextsSayTheLimit(t *testing.T) {
	for _, text := range []string{"Cannot serialise, result larger than 536870912 bytes", "MessagePack pack result larger than 536870912 bytes"} {
		if !strings.Contains(text, strconv.Itoa(libMaxResultBytes)) {
			t.Errorf("%q does not say %d", text, libMaxResultBytes)
		}
	}
}
