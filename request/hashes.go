package request

// The hash family (data-types.md, Redis 7.0's t_hash.c): a key holds
// field/value pairs. Codes take writes 30..34 and reads 100..109. Every
// code's Key is the hash's key and its Keys are fields and values, never
// keys (KeyValue).
const (
	// HSet is HSET and HMSET: Keys alternates fields and values. Args:
	// HSetOK (HMSET's +OK) or 0 (HSET: the number of fields added).
	HSet Code = 30
	// HSetNX is HSETNX of the field Keys[0] to Keys[1]: 1 when set, 0 when
	// the field exists.
	HSetNX Code = 31
	// HDel is HDEL of the fields Keys: how many were there. The hash is
	// deleted when it loses its last field.
	HDel Code = 32
	// HIncrBy is HINCRBY of the field Keys[0]. Args: the increment (the
	// parser's string2ll).
	HIncrBy Code = 33
	// HIncrByFloat is HINCRBYFLOAT of the field Keys[0] by the increment
	// as given in Keys[1]: the state machine parses it as a long double
	// before the lookup, as Redis does, so its errors come before WRONGTYPE.
	HIncrByFloat Code = 34

	// HGet is HGET of the field Keys[0]: its value, nil when missing.
	HGet Code = 100
	// HMGet is HMGET of the fields Keys: per field its value or nil.
	HMGet Code = 101
	// HGetAll is HGETALL: every field and value (KindMap).
	HGetAll Code = 102
	// HExists is HEXISTS of the field Keys[0]: 1 or 0.
	HExists Code = 103
	// HLen is HLEN: the number of fields, 0 when missing.
	HLen Code = 104
	// HKeys and HVals are HKEYS and HVALS (KindArray).
	HKeys Code = 105
	HVals Code = 106
)

// HSetOK is HSet's Args[0] for HMSET: the reply is +OK, not a count.
const HSetOK int64 = 1

// KeyHash is the key kind of a hash.
const KeyHash KeyKind = 6

// ScanTypeHash is SCAN TYPE hash.
const ScanTypeHash int64 = 5

// The hash family's own error codes (40..44 are its range).
const (
	// ErrHashNotInteger: HINCRBY of a field whose value is not a
	// string2ll integer.
	ErrHashNotInteger ErrCode = 40
	// ErrHashNotFloat: HINCRBYFLOAT of a field whose value is not a long
	// double.
	ErrHashNotFloat ErrCode = 41
	// ErrHashIncrNaN: HINCRBYFLOAT's increment is an infinity.
	ErrHashIncrNaN ErrCode = 42
	// ErrHashTooLarge: a write would make the hash's encoding longer than
	// a snapshot record holds (512 MiB); Redcell's own limit, nothing
	// changed.
	ErrHashTooLarge ErrCode = 43
)

// Hashes is the hash family.
var Hashes = describeFamily(&Family{
	Name:     "hash",
	TypeName: "hash",
	ScanType: ScanTypeHash,
	Kinds:    []KeyKind{KeyHash},
	Ops: []Op{
		{Code: HSet, Name: "HSET", Keys: KeyValue, Creates: true, Grows: true, Reply: KindInt, AlsoReply: KindOK},
		{Code: HSetNX, Name: "HSETNX", Keys: KeyValue, Creates: true, Grows: true, Reply: KindInt},
		{Code: HDel, Name: "HDEL", Keys: KeyValue, Reply: KindInt},
		// HINCRBY and HINCRBYFLOAT grow a hash by a field the client names
		// (unlike INCR, whose growth is a counter's digits): refused above
		// maxmemory even on a live hash, as Redis refuses them (denyoom).
		{Code: HIncrBy, Name: "HINCRBY", Keys: KeyValue, Creates: true, Grows: true, Reply: KindInt},
		{Code: HIncrByFloat, Name: "HINCRBYFLOAT", Keys: KeyValue, Creates: true, Grows: true, Reply: KindBulk},
		{Code: HGet, Name: "HGET", Keys: KeyValue, Reply: KindBulk, Nullable: true},
		{Code: HMGet, Name: "HMGET", Keys: KeyValue, Reply: KindBulks},
		{Code: HGetAll, Name: "HGETALL", Keys: OneKey, Reply: KindMap},
		{Code: HExists, Name: "HEXISTS", Keys: KeyValue, Reply: KindInt},
		{Code: HLen, Name: "HLEN", Keys: OneKey, Reply: KindInt},
		{Code: HKeys, Name: "HKEYS", Keys: OneKey, Reply: KindArray},
		{Code: HVals, Name: "HVALS", Keys: OneKey, Reply: KindArray},
	},
	Errors: []ErrText{
		{ErrOverflow, "ERR increment or decrement would overflow"},
		{ErrNotFloat, "ERR value is not a valid float"},
		{ErrFloatNaNOrInf, "ERR increment would produce NaN or Infinity"},
		{ErrHashNotInteger, "ERR hash value is not an integer"},
		{ErrHashNotFloat, "ERR hash value is not a float"},
		{ErrHashIncrNaN, "ERR value is NaN or Infinity"},
		{ErrHashTooLarge, "ERR hash exceeds the largest value Redcell stores (512 MiB)"},
	},
})
