package commands

import (
	"math"

	"github.com/redcell/redcell/internal/arg"
	"github.com/redcell/redcell/request"
)

// The keyspace's expiry commands: EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT,
// PERSIST, EXPIRETIME, PEXPIRETIME, TOUCH. Parsing follows Redis 7.0's
// expireGenericCommand in its order: the options first (an unknown one,
// then the incompatible pairs), then the integer, then the overflows that
// need no clock (seconds to ms, EXPIREAT's). The one check that needs the
// clock (a relative time plus now past int64 ms) and NX/XX/GT/LT are the
// state machine's, at the entry's now (fsm/expire.go).

var expireArgs = []Arg{{Name: "key", Type: "key"}, {Name: "seconds", Type: "integer"},
	{Name: "condition", Type: "oneof", Optional: true, Args: []Arg{
		{Name: "nx", Type: "pure-token", Token: "NX"}, {Name: "xx", Type: "pure-token", Token: "XX"},
		{Name: "gt", Type: "pure-token", Token: "GT"}, {Name: "lt", Type: "pure-token", Token: "LT"}}}}

func expireSpec(name string, code request.Code, since, summary string) *Spec {
	return &Spec{Name: name, Arity: -3, Flags: []string{"fast"}, Code: code,
		Group: "generic", Since: since, Complexity: "O(1)", ACL: []string{"@keyspace", "@write", "@fast"},
		Summary: summary, Args: expireArgs, Parse: parseExpire}
}

var expireSpecs = []*Spec{
	expireSpec("expire", request.Expire, "1.0.0", "Sets the key's expiry in seconds (NX, XX, GT, LT as Redis 7); a time at or before now deletes it. Token-bucket and sliding-log keys keep their own expiry (only deletion applies)."),
	expireSpec("pexpire", request.PExpire, "2.6.0", "Sets the key's expiry in milliseconds, as EXPIRE."),
	expireSpec("expireat", request.ExpireAt, "1.2.0", "Sets the key's expiry to a Unix time in seconds, as EXPIRE."),
	expireSpec("pexpireat", request.PExpireAt, "2.6.0", "Sets the key's expiry to a Unix time in milliseconds, as EXPIRE."),
	{Name: "persist", Arity: 2, Flags: []string{"fast"}, Code: request.Persist,
		Group: "generic", Since: "2.2.0", Complexity: "O(1)", ACL: []string{"@keyspace", "@write", "@fast"},
		Summary: "Removes the key's expiry: 1 when it had one (a CL key's next CL.THROTTLE sets one again; token-bucket and sliding-log keys keep theirs: 0).",
		Args:    []Arg{{Name: "key", Type: "key"}}, Parse: parsePersist},
	{Name: "expiretime", Arity: 2, Flags: []string{"fast"}, Code: request.ExpireTime,
		Group: "generic", Since: "7.0.0", Complexity: "O(1)", ACL: []string{"@keyspace", "@read", "@fast"},
		Summary: "The key's expiry as a Unix time in seconds; -1 without one, -2 when missing.",
		Args:    []Arg{{Name: "key", Type: "key"}}, Parse: parseExpireTime},
	{Name: "pexpiretime", Arity: 2, Flags: []string{"fast"}, Code: request.PExpireTime,
		Group: "generic", Since: "7.0.0", Complexity: "O(1)", ACL: []string{"@keyspace", "@read", "@fast"},
		Summary: "The key's expiry as a Unix time in milliseconds; -1 without one, -2 when missing.",
		Args:    []Arg{{Name: "key", Type: "key"}}, Parse: parseExpireTime},
	{Name: "touch", Arity: -2, Flags: []string{"fast"}, Code: request.Touch,
		Group: "generic", Since: "3.2.1", Complexity: "O(N) where N is the number of keys", ACL: []string{"@keyspace", "@read", "@fast"},
		Summary: "Counts the arguments that exist (Redcell keeps no access times).",
		Args:    []Arg{{Name: "key", Type: "key", Multiple: true}}, Parse: parseTouch},
	{Name: "rename", Arity: 3, Code: request.Rename,
		Group: "generic", Since: "1.0.0", Complexity: "O(1)", ACL: []string{"@keyspace", "@write", "@slow"},
		Summary: "Renames a key, its value and expiry moving with it, and replaces the new name's key; ERR no such key when it is missing.",
		Args:    []Arg{{Name: "key", Type: "key"}, {Name: "newkey", Type: "key"}}, Parse: parseRename},
	{Name: "renamenx", Arity: 3, Flags: []string{"fast"}, Code: request.RenameNX,
		Group: "generic", Since: "1.0.0", Complexity: "O(1)", ACL: []string{"@keyspace", "@write", "@fast"},
		Summary: "Renames a key only when the new name does not exist: 1 when renamed, 0 when not.",
		Args:    []Arg{{Name: "key", Type: "key"}, {Name: "newkey", Type: "key"}}, Parse: parseRename},
}

// Redis 7.0's option errors of the expiry commands.
const (
	errExpireNX = "ERR NX and XX, GT or LT options at the same time are not compatible"
	errExpireGT = "ERR GT and LT options at the same time are not compatible"
)

// parseExpire builds Expire, PExpire, ExpireAt or PExpireAt (by args[0]):
// Args the time in ms (relative or absolute) and the option flags.
func parseExpire(args [][]byte) (request.Request, string) {
	code, name := request.PExpireAt, "pexpireat"
	switch {
	case EqualFold(args[0], "expire"):
		code, name = request.Expire, "expire"
	case EqualFold(args[0], "pexpire"):
		code, name = request.PExpire, "pexpire"
	case EqualFold(args[0], "expireat"):
		code, name = request.ExpireAt, "expireat"
	}
	var flags int64
	for _, o := range args[3:] {
		switch {
		case EqualFold(o, "nx"):
			flags |= request.ExpireNX
		case EqualFold(o, "xx"):
			flags |= request.ExpireXX
		case EqualFold(o, "gt"):
			flags |= request.ExpireGT
		case EqualFold(o, "lt"):
			flags |= request.ExpireLT
		default:
			// Redis formats the option as a C string into the whole
			// message, then trims and maps its CR/LF (addReplyErrorFormat).
			return request.Request{}, SanitizeErrorText(append([]byte("ERR Unsupported option "), o...))
		}
	}
	if flags&request.ExpireNX != 0 && flags != request.ExpireNX {
		return request.Request{}, errExpireNX
	}
	if flags&request.ExpireGT != 0 && flags&request.ExpireLT != 0 {
		return request.Request{}, errExpireGT
	}
	when, ok := redisInt(args[2])
	if !ok {
		return request.Request{}, ErrNotInteger
	}
	if code == request.Expire || code == request.ExpireAt {
		if when > math.MaxInt64/1000 || when < math.MinInt64/1000 {
			return request.Request{}, "ERR invalid expire time in '" + name + "' command"
		}
		when *= 1000
	}
	r := request.Request{Code: code, Key: args[1]}
	r.SetArgs(when, flags)
	return r, ""
}

// redisInt is Redis's string2ll: arg.Int without a '+' sign or leading
// zeros ("-0", "010" are not integers to EXPIRE).
func redisInt(b []byte) (int64, bool) {
	if len(b) == 0 || b[0] == '+' {
		return 0, false
	}
	d := b
	if d[0] == '-' {
		d = d[1:]
	}
	if len(d) == 0 || (d[0] == '0' && len(b) > 1) {
		return 0, false
	}
	return arg.Int(b)
}

func parsePersist(args [][]byte) (request.Request, string) {
	return request.Request{Code: request.Persist, Key: args[1]}, ""
}

func parseExpireTime(args [][]byte) (request.Request, string) {
	code := request.ExpireTime
	if EqualFold(args[0], "pexpiretime") {
		code = request.PExpireTime
	}
	return request.Request{Code: code, Key: args[1]}, ""
}

func parseTouch(args [][]byte) (request.Request, string) {
	return request.Request{Code: request.Touch, Keys: args[1:]}, ""
}

// parseRename builds Rename or RenameNX (by args[0]): the source and the
// destination, in Keys.
func parseRename(args [][]byte) (request.Request, string) {
	code := request.Rename
	if len(args[0]) == len("renamenx") {
		code = request.RenameNX
	}
	return request.Request{Code: code, Keys: args[1:3]}, ""
}
