package scripting

import (
	"testing"

	"github.com/redcell/redcell/internal/resp3"
)

// FuzzRun runs arbitrary script bodies, keys and arguments against the
// fake keyspace: no input may panic, and every reply must be one valid
// RESP3 value.
//
//	go test ./scripting -run '^$' -fuzz FuzzRun -fuzztime 60s
func FuzzRun(f *testing.F) {
	for _, body := range oracleCases {
		f.Add(body, "k", "a")
	}
	for _, body := range []string{
		"while true do end", "local s = 'x' while true do s = s .. s end", "return string.rep('x', 1e10)",
		"local t = {} t[1] = t return t", "return unpack({}, 1, 1e6)", "return redis.call('incr', KEYS[1])",
		"local function f() return f() end return f()", "return setmetatable({}, {__index = function(t, k) return t[k] end}).x",
		"return {map = {[{}] = {set = {1, 2}}}}", "return string.format('%99.99f', 1e308)", "return ('x'):rep(10):gsub('x', '%0%0')",
		"#!lua flags=no-writes\nreturn redis.call('get', KEYS[1])", "return loadstring('return 1')()",
		"return redis.call(unpack(ARGV))", "return tostring(1/0) .. tostring(-1/0) .. tostring(0/0)",
		"return {double = 0/0}", "redis.setresp(3) return redis.call('hgetall', KEYS[1])",
	} {
		f.Add(body, "k", "a")
	}
	e := NewEngine(Config{MaxInstructions: 100_000, MaxMemory: 1 << 20})
	f.Fuzz(func(t *testing.T, body, key, arg string) {
		fake := newFake()
		fake.hashes["k"] = [][2]string{{"f", "v"}}
		c := newCall(body, []string{key}, []string{arg, "set", key, "1"})
		got := e.Run(nil, c, fake)
		if !resp3.Valid(got) {
			t.Fatalf("%q answered an invalid reply %q", body, got)
		}
	})
}
