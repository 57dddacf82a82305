package scripting

import (
	"math"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"

	"github.com/redcell/redcell/request"
	"github.com/redcell/redcell/resp"
)

// vm is one interpreter state with Redis's environment, and what a call
// needs beside it. A vm runs one call at a time, on the goroutine that
// called Engine.Run; between calls it sits in the engine's pool.
//
// What a script could change and leave for the next call is either
// protected or reset by begin: the globals and every library table are
// read-only proxies (env.go) emptied after a call that rawset into one,
// KEYS and ARGV are new tables, the script's function gets the
// protected environment again, the reply protocol is back to RESP2 and
// math.random is seeded from the call. So a call's outcome depends only on
// the call, whichever vm of whichever replica runs it.
type vm struct {
	e *Engine
	L *lua.LState
	b budget

	globals    *lua.LTable // the real globals (behind the proxy)
	env        *lua.LTable // the proxy that scripts see as _G
	proxies    []libProxy  // the library tables' proxies, reset when written to
	stringMeta *lua.LTable // the strings' metatable: __index the string table, __metatable its proxy
	fns        map[*script]*lua.LFunction
	onError    *lua.LFunction // the message handler that adds source and line (__redis__err__handler)

	rng      redisRand
	resp     int  // the protocol redis.call's replies are read in (redis.setresp)
	readOnly bool // a write command is refused (EVAL_RO, or flags=no-writes)

	call *Call
	x    Executor

	// Reused by redis.call, so that a call allocates as little as it can.
	args  [][]byte
	arena []byte
	lower []byte
	w     resp.Writer
	req   request.Request
	res   request.Result

	ids map[any]int // tostring's stand-ins for addresses, per call

	keys, argv luaArray    // KEYS and ARGV, reused from call to call
	tables     replyTables // redis.call's reply tables, reused from call to call
	strings    shortStrings
	text       []byte // scratch for numbers' texts
}

// libProxy is a global that names a library table through a proxy.
type libProxy struct {
	name  string
	proxy *lua.LTable
	meta  *lua.LTable
}

func newVM(e *Engine) *vm {
	L := lua.NewState(lua.Options{
		SkipOpenLibs:     true,
		CallStackSize:    maxCallDepth,
		RegistrySize:     initialStackSlots,
		RegistryMaxSize:  maxStackSlots,
		RegistryGrowStep: 4096, // gopher-lua grows by a fixed step, copying the stack each time

	})
	v := &vm{e: e, L: L, fns: make(map[*script]*lua.LFunction)}
	v.b.reset(e.cfg.MaxInstructions, e.cfg.MaxMemory)
	L.SetContext(&stateBudget{budget: &v.b, L: L})
	v.openEnvironment()
	return v
}

const (
	// maxCallDepth bounds nested calls (Lua and Go frames): deeper
	// recursion is the Lua error "stack overflow", not a crash.
	maxCallDepth = 1000
	// maxStackSlots bounds the value stack (16 bytes a slot): unpack of a
	// huge table or string.byte of a huge string is an error ("registry
	// overflow"; C Lua answers "too many results"), not an allocation of
	// gigabytes. 64Ki slots hold a thousand nested calls of 64 registers.
	maxStackSlots = 1 << 16
	// initialStackSlots is the value stack a state starts with.
	initialStackSlots = 4096
	// maxFunctions bounds the per-state cache of script functions.
	maxFunctions = 256
)

// run runs one call on v and appends its reply to dst.
func (v *vm) run(dst []byte, s *script, c *Call, x Executor) []byte {
	L := v.L
	fn := v.fns[s]
	if fn == nil {
		if len(v.fns) >= maxFunctions {
			clear(v.fns)
		}
		fn = L.NewFunctionFromProto(s.proto)
		v.fns[s] = fn
	}
	v.begin(c, x)
	if s.NoWrites {
		v.readOnly = true
	}
	// The environment: the read-only proxy of the globals, whose writes
	// raise Redis's error; or, for a script that assigns no global, the
	// globals themselves, since nothing it runs can write to its
	// environment (setsGlobals): writes through _G still meet the proxy,
	// a read of a global that does not exist still meets the globals'
	// metatable, and a chunk that loadstring compiles gets the proxy.
	fn.Env = v.env
	if !s.setsGlobals {
		fn.Env = v.globals
	}
	L.Push(fn)
	err := L.PCall(0, 1, v.onError)
	switch {
	case v.b.over == instructionsSpent && v.b.maxInstr < v.e.cfg.MaxInstructions:
		c.Sliced = true
	case v.b.over != withinBudget:
		dst = appendError(dst, v.b.text())
	case err != nil:
		dst = appendScriptError(dst, err, c.SHA)
	default:
		var ok bool
		if dst, ok = v.reply(dst, L.Get(-1)); !ok {
			dst = appendError(dst, v.b.text())
		}
	}
	v.end()
	return dst
}

// begin prepares v for call c.
func (v *vm) begin(c *Call, x Executor) {
	v.call, v.x, v.readOnly = c, x, c.ReadOnly
	v.resp = 2
	maxInstr := v.e.cfg.MaxInstructions
	if c.Slice > 0 && c.Slice < maxInstr {
		maxInstr = c.Slice
	}
	c.Sliced = false
	v.b.reset(maxInstr, v.e.cfg.MaxMemory)
	v.rng.seed(int32(c.Seed ^ c.Seed>>32))
	resetRedisLibs(v.L) // cjson's settings: Redis keeps a script's for the next (libs.go)
	v.keys = v.reuseArray(v.keys, c.Keys)
	v.argv = v.reuseArray(v.argv, c.Args)
	v.globals.RawSetString("KEYS", v.keys.t)
	v.globals.RawSetString("ARGV", v.argv.t)
}

// end forgets the call and undoes what a script may have left.
func (v *vm) end() {
	v.call, v.x = nil, nil
	v.L.SetTop(0)
	v.resetProxies()
	v.tables.reclaim()
	if v.ids != nil {
		clear(v.ids)
	}
	v.res = request.Result{}
	v.req = request.Request{}
}

// luaArray is KEYS or ARGV as the last call left it: the table and the
// strings it was given, so that the next call with as many items reuses
// the table, and the strings that are the same bytes again. The strings
// are kept as Lua values: converting a string to one allocates.
type luaArray struct {
	t     *lua.LTable
	items []lua.LValue // each an lua.LString
}

// reuseArray makes a into the Lua array of items. The table is reused
// when it holds exactly what was put in it (a script may have added to it:
// then it is replaced, so nothing reaches the next call), and each string
// is reused when its bytes are the same.
func (v *vm) reuseArray(a luaArray, items [][]byte) luaArray {
	if a.t == nil || len(a.items) != len(items) || !a.untouched() {
		a.t = v.L.CreateTable(len(items), 0)
		a.items = a.items[:0]
		for _, it := range items {
			a.items = append(a.items, lua.LString(it))
		}
		for i, s := range a.items {
			a.t.RawSetInt(i+1, s)
		}
		return a
	}
	for i, it := range items {
		if string(a.items[i].(lua.LString)) != string(it) {
			a.items[i] = lua.LString(it)
		}
		a.t.RawSetInt(i+1, a.items[i])
	}
	return a
}

// untouched reports whether the table holds only its n items' slots.
func (a *luaArray) untouched() bool {
	return a.t.Metatable == lua.LNil && onlyArray(a.t, len(a.items))
}

// onlyArray reports whether t has no entries but the keys 1..n (its
// slot n non-nil): a table whose slots 1..n, once set again, is as new.
func onlyArray(t *lua.LTable, n int) bool {
	if t.MaxN() != n {
		return false
	}
	k, _ := t.Next(lua.LNumber(n))
	if n == 0 {
		k, _ = t.Next(lua.LNil)
	}
	return k == lua.LNil
}

// appendError appends an error reply of text (which carries its code),
// made safe for the protocol as Redis does (cut at a NUL, CR and LF
// spaces).
func appendError(dst []byte, text string) []byte {
	dst = append(dst, '-')
	for i := 0; i < len(text); i++ {
		c := text[i]
		if c == 0 {
			break
		}
		if c == '\r' || c == '\n' {
			c = ' '
		}
		dst = append(dst, c)
	}
	return append(dst, '\r', '\n')
}

// appendScriptError appends the reply to a script that raised an error, as
// Redis 7.0's luaCallFunction words it: the error's text, then, when the
// message handler found where it was raised, " script: <sha>, on
// <source>:<line>.".
func appendScriptError(dst []byte, err error, sha string) []byte {
	ae, ok := err.(*lua.ApiError)
	if !ok {
		return appendError(dst, "ERR "+err.Error())
	}
	t, ok := ae.Object.(*lua.LTable)
	if !ok {
		// The message handler could not run (the error is a stack
		// overflow, which leaves no room to call it): its work is done
		// here, the line read from the message's position.
		msg := luaString(ae.Object)
		text := "ERR " + msg
		if rest, ok := strings.CutPrefix(msg, "user_script:"); ok {
			if i := strings.IndexByte(rest, ':'); i > 0 {
				text += " script: " + sha + ", on @user_script:" + rest[:i] + "."
			}
		}
		return appendError(dst, text)
	}
	msg := luaString(t.RawGetString("err"))
	if len(msg) > 0 && msg[0] == '-' {
		msg = msg[1:]
	}
	text := msg
	source, line := t.RawGetString("source"), t.RawGetString("line")
	if isStringish(source) && isStringish(line) {
		text += " script: " + sha + ", on " + luaString(source) + ":" + luaString(line) + "."
	}
	return appendError(dst, text)
}

func isStringish(v lua.LValue) bool {
	switch v.(type) {
	case lua.LString, lua.LNumber:
		return true
	}
	return false
}

// luaString is lua_tostring of a string or a number ("" otherwise).
func luaString(v lua.LValue) string {
	switch s := v.(type) {
	case lua.LString:
		return string(s)
	case lua.LNumber:
		return numberToString(float64(s))
	}
	return ""
}

// numberToString is Lua 5.1's tostring of a number ("%.14g").
func numberToString(f float64) string {
	return string(appendNumber(nil, f, 14))
}

// appendNumber appends f as C's "%.<prec>g" does (inf, -inf, nan, -nan).
func appendNumber(dst []byte, f float64, prec int) []byte {
	switch {
	case f != f:
		if math.Signbit(f) {
			return append(dst, "-nan"...)
		}
		return append(dst, "nan"...)
	case f > 1.7976931348623157e308:
		return append(dst, "inf"...)
	case f < -1.7976931348623157e308:
		return append(dst, "-inf"...)
	}
	return strconv.AppendFloat(dst, f, 'g', prec, 64)
}
