package commands

import (
	"github.com/redcell/redcell/fsm"
)

// MaxRequestLogBytes bounds what one write request takes in the replicated
// log (fsm.EncodedOpLen: its op code, keys and integers). A request is one op
// of one log entry, and an entry is one fsync on every node and one
// replication message to each follower: a single huge request would stall
// every other client's writes behind it and could outgrow what a follower
// accepts. etcd bounds its requests the same way (--max-request-bytes,
// 1.5 MiB by default); 16 MiB still holds a DEL of more than a million short
// keys or a CL.THROTTLE key of almost 16 MiB. A larger request is answered
// RequestTooLarge and never enters the log.
const MaxRequestLogBytes = 16 << 20

// ParseWrite turns a Write-class command into its replicated op. It returns
// the error text to answer instead, or "". Arity has been checked against
// the table unless the spec checks its own. op's keys alias args.
func ParseWrite(s *Spec, args [][]byte, op *fsm.Op) string {
	if e := parseWrite(s, args, op); e != "" {
		return e
	}
	if n := fsm.EncodedOpLen(op); n > MaxRequestLogBytes {
		*op = fsm.Op{} // nothing of a refused request may be proposed
		return RequestTooLarge(n)
	}
	return ""
}

func parseWrite(s *Spec, args [][]byte, op *fsm.Op) string {
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
