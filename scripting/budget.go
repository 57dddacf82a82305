package scripting

import (
	"errors"
	"reflect"
	"strconv"
	"time"
	"unsafe"

	lua "github.com/yuin/gopher-lua"
)

// The per-call budgets. gopher-lua, when an LState has a context, asks the
// context's Done() before every VM instruction (vm.go, mainLoopWithContext)
// and raises Err() as a Lua error once Done() is closed. budget is that
// context: its Done() counts instructions and charges the memory the
// instruction about to run allocates, and answers a closed channel once
// either budget is spent. It stays closed for the rest of the call, so the
// error escapes every pcall frame: the instruction after a pcall that
// caught it fails again. Everything it counts is a function of the script,
// its arguments and the replies of redis.call, never of the Go heap or the
// clock, so every replica stops the same script at the same instruction.
type budget struct {
	maxInstr int64
	maxMem   int64
	instr    int64
	mem      int64
	over     overrun
}

// overrun says which budget a call spent.
type overrun uint8

const (
	withinBudget overrun = iota
	instructionsSpent
	memorySpent
)

// Costs charged against the memory budget, in bytes, beside the bytes of
// every string a script makes: an approximation of what gopher-lua
// allocates for a table, a table slot (an interface value plus its share of
// the map or slice) and a closure. They only need to be deterministic and
// within a small factor of the truth.
const (
	tableCost   = 96
	slotCost    = 32
	closureCost = 64
	numberText  = 24 // a number concatenated into a string
)

var closedDone = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

var errBudget = errors.New("script budget exceeded")

// stateBudget is the context of one LState (the call's, or a coroutine's
// thread) spending the call's budget: the counts are the call's, the
// frame read is the LState's.
type stateBudget struct {
	*budget
	L *lua.LState
}

func (s *stateBudget) Deadline() (time.Time, bool) { return time.Time{}, false }
func (s *stateBudget) Value(any) any               { return nil }

// Err is what gopher-lua raises once Done is closed; Run replaces the
// reply with the budget's own text, so the wording here is not seen.
func (s *stateBudget) Err() error { return errBudget }

// AfterFunc makes context.WithCancel, which gopher-lua's NewThread calls
// on a coroutine's creation, register nothing instead of starting a
// goroutine that would call Done concurrently: the coroutine's thread gets
// a stateBudget of its own (coroutine.go).
func (s *stateBudget) AfterFunc(func()) func() bool { return func() bool { return false } }

// Done is called by the VM before every instruction of s.L.
// A nil channel never fires, so the VM runs the instruction.
func (s *stateBudget) Done() <-chan struct{} {
	b := s.budget
	if b.over != withinBudget {
		return closedDone
	}
	b.instr++
	if b.instr > b.maxInstr {
		b.over = instructionsSpent
		return closedDone
	}
	if frameReadable {
		b.chargeInstruction(s.L)
		if b.over != withinBudget {
			return closedDone
		}
	}
	return nil
}

// reset starts a call's budgets.
func (b *budget) reset(maxInstr, maxMem int64) {
	b.maxInstr, b.maxMem = maxInstr, maxMem
	b.instr, b.mem, b.over = 0, 0, withinBudget
}

// charge adds n bytes and reports whether the call is still within its
// memory budget.
func (b *budget) charge(n int64) bool {
	if n < 0 || b.mem+n > b.maxMem || b.mem+n < b.mem {
		b.mem = b.maxMem
		b.over = memorySpent
		return false
	}
	b.mem += n
	return true
}

// fits reports whether n more bytes would stay within the memory budget,
// without charging them: a Go function checks what it is about to build.
func (b *budget) fits(n int64) bool { return n >= 0 && b.mem+n <= b.maxMem && b.mem+n >= b.mem }

// chargeOrRaise charges n bytes or raises the budget error in L.
func (b *budget) chargeOrRaise(L *lua.LState, n int64) {
	if !b.charge(n) {
		L.RaiseError("%s", b.text())
	}
}

// text is the error reply of a spent budget (Redcell's own: Redis has no
// budget, only the wall-clock BUSY and SCRIPT KILL).
func (b *budget) text() string {
	switch b.over {
	case instructionsSpent:
		return "ERR script exceeded its budget of " + strconv.FormatInt(b.maxInstr, 10) + " instructions"
	case memorySpent:
		return "ERR script exceeded its memory budget of " + strconv.FormatInt(b.maxMem, 10) + " bytes"
	}
	return ""
}

// The instruction about to run is in the LState's current call frame,
// which gopher-lua does not export. Its layout is that of the version in
// go.mod (v1.1.2); the offsets are looked up by name and type at start, and
// when they are not there (another version) frameReadable is false, the VM
// instructions are not charged (only the Go functions' results are), and
// TestFrameLayout fails.
var (
	frameReadable                           bool
	offCurrentFrame, offFn, offPc, offLocal uintptr
)

func init() {
	st, ok := reflect.TypeOf(lua.LState{}).FieldByName("currentFrame")
	if !ok || st.Type.Kind() != reflect.Pointer || st.Type.Elem().Kind() != reflect.Struct {
		return
	}
	frame := st.Type.Elem()
	fn, ok1 := frame.FieldByName("Fn")
	pc, ok2 := frame.FieldByName("Pc")
	local, ok3 := frame.FieldByName("LocalBase")
	if !ok1 || !ok2 || !ok3 || fn.Type != reflect.TypeOf((*lua.LFunction)(nil)) ||
		pc.Type.Kind() != reflect.Int || local.Type.Kind() != reflect.Int {
		return
	}
	offCurrentFrame, offFn, offPc, offLocal = st.Offset, fn.Offset, pc.Offset, local.Offset
	frameReadable = true
}

// instruction returns the instruction the VM is about to run in L (the
// frame's Pc has already moved past it), or false outside a Lua function.
func instruction(L *lua.LState) (uint32, bool) {
	cf := *(*unsafe.Pointer)(unsafe.Add(unsafe.Pointer(L), offCurrentFrame))
	if cf == nil {
		return 0, false
	}
	fn := *(**lua.LFunction)(unsafe.Add(cf, offFn))
	pc := *(*int)(unsafe.Add(cf, offPc))
	if fn == nil || fn.IsG || fn.Proto == nil || pc < 1 || pc > len(fn.Proto.Code) {
		return 0, false
	}
	return fn.Proto.Code[pc-1], true
}

// The Lua 5.1 instruction fields, as gopher-lua lays them out (opcode.go).
func argA(i uint32) int { return int(i>>18) & 0xff }
func argB(i uint32) int { return int(i & 0x1ff) }
func argC(i uint32) int { return int(i>>9) & 0x1ff }

const rkConstant = 1 << 8

// chargeInstruction charges what the instruction about to run allocates:
// the result of a concatenation, a new table, a new slot in a table, a
// closure.
func (b *budget) chargeInstruction(L *lua.LState) {
	inst, ok := instruction(L)
	if !ok {
		return
	}
	switch int(inst >> 26) {
	case lua.OP_CONCAT:
		var n int64
		for r := argB(inst); r <= argC(inst); r++ {
			switch v := L.Get(r + 1).(type) {
			case lua.LString:
				n += int64(len(v))
			case lua.LNumber:
				n += numberText
			}
		}
		b.charge(n)
	case lua.OP_NEWTABLE:
		b.charge(tableCost + int64(argB(inst)+argC(inst))*slotCost)
	case lua.OP_SETTABLE, lua.OP_SETTABLEKS:
		tb, ok := L.Get(argA(inst) + 1).(*lua.LTable)
		if !ok {
			return
		}
		key := rk(L, argB(inst))
		if key == lua.LNil {
			return
		}
		if tb.RawGet(key) == lua.LNil {
			b.charge(slotCost)
		}
	case lua.OP_SETLIST:
		n := argB(inst)
		if n == 0 {
			n = L.GetTop() - argA(inst) - 1
		}
		if n > 0 {
			b.charge(int64(n) * slotCost)
		}
	case lua.OP_CLOSURE:
		b.charge(closureCost)
	}
}

// rk reads an RK operand: a constant of the running function or a register.
func rk(L *lua.LState, x int) lua.LValue {
	if x&rkConstant != 0 {
		cf := *(*unsafe.Pointer)(unsafe.Add(unsafe.Pointer(L), offCurrentFrame))
		fn := *(**lua.LFunction)(unsafe.Add(cf, offFn))
		k := x &^ rkConstant
		if k < len(fn.Proto.Constants) {
			return fn.Proto.Constants[k]
		}
		return lua.LNil
	}
	return L.Get(x + 1)
}

// chargeMemory charges n bytes that a Go function of the environment is
// about to allocate, or raises the memory budget's error. For the
// libraries (lib_*.go): an encoder whose output can dwarf its input (a
// table that holds one long string many times) calls it before it grows
// its buffer. Outside a call it does nothing.
func chargeMemory(L *lua.LState, n int64) {
	if s, ok := L.Context().(*stateBudget); ok {
		s.chargeOrRaise(L, n)
	}
}

// spendInstructions counts n instructions of work done inside a Go
// function (a step of an encoder's or decoder's loop), or raises the
// instruction budget's error once it is spent.
func spendInstructions(L *lua.LState, n int64) {
	s, ok := L.Context().(*stateBudget)
	if !ok {
		return
	}
	b := s.budget
	b.instr += n
	if b.instr > b.maxInstr {
		b.instr = b.maxInstr + 1
		b.over = instructionsSpent
		L.RaiseError("%s", b.text())
	}
}
