package request

import "github.com/redcell/redcell/internal/arg"

// The string family (strings.md of the spec, Redis 7.0's t_string.c): a key
// holds bytes. Codes take writes 6..19 and reads 74..89.
const (
	// Set is SET, SETEX and PSETEX on Key with the value Keys[0]. Args:
	// the SetNX|SetXX|SetKeepTTL|Set{EX,PX,EXAT,PXAT} flags, the time in ms
	// (relative or absolute, already converted from seconds), the ErrCode
	// to answer when a relative time passes int64 ms at the entry's now.
	// The result is OK, or nil when NX or XX refused it; with SetGetFlag
	// SetGet's.
	Set Code = 6
	// SetGet is GETSET (SET … GET is Set with SetGetFlag): Set's Args; the
	// result is the old value (nil when missing), WRONGTYPE when it is not
	// a string.
	SetGet Code = 7
	// SetNX is SETNX: 1 when it set, 0 when the key exists.
	SetNX Code = 8
	// GetDel is GETDEL: the value (nil when missing), and the key is gone.
	GetDel Code = 9
	// StrAppend is APPEND of Keys[0]: the new length.
	StrAppend Code = 10
	// IncrBy is INCR, INCRBY, DECR and DECRBY. Args: the increment.
	IncrBy Code = 11
	// MSet is MSET: Keys alternates keys and values.
	MSet Code = 12
	// MSetNX is MSETNX: 1 when every key was missing and all were set.
	MSetNX Code = 13
	// GetEx is GETEX. Args: GetEx's flags (SetEX … SetPXAT, SetPersist),
	// the time in ms, and the ErrCode to answer instead when the key is a
	// string (an invalid time, which Redis checks after the lookup).
	GetEx Code = 14
	// IncrByFloat is INCRBYFLOAT with the increment as given in Keys[0]
	// (Redis parses it after the type check): the new value.
	IncrByFloat Code = 15
	// IncrEx is INCREX (Redis 8.8): increment within bounds and set the
	// expiry in one write. Args: the IncrEx* flags, the integer increment,
	// LBOUND, UBOUND (integer mode; each only with its flag), the expiry
	// time in ms (relative for EX and PX, already converted from seconds;
	// absolute Unix ms for EXAT and PXAT), and the ErrCode a BYFLOAT call
	// answers after its floats are checked (its time's own error: the
	// parser's order in both modes). Keys: nothing in integer mode; in
	// BYFLOAT mode the increment, LBOUND and UBOUND as given ("" when
	// absent), parsed as long doubles by the state machine. The result is
	// [new value, applied increment]: KindInts, or KindDoubles in BYFLOAT
	// mode.
	IncrEx Code = 16

	// Get is GET: the value, nil when missing.
	Get Code = 74
	// StrLen is STRLEN: the value's length, 0 when missing.
	StrLen Code = 75
	// MGet is MGET: per key its value, nil when missing or not a string.
	MGet Code = 76
)

// The flags of Set, SetGet and GetEx (their Args[0]).
const (
	SetNXFlag int64 = 1 << iota
	SetXXFlag
	SetKeepTTL
	SetEX   // Args[1] is relative ms
	SetPX   // Args[1] is relative ms
	SetEXAT // Args[1] is absolute Unix ms
	SetPXAT // Args[1] is absolute Unix ms
	SetPersist
	SetGetFlag // SET … GET: the result is the old value (Set only)
)

// The flags of IncrEx (its Args[0]).
const (
	IncrExFloat    int64 = 1 << iota // BYFLOAT: Keys holds the floats
	IncrExLBound                     // LBOUND given
	IncrExUBound                     // UBOUND given
	IncrExSaturate                   // SATURATE
	IncrExEX                         // Args[4] is relative ms
	IncrExPX                         // Args[4] is relative ms
	IncrExEXAT                       // Args[4] is absolute Unix ms
	IncrExPXAT                       // Args[4] is absolute Unix ms
	IncrExPersist                    // PERSIST
	IncrExENX                        // ENX: the expiry only when the key has none
)

// INCREX's errors (the string family's, numbered 31..35).
const (
	// ErrIncrExExpire: INCREX's expiry time is not positive, passes int64
	// ms in seconds, or passes it when added to the entry's now.
	ErrIncrExExpire ErrCode = 31
	// ErrIncrExBounds: LBOUND is greater than UBOUND.
	ErrIncrExBounds ErrCode = 32
)

// Strings is the string family.
var Strings = describeFamily(&Family{
	Name:     "string",
	TypeName: "string",
	ScanType: ScanTypeString, // CL keys are strings too
	Kinds:    []KeyKind{KeyString},
	Ops: []Op{
		{Code: Set, Name: "SET", Keys: KeyValue, Creates: true, Grows: true, Reply: KindOK, Nullable: true, AlsoReply: KindBulk},
		{Code: SetGet, Name: "GETSET", Keys: KeyValue, Creates: true, Grows: true, Reply: KindBulk, Nullable: true},
		{Code: SetNX, Name: "SETNX", Keys: KeyValue, Creates: true, Reply: KindInt},
		{Code: GetDel, Name: "GETDEL", Keys: OneKey, Reply: KindBulk, Nullable: true},
		{Code: StrAppend, Name: "APPEND", Keys: KeyValue, Creates: true, Grows: true, Reply: KindInt},
		{Code: IncrBy, Name: "INCRBY", Keys: OneKey, Creates: true, Reply: KindInt},
		{Code: MSet, Name: "MSET", Keys: KeyPairs, Creates: true, Grows: true, Reply: KindOK},
		{Code: MSetNX, Name: "MSETNX", Keys: KeyPairs, Creates: true, Reply: KindInt},
		{Code: GetEx, Name: "GETEX", Keys: OneKey, Reply: KindBulk, Nullable: true},
		{Code: IncrByFloat, Name: "INCRBYFLOAT", Keys: KeyValue, Creates: true, Reply: KindBulk},
		{Code: IncrEx, Name: "INCREX", Keys: KeyValue, Creates: true, Reply: KindInts, AlsoReply: KindDoubles},
		{Code: Get, Name: "GET", Keys: OneKey, Reply: KindBulk, Nullable: true},
		{Code: StrLen, Name: "STRLEN", Keys: OneKey, Reply: KindInt},
		{Code: MGet, Name: "MGET", Keys: KeyList, Reply: KindBulks, Split: SplitInOrder},
	},
	Errors: []ErrText{
		{ErrNotInteger, string(arg.ErrNotInteger)},
		{ErrOverflow, "ERR increment or decrement would overflow"},
		{ErrSetExpireTime, "ERR invalid expire time in 'set' command"},
		{ErrSetExExpire, "ERR invalid expire time in 'setex' command"},
		{ErrPSetExExpire, "ERR invalid expire time in 'psetex' command"},
		{ErrGetExExpire, "ERR invalid expire time in 'getex' command"},
		{ErrNotFloat, "ERR value is not a valid float"},
		{ErrFloatNaNOrInf, "ERR increment would produce NaN or Infinity"},
		{ErrStringTooLong, "ERR string exceeds maximum allowed size (proto-max-bulk-len)"},
		{ErrIncrExExpire, "ERR invalid expire time in 'increx' command"},
		{ErrIncrExBounds, "ERR LBOUND must be less than or equal to UBOUND"},
	},
})
