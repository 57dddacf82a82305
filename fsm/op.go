package fsm

import (
	"github.com/redcell/redcell/gcra"
)

// OpCode names a replicated operation. Its numeric value is part of the log
// format: never renumber, only append.
type OpCode uint8

const (
	// OpThrottle is CL.THROTTLE: one GCRA decision on Key with GCRA params.
	OpThrottle OpCode = 1
	// OpDel removes Keys (DEL/UNLINK); the result counts keys that were live.
	OpDel OpCode = 2
	// OpFlushAll removes every key (FLUSHALL/FLUSHDB).
	OpFlushAll OpCode = 3
)

// ReadCode names an operation that only reads the keyspace. Reads never enter
// the log; they run on the leader after it confirms its leadership.
type ReadCode uint8

const (
	ReadPeek   ReadCode = iota + 1 // CL.PEEK
	ReadExists                     // EXISTS key...
	ReadPTTL                       // PTTL key
	ReadTTL                        // TTL key
	ReadType                       // TYPE key
	ReadDBSize                     // DBSIZE
)

// Op is one state-changing request, parsed and validated. Key and Keys alias
// the connection's read buffer: the owner keeps them valid until the request
// is answered (the proposer copies them into the log entry).
type Op struct {
	Code OpCode
	Key  []byte
	Keys [][]byte
	GCRA gcra.Params
}

// Read is one read-only request; same aliasing rule as Op.
type Read struct {
	Code ReadCode
	Key  []byte
	Keys [][]byte
	GCRA gcra.Params
}

// ResultKind says how a Result is to be written to the client.
type ResultKind uint8

const (
	ResultThrottle ResultKind = iota + 1 // five integers in Ints
	ResultInt                            // one integer in Ints[0]
	ResultType                           // a shard.Kind in Ints[0]; the server names it
	ResultOK                             // +OK
	ResultError                          // Err
)

// ErrCode is a deterministic failure of one request inside the state machine.
type ErrCode uint8

const (
	ErrNone      ErrCode = iota
	ErrWrongType         // key held by another limiter family
	ErrExpire            // redis-cell's "Error while setting key expire"
	// ErrInvalidOp: the op decoded but its parameters are outside what the
	// parser produces and apply can honour (see validOp). Nothing changed.
	ErrInvalidOp
)

// Result is the answer to one Op or Read. It holds no pointers so result
// buffers are cheap to keep and copy.
type Result struct {
	Kind ResultKind
	Err  ErrCode
	Ints [5]int64
}

func (r *Result) setThrottle(rep gcra.Reply) {
	r.Kind = ResultThrottle
	r.Ints = [5]int64{rep.Limited, rep.Limit, rep.Remaining, rep.RetryAfter, rep.ResetAfter}
}

func (r *Result) setInt(v int64) {
	r.Kind = ResultInt
	r.Ints[0] = v
}

func (r *Result) setErr(code ErrCode) {
	r.Kind = ResultError
	r.Err = code
}
