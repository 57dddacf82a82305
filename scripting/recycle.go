package scripting

import lua "github.com/yuin/gopher-lua"

// replyTables recycles the tables that redis.call's replies become, from
// one call of a vm to the next. A rate-limit script makes a few per call
// ({ok = "OK"} for a SET, an array for TIME), and they were most of what
// a call allocated: gopher-lua gives a table with a string key two maps
// and a slice, about 500 bytes, and on a node with a small heap that
// garbage set the pace of the collector (cmd/redcell/gctune.go).
//
// Recycling is safe because nothing a call makes outlives it: the globals
// and library tables are read-only proxies, replaced when rawset into
// (env.go), so at the end of a call no Lua value of it is reachable. A
// table goes back to a free list only if it is as redis.call made it (no
// metatable, no other key), because its next use sets only the keys a
// new one would have. Within a call each table is lent once, so two
// replies are never the same table.
type replyTables struct {
	free [maxRecycledLen + 1][]*lua.LTable
	lent []lentTable
}

// lentTable is a table handed to the script during the current call.
type lentTable struct {
	t *lua.LTable
	n int // its array's length, or statusShape for {ok = s}
}

const (
	// maxRecycledLen is the longest array recycled: rate-limit scripts
	// read TIME (2) and short HMGET or MGET replies; longer arrays are
	// rare and their elements cost more than the table.
	maxRecycledLen = 8
	// maxFreeTables bounds each free list.
	maxFreeTables = 16
	// statusShape marks a status table, {ok = s}.
	statusShape = 0
)

var (
	okKey = lua.LValue(lua.LString("ok"))
	// okStatus is the status most replies are, made once: a string
	// becomes a Lua value by allocating.
	okStatus = lua.LValue(lua.LString("OK"))
)

// statusTable is {ok = s} for a status reply.
func (r *replyTables) statusTable(L *lua.LState, s lua.LValue) *lua.LTable {
	var t *lua.LTable
	if f := r.free[statusShape]; len(f) > 0 {
		t, r.free[statusShape] = f[len(f)-1], f[:len(f)-1]
	} else {
		t = L.CreateTable(0, 1)
	}
	t.RawSetString("ok", s)
	r.lent = append(r.lent, lentTable{t: t, n: statusShape})
	return t
}

// arrayTable is a table for an array reply of n elements, which the caller
// sets, every one of them, with RawSetInt.
func (r *replyTables) arrayTable(L *lua.LState, n int) *lua.LTable {
	if n < 1 || n > maxRecycledLen {
		return L.CreateTable(n, 0)
	}
	var t *lua.LTable
	if f := r.free[n]; len(f) > 0 {
		t, r.free[n] = f[len(f)-1], f[:len(f)-1]
	} else {
		t = L.CreateTable(n, 0)
	}
	r.lent = append(r.lent, lentTable{t: t, n: n})
	return t
}

// reclaim takes back, at the end of a call, the tables lent during it that
// are still as they were made.
func (r *replyTables) reclaim() {
	for i, l := range r.lent {
		if len(r.free[l.n]) < maxFreeTables && l.t.Metatable == lua.LNil && r.intact(l) {
			r.free[l.n] = append(r.free[l.n], l.t)
		}
		r.lent[i] = lentTable{}
	}
	r.lent = r.lent[:0]
}

// intact reports whether a lent table has only the keys it was made with.
func (r *replyTables) intact(l lentTable) bool {
	if l.n != statusShape {
		return onlyArray(l.t, l.n)
	}
	if l.t.MaxN() != 0 {
		return false
	}
	k, _ := l.t.Next(lua.LNil)
	if k != okKey {
		return false
	}
	k, _ = l.t.Next(okKey)
	return k == lua.LNil
}

// shortStrings holds the Lua values of short strings a vm made lately, so
// that the same bytes again become the same value without an allocation
// (a string becomes a Lua value by allocating twice: its bytes and the
// interface). TIME answers the entry's instant to every script of the
// entry, a few hundred in a row, and tostring often answers the same few
// texts; strings are immutable in Lua, so sharing one is invisible.
type shortStrings struct {
	slot [shortStringSlots]lua.LValue // each nil or an lua.LString
}

const (
	shortStringSlots = 64 // a power of two
	maxShortString   = 32
)

// value is s as a Lua string value.
func (c *shortStrings) value(s []byte) lua.LValue {
	if len(s) > maxShortString {
		return lua.LString(s)
	}
	h := uint32(2166136261) // FNV-1a
	for _, b := range s {
		h = (h ^ uint32(b)) * 16777619
	}
	p := &c.slot[h&(shortStringSlots-1)]
	if old, ok := (*p).(lua.LString); ok && string(old) == string(s) {
		return *p
	}
	*p = lua.LString(s)
	return *p
}
