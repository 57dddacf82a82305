package scripting

import (
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"

	"github.com/redcell/redcell/scripting/internal/luapattern"
)

// string.find, string.match, string.gmatch and string.gsub, as gopher-lua
// writes them (stringlib.go) but on the budgeted matcher (package
// luapattern): each step of the matcher costs one instruction of the
// call's budget, and each match found a slot of its memory budget, so a
// backtracking pattern or a match of every character of a long subject
// stops with the budget's error instead of holding the state machine for
// minutes or allocating gigabytes. gsub also builds its result in one
// pass (gopher-lua's copies the whole string at each replacement).

// matchCost is what one match found is charged: its capture positions.
const matchCost = 48

func (v *vm) openPatterns(str *lua.LTable) {
	L := v.L
	str.RawSetString("find", L.NewFunction(v.strFind))
	str.RawSetString("match", L.NewFunction(v.strMatch))
	str.RawSetString("gmatch", L.NewFunction(v.strGmatch))
	str.RawSetString("gfind", L.NewFunction(v.strGmatch))
	str.RawSetString("gsub", L.NewFunction(v.strGsub))
}

// find runs the matcher with the instructions and memory left, charges
// what it used, and raises the budget's error or the pattern's.
func (v *vm) find(L *lua.LState, pattern, str string, offset, limit int) []*luapattern.MatchData {
	steps := v.b.maxInstr - v.b.instr
	byMemory := int((v.b.maxMem-v.b.mem)/matchCost) + 1
	capped := limit < 0 || limit > byMemory
	if capped {
		limit = byMemory
	}
	left := steps
	mds, err := luapattern.Find(pattern, []byte(str), offset, limit, &left)
	v.b.instr += steps - left
	if err == luapattern.ErrSteps {
		v.b.instr = v.b.maxInstr + 1
		v.b.over = instructionsSpent
		L.RaiseError("%s", v.b.text())
	}
	if err != nil {
		L.RaiseError("%s", err.Error())
	}
	if capped && len(mds) == byMemory {
		v.b.over = memorySpent
		L.RaiseError("%s", v.b.text())
	}
	v.b.chargeOrRaise(L, int64(len(mds))*matchCost)
	return mds
}

// stringIndex is gopher-lua's luaIndex2StringIndex: a Lua position
// (1-based, negative from the end) as a Go offset into str.
func stringIndex(str string, i int, start bool) int {
	if start && i != 0 {
		i--
	}
	l := len(str)
	if i < 0 {
		i = l + i + 1
		if i < 0 {
			i = 0
		}
	} else if i > l {
		i = l
	}
	return i
}

func (v *vm) strFind(L *lua.LState) int {
	str := L.CheckString(1)
	pattern := L.CheckString(2)
	if len(pattern) == 0 {
		L.Push(lua.LNumber(1))
		L.Push(lua.LNumber(0))
		return 2
	}
	init := stringIndex(str, L.OptInt(3, 1), true)
	if L.GetTop() == 4 && lua.LVAsBool(L.Get(4)) {
		pos := strings.Index(str[init:], pattern)
		if pos < 0 {
			L.Push(lua.LNil)
			return 1
		}
		L.Push(lua.LNumber(init+pos) + 1)
		L.Push(lua.LNumber(init + pos + len(pattern)))
		return 2
	}
	mds := v.find(L, pattern, str, init, 1)
	if len(mds) == 0 {
		L.Push(lua.LNil)
		return 1
	}
	md := mds[0]
	L.Push(lua.LNumber(md.Capture(0) + 1))
	L.Push(lua.LNumber(md.Capture(1)))
	for i := 2; i < md.CaptureLength(); i += 2 {
		pushCapture(L, md, str, i)
	}
	return md.CaptureLength()/2 + 1
}

func pushCapture(L *lua.LState, md *luapattern.MatchData, str string, i int) {
	if md.IsPosCapture(i) {
		L.Push(lua.LNumber(md.Capture(i)))
	} else {
		L.Push(lua.LString(str[md.Capture(i):md.Capture(i+1)]))
	}
}

func (v *vm) strMatch(L *lua.LState) int {
	str := L.CheckString(1)
	pattern := L.CheckString(2)
	offset := L.OptInt(3, 1)
	if offset < 0 {
		offset = len(str) + offset + 1
	}
	offset--
	if offset < 0 {
		offset = 0
	}
	mds := v.find(L, pattern, str, offset, 1)
	if len(mds) == 0 {
		L.Push(lua.LNil)
		return 1
	}
	md := mds[0]
	if md.CaptureLength() == 2 {
		L.Push(lua.LString(str[md.Capture(0):md.Capture(1)]))
		return 1
	}
	for i := 2; i < md.CaptureLength(); i += 2 {
		pushCapture(L, md, str, i)
	}
	return md.CaptureLength()/2 - 1
}

// strGmatch finds every match first, as gopher-lua does, within the
// budgets, and returns an iterator over them.
func (v *vm) strGmatch(L *lua.LState) int {
	str := L.CheckString(1)
	pattern := L.CheckString(2)
	mds := v.find(L, pattern, str, 0, -1)
	next := 0
	L.Push(L.NewFunction(func(L *lua.LState) int {
		if next >= len(mds) {
			return 0
		}
		md := mds[next]
		next++
		if md.CaptureLength() == 2 {
			L.Push(lua.LString(str[md.Capture(0):md.Capture(1)]))
			return 1
		}
		for i := 2; i < md.CaptureLength(); i += 2 {
			pushCapture(L, md, str, i)
		}
		return md.CaptureLength()/2 - 1
	}))
	return 1
}

func (v *vm) strGsub(L *lua.LState) int {
	str := L.CheckString(1)
	pattern := L.CheckString(2)
	L.CheckTypes(3, lua.LTString, lua.LTTable, lua.LTFunction)
	repl := L.CheckAny(3)
	limit := L.OptInt(4, -1)
	mds := v.find(L, pattern, str, 0, limit)
	if len(mds) == 0 {
		L.SetTop(1)
		L.Push(lua.LNumber(0))
		return 2
	}
	var out []byte
	last, charged := 0, 0
	for _, md := range mds {
		start, end := md.Capture(0), md.Capture(1)
		out = append(out, str[last:start]...)
		last = end
		var with lua.LValue
		switch r := repl.(type) {
		case lua.LString:
			out = appendReplacement(L, out, string(r), md, str)
			v.b.chargeOrRaise(L, int64(len(out)-charged))
			charged = len(out)
			continue
		case *lua.LTable:
			with = L.GetTable(r, firstCapture(md, str))
		case *lua.LFunction:
			L.Push(r)
			n := 0
			if md.CaptureLength() > 2 {
				for i := 2; i < md.CaptureLength(); i += 2 {
					pushCapture(L, md, str, i)
					n++
				}
			} else {
				L.Push(lua.LString(str[start:end]))
				n = 1
			}
			L.Call(n, 1)
			with = L.Get(-1)
			L.Pop(1)
		}
		switch w := with.(type) {
		case lua.LString:
			out = append(out, w...)
		case lua.LNumber:
			out = append(out, numberToString(float64(w))...)
		case *lua.LNilType, lua.LBool:
			if lua.LVIsFalse(with) {
				out = append(out, str[start:end]...)
				break
			}
			L.RaiseError("invalid replacement value (a %s)", with.Type().String())
		default:
			L.RaiseError("invalid replacement value (a %s)", with.Type().String())
		}
		v.b.chargeOrRaise(L, int64(len(out)-charged))
		charged = len(out)
	}
	out = append(out, str[last:]...)
	v.b.chargeOrRaise(L, int64(len(out)-charged))
	L.Push(lua.LString(out))
	L.Push(lua.LNumber(len(mds)))
	return 2
}

// firstCapture is the key gsub looks a table up with: the first capture,
// or the whole match.
func firstCapture(md *luapattern.MatchData, str string) lua.LValue {
	i := 0
	if md.CaptureLength() > 2 {
		i = 2
	}
	if md.IsPosCapture(i) {
		return lua.LNumber(md.Capture(i))
	}
	return lua.LString(str[md.Capture(i):md.Capture(i+1)])
}

// appendReplacement appends gsub's string replacement for one match: %0
// to %9 are captures (%0 the whole match), %% a percent sign.
func appendReplacement(L *lua.LState, out []byte, repl string, md *luapattern.MatchData, str string) []byte {
	for i := 0; i < len(repl); i++ {
		c := repl[i]
		if c != '%' || i+1 == len(repl) {
			out = append(out, c)
			continue
		}
		i++
		c = repl[i]
		if c < '0' || c > '9' {
			out = append(out, c)
			continue
		}
		idx := 2 * int(c-'0')
		if idx >= md.CaptureLength() {
			if idx != 2 {
				L.RaiseError("invalid capture index")
			}
			idx = 0 // %1 without captures is the whole match
		}
		if md.IsPosCapture(idx) {
			out = strconv.AppendInt(out, int64(md.Capture(idx)), 10)
		} else {
			out = append(out, str[md.Capture(idx):md.Capture(idx+1)]...)
		}
	}
	return out
}
