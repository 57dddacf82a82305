package scripting

import (
	lua "github.com/yuin/gopher-lua"
)

// Coroutines, as Redis 7.0 has them (Lua 5.1's coroutine library), inside
// the budgets. A coroutine runs on an LState of its own (gopher-lua's
// thread), whose VM asks its own context before each instruction: the
// thread gets a stateBudget spending the call's budget, so a coroutine's
// instructions and allocations count as the script's, and its stacks (two
// preallocated arrays, the size of the call's) are charged when it is
// created.

// threadCost is what a coroutine's thread costs: its value stack and call
// stack, as newVM sizes them.
const threadCost = initialStackSlots*16 + maxCallDepth*96

func (v *vm) openCoroutines() {
	L := v.L
	L.Push(L.NewFunction(lua.OpenCoroutine))
	L.Push(lua.LString(lua.CoroutineLibName))
	L.Call(1, 0)
	co := v.globals.RawGetString(lua.CoroutineLibName).(*lua.LTable)
	create := co.RawGetString("create").(*lua.LFunction).GFunction
	resume := co.RawGetString("resume").(*lua.LFunction).GFunction
	co.RawSetString("create", L.NewFunction(func(L *lua.LState) int { return v.coCreate(L, create) }))
	co.RawSetString("wrap", L.NewFunction(func(L *lua.LState) int { return v.coWrap(L, create, resume) }))
}

// coCreate is coroutine.create, with the thread put on the call's budget.
func (v *vm) coCreate(L *lua.LState, create lua.LGFunction) int {
	L.CheckFunction(1)
	v.b.chargeOrRaise(L, threadCost)
	n := create(L)
	th := L.Get(-1).(*lua.LState)
	th.SetContext(&stateBudget{budget: &v.b, L: th})
	return n
}

// coWrap is coroutine.wrap: a function that resumes the coroutine and
// answers what it yields, raising its error (with the caller's position,
// as Lua 5.1's auxwrap) instead of returning false.
func (v *vm) coWrap(L *lua.LState, create, resume lua.LGFunction) int {
	fn := L.CheckFunction(1)
	L.SetTop(0)
	L.Push(fn)
	v.coCreate(L, create)
	th := L.Get(-1)
	L.Push(L.NewFunction(func(L *lua.LState) int {
		L.Insert(th, 1)
		n := resume(L)
		if L.Get(L.GetTop()-n+1) == lua.LFalse {
			raiseAt(L, L.Get(-1), 1)
		}
		return n - 1 // what the coroutine answered, without resume's true
	}))
	return 1
}
