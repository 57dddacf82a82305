package scripting

import (
	lua "github.com/yuin/gopher-lua"
)

// Go functions allocate out of the VM's sight: the library functions that
// make strings or tables are wrapped so that what they return is charged
// to the memory budget, and the few whose result can be far larger than
// their arguments (string.rep, string.format, table.concat) are checked
// before they run, so that string.rep("x", 1e10) fails before it
// allocates. The pattern functions (strpattern.go) charge themselves, as
// they go. Functions that only return values that already exist
// (next, rawget, select, unpack, pcall, ...) are not wrapped: charging
// their results would charge the same string again on every call.

// chargedLibraries are the tables whose every function is wrapped.
var chargedLibraries = []string{"string", "cjson", "cmsgpack", "bit", "struct"}

func (v *vm) chargeLibraries() {
	g := v.globals
	for _, lib := range chargedLibraries {
		t, ok := g.RawGetString(lib).(*lua.LTable)
		if !ok {
			continue
		}
		t.ForEach(func(k, val lua.LValue) {
			if fn, ok := val.(*lua.LFunction); ok && fn.IsG && !selfCharging[lib+"."+luaString(k)] {
				name := lib + "." + luaString(k)
				fn.GFunction = v.charged(name, fn.GFunction)
			}
		})
	}
	if t, ok := g.RawGetString("table").(*lua.LTable); ok {
		for _, name := range []string{"concat", "insert", "sort"} {
			if fn, ok := t.RawGetString(name).(*lua.LFunction); ok && fn.IsG {
				fn.GFunction = v.charged("table."+name, fn.GFunction)
			}
		}
	}
	for _, name := range []string{"rawset", "loadstring", "load"} {
		if fn, ok := g.RawGetString(name).(*lua.LFunction); ok && fn.IsG {
			fn.GFunction = v.charged(name, fn.GFunction)
		}
	}
}

// selfCharging are the functions that charge their own work.
var selfCharging = map[string]bool{"string.find": true, "string.match": true, "string.gmatch": true,
	"string.gfind": true, "string.gsub": true}

// charged wraps fn: a check of what it is about to build for the
// functions that need one, then the charge of the strings and tables it
// returns.
func (v *vm) charged(name string, fn lua.LGFunction) lua.LGFunction {
	pre := precheck[name]
	return func(L *lua.LState) int {
		if pre != nil {
			pre(v, L)
		}
		n := fn(L)
		top := L.GetTop()
		var bytes int64
		for i := top - n + 1; i <= top; i++ {
			bytes += resultCost(L.Get(i), 0)
		}
		switch name {
		case "table.insert", "rawset":
			bytes += slotCost
		case "loadstring", "load":
			bytes *= 8 // a function's code is several times its source
		}
		v.b.chargeOrRaise(L, bytes)
		return n
	}
}

// resultCost is what a returned value cost to build: a string its length,
// a table its slots and what they hold (a decoded document), walked to a
// bounded depth.
func resultCost(val lua.LValue, depth int) int64 {
	switch x := val.(type) {
	case lua.LString:
		return int64(len(x))
	case *lua.LTable:
		if depth > 32 {
			return tableCost
		}
		n := int64(tableCost)
		x.ForEach(func(k, v lua.LValue) {
			n += slotCost + resultCost(v, depth+1)
			if _, ok := k.(lua.LString); ok {
				n += resultCost(k, depth+1)
			}
		})
		return n
	case *lua.LFunction:
		return closureCost
	}
	return 0
}

// precheck holds the checks made before a function runs: each raises the
// budget error when what the call would build does not fit.
var precheck = map[string]func(v *vm, L *lua.LState){
	"string.rep":    precheckRep,
	"string.format": precheckFormat,
	"table.concat":  precheckConcat,
	"table.sort":    precheckSort,
}

// precheckSort counts a sort's comparisons as instructions before it runs
// (n·log2 n of them; a comparator's own instructions count as it runs):
// sorting two million numbers is a second of Go that the VM never sees.
func precheckSort(v *vm, L *lua.LState) {
	t, ok := L.Get(1).(*lua.LTable)
	if !ok {
		return
	}
	n := int64(t.Len())
	steps := n
	for m := n; m > 1; m >>= 1 {
		steps += n
	}
	spendInstructions(L, steps)
}

func (v *vm) mustFit(L *lua.LState, n float64) {
	if n > float64(v.b.maxMem) || !v.b.fits(int64(n)) {
		v.b.over = memorySpent
		L.RaiseError("%s", v.b.text())
	}
}

func strLen(val lua.LValue) float64 {
	switch x := val.(type) {
	case lua.LString:
		return float64(len(x))
	case lua.LNumber:
		return numberText
	}
	return 0
}

func precheckRep(v *vm, L *lua.LState) {
	n, ok := L.Get(2).(lua.LNumber)
	if !ok || n <= 0 {
		return
	}
	v.mustFit(L, strLen(L.Get(1))*float64(n))
}

func precheckFormat(v *vm, L *lua.LState) {
	// Each directive writes at most its argument, or a number of a few
	// hundred characters (a width or precision is at most 99).
	n := strLen(L.Get(1))
	for i := 2; i <= L.GetTop(); i++ {
		n += strLen(L.Get(i)) + 512
	}
	v.mustFit(L, n)
}

func precheckConcat(v *vm, L *lua.LState) {
	t, ok := L.Get(1).(*lua.LTable)
	if !ok {
		return
	}
	sep := strLen(L.Get(2))
	i, j := 1, t.Len()
	if n, ok := L.Get(3).(lua.LNumber); ok {
		i = int(n)
	}
	if n, ok := L.Get(4).(lua.LNumber); ok {
		j = int(n)
	}
	var total float64
	for k := i; k <= j; k++ {
		el := t.RawGetInt(k)
		if el.Type() != lua.LTString && el.Type() != lua.LTNumber {
			return // concat raises its own error
		}
		total += strLen(el) + sep
		if total > float64(v.b.maxMem) || !v.b.fits(int64(total)) {
			v.mustFit(L, total)
		}
	}
}
