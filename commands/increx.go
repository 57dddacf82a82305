package commands

import (
	"github.com/redcell/redcell/request"
)

// INCREX (Redis 8.8, data-types.md "INCREX"):
//
//	INCREX key [BYINT n | BYFLOAT f] [LBOUND l] [UBOUND u] [SATURATE]
//	           [EX s | PX ms | EXAT t | PXAT t | PERSIST] [ENX]
//
// Parsing follows SET's conventions (parseExtendedStringArgumentsOrReply):
// the options in any order, each one that takes a value needing it; an
// option given twice is taken again (the last value counts, as SET k v EX 1
// EX 2 does); two options that exclude each other (BYINT and BYFLOAT, two
// expiry options) or ENX without EX/PX/EXAT/PXAT (or with PERSIST) are a
// syntax error. Then the numbers, in the command's order: the increment,
// LBOUND, UBOUND, LBOUND > UBOUND, then the expiry time (SET's rules: a
// non-positive time, or seconds past int64 ms, are "invalid expire time").
// In integer mode the parser answers all of them; in BYFLOAT mode the
// floats are the state machine's to parse (long doubles, as INCRBYFLOAT's),
// so the parser hands it the time's error (Args[5]) to answer after them,
// keeping the same order. Everything about the stored value (WRONGTYPE, a
// value that is not a number, bounds, the expiry's overflow at the entry's
// now) is the state machine's (fsm/increx.go).

var incrExSpec = strSpec("increx", -2, request.IncrEx, "@write @fast", "8.8.0",
	"Increments key's number within bounds and sets its expiry in one step: [new value, applied increment].", parseIncrEx, keyArg,
	Arg{Name: "increment", Type: "oneof", Optional: true, Args: []Arg{
		{Name: "int", Type: "integer", Token: "BYINT"}, {Name: "float", Type: "double", Token: "BYFLOAT"}}},
	Arg{Name: "lbound", Type: "string", Token: "LBOUND", Optional: true},
	Arg{Name: "ubound", Type: "string", Token: "UBOUND", Optional: true},
	Arg{Name: "saturate", Type: "pure-token", Token: "SATURATE", Optional: true},
	Arg{Name: "expiration", Type: "oneof", Optional: true, Args: []Arg{
		{Name: "seconds", Type: "integer", Token: "EX"}, {Name: "milliseconds", Type: "integer", Token: "PX"},
		{Name: "unix-time-seconds", Type: "unix-time", Token: "EXAT"}, {Name: "unix-time-milliseconds", Type: "unix-time", Token: "PXAT"},
		{Name: "persist", Type: "pure-token", Token: "PERSIST"}}},
	Arg{Name: "enx", Type: "pure-token", Token: "ENX", Optional: true})

// incrExTimes are INCREX's expiry options, of which one at most is given.
const incrExTimes = request.IncrExEX | request.IncrExPX | request.IncrExEXAT | request.IncrExPXAT

// incrExOptions are INCREX's options as given: the flags and each value's
// argument.
type incrExOptions struct {
	fl                  int64
	byInt               bool
	incr, lb, ub, timeT []byte
}

// parseIncrExOptions reads the options (args after the key) or answers
// ErrSyntax.
func parseIncrExOptions(args [][]byte) (incrExOptions, string) {
	var o incrExOptions
	timeOpt := func(f int64) bool { return o.fl&((incrExTimes|request.IncrExPersist)&^f) == 0 }
	for j := 0; j < len(args); j++ {
		a := args[j]
		hasNext := j+1 < len(args)
		var val *[]byte // the option's value, when it takes one
		switch {
		case EqualFold(a, "byint") && hasNext && o.fl&request.IncrExFloat == 0:
			o.byInt, val = true, &o.incr
		case EqualFold(a, "byfloat") && hasNext && !o.byInt:
			o.fl |= request.IncrExFloat
			val = &o.incr
		case EqualFold(a, "lbound") && hasNext:
			o.fl |= request.IncrExLBound
			val = &o.lb
		case EqualFold(a, "ubound") && hasNext:
			o.fl |= request.IncrExUBound
			val = &o.ub
		case EqualFold(a, "saturate"):
			o.fl |= request.IncrExSaturate
		case EqualFold(a, "ex") && hasNext && timeOpt(request.IncrExEX):
			o.fl |= request.IncrExEX
			val = &o.timeT
		case EqualFold(a, "px") && hasNext && timeOpt(request.IncrExPX):
			o.fl |= request.IncrExPX
			val = &o.timeT
		case EqualFold(a, "exat") && hasNext && timeOpt(request.IncrExEXAT):
			o.fl |= request.IncrExEXAT
			val = &o.timeT
		case EqualFold(a, "pxat") && hasNext && timeOpt(request.IncrExPXAT):
			o.fl |= request.IncrExPXAT
			val = &o.timeT
		case EqualFold(a, "persist") && timeOpt(request.IncrExPersist):
			o.fl |= request.IncrExPersist
		case EqualFold(a, "enx"):
			o.fl |= request.IncrExENX
		default:
			return o, ErrSyntax
		}
		if val != nil {
			j++
			*val = args[j]
		}
	}
	if o.fl&request.IncrExENX != 0 && o.fl&incrExTimes == 0 {
		return o, ErrSyntax // ENX needs EX, PX, EXAT or PXAT (and so excludes PERSIST)
	}
	return o, ""
}

// incrExTime is the expiry option's time in ms, or the error code to
// answer (SET's rules, INCREX's text).
func incrExTime(fl int64, t []byte) (int64, request.ErrCode) {
	if fl&incrExTimes == 0 {
		return 0, request.ErrNone
	}
	var setFl int64 = request.SetPX
	if fl&(request.IncrExEX|request.IncrExEXAT) != 0 {
		setFl = request.SetEX
	}
	ms, e := expireMs(setFl, t)
	if e == request.ErrSetExpireTime {
		e = request.ErrIncrExExpire
	}
	return ms, e
}

func parseIncrEx(args [][]byte) (request.Request, string) {
	o, e := parseIncrExOptions(args[2:])
	if e != "" {
		return request.Request{}, e
	}
	r := request.Request{Code: request.IncrEx, Key: args[1]}
	if o.fl&request.IncrExFloat != 0 {
		ms, te := incrExTime(o.fl, o.timeT)
		r.Keys = [][]byte{o.incr, o.lb, o.ub}
		if o.lb == nil {
			r.Keys[1] = []byte{}
		}
		if o.ub == nil {
			r.Keys[2] = []byte{}
		}
		r.SetArgs(o.fl, 0, 0, 0, ms, int64(te))
		return r, ""
	}
	incr, lb, ub := int64(1), int64(0), int64(0)
	for _, v := range []struct {
		arg []byte
		to  *int64
	}{{o.incr, &incr}, {o.lb, &lb}, {o.ub, &ub}} {
		if v.arg == nil {
			continue
		}
		n, ok := redisInt(v.arg)
		if !ok {
			return request.Request{}, ErrNotInteger
		}
		*v.to = n
	}
	if o.fl&request.IncrExLBound != 0 && o.fl&request.IncrExUBound != 0 && lb > ub {
		return request.Request{}, request.ErrIncrExBounds.Text()
	}
	ms, te := incrExTime(o.fl, o.timeT)
	switch te {
	case request.ErrNone:
	case request.ErrNotInteger:
		return request.Request{}, ErrNotInteger
	default:
		return request.Request{}, te.Text()
	}
	r.SetArgs(o.fl, incr, lb, ub, ms, 0)
	return r, ""
}
