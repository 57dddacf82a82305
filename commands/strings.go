package commands

import (
	"math"
	"slices"
	"strings"

	"github.com/redcell/redcell/request"
)

// The string family's commands: GET, SET (EX|PX|EXAT|PXAT|KEEPTTL, NX|XX,
// GET), SETNX, SETEX, PSETEX, GETSET, GETDEL, GETEX, STRLEN, APPEND, INCR,
// INCRBY, DECR, DECRBY, MGET, MSET, MSETNX. Parsing follows Redis 7.0's
// t_string.c in its order: the options (parseExtendedStringArgumentsOrReply),
// then the time's integer and its sign; the checks that need the clock (a
// relative time plus now past int64 ms) and everything about the stored
// value are the state machine's (fsm/strings.go). GETEX checks its time
// only after the lookup, so its parser passes the error on (Args[2]).

// strSpec is a string command's spec; acl is its ACL categories besides
// @string ("@read @fast": Redis 7.0 lists @string second), and @fast makes
// it a "fast" command too.
func strSpec(name string, arity int, code request.Code, acl, since, summary string, parse func([][]byte) (request.Request, string), args ...Arg) *Spec {
	s := &Spec{Name: name, Arity: arity, Code: code, Group: "string", Since: since, Complexity: "O(1)",
		ACL: append([]string{acl[:strings.IndexByte(acl, ' ')], "@string"}, strings.Fields(acl)[1:]...), Summary: summary, Args: args, Parse: parse}
	if slices.Contains(s.ACL, "@fast") {
		s.Flags = []string{"fast"}
	}
	return s
}

var (
	keyArg   = Arg{Name: "key", Type: "key"}
	valueArg = Arg{Name: "value", Type: "string"}
)

var stringSpecs = []*Spec{
	strSpec("get", 2, request.Get, "@read @fast", "1.0.0", "The value of key; nil when missing. A CL key reads as its TAT in ns.", parseGet, keyArg),
	strSpec("set", -3, request.Set, "@write @slow", "1.0.0", "Sets key to value (EX|PX|EXAT|PXAT|KEEPTTL, NX|XX, GET as Redis 7.0).", parseSet, keyArg, valueArg,
		Arg{Name: "condition", Type: "oneof", Optional: true, Args: []Arg{{Name: "nx", Type: "pure-token", Token: "NX"}, {Name: "xx", Type: "pure-token", Token: "XX"}}},
		Arg{Name: "get", Type: "pure-token", Token: "GET", Optional: true},
		Arg{Name: "expiration", Type: "oneof", Optional: true, Args: []Arg{
			{Name: "seconds", Type: "integer", Token: "EX"}, {Name: "milliseconds", Type: "integer", Token: "PX"},
			{Name: "unix-time-seconds", Type: "unix-time", Token: "EXAT"}, {Name: "unix-time-milliseconds", Type: "unix-time", Token: "PXAT"},
			{Name: "keepttl", Type: "pure-token", Token: "KEEPTTL"}}}),
	strSpec("setnx", 3, request.SetNX, "@write @fast", "1.0.0", "Sets key to value when it is missing: 1 when set, 0 when not.", parseSetNX, keyArg, valueArg),
	strSpec("setex", 4, request.Set, "@write @slow", "2.0.0", "Sets key to value with an expiry in seconds.", parseSetEx, keyArg, Arg{Name: "seconds", Type: "integer"}, valueArg),
	strSpec("psetex", 4, request.Set, "@write @slow", "2.6.0", "Sets key to value with an expiry in milliseconds.", parseSetEx, keyArg, Arg{Name: "milliseconds", Type: "integer"}, valueArg),
	strSpec("getset", 3, request.SetGet, "@write @fast", "1.0.0", "Sets key to value and answers the old value (nil when missing).", parseGetSet, keyArg, valueArg),
	strSpec("getdel", 2, request.GetDel, "@write @fast", "6.2.0", "Answers the value of key and deletes it.", parseGetDel, keyArg),
	strSpec("getex", -2, request.GetEx, "@write @fast", "6.2.0", "Answers the value of key and sets or removes its expiry (EX|PX|EXAT|PXAT|PERSIST).", parseGetEx, keyArg,
		Arg{Name: "expiration", Type: "oneof", Optional: true, Args: []Arg{
			{Name: "seconds", Type: "integer", Token: "EX"}, {Name: "milliseconds", Type: "integer", Token: "PX"},
			{Name: "unix-time-seconds", Type: "unix-time", Token: "EXAT"}, {Name: "unix-time-milliseconds", Type: "unix-time", Token: "PXAT"},
			{Name: "persist", Type: "pure-token", Token: "PERSIST"}}}),
	strSpec("strlen", 2, request.StrLen, "@read @fast", "2.2.0", "The length of the value of key; 0 when missing.", parseStrLen, keyArg),
	strSpec("append", 3, request.StrAppend, "@write @fast", "2.0.0", "Appends value to key's value: the new length.", parseAppend, keyArg, valueArg),
	strSpec("incr", 2, request.IncrBy, "@write @fast", "1.0.0", "Adds 1 to key's integer value: the new value.", parseIncr, keyArg),
	strSpec("decr", 2, request.IncrBy, "@write @fast", "1.0.0", "Subtracts 1 from key's integer value: the new value.", parseIncr, keyArg),
	strSpec("incrby", 3, request.IncrBy, "@write @fast", "1.0.0", "Adds increment to key's integer value: the new value.", parseIncr, keyArg, Arg{Name: "increment", Type: "integer"}),
	strSpec("decrby", 3, request.IncrBy, "@write @fast", "1.0.0", "Subtracts decrement from key's integer value: the new value.", parseIncr, keyArg, Arg{Name: "decrement", Type: "integer"}),
	strSpec("incrbyfloat", 3, request.IncrByFloat, "@write @fast", "2.6.0", "Adds increment to key's value as a long double: the new value.", parseIncrByFloat, keyArg, Arg{Name: "increment", Type: "double"}),
	strSpec("mget", -2, request.MGet, "@read @fast", "1.0.0", "The values of the keys; nil for a missing key or one that is not a string.", parseMGet,
		Arg{Name: "key", Type: "key", Multiple: true}),
	strSpec("mset", -3, request.MSet, "@write @slow", "1.0.1", "Sets each key to its value.", parseMSet,
		Arg{Name: "data", Type: "block", Multiple: true, Args: []Arg{keyArg, valueArg}}),
	strSpec("msetnx", -3, request.MSetNX, "@write @slow", "1.0.1", "Sets each key to its value when none exists: 1 when set, 0 when not.", parseMSet,
		Arg{Name: "data", Type: "block", Multiple: true, Args: []Arg{keyArg, valueArg}}),
	incrExSpec, // increx.go
}

// stringOptions parses SET's options (getex false) or GETEX's (true) from
// args as Redis 7.0's parseExtendedStringArgumentsOrReply does: the flags
// and the time's argument, or ErrSyntax.
func stringOptions(args [][]byte, getex bool) (fl int64, t []byte, err string) {
	const exclusive = request.SetKeepTTL | request.SetPersist | request.SetEX | request.SetPX | request.SetEXAT | request.SetPXAT
	for j := 0; j < len(args); j++ {
		o := args[j]
		hasNext := j+1 < len(args)
		timeOpt := func(f int64) bool {
			return fl&(exclusive&^f) == 0 && hasNext
		}
		switch {
		case !getex && EqualFold(o, "nx") && fl&request.SetXXFlag == 0:
			fl |= request.SetNXFlag
		case !getex && EqualFold(o, "xx") && fl&request.SetNXFlag == 0:
			fl |= request.SetXXFlag
		case !getex && EqualFold(o, "get"):
			fl |= request.SetGetFlag
		case !getex && EqualFold(o, "keepttl") && fl&(exclusive&^request.SetKeepTTL) == 0:
			fl |= request.SetKeepTTL
		case getex && EqualFold(o, "persist") && fl&(exclusive&^request.SetPersist) == 0:
			fl |= request.SetPersist
		case EqualFold(o, "ex") && timeOpt(request.SetEX):
			fl |= request.SetEX
			j++
			t = args[j]
		case EqualFold(o, "px") && timeOpt(request.SetPX):
			fl |= request.SetPX
			j++
			t = args[j]
		case EqualFold(o, "exat") && timeOpt(request.SetEXAT):
			fl |= request.SetEXAT
			j++
			t = args[j]
		case EqualFold(o, "pxat") && timeOpt(request.SetPXAT):
			fl |= request.SetPXAT
			j++
			t = args[j]
		default:
			return 0, nil, ErrSyntax
		}
	}
	return fl, t, ""
}

// expireMs is getExpireMillisecondsOrReply's part without the clock: the
// time in ms, or the error to answer (the not-integer one, or
// ErrCode.Text's "invalid expire time in '<name>' command").
func expireMs(fl int64, t []byte) (int64, request.ErrCode) {
	ms, ok := redisInt(t)
	if !ok {
		return 0, request.ErrNotInteger
	}
	seconds := fl&(request.SetEX|request.SetEXAT) != 0
	if ms <= 0 || seconds && ms > math.MaxInt64/1000 {
		return 0, request.ErrSetExpireTime // renamed per command by the caller
	}
	if seconds {
		ms *= 1000
	}
	return ms, request.ErrNone
}

func parseGet(args [][]byte) (request.Request, string) {
	return request.Request{Code: request.Get, Key: args[1]}, ""
}

func parseSet(args [][]byte) (request.Request, string) {
	fl, t, err := stringOptions(args[3:], false)
	if err != "" {
		return request.Request{}, err
	}
	return setRequest(request.Set, args[1], args[2:3], fl, t, request.ErrSetExpireTime)
}

func parseSetEx(args [][]byte) (request.Request, string) {
	if EqualFold(args[0], "setex") {
		return setRequest(request.Set, args[1], args[3:4], request.SetEX, args[2], request.ErrSetExExpire)
	}
	return setRequest(request.Set, args[1], args[3:4], request.SetPX, args[2], request.ErrPSetExExpire)
}

// setRequest builds Set or SetGet: Key, the value, Args flags, ms and the
// error code of a relative time that overflows at apply.
func setRequest(code request.Code, key []byte, value [][]byte, fl int64, t []byte, timeErr request.ErrCode) (request.Request, string) {
	var ms int64
	if t != nil {
		var e request.ErrCode
		if ms, e = expireMs(fl, t); e == request.ErrNotInteger {
			return request.Request{}, ErrNotInteger
		} else if e != request.ErrNone {
			return request.Request{}, timeErr.Text()
		}
	}
	r := request.Request{Code: code, Key: key, Keys: value}
	r.SetArgs(fl, ms, int64(timeErr))
	return r, ""
}

func parseSetNX(args [][]byte) (request.Request, string) {
	return request.Request{Code: request.SetNX, Key: args[1], Keys: args[2:3]}, ""
}

func parseGetSet(args [][]byte) (request.Request, string) {
	return setRequest(request.SetGet, args[1], args[2:3], 0, nil, request.ErrSetExpireTime)
}

func parseGetDel(args [][]byte) (request.Request, string) {
	return request.Request{Code: request.GetDel, Key: args[1]}, ""
}

func parseGetEx(args [][]byte) (request.Request, string) {
	fl, t, err := stringOptions(args[2:], true)
	if err != "" {
		return request.Request{}, err
	}
	var ms int64
	var e request.ErrCode
	if t != nil {
		if ms, e = expireMs(fl, t); e == request.ErrSetExpireTime {
			e = request.ErrGetExExpire
		}
	}
	r := request.Request{Code: request.GetEx, Key: args[1]}
	r.SetArgs(fl, ms, int64(e))
	return r, ""
}

func parseStrLen(args [][]byte) (request.Request, string) {
	return request.Request{Code: request.StrLen, Key: args[1]}, ""
}

func parseAppend(args [][]byte) (request.Request, string) {
	return request.Request{Code: request.StrAppend, Key: args[1], Keys: args[2:3]}, ""
}

// parseIncr is INCR, DECR, INCRBY and DECRBY: the increment as string2ll.
func parseIncr(args [][]byte) (request.Request, string) {
	incr := int64(1)
	if len(args) == 3 {
		var ok bool
		if incr, ok = redisInt(args[2]); !ok {
			return request.Request{}, ErrNotInteger
		}
	}
	if args[0][0] == 'd' || args[0][0] == 'D' {
		if incr == math.MinInt64 {
			return request.Request{}, "ERR decrement would overflow"
		}
		incr = -incr
	}
	r := request.Request{Code: request.IncrBy, Key: args[1]}
	r.SetArgs(incr)
	return r, ""
}

// parseIncrByFloat leaves the increment to the state machine, which parses
// it after the type check as Redis does.
func parseIncrByFloat(args [][]byte) (request.Request, string) {
	return request.Request{Code: request.IncrByFloat, Key: args[1], Keys: args[2:3]}, ""
}

func parseMGet(args [][]byte) (request.Request, string) {
	return request.Request{Code: request.MGet, Keys: args[1:]}, ""
}

func parseMSet(args [][]byte) (request.Request, string) {
	if len(args)%2 == 0 {
		return request.Request{}, WrongArgs(string(Lower(nil, args[0])))
	}
	code := request.MSet
	if len(args[0]) == 6 {
		code = request.MSetNX
	}
	return request.Request{Code: code, Keys: args[1:]}, ""
}
