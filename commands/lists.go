package commands

import (
	"slices"
	"strings"

	"github.com/redcell/redcell/request"
)

// The list family's commands: LPUSH, RPUSH, LPUSHX, RPUSHX, LPOP, RPOP
// (with a count), LLEN, LINDEX, LRANGE, LTRIM, LREM, LSET. Parsing follows
// Redis 7.0's t_list.c in its order: LPOP's count, LRANGE's, LTRIM's and
// LREM's integers are parsed before the key is looked up, so their errors
// are the parser's; LINDEX and LSET parse their index after the lookup and
// type check, so their parser passes the error on (Args[1]) for the state
// machine to answer when the list exists (fsm/lists.go).

// listSpec is a list command's spec; acl is its ACL categories besides
// @list ("@write @fast": Redis 7.0 lists @list second), and @fast makes it
// a "fast" command too.
func listSpec(name string, arity int, code request.Code, acl, since, complexity, summary string, parse func([][]byte) (request.Request, string), args ...Arg) *Spec {
	s := &Spec{Name: name, Arity: arity, Code: code, Group: "list", Since: since, Complexity: complexity,
		ACL: append([]string{acl[:strings.IndexByte(acl, ' ')], "@list"}, strings.Fields(acl)[1:]...), Summary: summary, Args: args, Parse: parse}
	if slices.Contains(s.ACL, "@fast") {
		s.Flags = []string{"fast"}
	}
	return s
}

var (
	listElementsArg = Arg{Name: "element", Type: "string", Multiple: true}
	listElementArg  = Arg{Name: "element", Type: "string"}
	listCountArg    = Arg{Name: "count", Type: "integer", Optional: true}
	listStartArg    = Arg{Name: "start", Type: "integer"}
	listStopArg     = Arg{Name: "stop", Type: "integer"}
	listIndexArg    = Arg{Name: "index", Type: "integer"}
)

var listSpecs = []*Spec{
	listSpec("lpush", -3, request.ListPush, "@write @fast", "1.0.0", "O(1) for each element added",
		"Prepends the elements to the list (the last one ends up first): the new length.", parseListPush, keyArg, listElementsArg),
	listSpec("rpush", -3, request.ListPush, "@write @fast", "1.0.0", "O(1) for each element added",
		"Appends the elements to the list: the new length.", parseListPush, keyArg, listElementsArg),
	listSpec("lpushx", -3, request.ListPush, "@write @fast", "2.2.0", "O(1) for each element added",
		"Prepends the elements to an existing list: the new length, 0 when missing.", parseListPush, keyArg, listElementsArg),
	listSpec("rpushx", -3, request.ListPush, "@write @fast", "2.2.0", "O(1) for each element added",
		"Appends the elements to an existing list: the new length, 0 when missing.", parseListPush, keyArg, listElementsArg),
	listSpec("lpop", -2, request.ListPop, "@write @fast", "1.0.0", "O(N) where N is the number of elements returned",
		"Removes and answers the first element, or the first count elements.", parseListPop, keyArg, listCountArg),
	listSpec("rpop", -2, request.ListPop, "@write @fast", "1.0.0", "O(N) where N is the number of elements returned",
		"Removes and answers the last element, or the last count elements (last first).", parseListPop, keyArg, listCountArg),
	listSpec("llen", 2, request.ListLen, "@read @fast", "1.0.0", "O(1)",
		"The length of the list; 0 when missing.", parseListLen, keyArg),
	listSpec("lindex", 3, request.ListIndex, "@read @slow", "1.0.0", "O(N) where N is the number of elements to traverse to get to the element at index",
		"The element at index (negative from the tail); nil when out of range.", parseListIndex, keyArg, listIndexArg),
	listSpec("lrange", 4, request.ListRange, "@read @slow", "1.0.0", "O(S+N) where S is the distance of start offset from HEAD for small lists, from nearest end (HEAD or TAIL) for large lists; and N is the number of elements in the specified range.",
		"The elements from start to stop, both included (negative from the tail).", parseListRange, keyArg, listStartArg, listStopArg),
	listSpec("ltrim", 4, request.ListTrim, "@write @slow", "1.0.0", "O(N) where N is the number of elements to be removed by the operation.",
		"Keeps only the elements from start to stop; an empty range deletes the key.", parseListTrim, keyArg, listStartArg, listStopArg),
	listSpec("lrem", 4, request.ListRem, "@write @slow", "1.0.0", "O(N+M) where N is the length of the list and M is the number of elements removed.",
		"Removes count occurrences of element (from the tail when negative, all when 0): how many.", parseListRem, keyArg, Arg{Name: "count", Type: "integer"}, listElementArg),
	listSpec("lset", 4, request.ListSet, "@write @slow", "1.0.0", "O(N) where N is the length of the list.",
		"Replaces the element at index.", parseListSet, keyArg, listIndexArg, listElementArg),
}

// parseListPush is LPUSH, RPUSH, LPUSHX and RPUSHX.
func parseListPush(args [][]byte) (request.Request, string) {
	var fl int64
	name := args[0]
	if name[0] == 'r' || name[0] == 'R' {
		fl |= request.ListRight
	}
	if len(name) == 6 {
		fl |= request.ListExisting
	}
	r := request.Request{Code: request.ListPush, Key: args[1], Keys: args[2:]}
	r.SetArgs(fl)
	return r, ""
}

// parseListPop is LPOP and RPOP: a count, when given, is parsed before the
// lookup with Redis 7.0's getPositiveLongFromObjectOrReply message (for a
// negative count and for one that is not an integer alike).
func parseListPop(args [][]byte) (request.Request, string) {
	if len(args) > 3 {
		return request.Request{}, WrongArgs(string(Lower(nil, args[0])))
	}
	var fl int64
	if args[0][0] == 'r' || args[0][0] == 'R' {
		fl = request.ListRight
	}
	count := request.ListNoCount
	if len(args) == 3 {
		n, ok := redisInt(args[2])
		if !ok || n < 0 {
			return request.Request{}, "ERR value is out of range, must be positive"
		}
		count = n
	}
	r := request.Request{Code: request.ListPop, Key: args[1]}
	r.SetArgs(fl, count)
	return r, ""
}

func parseListLen(args [][]byte) (request.Request, string) {
	return request.Request{Code: request.ListLen, Key: args[1]}, ""
}

// listIndexArgs is LINDEX's and LSET's index and the error the state
// machine answers for it once the list is found (Redis parses it after the
// lookup).
func listIndexArgs(r *request.Request, index []byte) {
	if i, ok := redisInt(index); ok {
		r.SetArgs(i, 0)
		return
	}
	r.SetArgs(0, int64(request.ErrNotInteger))
}

func parseListIndex(args [][]byte) (request.Request, string) {
	r := request.Request{Code: request.ListIndex, Key: args[1]}
	listIndexArgs(&r, args[2])
	return r, ""
}

func parseListSet(args [][]byte) (request.Request, string) {
	r := request.Request{Code: request.ListSet, Key: args[1], Keys: args[3:4]}
	listIndexArgs(&r, args[2])
	return r, ""
}

// listStartStop parses LRANGE's and LTRIM's start and stop, before the lookup.
func listStartStop(code request.Code, args [][]byte) (request.Request, string) {
	start, ok1 := redisInt(args[2])
	stop, ok2 := redisInt(args[3])
	if !ok1 || !ok2 {
		return request.Request{}, ErrNotInteger
	}
	r := request.Request{Code: code, Key: args[1]}
	r.SetArgs(start, stop)
	return r, ""
}

func parseListRange(args [][]byte) (request.Request, string) {
	return listStartStop(request.ListRange, args)
}

func parseListTrim(args [][]byte) (request.Request, string) {
	return listStartStop(request.ListTrim, args)
}

func parseListRem(args [][]byte) (request.Request, string) {
	count, ok := redisInt(args[2])
	if !ok {
		return request.Request{}, ErrNotInteger
	}
	r := request.Request{Code: request.ListRem, Key: args[1], Keys: args[3:4]}
	r.SetArgs(count)
	return r, ""
}
