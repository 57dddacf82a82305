package scripting

import (
	"fmt"
	"math"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// The cjson library is lua-cjson 2.1.0 (lua_cjson.c, with Redis's patches)
// as Redis 7.0 builds it: the global cjson with encode, decode, the seven
// configuration functions, new, null, _NAME and _VERSION. Numbers encode with
// "%.14g", '/' and control characters are escaped, a table is an array when
// its keys are 1..n (a few holes allowed: "excessively sparse" otherwise), an
// empty table is "{}", nesting is limited to 1000 levels each way, JSON null
// decodes to cjson.null. Decoding reads the input as the C code reads a C
// string: a NUL byte ends it.

// cjsonConfig is json_config_t: one per module table (cjson.new makes
// another), shared by the module's functions.
type cjsonConfig struct {
	sparseConvert         int
	sparseRatio           int
	sparseSafe            int
	encodeMaxDepth        int
	decodeMaxDepth        int
	encodeInvalidNumbers  int // 0 off, 1 on, 2 "null"
	encodeNumberPrecision int
	encodeKeepBuffer      int
	decodeInvalidNumbers  int
}

func defaultCJSONConfig() *cjsonConfig {
	return &cjsonConfig{
		sparseConvert:         0,
		sparseRatio:           2,
		sparseSafe:            10,
		encodeMaxDepth:        1000,
		decodeMaxDepth:        1000,
		encodeInvalidNumbers:  0,
		encodeNumberPrecision: 14,
		encodeKeepBuffer:      1,
		decodeInvalidNumbers:  1,
	}
}

// newCJSONModuleWithConfig builds a cjson table using cfg, with null as
// cjson.null: the value JSON null decodes to and that encodes as null. (In C
// it is the NULL light userdata, the same for every cjson table; here one
// userdata per state, shared by the tables cjson.new makes.)
func newCJSONModuleWithConfig(L *lua.LState, cfg *cjsonConfig, null *lua.LUserData) *lua.LTable {
	module := L.NewTable()
	libSetFuncs(L, module, map[string]lua.LGFunction{
		"encode": func(L *lua.LState) int { return cjsonEncode(L, cfg, null) },
		"decode": func(L *lua.LState) int { return cjsonDecode(L, cfg, null) },
		"encode_sparse_array": func(L *lua.LState) int {
			cjsonArgInit(L, 3)
			cjsonEnumOption(L, 1, &cfg.sparseConvert, nil)
			cjsonIntegerOption(L, 2, &cfg.sparseRatio, 0, math.MaxInt32)
			cjsonIntegerOption(L, 3, &cfg.sparseSafe, 0, math.MaxInt32)
			return 3
		},
		"encode_max_depth": func(L *lua.LState) int {
			cjsonArgInit(L, 1)
			return cjsonIntegerOption(L, 1, &cfg.encodeMaxDepth, 1, math.MaxInt32)
		},
		"decode_max_depth": func(L *lua.LState) int {
			cjsonArgInit(L, 1)
			return cjsonIntegerOption(L, 1, &cfg.decodeMaxDepth, 1, math.MaxInt32)
		},
		"encode_number_precision": func(L *lua.LState) int {
			cjsonArgInit(L, 1)
			return cjsonIntegerOption(L, 1, &cfg.encodeNumberPrecision, 1, 14)
		},
		"encode_keep_buffer": func(L *lua.LState) int {
			// Only where the encoder's buffer lives; nothing a script sees.
			cjsonArgInit(L, 1)
			return cjsonEnumOption(L, 1, &cfg.encodeKeepBuffer, nil)
		},
		"encode_invalid_numbers": func(L *lua.LState) int {
			cjsonArgInit(L, 1)
			return cjsonEnumOption(L, 1, &cfg.encodeInvalidNumbers, []string{"off", "on", "null"})
		},
		"decode_invalid_numbers": func(L *lua.LState) int {
			cjsonArgInit(L, 1)
			return cjsonEnumOption(L, 1, &cfg.decodeInvalidNumbers, nil)
		},
		"new": func(L *lua.LState) int {
			L.Push(newCJSONModuleWithConfig(L, defaultCJSONConfig(), null))
			return 1
		},
	})
	module.RawSetString("null", null)
	module.RawSetString("_NAME", lua.LString("cjson"))
	module.RawSetString("_VERSION", lua.LString("2.1.0"))
	return module
}

// cjsonArgInit is json_arg_init: at most args arguments, padded with nil.
func cjsonArgInit(L *lua.LState, args int) {
	if L.GetTop() > args {
		capiArgError(L, args+1, "found too many arguments")
	}
	for L.GetTop() < args {
		L.Push(lua.LNil)
	}
}

// cjsonIntegerOption is json_integer_option: set the setting from argument
// i when it is not nil (range errors name argument 1, as in C), push it.
func cjsonIntegerOption(L *lua.LState, i int, setting *int, min, max int) int {
	if L.Get(i) != lua.LNil {
		value := int(int32(capiCheckInteger(L, i))) // lua_Integer into a C int
		if value < min || value > max {
			capiArgError(L, 1, fmt.Sprintf("expected integer between %d and %d", min, max))
		}
		*setting = value
	}
	L.Push(lua.LNumber(*setting))
	return 1
}

// cjsonEnumOption is json_enum_option with bool_true 1: a boolean, or one of
// options by name ("off", "on" by default); pushes a boolean for 0 and 1 and
// the option's name otherwise.
func cjsonEnumOption(L *lua.LState, i int, setting *int, options []string) int {
	if options == nil {
		options = []string{"off", "on"}
	}
	v := L.Get(i)
	if v != lua.LNil {
		if b, ok := v.(lua.LBool); ok {
			*setting = 0
			if b {
				*setting = 1
			}
		} else {
			name := capiCheckLString(L, i)
			found := -1
			for j, o := range options {
				if o == name {
					found = j
					break
				}
			}
			if found < 0 {
				capiArgError(L, i, "invalid option '"+cStringPrefix(name)+"'")
			}
			*setting = found
		}
	}
	if *setting == 0 || *setting == 1 {
		L.Push(lua.LBool(*setting == 1))
	} else {
		L.Push(lua.LString(options[*setting]))
	}
	return 1
}

// cStringPrefix is s as C's "%s" prints it: up to the first NUL.
func cStringPrefix(s string) string {
	if i := strings.IndexByte(s, 0); i >= 0 {
		return s[:i]
	}
	return s
}

// cjsonEncoder carries one encode call. slots counts the C function's Lua
// stack use (the argument, 1 per array level, 2 per object level), which C
// checks with lua_checkstack and reports as excessive nesting.
type cjsonEncoder struct {
	L     *lua.LState
	cfg   *cjsonConfig
	null  *lua.LUserData
	buf   []byte
	guard libOutputGuard
}

func cjsonEncode(L *lua.LState, cfg *cjsonConfig, null *lua.LUserData) int {
	if L.GetTop() != 1 {
		capiArgError(L, 1, "expected 1 argument")
	}
	e := &cjsonEncoder{L: L, cfg: cfg, null: null}
	e.guard = libOutputGuard{L: L, tooLarge: "Cannot serialise, result larger than 536870912 bytes"}
	e.appendData(L.Get(1), 0, 1)
	L.Push(lua.LString(e.buf))
	return 1
}

func (e *cjsonEncoder) fail(v lua.LValue, reason string) {
	capiRaise(e.L, "Cannot serialise %s: %s", v.Type().String(), reason)
}

func (e *cjsonEncoder) appendData(v lua.LValue, depth, slots int) {
	e.guard.check(len(e.buf))
	switch x := v.(type) {
	case lua.LString:
		e.appendString(string(x))
	case lua.LNumber:
		e.appendNumber(x)
	case lua.LBool:
		if x {
			e.buf = append(e.buf, "true"...)
		} else {
			e.buf = append(e.buf, "false"...)
		}
	case *lua.LTable:
		depth++
		if depth > e.cfg.encodeMaxDepth || slots+3 > capiCStackLimit {
			capiRaise(e.L, "Cannot serialise, excessive nesting (%d)", depth)
		}
		if n := e.arrayLength(x); n > 0 {
			e.appendArray(x, n, depth, slots)
		} else {
			e.appendObject(x, depth, slots)
		}
	case *lua.LNilType:
		e.buf = append(e.buf, "null"...)
	case *lua.LUserData:
		if x != e.null {
			e.fail(v, "type not supported")
		}
		e.buf = append(e.buf, "null"...)
	default:
		e.fail(v, "type not supported")
	}
}

// cjsonEscapes is char2escape: control characters, '"', '/', '\\' and DEL.
var cjsonEscapes = func() [256]string {
	var t [256]string
	for c := 0; c < 0x20; c++ {
		t[c] = fmt.Sprintf("\\u%04x", c)
	}
	t['\b'], t['\t'], t['\n'], t['\f'], t['\r'] = "\\b", "\\t", "\\n", "\\f", "\\r"
	t['"'], t['/'], t['\\'], t[0x7f] = "\\\"", "\\/", "\\\\", "\\u007f"
	return t
}()

func (e *cjsonEncoder) appendString(s string) {
	e.buf = append(e.buf, '"')
	for i := 0; i < len(s); i++ {
		if esc := cjsonEscapes[s[i]]; esc != "" {
			e.buf = append(e.buf, esc...)
		} else {
			e.buf = append(e.buf, s[i])
		}
	}
	e.buf = append(e.buf, '"')
}

func (e *cjsonEncoder) appendNumber(n lua.LNumber) {
	num := float64(n)
	switch e.cfg.encodeInvalidNumbers {
	case 0:
		if math.IsInf(num, 0) || math.IsNaN(num) {
			e.fail(n, "must not be NaN or Inf")
		}
	case 1:
		if math.IsNaN(num) {
			e.buf = append(e.buf, "nan"...)
			return
		}
	default:
		if math.IsInf(num, 0) || math.IsNaN(num) {
			e.buf = append(e.buf, "null"...)
			return
		}
	}
	e.buf = cAppendFormatG(e.buf, num, e.cfg.encodeNumberPrecision)
}

// arrayLength is lua_array_length: the largest key when every key is a
// positive integral number (the C code keeps it in an int, so a key of 2^31
// or more turns it negative and the table into an object), -1 for an
// object; an excessively sparse array is an object or an error.
func (e *cjsonEncoder) arrayLength(t *lua.LTable) int {
	var max, items int32
	for k, _ := t.Next(lua.LNil); k != lua.LNil; k, _ = t.Next(k) {
		kn, ok := k.(lua.LNumber)
		f := float64(kn)
		if !ok || f == 0 || math.Floor(f) != f || f < 1 {
			return -1
		}
		if f > float64(max) {
			max = cDoubleToInt32(f)
		}
		items++
	}
	ratio := int32(e.cfg.sparseRatio)
	if ratio > 0 && max > items*ratio && max > int32(e.cfg.sparseSafe) {
		if e.cfg.sparseConvert == 0 {
			e.fail(t, "excessively sparse array")
		}
		return -1
	}
	return int(max)
}

func (e *cjsonEncoder) appendArray(t *lua.LTable, n, depth, slots int) {
	e.buf = append(e.buf, '[')
	for i := 1; i <= n; i++ {
		if i > 1 {
			e.buf = append(e.buf, ',')
		}
		e.appendData(t.RawGetInt(i), depth, slots+1)
	}
	e.buf = append(e.buf, ']')
}

func (e *cjsonEncoder) appendObject(t *lua.LTable, depth, slots int) {
	e.buf = append(e.buf, '{')
	first := true
	for k, v := t.Next(lua.LNil); k != lua.LNil; k, v = t.Next(k) {
		if !first {
			e.buf = append(e.buf, ',')
		}
		first = false
		switch key := k.(type) {
		case lua.LNumber:
			e.buf = append(e.buf, '"')
			e.appendNumber(key)
			e.buf = append(e.buf, '"', ':')
		case lua.LString:
			e.appendString(string(key))
			e.buf = append(e.buf, ':')
		default:
			e.fail(k, "table key must be a number or string")
		}
		e.appendData(v, depth, slots+2)
	}
	e.buf = append(e.buf, '}')
}
