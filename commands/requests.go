package commands

import (
	"github.com/redcell/redcell/request"
)

// MaxRequestLogBytes bounds what one write request takes in the replicated
// log (request.EncodedLen: its code, keys and integers). A request is one op
// of one log entry, and an entry is one fsync on every node and one
// replication message to each follower: a single huge request would stall
// every other client's writes behind it and could outgrow what a follower
// accepts. etcd bounds its requests the same way (--max-request-bytes,
// 1.5 MiB by default); 16 MiB still holds a DEL of more than a million short
// keys or a CL.THROTTLE key of almost 16 MiB. A larger request is answered
// RequestTooLarge and never enters the log.
const MaxRequestLogBytes = 16 << 20

// ParseWrite turns a Write-class command into its request (a write code).
// It returns the error text to answer instead, or "". Arity has been checked
// against the table unless the spec checks its own. r's keys alias args.
func ParseWrite(s *Spec, args [][]byte, r *request.Request) string {
	if e := parseWrite(s, args, r); e != "" {
		*r = request.Request{}
		return e
	}
	if n := request.EncodedLen(r); n > MaxRequestLogBytes {
		*r = request.Request{} // nothing of a refused request may be proposed
		return RequestTooLarge(n)
	}
	return ""
}

func parseWrite(s *Spec, args [][]byte, r *request.Request) string {
	if s.Class != Write || s.Parse == nil {
		return ErrInternal
	}
	var e string
	*r, e = s.Parse(args)
	return e
}

// ParseRead turns a Read-class command into its request (a read code). r's
// keys alias args.
func ParseRead(s *Spec, args [][]byte, r *request.Request) string {
	if s.Class != Read || s.Parse == nil {
		*r = request.Request{}
		return ErrInternal
	}
	var e string
	if *r, e = s.Parse(args); e != "" {
		*r = request.Request{}
	}
	return e
}

// The keyspace commands' parse functions (their table entries are in
// table.go). Arity has been checked against the table.

func parseDel(args [][]byte) (request.Request, string) {
	return request.Request{Code: request.Del, Keys: args[1:]}, ""
}

// parseFlush is FLUSHALL and FLUSHDB [ASYNC|SYNC]: both flush at once here
// (the keyspace is freed in one step); the mode is accepted for
// compatibility.
func parseFlush(args [][]byte) (request.Request, string) {
	if len(args) > 2 || (len(args) == 2 && !EqualFold(args[1], "async") && !EqualFold(args[1], "sync")) {
		return request.Request{}, ErrSyntax
	}
	return request.Request{Code: request.FlushAll}, ""
}

func parseExists(args [][]byte) (request.Request, string) {
	return request.Request{Code: request.Exists, Keys: args[1:]}, ""
}

func parsePTTL(args [][]byte) (request.Request, string) {
	return request.Request{Code: request.PTTL, Key: args[1]}, ""
}

func parseTTL(args [][]byte) (request.Request, string) {
	return request.Request{Code: request.TTL, Key: args[1]}, ""
}

func parseType(args [][]byte) (request.Request, string) {
	return request.Request{Code: request.Type, Key: args[1]}, ""
}

func parseDBSize(args [][]byte) (request.Request, string) {
	return request.Request{Code: request.DBSize}, ""
}
