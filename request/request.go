// Package request is the one shape a parsed Redcell request takes wherever it
// travels: in a connection's batch, in a Raft log entry, on the wire from a
// follower to its leader, and in a MULTI queue. A Request is an opcode, its
// key or keys, and integer arguments already derived by the parser; a Result
// is the answer to one. Every code, key kind, family and error code is
// described here once (describe.go, codes.go), and every layer reads those
// descriptors instead of keeping its own switch over codes. The package
// imports nothing of Redcell's but two leaf helpers, so every layer can use
// it. See DESIGN.md.
package request

import "encoding/binary"

// Code names an operation. Its numeric value is part of the log format and
// of the forwarding protocol: never renumber, only append. Writes are below
// 64 and change replicated state; reads are 64 and above and only look.
// Everything else about a code is its descriptor (Describe, describe.go);
// the codes themselves are listed in codes.go.
type Code uint8

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
	KindType                     // a key kind (KeyKind) in Ints[0]; TypeName names it
	KindOK                       // +OK
	KindError                    // Err
	KindKeys                     // an array of keys, in Data (KEYS)
	KindScan                     // a cursor (a uint64's bits) in Ints[0] and an array of keys in Data (SCAN)
	KindBulk                     // a bulk string, the bytes of Data (GET)
	KindNil                      // a nil bulk: RESP2 $-1, RESP3 _ (GET of a missing key)
	KindBulks                    // an array of bulk strings or nils, in Data (MGET): items of AppendBulkItem

	// The collections' replies (hashes, lists, sets, sorted sets, INCREX).
	// Each is written as Redis 7.0 writes it in both protocols.

	// KindArray: an array of bulk strings, items in Data (LRANGE, HKEYS,
	// ZRANGE): the same encoding as KindKeys.
	KindArray
	// KindMap: field/value pairs, items alternating in Data: RESP3 a map
	// (%n), RESP2 a flat array of 2n bulk strings (HGETALL).
	KindMap
	// KindSet: items in Data: RESP3 a set (~n), RESP2 an array (SMEMBERS).
	KindSet
	// KindDouble: one double, its text in Data (Redis's %.17g, "inf",
	// "-inf"): RESP3 ,text; RESP2 a bulk string (ZSCORE, ZINCRBY).
	KindDouble
	// KindScored: member/score pairs, items alternating in Data (the score
	// as KindDouble's text): RESP2 a flat array of bulk strings, RESP3 an
	// array of [bulk, double] pairs (ZRANGE … WITHSCORES).
	KindScored
	// KindInts: an array of integers, in Data as AppendIntItem's varints
	// (SMISMEMBER, INCREX's integer reply).
	KindInts
	// KindNilArray: a nil array: RESP2 *-1, RESP3 _ (LPOP key count of a
	// missing key).
	KindNilArray
	// KindDoubles: an array of doubles, items in Data each a double's text:
	// RESP3 doubles, RESP2 bulk strings (INCREX … BYFLOAT).
	KindDoubles
	// KindReply: any reply, held in Data as RESP3 bytes (a script's result,
	// whose shape the script decides): written as is to a RESP3 client and
	// converted as Redis 7.0 converts it for a RESP2 one (package resp).
	KindReply

	// kindLast is the highest Kind: the decoder refuses any above it.
	kindLast = KindReply
)

// ErrCode is a deterministic failure of one request in the state machine:
// every replica computes the same one. Its value travels in forwarding
// frames: never renumber, only append. Its reply text is described with the
// keyspace (the codes any request may answer) or with the family whose
// requests answer it (codes.go); Text returns it.
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

// The errors of the keyspace's expiry and rename codes and of the string
// family, numbered from 20 (never renumber: they travel in forwarded
// results).
const (
	// ErrExpireTime, ErrPExpireTime: EXPIRE's or PEXPIRE's time plus the
	// entry's now passes int64 ms. Nothing changed.
	ErrExpireTime  ErrCode = 20
	ErrPExpireTime ErrCode = 21

	// The string family's (strings.go): an INCR past int64, a relative
	// expiry of SET, SETEX, PSETEX or GETEX that passes int64 ms at the
	// entry's now.
	ErrOverflow      ErrCode = 22
	ErrSetExpireTime ErrCode = 23
	ErrSetExExpire   ErrCode = 24
	ErrPSetExExpire  ErrCode = 25
	ErrGetExExpire   ErrCode = 26
	// ErrStringTooLong: APPEND would make a string longer than 512 MiB.
	ErrStringTooLong ErrCode = 27
	// ErrNotFloat, ErrFloatNaNOrInf: INCRBYFLOAT's value or increment is
	// not a long double, or the sum is NaN or infinite.
	ErrNotFloat      ErrCode = 28
	ErrFloatNaNOrInf ErrCode = 29
	// ErrNoSuchKey: RENAME or RENAMENX of a key that does not exist.
	// Nothing changed.
	ErrNoSuchKey ErrCode = 30
)

// The errors of WATCH, numbered 36..39 (never renumber).
const (
	// ErrWatchAborted: the request belongs to a transaction whose
	// WatchGuard found a watched key changed; it did not run.
	ErrWatchAborted ErrCode = 36
)

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

// AppendBulkItem appends one element of a KindBulks array to data: an item
// holding 0 for nil, or 1 followed by the bytes.
func AppendBulkItem(data, b []byte, isNil bool) []byte {
	if isNil {
		return AppendItem(data, []byte{0})
	}
	data = binary.AppendUvarint(data, uint64(len(b)+1))
	data = append(data, 1)
	return append(data, b...)
}

// AppendIntItem appends one integer of a KindInts array to data.
func AppendIntItem(data []byte, v int64) []byte {
	return binary.AppendVarint(data, v)
}

// IntItems calls fn with each integer of a KindInts array, in order, and
// returns how many there were; it stops at a malformed varint, which only a
// corrupt frame can hold (DecodeResult checks the encoding).
func IntItems(data []byte, fn func(v int64)) int {
	n := 0
	for len(data) > 0 {
		v, w := binary.Varint(data)
		if w <= 0 {
			break
		}
		if fn != nil {
			fn(v)
		}
		data = data[w:]
		n++
	}
	return n
}

// validInts reports whether data is a KindInts array's encoding.
func validInts(data []byte) bool {
	for len(data) > 0 {
		_, w := binary.Varint(data)
		if w <= 0 {
			return false
		}
		data = data[w:]
	}
	return true
}

// BulkItem splits an item of a KindBulks array: the bytes, or nil ok false.
func BulkItem(item []byte) (b []byte, ok bool) {
	if len(item) == 0 || item[0] == 0 {
		return nil, false
	}
	return item[1:], true
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
