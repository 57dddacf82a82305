package scripting

import (
	"strconv"

	lua "github.com/yuin/gopher-lua"

	"github.com/redcell/redcell/internal/resp3"
)

// fromRESP converts a command's reply, RESP bytes in the script's
// protocol, to a Lua value as Redis 7.0's redisProtocolToLuaType does:
// integer → number, bulk → string, nil bulk or nil array → false, array →
// table, status → {ok = s}, error → {err = s}; RESP3's map → {map = t},
// set → {set = t} (members true), null → nil, double → {double = n},
// boolean → boolean, big number → {big_number = s}, verbatim →
// {verbatim_string = {format = f, string = s}}. The reply's bytes, and a
// slot for each element, are charged to the memory budget.
func (v *vm) fromRESP(L *lua.LState, b []byte) lua.LValue {
	v.b.chargeOrRaise(L, int64(len(b)))
	val, _ := v.fromRESPItem(L, b)
	return val
}

func (v *vm) fromRESPItem(L *lua.LState, b []byte) (lua.LValue, []byte) {
	// RESP2's null bulk string and null array, which resp3.Read (RESP3's
	// reader) does not know.
	if len(b) >= 5 && (b[0] == '$' || b[0] == '*') && string(b[1:5]) == "-1\r\n" {
		return lua.LFalse, b[5:]
	}
	it, rest, ok := resp3.Read(b)
	if !ok {
		return lua.LFalse, nil
	}
	switch it.Type {
	case ':':
		n, _ := strconv.ParseInt(string(it.Line), 10, 64)
		return lua.LNumber(n), rest
	case '$':
		return v.strings.value(it.Blob), rest
	case '+':
		s := okStatus
		if string(it.Line) != "OK" {
			s = lua.LString(it.Line)
		}
		return v.tables.statusTable(L, s), rest
	case '-':
		t := errTable(L, "-"+string(it.Line))
		t.RawSetString("ignore_error_stats_update", lua.LTrue)
		return t, rest
	case '_':
		return lua.LNil, rest
	case '#':
		return lua.LBool(it.Line[0] == 't'), rest
	case ',':
		f, _ := strconv.ParseFloat(string(it.Line), 64)
		t := L.CreateTable(0, 1)
		t.RawSetString("double", lua.LNumber(f))
		return t, rest
	case '(':
		t := L.CreateTable(0, 1)
		t.RawSetString("big_number", lua.LString(it.Line))
		return t, rest
	case '=':
		inner := L.CreateTable(0, 2)
		inner.RawSetString("format", lua.LString(it.Blob[:3]))
		inner.RawSetString("string", lua.LString(it.Blob[4:]))
		t := L.CreateTable(0, 1)
		t.RawSetString("verbatim_string", inner)
		return t, rest
	case '*':
		v.b.chargeOrRaise(L, int64(it.N)*slotCost)
		t := v.tables.arrayTable(L, it.N)
		for i := 1; i <= it.N; i++ {
			var el lua.LValue
			el, rest = v.fromRESPItem(L, rest)
			t.RawSetInt(i, el)
		}
		return t, rest
	case '~':
		v.b.chargeOrRaise(L, int64(it.N)*slotCost)
		set := L.CreateTable(0, it.N)
		for range it.N {
			var el lua.LValue
			el, rest = v.fromRESPItem(L, rest)
			if el != lua.LNil {
				set.RawSet(el, lua.LTrue)
			}
		}
		t := L.CreateTable(0, 1)
		t.RawSetString("set", set)
		return t, rest
	case '%':
		v.b.chargeOrRaise(L, 2*int64(it.N)*slotCost)
		m := L.CreateTable(0, it.N)
		for range it.N {
			var k, el lua.LValue
			k, rest = v.fromRESPItem(L, rest)
			el, rest = v.fromRESPItem(L, rest)
			if k != lua.LNil {
				m.RawSet(k, el)
			}
		}
		t := L.CreateTable(0, 1)
		t.RawSetString("map", m)
		return t, rest
	}
	return lua.LFalse, nil
}

// maxReplyDepth caps the nesting of a script's reply (below
// resp3.MaxDepth, which the reply's decoder accepts): a deeper table, a
// table that contains itself, is written as Redis writes what it cannot
// descend into, the error "reached lua stack limit", in its place.
const maxReplyDepth = 100

// reply appends the script's return value as RESP3 bytes, converted as
// Redis 7.0's luaReplyToRedisReply does. The bytes written are charged to
// the memory budget (a table that holds one long string a million times
// would otherwise make a reply of terabytes); ok is false when they
// exceed it.
func (v *vm) reply(dst []byte, val lua.LValue) ([]byte, bool) {
	start := len(dst)
	dst = v.appendValue(dst, val, 0, start)
	if v.b.over != withinBudget {
		return dst[:start], false
	}
	return dst, true
}

func (v *vm) appendValue(dst []byte, val lua.LValue, depth, start int) []byte {
	if v.b.over != withinBudget {
		return dst
	}
	if int64(len(dst)-start) > v.b.maxMem-v.b.mem {
		v.b.charge(int64(len(dst) - start))
		return dst
	}
	switch x := val.(type) {
	case lua.LString:
		return appendBulk(dst, string(x))
	case lua.LNumber:
		return appendInt(dst, ':', luaToInteger(float64(x)))
	case lua.LBool:
		switch {
		case v.resp == 3 && bool(x):
			return append(dst, "#t\r\n"...)
		case v.resp == 3:
			return append(dst, "#f\r\n"...)
		case bool(x):
			return append(dst, ":1\r\n"...)
		}
		return append(dst, "_\r\n"...)
	case *lua.LTable:
		if depth >= maxReplyDepth {
			return append(dst, "-ERR reached lua stack limit\r\n"...)
		}
		return v.appendTable(dst, x, depth, start)
	}
	return append(dst, "_\r\n"...)
}

func (v *vm) appendTable(dst []byte, t *lua.LTable, depth, start int) []byte {
	if s, ok := t.RawGetString("err").(lua.LString); ok {
		return appendError(dst, string(s))
	}
	if s, ok := t.RawGetString("ok").(lua.LString); ok {
		return appendLine(dst, '+', cString(string(s)))
	}
	if n, ok := t.RawGetString("double").(lua.LNumber); ok {
		dst = append(dst, ',')
		dst = appendNumber(dst, float64(n), 17)
		return append(dst, '\r', '\n')
	}
	if s, ok := t.RawGetString("big_number").(lua.LString); ok {
		return appendLine(dst, '(', string(s))
	}
	if vs, ok := t.RawGetString("verbatim_string").(*lua.LTable); ok {
		f, okf := vs.RawGetString("format").(lua.LString)
		s, oks := vs.RawGetString("string").(lua.LString)
		if okf && oks {
			format := (string(f) + "   ")[:3]
			dst = append(dst, '=')
			dst = strconv.AppendInt(dst, int64(len(s)+4), 10)
			dst = append(dst, '\r', '\n')
			dst = append(dst, format...)
			dst = append(dst, ':')
			dst = append(dst, s...)
			return append(dst, '\r', '\n')
		}
	}
	// Maps and sets are walked with Next, in the table's insertion order:
	// gopher-lua's ForEach ranges over Go maps, whose order differs from
	// run to run and from replica to replica.
	if m, ok := t.RawGetString("map").(*lua.LTable); ok {
		dst = appendInt(dst, '%', int64(count(m)))
		for k, val := m.Next(lua.LNil); k != lua.LNil; k, val = m.Next(k) {
			dst = v.appendValue(dst, k, depth+1, start)
			dst = v.appendValue(dst, val, depth+1, start)
		}
		return dst
	}
	if s, ok := t.RawGetString("set").(*lua.LTable); ok {
		dst = appendInt(dst, '~', int64(count(s)))
		for k, _ := s.Next(lua.LNil); k != lua.LNil; k, _ = s.Next(k) {
			dst = v.appendValue(dst, k, depth+1, start)
		}
		return dst
	}
	n := 0
	for t.RawGetInt(n+1) != lua.LNil {
		n++
	}
	dst = appendInt(dst, '*', int64(n))
	for i := 1; i <= n; i++ {
		dst = v.appendValue(dst, t.RawGetInt(i), depth+1, start)
	}
	return dst
}

// luaToInteger is C's (long long) cast of a Lua number, defined for the
// values C leaves undefined as x86-64 answers them (NaN and out-of-range
// values are the minimum integer).
func luaToInteger(f float64) int64 {
	if f != f || f >= 9.223372036854775807e18 || f < -9.223372036854775808e18 {
		return -1 << 63
	}
	return int64(f)
}

// cString is the text up to a NUL, with CR and LF made spaces (a status
// reply's sdsnew and sdsmapchars).
func cString(s string) string {
	b := []byte(nil)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == 0 {
			break
		}
		if c == '\r' || c == '\n' {
			c = ' '
		}
		b = append(b, c)
	}
	return string(b)
}

func appendBulk(dst []byte, s string) []byte {
	dst = appendInt(dst, '$', int64(len(s)))
	dst = append(dst, s...)
	return append(dst, '\r', '\n')
}

func appendInt(dst []byte, typ byte, n int64) []byte {
	dst = append(dst, typ)
	dst = strconv.AppendInt(dst, n, 10)
	return append(dst, '\r', '\n')
}

func appendLine(dst []byte, typ byte, s string) []byte {
	dst = append(dst, typ)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\r' || c == '\n' {
			c = ' '
		}
		dst = append(dst, c)
	}
	return append(dst, '\r', '\n')
}

// count is the number of keys of t.
func count(t *lua.LTable) int {
	n := 0
	for k, _ := t.Next(lua.LNil); k != lua.LNil; k, _ = t.Next(k) {
		n++
	}
	return n
}
