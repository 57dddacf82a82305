package scripting

import (
	"testing"
)

func runScript(t testing.TB, e *Engine, x Executor, body string, keys, args []string) string {
	t.Helper()
	c := &Call{Body: []byte(body), SHA: SHA1Hex([]byte(body)), Now: 1_700_000_000_123_456_789, Seed: 42}
	for _, k := range keys {
		c.Keys = append(c.Keys, []byte(k))
	}
	for _, a := range args {
		c.Args = append(c.Args, []byte(a))
	}
	return string(e.Run(nil, c, x))
}

func TestSmoke(t *testing.T) {
	e := NewEngine(Config{})
	f := newFake()
	for _, s := range []string{
		"return 1", "return x", "x = 1", "return redis.call('incr', KEYS[1])", "return {1,'a',true,false,{ok='fine'},3.9,-3.9,{err='x'}}",
		"return redis.call('time')", "error('boom')", "return 1 +", "return tostring(1/3)", "return redis.call('nosuch')",
		"string.x = 1", "local s = 'x' while true do s = s .. s end", "while true do end", "return string.rep('x', 1e10)",
		"local t = {} for i = 1, 1e9 do t[i] = i end", "return {pcall(redis.call, 'incr', 'foo')}",
		"redis.call('set','s','abc'); return redis.call('incr','s')", "return redis.pcall('incr','s')",
		"local function f(n) return f(n+1) + 1 end return f(1)", "return tostring({})",
	} {
		t.Logf("%q -> %q", s, runScript(t, e, f, s, []string{"k1"}, []string{"a1"}))
	}
}
