package commands

import (
	"slices"
	"strings"

	"github.com/redcell/redcell/request"
)

// The hash family's commands: HSET, HSETNX, HMSET, HGET, HMGET, HGETALL,
// HDEL, HEXISTS, HLEN, HKEYS, HVALS, HINCRBY, HINCRBYFLOAT. Parsing is
// Redis 7.0's t_hash.c in its order: the arity (HSET and HMSET also need
// pairs), HINCRBY's increment as string2ll; HINCRBYFLOAT's increment, the
// type and everything about the stored values are the state machine's
// (fsm/hashes.go). Every request's Keys are the fields (and values) after
// the key.

// hashSpec is a hash command's spec; acl is its ACL categories besides
// @hash ("@write @fast": Redis 7.0 lists @hash second), and @fast makes it
// a "fast" command too.
func hashSpec(name string, arity int, code request.Code, acl, since, complexity, summary string, parse func([][]byte) (request.Request, string), args ...Arg) *Spec {
	s := &Spec{Name: name, Arity: arity, Code: code, Group: "hash", Since: since, Complexity: complexity,
		ACL: append([]string{acl[:strings.IndexByte(acl, ' ')], "@hash"}, strings.Fields(acl)[1:]...), Summary: summary, Args: args, Parse: parse}
	if slices.Contains(s.ACL, "@fast") {
		s.Flags = []string{"fast"}
	}
	return s
}

var (
	fieldArg      = Arg{Name: "field", Type: "string"}
	fieldsArg     = Arg{Name: "field", Type: "string", Multiple: true}
	fieldValueArg = Arg{Name: "data", Type: "block", Multiple: true, Args: []Arg{fieldArg, valueArg}}
)

var hashSpecs = []*Spec{
	hashSpec("hset", -4, request.HSet, "@write @fast", "2.0.0", "O(1) for each field/value pair added",
		"Sets fields of the hash at key: the number of fields added.", parseHSet, keyArg, fieldValueArg),
	hashSpec("hmset", -4, request.HSet, "@write @fast", "2.0.0", "O(N) where N is the number of fields being set",
		"Sets fields of the hash at key (HSET answering +OK).", parseHSet, keyArg, fieldValueArg),
	hashSpec("hsetnx", 4, request.HSetNX, "@write @fast", "2.0.0", "O(1)",
		"Sets a field of the hash when it is missing: 1 when set, 0 when not.", parseFields(request.HSetNX), keyArg, fieldArg, valueArg),
	hashSpec("hget", 3, request.HGet, "@read @fast", "2.0.0", "O(1)",
		"The value of a field of the hash; nil when missing.", parseFields(request.HGet), keyArg, fieldArg),
	hashSpec("hmget", -3, request.HMGet, "@read @fast", "2.0.0", "O(N) where N is the number of fields being requested.",
		"The values of fields of the hash; nil for a missing one.", parseFields(request.HMGet), keyArg, fieldsArg),
	hashSpec("hgetall", 2, request.HGetAll, "@read @slow", "2.0.0", "O(N) where N is the size of the hash.",
		"Every field and value of the hash.", parseHashKey(request.HGetAll), keyArg),
	hashSpec("hdel", -3, request.HDel, "@write @fast", "2.0.0", "O(N) where N is the number of fields to be removed.",
		"Deletes fields of the hash: how many were there.", parseFields(request.HDel), keyArg, fieldsArg),
	hashSpec("hexists", 3, request.HExists, "@read @fast", "2.0.0", "O(1)",
		"1 when the hash has the field, 0 when not.", parseFields(request.HExists), keyArg, fieldArg),
	hashSpec("hlen", 2, request.HLen, "@read @fast", "2.0.0", "O(1)",
		"The number of fields of the hash; 0 when missing.", parseHashKey(request.HLen), keyArg),
	hashSpec("hkeys", 2, request.HKeys, "@read @slow", "2.0.0", "O(N) where N is the size of the hash.",
		"Every field of the hash.", parseHashKey(request.HKeys), keyArg),
	hashSpec("hvals", 2, request.HVals, "@read @slow", "2.0.0", "O(N) where N is the size of the hash.",
		"Every value of the hash.", parseHashKey(request.HVals), keyArg),
	hashSpec("hincrby", 4, request.HIncrBy, "@write @fast", "2.0.0", "O(1)",
		"Adds increment to a field's integer value: the new value.", parseHIncrBy, keyArg, fieldArg, Arg{Name: "increment", Type: "integer"}),
	hashSpec("hincrbyfloat", 4, request.HIncrByFloat, "@write @fast", "2.6.0", "O(1)",
		"Adds increment to a field's value as a long double: the new value.", parseFields(request.HIncrByFloat), keyArg, fieldArg, Arg{Name: "increment", Type: "double"}),
}

// parseHSet is HSET and HMSET: pairs after the key, else Redis's arity
// error.
func parseHSet(args [][]byte) (request.Request, string) {
	if len(args)%2 != 0 {
		return request.Request{}, WrongArgs(string(Lower(nil, args[0])))
	}
	r := request.Request{Code: request.HSet, Key: args[1], Keys: args[2:]}
	if len(args[0]) == 5 { // HMSET
		r.SetArgs(request.HSetOK)
	} else {
		r.SetArgs(0)
	}
	return r, ""
}

// parseFields returns the parser of a command of a key and fields (and
// values): HSETNX, HGET, HMGET, HDEL, HEXISTS, HINCRBYFLOAT.
func parseFields(code request.Code) func([][]byte) (request.Request, string) {
	return func(args [][]byte) (request.Request, string) {
		return request.Request{Code: code, Key: args[1], Keys: args[2:]}, ""
	}
}

// parseHashKey returns the parser of a command of a key alone: HGETALL,
// HLEN, HKEYS, HVALS.
func parseHashKey(code request.Code) func([][]byte) (request.Request, string) {
	return func(args [][]byte) (request.Request, string) {
		return request.Request{Code: code, Key: args[1]}, ""
	}
}

func parseHIncrBy(args [][]byte) (request.Request, string) {
	incr, ok := redisInt(args[3])
	if !ok {
		return request.Request{}, ErrNotInteger
	}
	r := request.Request{Code: request.HIncrBy, Key: args[1], Keys: args[2:3]}
	r.SetArgs(incr)
	return r, ""
}
