package commands

import (
	"github.com/redcell/redcell/fsm"
)

// ParseWrite turns a Write-class command into its replicated op. It returns
// the error text to answer instead, or "". Arity has been checked against
// the table unless the spec checks its own. op's keys alias args.
func ParseWrite(s *Spec, args [][]byte, op *fsm.Op) string {
	switch s.Name {
	case "cl.throttle":
		return ParseThrottle(args, op)
	case "del", "unlink":
		*op = fsm.Op{Code: fsm.OpDel, Keys: args[1:]}
		return ""
	case "flushall", "flushdb":
		// FLUSHALL [ASYNC|SYNC]: both flush at once here (the keyspace is
		// freed in one step); the mode is accepted for compatibility.
		if len(args) > 2 || (len(args) == 2 && !EqualFold(args[1], "async") && !EqualFold(args[1], "sync")) {
			return ErrSyntax
		}
		*op = fsm.Op{Code: fsm.OpFlushAll}
		return ""
	}
	return ErrInternal
}

// ParseRead turns a Read-class command into its read request.
func ParseRead(s *Spec, args [][]byte, r *fsm.Read) string {
	switch s.Name {
	case "cl.peek":
		return ParsePeek(args, r)
	case "exists":
		*r = fsm.Read{Code: fsm.ReadExists, Keys: args[1:]}
	case "pttl":
		*r = fsm.Read{Code: fsm.ReadPTTL, Key: args[1]}
	case "ttl":
		*r = fsm.Read{Code: fsm.ReadTTL, Key: args[1]}
	case "type":
		*r = fsm.Read{Code: fsm.ReadType, Key: args[1]}
	case "dbsize":
		*r = fsm.Read{Code: fsm.ReadDBSize}
	default:
		return ErrInternal
	}
	return ""
}
