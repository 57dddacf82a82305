package scripting

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	lua "github.com/yuin/gopher-lua"

	"github.com/redcell/redcell/request"
)

func runScript(t testing.TB, e *Engine, x Executor, body string, keys, args []string) string {
	t.Helper()
	return string(e.Run(nil, newCall(body, keys, args), x))
}

func newCall(body string, keys, args []string) *Call {
	c := &Call{Body: []byte(body), SHA: SHA1Hex([]byte(body)), Now: 1_700_000_000_123_456_789, Seed: 42}
	for _, k := range keys {
		c.Keys = append(c.Keys, []byte(k))
	}
	for _, a := range args {
		c.Args = append(c.Args, []byte(a))
	}
	return c
}

func expect(t *testing.T, e *Engine, x Executor, body, want string) {
	t.Helper()
	if got := runScript(t, e, x, body, nil, nil); got != want {
		t.Errorf("%q:\n got %q\nwant %q", body, got, want)
	}
}

func expectPrefix(t *testing.T, e *Engine, x Executor, body, want string) {
	t.Helper()
	if got := runScript(t, e, x, body, nil, nil); !strings.HasPrefix(got, want) {
		t.Errorf("%q:\n got %q\nwant a reply starting %q", body, got, want)
	}
}

func TestSHA1Hex(t *testing.T) {
	if got := SHA1Hex([]byte("abc")); got != "a9993e364706816aba3e25717850c26c9cd0d89d" {
		t.Fatal(got)
	}
}

// TestFrameLayout checks that the budget reads gopher-lua's call frame:
// without it the VM's allocations would not be charged.
func TestFrameLayout(t *testing.T) {
	if !frameReadable {
		t.Fatal("gopher-lua's callFrame is not where budget.go looks for it (another gopher-lua version?)")
	}
}

func TestInstructionBudget(t *testing.T) {
	e := NewEngine(Config{MaxInstructions: 100_000})
	f := newFake()
	const spent = "-ERR script exceeded its budget of 100000 instructions\r\n"
	expect(t, e, f, "while true do end", spent)
	// pcall cannot swallow it: once spent, every instruction fails.
	expect(t, e, f, "while true do pcall(function() while true do end end) end", spent)
	expect(t, e, f, "local ok = pcall(function() while true do end end) return 'survived'", spent)
	expect(t, e, f, "for i = 1, 1e9 do local ok = pcall(error, 'x') end", spent)
	// A coroutine's instructions are the script's.
	expect(t, e, f, "coroutine.resume(coroutine.create(function() while true do end end)) return 'survived'", spent)
	expect(t, e, f, "local co = coroutine.wrap(function() while true do coroutine.yield() end end) while true do co() end", spent)
	expect(t, e, f, "local co = coroutine.wrap(function() while true do end end) return pcall(co)", spent)
	// Pattern matching is paid in instructions: a backtracking pattern
	// stops (it runs for minutes unbounded).
	expect(t, e, f, "return string.find(string.rep('a', 300), '.-.-.-b')", spent)
	expect(t, e, f, "return pcall(string.match, string.rep('a', 300), '.-.-.-b')", spent)
	expect(t, e, f, "local t = {} for i = 1, 20000 do t[i] = -i end table.sort(t) return t[1]", spent)
	// Writes before the stop stand (the reply is the error).
	expect(t, e, f, "redis.call('incr', 'n') while true do end", spent)
	if f.strs["n"] != "1" {
		t.Fatalf("the write before the stop: %q", f.strs["n"])
	}
	// The next call on the same states starts with a fresh budget.
	expect(t, e, f, "local n = 0 for i = 1, 1000 do n = n + 1 end return n", ":1000\r\n")
	// The same script stops at the same instruction every time: what
	// it wrote before is the same.
	stoppedAt := ""
	for i := range 3 {
		f := newFake()
		runScript(t, e, f, "local i = 0 while true do i = i + 1 if i % 1000 == 0 then redis.call('incr', 'k') end end", nil, nil)
		if i == 0 {
			stoppedAt = f.strs["k"]
		}
		if f.strs["k"] != stoppedAt || stoppedAt == "" {
			t.Fatalf("stopped after %q increments, then after %q", stoppedAt, f.strs["k"])
		}
	}
}

func TestMemoryBudget(t *testing.T) {
	e := NewEngine(Config{MaxMemory: 1 << 20})
	f := newFake()
	const spent = "-ERR script exceeded its memory budget of 1048576 bytes\r\n"
	for _, body := range []string{
		"local s = 'x' while true do s = s .. s end",
		"local s = 'x' while true do s = s .. s .. 1 end",
		"return string.rep('x', 1e10)",
		"return string.rep('abc', 1e6)",
		"local t = {} for i = 1, 1e9 do t[i] = i end",
		"local t = {} for i = 1, 1e9 do t['k' .. i] = true end",
		"local t = {} for i = 1, 1e9 do table.insert(t, i) end",
		"local t = {} for i = 1, 1e9 do t[#t + 1] = {} end",
		"local t = {} for i = 1, 1e9 do t[i] = function() end end",
		"local s = string.rep('x', 1000) local t = {} for i = 1, 2000 do t[i] = s end return table.concat(t)",
		"local s = string.rep('x', 1000) local t = {} for i = 1, 2000 do t[i] = s end return t",
		"return string.gsub(string.rep('x', 1000), 'x', string.rep('y', 2000))",
		"return string.gsub(string.rep('x', 1000), 'x', function() return string.rep('y', 2000) end)",
		"local s = string.rep('x', 1000) return string.gsub(string.rep('x', 2000), 'x', {x = s})",
		"return string.format('%s%s', string.rep('x', 600000), string.rep('x', 600000))",
		"local t = {} for i = 1, 1e9 do t[i] = tostring(i) end",
		"local t = {} for i = 1, 1e9 do rawset(t, i, i) end",
		"local n = 0 for w in string.gmatch(string.rep('x', 100000), '.') do n = n + 1 end",
		"return string.gsub(string.rep('x', 100000), '', 'y')",
		"local t = {} for i = 1, 1e6 do t[i] = coroutine.create(function() end) end",
		"coroutine.wrap(function() local s = 'x' while true do s = s .. s end end)()",
	} {
		expect(t, e, f, body, spent)
	}
	// pcall cannot swallow it either.
	expect(t, e, f, "local ok = pcall(string.rep, 'x', 1e10) return 'survived'", spent)
	// A script within the budget runs, and the next call starts afresh.
	expect(t, e, f, "return #string.rep('x', 500000)", ":500000\r\n")
	expect(t, e, f, "return #string.rep('x', 500000)", ":500000\r\n")
	// collectgarbage('count') reads the account, the same everywhere.
	expect(t, e, f, "local s = string.rep('x', 10240) return collectgarbage('count')", ":10\r\n")
}

// TestDeepStructures: deep recursion and huge stacks are Lua errors, not
// crashes.
func TestDeepStructures(t *testing.T) {
	e := NewEngine(Config{})
	f := newFake()
	expectPrefix(t, e, f, "local function f(n) return f(n + 1) + 1 end return f(1)", "-ERR user_script:1: stack overflow")
	expectPrefix(t, e, f, "local function f(n) return pcall(f, n + 1) end return f(1)", "")
	expectPrefix(t, e, f, "return unpack({}, 1, 1e8)", "-ERR")
	expectPrefix(t, e, f, "return string.byte(string.rep('x', 4e6), 1, -1)", "-ERR")
	// A table that contains itself is written down to the depth cap.
	got := runScript(t, e, f, "local t = {} t[1] = t return t", nil, nil)
	if !strings.HasSuffix(got, "-ERR reached lua stack limit\r\n") || strings.Count(got, "*1\r\n") != maxReplyDepth {
		t.Fatalf("self-containing table: %q", got[:min(len(got), 200)])
	}
}

// TestDeterminism: the same call draws the same numbers and names the
// same tables on every state; TIME is the call's instant.
func TestDeterminism(t *testing.T) {
	body := "return {math.random(1000000), math.random(1000000), tostring(math.random()), tostring({}), tostring(tostring), os.clock()}"
	e1, e2 := NewEngine(Config{}), NewEngine(Config{})
	c := newCall(body, nil, nil)
	a := string(e1.Run(nil, c, newFake()))
	// Another engine, and a state that ran other scripts first.
	runScript(t, e2, newFake(), "math.randomseed(7) return math.random()", nil, nil)
	b := string(e2.Run(nil, c, newFake()))
	if a != b {
		t.Fatalf("the same call answered\n%q\n%q", a, b)
	}
	if !strings.Contains(a, "table: 0x00000001") {
		t.Fatalf("tostring of a table: %q", a)
	}
	c2 := *c
	c2.Seed++
	if d := string(e1.Run(nil, &c2, newFake())); d == a {
		t.Fatalf("another seed drew the same numbers: %q", d)
	}
	// Redis's generator: math.randomseed(42) draws what Redis draws
	// (TestOracle compares it with redis-server).
	var r redisRand
	r.seed(42)
	if got := floor(r.float()*100) + 1; got != 75 {
		t.Fatalf("seed 42 drew %v, Redis draws 75", got)
	}
	expect(t, e1, newFake(), "return redis.call('time')", "*2\r\n$10\r\n1700000000\r\n$6\r\n123456\r\n")
	c3 := newCall("return redis.call('time')", nil, nil)
	c3.Now = -1 // before 1970: floor division, as a clock would read
	if got := string(e1.Run(nil, c3, newFake())); got != "*2\r\n$2\r\n-1\r\n$6\r\n999999\r\n" {
		t.Fatalf("TIME before 1970: %q", got)
	}
}

// TestNothingLeaks: what a script changes is not seen by the next call on
// the same state.
func TestNothingLeaks(t *testing.T) {
	e := NewEngine(Config{})
	f := newFake()
	for _, body := range []string{
		"rawset(_G, 'leak', 1)",
		"rawset(string, 'leak', 1)",
		"rawset(redis, 'leak', 1)",
		"rawset(math, 'leak', 1)",
		"local mt = getmetatable('') if mt then rawset(mt, 'leak', 1) end",
		"KEYS.leak = 1",
		"KEYS[2] = 'leak'",
	} {
		runScript(t, e, f, body, nil, nil)
		for _, probe := range []string{"return rawget(_G, 'leak')", "return rawget(string, 'leak')", "return rawget(redis, 'leak')",
			"return rawget(math, 'leak')", "return ('').leak", "return rawget(getmetatable(''), 'leak')", "return KEYS.leak", "return KEYS[2]"} {
			expect(t, e, f, probe, "_\r\n")
		}
	}
	// The library tables are read-only, through any path.
	for _, body := range []string{"string.rep = nil", "getmetatable('').rep = nil", "redis.call = nil", "math.random = nil",
		"table.insert = nil", "os.clock = nil", "_G.string = nil"} {
		expectPrefix(t, e, f, body, "-ERR user_script:1: Attempt to modify a readonly table")
	}
	expect(t, e, f, "return getmetatable(_G)", "_\r\n")
	expect(t, e, f, "return string.rep('a', 2)", "$2\r\naa\r\n")
	expect(t, e, f, "return ('a'):rep(2)", "$2\r\naa\r\n")
	// Nothing outside Redis's environment, os.clock aside.
	for _, name := range []string{"print", "dofile", "loadfile", "getfenv", "setfenv", "newproxy", "require", "module", "io", "debug", "package"} {
		expectPrefix(t, e, f, "return "+name, "-ERR user_script:1: Script attempted to access nonexistent global variable '"+name+"'")
	}
	expect(t, e, f, "return os.time", "_\r\n")
	expect(t, e, f, "return type(os.clock)", "$8\r\nfunction\r\n")
}

// A script that assigns no global runs with the real globals as its
// environment (vm.run); nothing it can run may write to them: _G is the
// read-only proxy, a chunk loadstring compiles gets the proxy too, and
// reading a global that does not exist raises Redis's error as through the
// proxy. A script that assigns one anywhere, even in a function it never
// calls, runs on the proxy.
func TestGlobalsOfAScriptThatAssignsNone(t *testing.T) {
	e := NewEngine(Config{})
	f := newFake()
	for _, c := range []struct{ body, sets string }{
		{"return 1", ""},
		{"local function g() x = 1 end return 1", "yes"},
		{"return function() return function() y = 2 end end", "yes"},
		{"local t = {} t.x = 1 return 1", ""},
	} {
		s, errText := e.compiled([]byte(c.body), SHA1Hex([]byte(c.body)))
		if s == nil {
			t.Fatalf("%s: %s", c.body, errText)
		}
		if s.setsGlobals != (c.sets != "") {
			t.Errorf("%q: setsGlobals %v", c.body, s.setsGlobals)
		}
	}
	for _, body := range []string{
		"_G.leak = 1",
		"_G.tostring = nil",
		"rawset(_G, 'redis', nil)",
		"loadstring('leak = 1')()",
		"loadstring('tostring = nil')()",
		"local f = loadstring('return function() leak = 1 end')() f()",
		"local co = coroutine.create(function() _G.leak = 1 end) local ok, err = coroutine.resume(co) if not ok then error(err) end",
	} {
		runScript(t, e, f, body, nil, nil)
		expect(t, e, f, "return rawget(_G, 'leak')", "_\r\n")
		expect(t, e, f, "return type(tostring)", "$8\r\nfunction\r\n")
		expect(t, e, f, "return type(redis)", "$5\r\ntable\r\n")
	}
	expectPrefix(t, e, f, "loadstring('leak = 1')()", "-ERR <string>:1: Attempt to modify a readonly table")
	expectPrefix(t, e, f, "return nothere", "-ERR user_script:1: Script attempted to access nonexistent global variable 'nothere'")
	expectPrefix(t, e, f, "local function f() return nothere end return f()", "-ERR user_script:1: Script attempted to access nonexistent global variable 'nothere'")
	if got := runScript(t, e, f, "return tonumber(ARGV[1]) + #KEYS", []string{"k"}, []string{"41"}); got != ":42\r\n" {
		t.Errorf("KEYS and ARGV read directly: %q", got)
	}
}

func TestKeysAndArgs(t *testing.T) {
	e := NewEngine(Config{})
	got := runScript(t, e, newFake(), "return {#KEYS, #ARGV, KEYS[1], KEYS[2], ARGV[1]}", []string{"a", "b"}, []string{"x\x00y"})
	if got != "*5\r\n:2\r\n:1\r\n$1\r\na\r\n$1\r\nb\r\n$3\r\nx\x00y\r\n" {
		t.Fatalf("%q", got)
	}
	expect(t, e, newFake(), "return {#KEYS, #ARGV}", "*2\r\n:0\r\n:0\r\n")
	// The main chunk is vararg (with nothing passed), and has no arg.
	expect(t, e, newFake(), "return select('#', ...)", ":0\r\n")
	expectPrefix(t, e, newFake(), "return arg", "-ERR user_script:1: Script attempted to access nonexistent global variable 'arg'")
}

func TestReadOnly(t *testing.T) {
	e := NewEngine(Config{})
	f := newFake()
	c := newCall("return redis.call('set', 'k', 'v')", nil, nil)
	c.ReadOnly = true
	want := "-ERR Write commands are not allowed from read-only scripts. script: " + c.SHA + ", on @user_script:1.\r\n"
	if got := string(e.Run(nil, c, f)); got != want {
		t.Fatalf("%q", got)
	}
	c = newCall("return redis.call('get', 'k')", nil, nil)
	c.ReadOnly = true
	if got := string(e.Run(nil, c, f)); got != "_\r\n" {
		t.Fatalf("a read in a read-only script: %q", got)
	}
	if f.calls != 1 {
		t.Fatalf("the executor ran %d commands, want only the read", f.calls)
	}
	// The shebang's no-writes makes a script read-only.
	expectPrefix(t, e, f, "#!lua flags=no-writes\nreturn redis.call('set', 'k', 'v')", "-ERR Write commands are not allowed from read-only scripts.")
	expect(t, e, f, "#!lua\nreturn redis.call('set', 'k', 'v')", "+OK\r\n")
}

func TestRESP3Replies(t *testing.T) {
	e := NewEngine(Config{})
	f := newFake()
	f.hashes["h"] = [][2]string{{"a", "1"}, {"b", "2"}}
	expect(t, e, f, "return redis.call('hgetall', 'h')", "*4\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n$1\r\n2\r\n")
	expect(t, e, f, "redis.setresp(3) local m = redis.call('hgetall', 'h') return {m.map.a, m.map.b}", "*2\r\n$1\r\n1\r\n$1\r\n2\r\n")
	expect(t, e, f, "redis.setresp(3) return redis.call('hgetall', 'h')", "%2\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n$1\r\n2\r\n")
	expect(t, e, f, "redis.setresp(3) return redis.call('get', 'missing')", "_\r\n")
	expect(t, e, f, "return {verbatim_string = {format = 'txt', string = 'hi'}}", "=6\r\ntxt:hi\r\n")
}

// panicky is an Executor whose commands panic, as a bug in the state
// machine would.
type panicky struct{}

func (panicky) Execute(*request.Request, *request.Result) { panic("executor bug") }

// TestGoPanics: a panic in Go code inside the VM is an error reply, and
// the engine goes on.
func TestGoPanics(t *testing.T) {
	e := NewEngine(Config{})
	expectPrefix(t, e, panicky{}, "return redis.call('get', 'k')", "-ERR")
	expectPrefix(t, e, panicky{}, "return redis.pcall('get', 'k')", "-ERR")
	expect(t, e, newFake(), "return 1", ":1\r\n")
	// A Go function of the environment that panics.
	v := e.getVM()
	v.globals.RawSetString("boom", v.L.NewFunction(func(*lua.LState) int { panic("library bug") }))
	e.putVM(v)
	for range maxIdleStates + 1 {
		got := runScript(t, e, newFake(), "return boom and boom()", nil, nil)
		if got != "_\r\n" && !strings.HasPrefix(got, "-ERR") {
			t.Fatalf("a panicking Go function: %q", got)
		}
	}
}

func TestCompile(t *testing.T) {
	e := NewEngine(Config{})
	if got := e.Compile([]byte("return 1"), SHA1Hex([]byte("return 1"))); got != "" {
		t.Fatal(got)
	}
	got := e.Compile([]byte("return 1 +"), SHA1Hex([]byte("return 1 +")))
	if !strings.HasPrefix(got, "ERR Error compiling script (new function): user_script:1: ") {
		t.Fatal(got)
	}
	if got := e.Compile([]byte("#!lua flags=bogus\nreturn 1"), "x"); got != "ERR Unexpected flag in script shebang: bogus" {
		t.Fatal(got)
	}
	// The compile cache is bounded.
	for i := range maxCachedScripts + 10 {
		body := []byte(fmt.Sprintf("return %d", i))
		e.Compile(body, SHA1Hex(body))
	}
	if n := len(e.protos); n != maxCachedScripts {
		t.Fatalf("%d scripts cached", n)
	}
	expect(t, e, newFake(), "return 0", ":0\r\n")
}

// TestConcurrentRuns: Run is safe from several goroutines (go test -race).
func TestConcurrentRuns(t *testing.T) {
	e := NewEngine(Config{})
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f := newFake()
			for i := range 200 {
				body := fmt.Sprintf("return {redis.call('incr', KEYS[1]), %d}", i%7)
				got := runScript(t, e, f, body, []string{"k"}, nil)
				want := fmt.Sprintf("*2\r\n:%d\r\n:%d\r\n", i+1, i%7)
				if got != want {
					t.Errorf("goroutine %d: %q, want %q", g, got, want)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func TestRedisLog(t *testing.T) {
	var b strings.Builder
	e := NewEngine(Config{Logger: newTextLogger(&b)})
	expect(t, e, newFake(), "redis.log(redis.LOG_WARNING, 'hello', 'world', 3)", "_\r\n")
	if !strings.Contains(b.String(), "hello world 3") {
		t.Fatalf("log: %q", b.String())
	}
}

// TestLibraryCharges: the hooks the libraries call from Go charge the
// call's budgets.
func TestLibraryCharges(t *testing.T) {
	e := NewEngine(Config{MaxInstructions: 1000, MaxMemory: 1000})
	v := e.getVM()
	v.globals.RawSetString("alloc", v.L.NewFunction(func(L *lua.LState) int { chargeMemory(L, int64(L.CheckInt(1))); return 0 }))
	v.globals.RawSetString("work", v.L.NewFunction(func(L *lua.LState) int { spendInstructions(L, int64(L.CheckInt(1))); return 0 }))
	e.putVM(v)
	f := newFake()
	expect(t, e, f, "alloc(500) return 1", ":1\r\n")
	expect(t, e, f, "alloc(2000) return 1", "-ERR script exceeded its memory budget of 1000 bytes\r\n")
	expect(t, e, f, "work(500) return 1", ":1\r\n")
	expect(t, e, f, "pcall(work, 2000) return 1", "-ERR script exceeded its budget of 1000 instructions\r\n")
}
