package request

import (
	"encoding/binary"
	"math"
)

// The sorted-set family (Redis 7.0's t_zset.c): a key holds members, each
// with a float64 score, ordered by (score, member bytes). Codes take writes
// 44..52 and reads 120..134, error codes 53..59.
const (
	// ZAdd is ZADD and ZINCRBY on Key. Keys alternates scores (ZScoreBytes:
	// a float64's 8 bytes, never NaN) and members; Args[0] the ZAdd* flags.
	// The result is the count of added (with ZAddCH: added or updated)
	// members, or with ZAddIncr the new score (KindDouble), nil when the
	// options left the member alone.
	ZAdd Code = 44
	// ZRem is ZREM of the members in Keys: how many were removed.
	ZRem Code = 45
	// ZRemRangeByScore removes the members whose score is in the range
	// Args[0]..Args[1] (float64 bits; ZMinEx and ZMaxEx in Args[2]): how many.
	ZRemRangeByScore Code = 46
	// ZRemRangeByRank removes the members of rank Args[0]..Args[1] (Redis's
	// indexes: negative from the end): how many.
	ZRemRangeByRank Code = 47

	// ZCard is ZCARD: the number of members, 0 when missing.
	ZCard Code = 120
	// ZCount is ZCOUNT: the members in ZRemRangeByScore's range.
	ZCount Code = 121
	// ZScore is ZSCORE of the member Keys[0]: its score (KindDouble), nil
	// when it or the key is missing.
	ZScore Code = 122
	// ZRange is ZRANGE and its older forms (ZRANGEBYSCORE, ZREVRANGEBYSCORE).
	// Args: the ZRange* flags, the range (ranks, or float64 bits of the
	// minimum and maximum score), LIMIT's offset and count (count -1: all).
	// With ZRangeByLex, Keys holds the minimum and maximum items as given
	// ("[a", "(a", "-", "+"; ParseLexItem). The result is KindArray, or
	// KindScored with ZRangeWithScores.
	ZRange Code = 123
	// ZRank is ZRANK of the member Keys[0]: its rank, nil when missing.
	ZRank Code = 124
)

// The flags of ZAdd (its Args[0]).
const (
	ZAddNX int64 = 1 << iota
	ZAddXX
	ZAddGT
	ZAddLT
	ZAddCH
	ZAddIncr
)

// The flags of a score range (ZRemRangeByScore's and ZCount's Args[2], and
// ZRange's Args[0] with the ZRange* flags).
const (
	ZMinEx int64 = 1 << iota // the minimum is exclusive: "("
	ZMaxEx                   // the maximum is exclusive
	ZRangeByScore
	ZRangeByLex
	ZRangeRev
	ZRangeWithScores
)

const (
	// ErrZNaN is ZADD … INCR's or ZINCRBY's sum that is NaN (inf + -inf).
	ErrZNaN ErrCode = 53
	// ErrZTooLarge: a ZADD would make the sorted set's value larger than a
	// snapshot record holds (512 MiB). Redcell's own; nothing changed.
	ErrZTooLarge ErrCode = 54
)

// ZScoreBytes is a score as a ZAdd request carries it: the float64's bits,
// big-endian.
func ZScoreBytes(f float64) []byte {
	return binary.BigEndian.AppendUint64(make([]byte, 0, 8), math.Float64bits(f))
}

// ZScoreOf reads ZScoreBytes; ok false when b is not 8 bytes or is NaN.
func ZScoreOf(b []byte) (float64, bool) {
	if len(b) != 8 {
		return 0, false
	}
	f := math.Float64frombits(binary.BigEndian.Uint64(b))
	return f, !math.IsNaN(f)
}

// LexBound is one end of a lex range (ZRANGE … BYLEX), as Redis's
// zslParseLexRangeItem reads it: "-" is below every member, "+" above every
// member (both exclusive), "[x" is x inclusive and "(x" x exclusive.
type LexBound struct {
	Min, Max  bool // "-" or "+"
	Exclusive bool
	Value     []byte // aliases the item
}

// ParseLexItem parses a lex range item; ok false when it is none (Redis:
// "ERR min or max not valid string range item"). "-" and "+" followed by
// a NUL still count, as Redis reads them as C strings.
func ParseLexItem(b []byte) (LexBound, bool) {
	if len(b) == 0 {
		return LexBound{}, false
	}
	switch b[0] {
	case '-', '+':
		if len(b) > 1 && b[1] != 0 {
			return LexBound{}, false
		}
		return LexBound{Min: b[0] == '-', Max: b[0] == '+', Exclusive: true}, true
	case '(':
		return LexBound{Exclusive: true, Value: b[1:]}, true
	case '[':
		return LexBound{Value: b[1:]}, true
	}
	return LexBound{}, false
}

// Zsets is the sorted-set family.
var Zsets = describeFamily(&Family{
	Name:     "zset",
	TypeName: "zset",
	ScanType: ScanTypeZset,
	Kinds:    []KeyKind{KeyZset},
	Ops: []Op{
		{Code: ZAdd, Name: "ZADD", Keys: KeyValue, Creates: true, Grows: true, Reply: KindInt, Nullable: true, AlsoReply: KindDouble},
		{Code: ZRem, Name: "ZREM", Keys: KeyValue, Reply: KindInt},
		{Code: ZRemRangeByScore, Name: "ZREMRANGEBYSCORE", Keys: OneKey, Reply: KindInt},
		{Code: ZRemRangeByRank, Name: "ZREMRANGEBYRANK", Keys: OneKey, Reply: KindInt},
		{Code: ZCard, Name: "ZCARD", Keys: OneKey, Reply: KindInt},
		{Code: ZCount, Name: "ZCOUNT", Keys: OneKey, Reply: KindInt},
		{Code: ZScore, Name: "ZSCORE", Keys: KeyValue, Reply: KindDouble, Nullable: true},
		{Code: ZRange, Name: "ZRANGE", Keys: KeyValue, Reply: KindArray, AlsoReply: KindScored},
		{Code: ZRank, Name: "ZRANK", Keys: KeyValue, Reply: KindInt, Nullable: true},
	},
	Errors: []ErrText{
		{ErrZNaN, "ERR resulting score is not a number (NaN)"},
		{ErrZTooLarge, "ERR sorted set would exceed 512 MiB"},
	},
})

// KeyZset is a sorted set's key kind; ScanTypeZset selects them.
const (
	KeyZset      KeyKind = 9
	ScanTypeZset int64   = 8
)
