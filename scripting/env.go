package scripting

import (
	"errors"
	"fmt"
	stdmath "math"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// Redis 7.0's version, as redis.REDIS_VERSION and REDIS_VERSION_NUM answer
// it: the oracle the project compares against is redis-server 7.0.15, and
// scripts that test the version for a feature find the 7.0 features here.
const (
	redisVersion    = "7.0.15"
	redisVersionNum = 0x07000f
)

// The globals Redis 7.0.15 gives a script (script_lua.c's allow lists,
// minus what it removes: print, dofile, loadfile, getfenv, setfenv,
// newproxy, module, require, debug), and what gopher-lua adds.
var removedGlobals = []string{"print", "dofile", "loadfile", "getfenv", "setfenv", "newproxy",
	"module", "require", "_printregs", "debug", "package", "io", "channel"}

// openEnvironment builds Redis's environment in v.L: the libraries, the
// redis table, Redis's replacements, the memory charging wrappers, and
// the protection of globals.
func (v *vm) openEnvironment() {
	L := v.L
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{{"", lua.OpenBase}, {lua.TabLibName, lua.OpenTable}, {lua.StringLibName, lua.OpenString}, {lua.MathLibName, lua.OpenMath}} {
		L.Push(L.NewFunction(lib.open))
		L.Push(lua.LString(lib.name))
		L.Call(1, 0)
	}
	openRedisLibs(L)
	g := L.G.Global
	v.globals = g
	for _, name := range removedGlobals {
		g.RawSetString(name, lua.LNil)
	}

	// Redis's replacements and additions to the base library.
	g.RawSetString("pcall", L.NewFunction(v.pcall))
	g.RawSetString("error", L.NewFunction(luaError))
	g.RawSetString("tostring", L.NewFunction(v.tostring))
	g.RawSetString("collectgarbage", L.NewFunction(v.collectgarbage))
	g.RawSetString("gcinfo", L.NewFunction(v.gcinfo))
	math := g.RawGetString("math").(*lua.LTable)
	math.RawSetString("huge", lua.LNumber(stdmath.Inf(1))) // gopher-lua's is the largest finite number
	if orig, ok := g.RawGetString("tonumber").(*lua.LFunction); ok {
		g.RawSetString("tonumber", L.NewFunction(toNumber(orig.GFunction)))
	}
	math.RawSetString("random", L.NewFunction(v.mathRandom))
	math.RawSetString("randomseed", L.NewFunction(v.mathRandomseed))
	os := L.NewTable()
	os.RawSetString("clock", L.NewFunction(v.osClock))
	g.RawSetString("os", os)
	g.RawSetString("redis", v.redisTable())
	v.onError = L.NewFunction(v.errorHandler)
	g.RawSetString("__redis__err__handler", v.onError)

	v.openPatterns(g.RawGetString("string").(*lua.LTable))
	v.openCoroutines()
	v.chargeLibraries()
	v.protect()
}

// protect makes the globals and the library tables read-only as Redis
// 7.0 does (its Lua has read-only tables; gopher-lua has not): scripts see
// proxies whose misses read the real table and whose writes raise Redis's
// error, and reading a global that does not exist raises Redis's error.
// rawset on a proxy escapes the protection, so a proxy written to is
// replaced after the call (resetProxies).
func (v *vm) protect() {
	L, g := v.L, v.globals
	missing := L.NewTable()
	missing.RawSetString("__index", L.NewFunction(nonexistentGlobal))
	L.SetMetatable(g, missing)

	// The string metatable: method calls on strings read the real string
	// table, getmetatable("") answers its read-only proxy.
	strings := g.RawGetString("string").(*lua.LTable)
	strings.RawSetString("__index", lua.LNil)
	strMeta := L.NewTable()
	strMeta.RawSetString("__index", strings)
	v.stringMeta = strMeta

	g.ForEach(func(k, val lua.LValue) {
		if t, ok := val.(*lua.LTable); ok && t != g {
			if name, ok := k.(lua.LString); ok {
				v.proxies = append(v.proxies, libProxy{name: string(name), meta: readOnlyMeta(L, t)})
			}
		}
	})
	for i := range v.proxies {
		p := &v.proxies[i]
		p.proxy = L.NewTable()
		L.SetMetatable(p.proxy, p.meta)
		g.RawSetString(p.name, p.proxy)
		if p.name == "string" {
			strMeta.RawSetString("__metatable", p.proxy)
		}
	}
	L.SetMetatable(lua.LString(""), strMeta)

	v.env = L.NewTable()
	L.SetMetatable(v.env, readOnlyMeta(L, g))
	g.RawSetString("_G", v.env)
	L.Env = v.env
}

// readOnlyMeta is the metatable of a read-only proxy of t.
func readOnlyMeta(L *lua.LState, t *lua.LTable) *lua.LTable {
	m := L.NewTable()
	m.RawSetString("__index", t)
	m.RawSetString("__newindex", L.NewFunction(readOnlyTable))
	m.RawSetString("__metatable", lua.LFalse)
	return m
}

// resetProxies replaces a proxy a script rawset into, so that nothing it
// stored there is seen by the next call.
func (v *vm) resetProxies() {
	L := v.L
	if k, _ := v.env.Next(lua.LNil); k != lua.LNil {
		v.env = L.NewTable()
		L.SetMetatable(v.env, readOnlyMeta(L, v.globals))
		v.globals.RawSetString("_G", v.env)
		L.Env = v.env
	}
	for i := range v.proxies {
		p := &v.proxies[i]
		if k, _ := p.proxy.Next(lua.LNil); k == lua.LNil {
			continue
		}
		p.proxy = L.NewTable()
		L.SetMetatable(p.proxy, p.meta)
		v.globals.RawSetString(p.name, p.proxy)
		if p.name == "string" {
			v.stringMeta.RawSetString("__metatable", p.proxy)
		}
	}
}

func nonexistentGlobal(L *lua.LState) int {
	L.RaiseError("Script attempted to access nonexistent global variable '%s'", luaString(L.Get(2)))
	return 0
}

func readOnlyTable(L *lua.LState) int {
	L.RaiseError("Attempt to modify a readonly table")
	return 0
}

// errorHandler is Redis's __redis__err__handler: it turns a string error
// into {err = "ERR " .. msg} and records where the error was raised (the
// caller of a Go function that raised it).
func (v *vm) errorHandler(L *lua.LState) int {
	err := L.Get(1)
	dbg, ok := L.GetStack(1)
	var source, line lua.LValue = lua.LNil, lua.LNil
	if ok {
		if _, e := L.GetInfo("Sl", dbg, lua.LNil); e == nil {
			if dbg.What == "G" {
				dbg, ok = L.GetStack(2)
				if ok {
					_, e = L.GetInfo("Sl", dbg, lua.LNil)
					ok = e == nil
				}
			}
			if ok {
				source, line = lua.LString(dbg.Source), lua.LNumber(dbg.CurrentLine)
			}
		}
	}
	t, isTable := err.(*lua.LTable)
	if !isTable {
		t = L.NewTable()
		t.RawSetString("err", lua.LString("ERR "+v.tostringOf(err)))
	}
	if source != lua.LNil {
		if s := string(source.(lua.LString)); s == "user_script" {
			source = lua.LString("@user_script")
		}
		t.RawSetString("source", source)
		t.RawSetString("line", line)
	}
	L.Push(t)
	return 1
}

// pcall is Redis's: an error raised as a table whose err is a string (a
// redis.call error) is caught as that string.
func (v *vm) pcall(L *lua.LState) int {
	n := L.GetTop()
	if n < 1 {
		L.ArgError(1, "value expected")
	}
	if err := L.PCall(n-1, lua.MultRet, nil); err != nil {
		obj := lua.LValue(lua.LString(err.Error()))
		if ae, ok := err.(*lua.ApiError); ok {
			obj = ae.Object
		}
		if t, ok := obj.(*lua.LTable); ok {
			if s, ok := t.RawGetString("err").(lua.LString); ok {
				obj = s
			}
		}
		L.SetTop(0)
		L.Push(lua.LFalse)
		L.Push(obj)
		return 2
	}
	L.Insert(lua.LTrue, 1)
	return L.GetTop()
}

// tostring is Lua's, with two changes for determinism: a number is written
// as C Lua writes it ("%.14g", where gopher-lua writes Go's shortest
// form), and a table, function or userdata is named by the order in which
// the call first printed it instead of its address, which differs on
// every replica.
func (v *vm) tostring(L *lua.LState) int {
	val := L.CheckAny(1)
	if mt, ok := L.GetMetaField(val, "__tostring").(*lua.LFunction); ok {
		L.Push(mt)
		L.Push(val)
		L.Call(1, 1)
		return 1
	}
	var s lua.LValue
	switch x := val.(type) {
	case lua.LString:
		s = val // already a value: x would be boxed again
	case lua.LNumber:
		v.text = appendNumber(v.text[:0], float64(x), 14)
		s = v.strings.value(v.text)
	default:
		s = lua.LString(v.tostringOf(val))
	}
	v.b.chargeOrRaise(L, int64(len(s.(lua.LString))))
	L.Push(s)
	return 1
}

func (v *vm) tostringOf(val lua.LValue) string {
	switch x := val.(type) {
	case lua.LString:
		return string(x)
	case lua.LNumber:
		return numberToString(float64(x))
	case *lua.LNilType:
		return "nil"
	case lua.LBool:
		if x {
			return "true"
		}
		return "false"
	}
	if v.ids == nil {
		v.ids = make(map[any]int)
	}
	id, ok := v.ids[val]
	if !ok {
		id = len(v.ids) + 1
		v.ids[val] = id
	}
	return fmt.Sprintf("%s: 0x%08x", val.Type().String(), id)
}

// collectgarbage and gcinfo answer from the memory budget's account, not
// from the Go heap, which differs on every replica: "count" is the KiB the
// call has allocated so far; collecting does nothing (Go's collector runs
// on its own).
func (v *vm) collectgarbage(L *lua.LState) int {
	opt := L.OptString(1, "collect")
	switch opt {
	case "count":
		L.Push(lua.LNumber(float64(v.b.mem) / 1024))
	case "step":
		L.Push(lua.LFalse)
	case "collect", "stop", "restart", "setpause", "setstepmul":
		L.Push(lua.LNumber(0))
	default:
		L.ArgError(1, "invalid option '"+opt+"'")
	}
	return 1
}

func (v *vm) gcinfo(L *lua.LState) int {
	L.Push(lua.LNumber(v.b.mem / 1024))
	return 1
}

// osClock answers the instructions run so far in this call at a notional
// 10^8 a second (about gopher-lua's speed): a deterministic clock that a
// script can use to measure itself.
func (v *vm) osClock(L *lua.LState) int {
	L.Push(lua.LNumber(float64(v.b.instr) / 1e8))
	return 1
}

// mathRandom is redis_math_random: Lua 5.1's math.random on Redis's
// generator.
func (v *vm) mathRandom(L *lua.LState) int {
	r := v.rng.float()
	switch L.GetTop() {
	case 0:
		L.Push(lua.LNumber(r))
	case 1:
		u := L.CheckInt(1)
		if u < 1 {
			L.RaiseError("bad argument #1 to 'random' (interval is empty)")
		}
		L.Push(lua.LNumber(floor(r*float64(u)) + 1))
	case 2:
		l, u := L.CheckInt(1), L.CheckInt(2)
		if l > u {
			L.RaiseError("bad argument #2 to 'random' (interval is empty)")
		}
		L.Push(lua.LNumber(floor(r*float64(u-l+1)) + float64(l)))
	default:
		L.RaiseError("wrong number of arguments")
	}
	return 1
}

func (v *vm) mathRandomseed(L *lua.LState) int {
	v.rng.seed(int32(L.CheckInt(1)))
	return 0
}

func floor(f float64) float64 {
	i := float64(int64(f))
	if i > f {
		i--
	}
	return i
}

// luaError is Lua 5.1's error: a string or number message gets the
// position of the function level levels up (1: the caller of error), when
// that is a Lua function; gopher-lua's own skips Go functions and leaves
// numbers without a position.
func luaError(L *lua.LState) int {
	raiseAt(L, L.Get(1), L.OptInt(2, 1)) // error() raises nil, as Lua 5.1's does
	return 0
}

// raiseAt raises obj; a string or a number gets the position of the
// function level levels up when that is a Lua function (luaL_where).
func raiseAt(L *lua.LState, obj lua.LValue, level int) {
	var msg string
	switch x := obj.(type) {
	case lua.LString:
		msg = string(x)
	case lua.LNumber:
		msg = numberToString(float64(x))
	default:
		L.Error(obj, 0)
		return
	}
	if level > 0 {
		if dbg, ok := L.GetStack(level); ok {
			if _, err := L.GetInfo("Sl", dbg, lua.LNil); err == nil && dbg.What != "G" && dbg.CurrentLine > 0 {
				msg = fmt.Sprintf("%s:%d: %s", dbg.Source, dbg.CurrentLine, msg)
			}
		}
	}
	L.Error(lua.LString(msg), 0)
}

// toNumber is Lua 5.1's tonumber: in base 10 a string converts as
// glibc's strtod reads it, decimal or hexadecimal (gopher-lua's refuses
// exponents: tonumber("1e2") was nil); surrounding white space is allowed.
// Other bases are gopher-lua's.
func toNumber(orig lua.LGFunction) lua.LGFunction {
	return func(L *lua.LState) int {
		if L.GetTop() >= 2 && L.Get(2) != lua.LNil {
			if n, ok := L.Get(2).(lua.LNumber); !ok || n != 10 {
				return orig(L)
			}
		}
		switch x := L.CheckAny(1).(type) {
		case lua.LNumber:
			L.Push(x)
		case lua.LString:
			if f, ok := strToNumber(string(x)); ok {
				L.Push(lua.LNumber(f))
			} else {
				L.Push(lua.LNil)
			}
		default:
			L.Push(lua.LNil)
		}
		return 1
	}
}

// strToNumber is Lua 5.1's luaO_str2d on glibc.
func strToNumber(s string) (float64, bool) {
	t := strings.TrimFunc(s, isCSpace)
	if t == "" {
		return 0, false
	}
	body := strings.TrimLeft(t, "+-")
	if len(t)-len(body) > 1 || strings.ContainsRune(body, '_') {
		return 0, false
	}
	if len(body) > 2 && body[0] == '0' && (body[1] == 'x' || body[1] == 'X') {
		// glibc's strtod reads hexadecimal, with an optional binary
		// exponent, which Go's ParseFloat requires.
		if !strings.ContainsAny(body, "pP") {
			t += "p0"
		}
	} else if strings.ContainsAny(body, "xXpP") {
		return 0, false
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil {
		var ne *strconv.NumError
		if !errors.As(err, &ne) || ne.Err != strconv.ErrRange {
			return 0, false
		}
	}
	return f, true
}

func isCSpace(r rune) bool {
	return r == ' ' || r == '\t' || r == '\n' || r == '\v' || r == '\f' || r == '\r'
}
