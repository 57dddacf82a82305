package commands

import (
	"github.com/redcell/redcell/request"
)

// The set family's commands: SADD, SREM, SISMEMBER, SMISMEMBER, SCARD,
// SMEMBERS. Redis 7.0 parses nothing but the arity for them: every reply
// (WRONGTYPE included) is the state machine's (fsm/sets.go). The members
// travel as the request's values (KeyValue).

// setSpec is a set command's spec; acl is its ACL categories ("@write
// @fast": Redis 7.0 lists @set second), and @fast makes it a "fast"
// command too.
func setSpec(name string, arity int, code request.Code, acl, since, complexity, summary string, parse func([][]byte) (request.Request, string), args ...Arg) *Spec {
	s := strSpec(name, arity, code, acl, since, summary, parse, args...)
	s.Group, s.ACL[1], s.Complexity = "set", "@set", complexity
	return s
}

var (
	memberArg  = Arg{Name: "member", Type: "string"}
	membersArg = Arg{Name: "member", Type: "string", Multiple: true}
)

var setSpecs = []*Spec{
	setSpec("sadd", -3, request.SAdd, "@write @fast", "1.0.0", "O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments.",
		"Adds the members to the set at key: how many were not members yet.", parseMembers(request.SAdd), keyArg, membersArg),
	setSpec("srem", -3, request.SRem, "@write @fast", "1.0.0", "O(N) where N is the number of members to be removed.",
		"Removes the members from the set at key: how many were members. An emptied set is deleted.", parseMembers(request.SRem), keyArg, membersArg),
	setSpec("sismember", 3, request.SIsMember, "@read @fast", "1.0.0", "O(1)",
		"1 when member is in the set at key, 0 when not.", parseMembers(request.SIsMember), keyArg, memberArg),
	setSpec("smismember", -3, request.SMIsMember, "@read @fast", "6.2.0", "O(N) where N is the number of elements being checked for membership",
		"For each member, 1 when it is in the set at key, 0 when not.", parseMembers(request.SMIsMember), keyArg, membersArg),
	setSpec("scard", 2, request.SCard, "@read @fast", "1.0.0", "O(1)",
		"The number of members of the set at key; 0 when missing.", parseSetKey(request.SCard), keyArg),
	setSpec("smembers", 2, request.SMembers, "@read @slow", "1.0.0", "O(N) where N is the set cardinality.",
		"Every member of the set at key, in no specified order.", parseSetKey(request.SMembers), keyArg),
}

// parseMembers is SADD's, SREM's, SISMEMBER's and SMISMEMBER's parser: the
// key and its members (arity checked).
func parseMembers(code request.Code) func([][]byte) (request.Request, string) {
	return func(args [][]byte) (request.Request, string) {
		return request.Request{Code: code, Key: args[1], Keys: args[2:]}, ""
	}
}

// parseSetKey is SCARD's and SMEMBERS's parser: the key.
func parseSetKey(code request.Code) func([][]byte) (request.Request, string) {
	return func(args [][]byte) (request.Request, string) {
		return request.Request{Code: code, Key: args[1]}, ""
	}
}
