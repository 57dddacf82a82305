package scripting

import (
	lua "github.com/yuin/gopher-lua"
)

// openRedisLibs opens the four C libraries Redis 7.0 links into its Lua
// interpreter as the globals cjson, cmsgpack, bit and struct, with the
// function sets and behaviour of the versions Redis vendors (lua-cjson 2.1.0
// with Redis's patches, lua-cmsgpack 0.4.0, LuaBitOp 1.0.2, struct 0.2).
//
// It runs on the goroutine that owns L, like every other call on an LState.
// The libraries keep no state outside L (cjson's configuration lives in the
// closures it registers, and in L's registry for resetRedisLibs), so states
// opened this way are independent.
func openRedisLibs(L *lua.LState) {
	cfg := defaultCJSONConfig()
	L.G.Registry.RawSetString(libsCJSONConfigKey, &lua.LUserData{Value: cfg})
	L.SetGlobal("cjson", newCJSONModuleWithConfig(L, cfg, &lua.LUserData{}))
	L.SetGlobal("struct", newStructModule(L))
	L.SetGlobal("cmsgpack", newCmsgpackModule(L))
	L.SetGlobal("bit", newBitModule(L))
}

// libsCJSONConfigKey is where openRedisLibs keeps, in the state's registry,
// the configuration of the global cjson for resetRedisLibs.
const libsCJSONConfigKey = "redcell.scripting.cjson.config"

// resetRedisLibs puts the libraries' settings in L back to their defaults:
// cjson's encode_sparse_array, encode_max_depth, decode_max_depth,
// encode_number_precision, encode_keep_buffer, encode_invalid_numbers and
// decode_invalid_numbers (the other three libraries keep no settings).
//
// Redis keeps what a script sets there for every later script of the server
// (until SCRIPT FLUSH). A replicated script must not depend on which scripts
// ran before it on this node's state, nor on when the node last restarted, so
// the engine calls this before each script: a deliberate difference.
func resetRedisLibs(L *lua.LState) {
	if ud, ok := L.G.Registry.RawGetString(libsCJSONConfigKey).(*lua.LUserData); ok {
		if cfg, ok := ud.Value.(*cjsonConfig); ok {
			*cfg = *defaultCJSONConfig()
		}
	}
}

// libSetFuncs fills module with Go functions, as luaL_register does.
func libSetFuncs(L *lua.LState, module *lua.LTable, funcs map[string]lua.LGFunction) {
	for name, fn := range funcs {
		module.RawSetString(name, L.NewFunction(fn))
	}
}

// libMaxResultBytes bounds the strings cjson.encode and cmsgpack.pack build.
// A table that holds the same subtable many times is encoded once per
// reference, so a small structure can ask for an output of any size, and the
// work is done in Go, where the VM's instruction budget does not see it.
// 512 MB is Redis's proto-max-bulk-len: no client could receive more.
// The error texts below spell it out.
const libMaxResultBytes = 512 << 20

// libOutputGuard watches a result as it grows: an error past
// libMaxResultBytes, and every 64 KiB a check of the script's budget (the
// state's context), so that an encoding too large for it stops there.
type libOutputGuard struct {
	L         *lua.LState
	tooLarge  string // the error text
	nextCheck int
}

func (g *libOutputGuard) check(size int) {
	if size < g.nextCheck {
		return
	}
	g.nextCheck = size + 64<<10
	if size > libMaxResultBytes {
		capiRaise(g.L, "%s", g.tooLarge)
	}
	// The engine's budget is the state's context (budget.go): its Err is
	// always set, so ask the budget itself whether the call is spent or the
	// output so far no longer fits its memory budget.
	switch ctx := g.L.Context().(type) {
	case nil:
	case *stateBudget:
		b := ctx.budget
		if b.over == withinBudget && !b.fits(int64(size)) {
			b.over = memorySpent
		}
		if b.over != withinBudget {
			capiRaise(g.L, "%s", b.text())
		}
	default:
		if ctx.Err() != nil {
			capiRaise(g.L, "%s", ctx.Err().Error())
		}
	}
}
