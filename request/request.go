// Package request is the one shape a parsed Redcell request takes wherever it
// travels: in a connection's batch, in a Raft log entry, on the wire from a
// follower to its leader, and (later) in a MULTI queue. A Request is an
// opcode, its key or keys, and integer arguments already derived by the
// parser; a Result is the answer to one. The package imports nothing of
// Redcell's, so every layer can use it. See DESIGN.md.
package request

import "encoding/binary"

// Code names an operation. Its numeric value is part of the log format and
// of the forwarding protocol: never renumber, only append. Writes are below
// 64 and change replicated state; reads are 64 and above and only look.
type Code uint8

const (
	// Throttle is CL.THROTTLE on Key. Args: GCRA emission interval (ns),
	// limit (max_burst+1), quantity.
	Throttle Code = 1
	// Del removes Keys (DEL, UNLINK); the result counts keys that were live.
	Del Code = 2
	// FlushAll removes every key (FLUSHALL, FLUSHDB).
	FlushAll Code = 3
	// TBTake is TB.TAKE on Key. Args: capacity, refill_tokens,
	// refill_period_ms, COST, INTERVAL (1) or greedy (0).
	TBTake Code = 4
	// SLHit is SL.HIT on Key. Args: limit, window_ms, COST, MINGAP,
	// DENIED COUNT (1) or FREE (0).
	SLHit Code = 5

	// Peek is CL.PEEK on Key, with Throttle's Args.
	Peek Code = 64
	// Exists counts the live keys among Keys.
	Exists Code = 65
	// PTTL, TTL and Type describe Key.
	PTTL Code = 66
	TTL  Code = 67
	Type Code = 68
	// DBSize counts live keys.
	DBSize Code = 69
	// TBPeek is TB.PEEK on Key, with TBTake's Args.
	TBPeek Code = 70
	// SLPeek is SL.PEEK on Key, with SLHit's Args (the last one 0).
	SLPeek Code = 71
	// Scan is SCAN: Key is the MATCH pattern (empty: none, with Args[3] 0).
	// Args: cursor (a uint64's bits), COUNT, the TYPE filter (ScanType*),
	// MATCH given (1) or not (0). The result is KindScan.
	Scan Code = 72
	// Keys is KEYS: Key is the pattern. The result is KindKeys.
	Keys Code = 73
)

// The TYPE filter of a Scan request (Args[2]).
const (
	ScanTypeAny         int64 = 0 // no TYPE option
	ScanTypeString      int64 = 1 // CL keys
	ScanTypeTokenBucket int64 = 2 // TB keys, greedy and INTERVAL
	ScanTypeSlidingLog  int64 = 3 // SL keys
	ScanTypeNone        int64 = 4 // a type no key has (list, hash, … or unknown): matches nothing
)

// firstRead splits the code space.
const firstRead Code = 64

// IsWrite reports whether requests with this code change replicated state
// (and so go through the log).
func (c Code) IsWrite() bool { return c < firstRead }

// MultiKey reports whether the code takes Keys (a list) rather than Key.
func (c Code) MultiKey() bool { return c == Del || c == Exists }

// LooksUpKey reports whether a request with this code looks its Key up in
// the keyspace (Scan and Keys take a pattern there instead).
func (c Code) LooksUpKey() bool {
	switch c {
	case Throttle, TBTake, SLHit, Peek, PTTL, TTL, Type, TBPeek, SLPeek:
		return true
	}
	return false
}

// CreatesKey reports whether a request with this code creates its Key when
// it is missing (a limiter's first call): what maxmemory refuses.
func (c Code) CreatesKey() bool { return c == Throttle || c == TBTake || c == SLHit }

// Known reports whether this build knows the code.
func (c Code) Known() bool {
	switch c {
	case Throttle, Del, FlushAll, TBTake, SLHit, Peek, Exists, PTTL, TTL, Type, DBSize, TBPeek, SLPeek, Scan, Keys:
		return true
	}
	return false
}

// MaxArgs is how many integer arguments a request carries at most.
const MaxArgs = 6

// Request is one parsed, validated request.
//
// Ownership: Key and Keys alias a buffer owned by whoever filled the
// request (a connection's read buffer, a log entry, a forwarding frame);
// that owner keeps them valid until the request has been answered. Code
// that keeps a request longer copies it (the log encoder does, by encoding).
type Request struct {
	Code  Code
	Key   []byte   // single-key codes
	Keys  [][]byte // MultiKey codes
	NArgs uint8
	Args  [MaxArgs]int64
}

// Arg returns argument i (0 past NArgs).
func (r *Request) Arg(i int) int64 { return r.Args[i] }

// SetArgs sets the integer arguments.
func (r *Request) SetArgs(args ...int64) {
	if len(args) > MaxArgs {
		panic("request: too many arguments") // a programming error, never client input
	}
	r.NArgs = uint8(len(args))
	r.Args = [MaxArgs]int64{}
	copy(r.Args[:], args)
}

// Kind says how a Result is written to the client.
type Kind uint8

const (
	KindThrottle Kind = iota + 1 // five integers in Ints (every limiter's reply)
	KindInt                      // one integer in Ints[0]
	KindType                     // a key type (Key*) in Ints[0]; TypeName names it
	KindOK                       // +OK
	KindError                    // Err
	KindKeys                     // an array of keys, in Data (KEYS)
	KindScan                     // a cursor (a uint64's bits) in Ints[0] and an array of keys in Data (SCAN)
)

// ErrCode is a deterministic failure of one request in the state machine:
// every replica computes the same one.
type ErrCode uint8

const (
	ErrNone      ErrCode = iota
	ErrWrongType         // key held by another limiter family
	ErrExpire            // redis-cell's "Error while setting key expire"
	// ErrInvalidOp: the request decoded but its arguments are outside what
	// the parser produces and apply can honour. Nothing changed.
	ErrInvalidOp
	// ErrNotInteger: the value is not an integer or out of range; TB/SL
	// answer it at apply when an instant would pass int64 at the entry's
	// now (limiters.md rules 10-12).
	ErrNotInteger
	// ErrCorruptBucket, ErrCorruptLog: a stored TB or SL state the algorithm
	// never writes (a bug or a damaged snapshot). Nothing changed.
	ErrCorruptBucket
	ErrCorruptLog
	// ErrOOM: the leader is above maxmemory and the request would create
	// a key. Never proposed: nothing changed, and existing keys still decide.
	ErrOOM
)

// Key types: what a Type request answers, in Ints[0] of a KindType result.
// The values are the keyspace's own numbers for its limiter families and
// travel in forwarding frames: never renumber, only append.
const (
	KeyNone          int64 = 0 // no such key
	KeyGCRA          int64 = 1 // CL.* (redis-cell)
	KeyTokenGreedy   int64 = 2 // TB.* greedy
	KeyTokenInterval int64 = 3 // TB.* INTERVAL
	KeySlidingLog    int64 = 4 // SL.*
)

// TypeName is what TYPE answers for a key type.
func TypeName(t int64) string {
	switch t {
	case KeyGCRA:
		return "string" // as redis-cell's keys are
	case KeyTokenGreedy, KeyTokenInterval:
		return "tokenbucket"
	case KeySlidingLog:
		return "slidinglog"
	}
	return "none"
}

// Result is the answer to one Request.
//
// Every reply but KEYS and SCAN is a kind and integers, so a Result of a
// limiter call or a count holds no pointer and result buffers are cheap to
// keep, copy and pool. A reply that is a list of keys (KindKeys, KindScan)
// carries it in Data (AppendItem's encoding, ranged with Items): whoever
// fills Data allocates it for this result alone and never reuses it, so
// copying a Result (a MULTI's results, a forwarded batch) may share it.
type Result struct {
	Kind Kind
	Err  ErrCode
	Ints [5]int64
	Data []byte
}

// AppendItem appends one item (a key) to a list in Data's encoding: uvarint
// length, bytes.
func AppendItem(data, item []byte) []byte {
	data = binary.AppendUvarint(data, uint64(len(item)))
	return append(data, item...)
}

// Items calls fn with each item of a list in Data's encoding, in order (each
// aliases data), and returns how many there were. It stops at the first
// malformed length, which only a corrupt frame can hold (DecodeResult
// checks the encoding).
func Items(data []byte, fn func(item []byte)) int {
	n := 0
	for len(data) > 0 {
		l, w := binary.Uvarint(data)
		if w <= 0 || l > uint64(len(data)-w) {
			break
		}
		if fn != nil {
			fn(data[w : w+int(l)])
		}
		data = data[w+int(l):]
		n++
	}
	return n
}

// validItems reports whether data is a list in Data's encoding.
func validItems(data []byte) bool {
	for len(data) > 0 {
		l, w := binary.Uvarint(data)
		if w <= 0 || l > uint64(len(data)-w) {
			return false
		}
		data = data[w+int(l):]
	}
	return true
}

// SetInt makes r the integer v.
func (r *Result) SetInt(v int64) {
	r.Kind = KindInt
	r.Ints[0] = v
}

// SetErr makes r the deterministic error code.
func (r *Result) SetErr(code ErrCode) {
	r.Kind = KindError
	r.Err = code
}

// Equal reports whether two results are the same answer (Data compared by
// content).
func (r Result) Equal(o Result) bool {
	return r.Kind == o.Kind && r.Err == o.Err && r.Ints == o.Ints && string(r.Data) == string(o.Data)
}
