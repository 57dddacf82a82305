package commands

import (
	"encoding/binary"
	"math"
	"strings"

	"github.com/redcell/redcell/internal/arg"
	"github.com/redcell/redcell/request"
)

// The sorted-set family's commands: ZADD, ZINCRBY, ZREM, ZCARD, ZCOUNT,
// ZSCORE, ZRANGE (BYSCORE|BYLEX, REV, LIMIT, WITHSCORES), ZRANGEBYSCORE,
// ZREVRANGEBYSCORE, ZREMRANGEBYSCORE, ZREMRANGEBYRANK, ZRANK. Parsing
// follows Redis 7.0's t_zset.c in its order (zaddGenericCommand,
// zrangeGenericCommand, zremrangeGenericCommand): options, their conflicts,
// then the scores or the range; everything Redis checks before the key's
// lookup is answered here, and the request carries scores as float64 bits.

// The error texts of t_zset.c that the parser answers.
const (
	errZNotFloat    = "ERR value is not a valid float"
	errZRangeFloat  = "ERR min or max is not a float"
	errZRangeLex    = "ERR min or max not valid string range item"
	errZXXNX        = "ERR XX and NX options at the same time are not compatible"
	errZGTLTNX      = "ERR GT, LT, and/or NX options at the same time are not compatible"
	errZIncrPair    = "ERR INCR option supports a single increment-element pair"
	errZLimitRank   = "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX"
	errZScoresByLex = "ERR syntax error, WITHSCORES not supported in combination with BYLEX"
)

// zSpec is a sorted-set command's spec; acl is "@read @fast" or the like
// (Redis 7.0 lists @sortedset second), and @fast makes it a "fast" command.
func zSpec(name string, arity int, code request.Code, acl, since, complexity, summary string, parse func([][]byte) (request.Request, string), args ...Arg) *Spec {
	f := strings.Fields(acl)
	s := &Spec{Name: name, Arity: arity, Code: code, Group: "sorted-set", Since: since, Complexity: complexity,
		ACL: append([]string{f[0], "@sortedset"}, f[1:]...), Summary: summary, Args: args, Parse: parse}
	if f[len(f)-1] == "@fast" {
		s.Flags = []string{"fast"}
	}
	return s
}

var (
	zMemberArg = Arg{Name: "member", Type: "string"}
	minArg     = Arg{Name: "min", Type: "double"}
	maxArg     = Arg{Name: "max", Type: "double"}
	limitArg   = Arg{Name: "limit", Type: "block", Token: "LIMIT", Optional: true, Args: []Arg{{Name: "offset", Type: "integer"}, {Name: "count", Type: "integer"}}}
	scoresArg  = Arg{Name: "withscores", Type: "pure-token", Token: "WITHSCORES", Optional: true}
)

var zsetSpecs = []*Spec{
	zSpec("zadd", -4, request.ZAdd, "@write @fast", "1.2.0", "O(log(N)) for each item added, where N is the number of elements in the sorted set.",
		"Adds members with scores, or updates their scores (NX|XX, GT|LT, CH, INCR as Redis 7.0).", parseZAdd, keyArg,
		Arg{Name: "condition", Type: "oneof", Optional: true, Args: []Arg{{Name: "nx", Type: "pure-token", Token: "NX"}, {Name: "xx", Type: "pure-token", Token: "XX"}}},
		Arg{Name: "comparison", Type: "oneof", Optional: true, Args: []Arg{{Name: "gt", Type: "pure-token", Token: "GT"}, {Name: "lt", Type: "pure-token", Token: "LT"}}},
		Arg{Name: "change", Type: "pure-token", Token: "CH", Optional: true},
		Arg{Name: "increment", Type: "pure-token", Token: "INCR", Optional: true},
		Arg{Name: "data", Type: "block", Multiple: true, Args: []Arg{{Name: "score", Type: "double"}, zMemberArg}}),
	zSpec("zincrby", 4, request.ZAdd, "@write @fast", "1.2.0", "O(log(N)) where N is the number of elements in the sorted set.",
		"Adds increment to member's score: the new score.", parseZAdd, keyArg, Arg{Name: "increment", Type: "integer"}, zMemberArg),
	zSpec("zrem", -3, request.ZRem, "@write @fast", "1.2.0", "O(M*log(N)) with N being the number of elements in the sorted set and M the number of elements to be removed.",
		"Removes members: how many were present.", parseZRem, keyArg, Arg{Name: "member", Type: "string", Multiple: true}),
	zSpec("zcard", 2, request.ZCard, "@read @fast", "1.2.0", "O(1)", "The number of members; 0 when missing.", parseZKeyOnly(request.ZCard), keyArg),
	zSpec("zcount", 4, request.ZCount, "@read @fast", "2.0.0", "O(log(N)) with N being the number of elements in the sorted set.",
		"Counts the members with a score in the range.", parseZScoreRange(request.ZCount), keyArg, minArg, maxArg),
	zSpec("zscore", 3, request.ZScore, "@read @fast", "1.2.0", "O(1)", "The score of member; nil when missing.", parseZMember(request.ZScore), keyArg, zMemberArg),
	zSpec("zrank", 3, request.ZRank, "@read @fast", "2.0.0", "O(log(N))", "The rank of member by ascending score; nil when missing.", parseZMember(request.ZRank), keyArg, zMemberArg),
	zSpec("zrange", -4, request.ZRange, "@read @slow", "1.2.0", "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements returned.",
		"Members in a range of ranks, scores (BYSCORE) or members (BYLEX), REV, LIMIT, WITHSCORES.", parseZRange, keyArg,
		Arg{Name: "start", Type: "string"}, Arg{Name: "stop", Type: "string"},
		Arg{Name: "sortby", Type: "oneof", Optional: true, Args: []Arg{{Name: "byscore", Type: "pure-token", Token: "BYSCORE"}, {Name: "bylex", Type: "pure-token", Token: "BYLEX"}}},
		Arg{Name: "rev", Type: "pure-token", Token: "REV", Optional: true}, limitArg, scoresArg),
	zSpec("zrangebyscore", -4, request.ZRange, "@read @slow", "1.0.5", "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements being returned.",
		"Members with a score in the range, by ascending score.", parseZRange, keyArg, minArg, maxArg, scoresArg, limitArg),
	zSpec("zrevrangebyscore", -4, request.ZRange, "@read @slow", "2.2.0", "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements being returned.",
		"Members with a score in the range (max first), by descending score.", parseZRange, keyArg, maxArg, minArg, scoresArg, limitArg),
	zSpec("zremrangebyscore", 4, request.ZRemRangeByScore, "@write @slow", "1.2.0", "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements removed by the operation.",
		"Removes the members with a score in the range: how many.", parseZScoreRange(request.ZRemRangeByScore), keyArg, minArg, maxArg),
	zSpec("zremrangebyrank", 4, request.ZRemRangeByRank, "@write @slow", "2.0.0", "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements removed by the operation.",
		"Removes the members in a range of ranks: how many.", parseZRemRangeByRank, keyArg, Arg{Name: "start", Type: "integer"}, Arg{Name: "stop", Type: "integer"}),
}

// parseZAdd is ZADD and ZINCRBY (ZADD … INCR), as zaddGenericCommand: the
// options up to the first word that is none (ZINCRBY's increment is read
// as one too, as Redis does), an even number of words after them, the
// conflicts, then every score before anything is looked up.
func parseZAdd(args [][]byte) (request.Request, string) {
	var fl int64
	if EqualFold(args[0], "zincrby") {
		fl = request.ZAddIncr
	}
	i := 2
options:
	for ; i < len(args); i++ {
		o := args[i]
		switch {
		case EqualFold(o, "nx"):
			fl |= request.ZAddNX
		case EqualFold(o, "xx"):
			fl |= request.ZAddXX
		case EqualFold(o, "ch"):
			fl |= request.ZAddCH
		case EqualFold(o, "incr"):
			fl |= request.ZAddIncr
		case EqualFold(o, "gt"):
			fl |= request.ZAddGT
		case EqualFold(o, "lt"):
			fl |= request.ZAddLT
		default:
			break options
		}
	}
	n := len(args) - i
	has := func(f int64) bool { return fl&f != 0 }
	switch {
	case n == 0 || n%2 != 0:
		return request.Request{}, ErrSyntax
	case has(request.ZAddNX) && has(request.ZAddXX):
		return request.Request{}, errZXXNX
	case has(request.ZAddGT) && has(request.ZAddNX) || has(request.ZAddLT) && has(request.ZAddNX) || has(request.ZAddGT) && has(request.ZAddLT):
		return request.Request{}, errZGTLTNX
	case has(request.ZAddIncr) && n > 2:
		return request.Request{}, errZIncrPair
	}
	// The request carries each score as its 8 bytes, the members as given.
	pairs := make([][]byte, n)
	scores := make([]byte, 0, 8*n/2)
	for j := 0; j < n; j += 2 {
		v, ok := arg.Double(args[i+j])
		if !ok {
			return request.Request{}, errZNotFloat
		}
		scores = binary.BigEndian.AppendUint64(scores, math.Float64bits(v))
		pairs[j], pairs[j+1] = scores[len(scores)-8:], args[i+j+1]
	}
	r := request.Request{Code: request.ZAdd, Key: args[1], Keys: pairs}
	r.SetArgs(fl)
	return r, ""
}

func parseZRem(args [][]byte) (request.Request, string) {
	return request.Request{Code: request.ZRem, Key: args[1], Keys: args[2:]}, ""
}

func parseZKeyOnly(code request.Code) func([][]byte) (request.Request, string) {
	return func(args [][]byte) (request.Request, string) {
		return request.Request{Code: code, Key: args[1]}, ""
	}
}

func parseZMember(code request.Code) func([][]byte) (request.Request, string) {
	return func(args [][]byte) (request.Request, string) {
		return request.Request{Code: code, Key: args[1], Keys: args[2:3]}, ""
	}
}

// scoreRange is zslParseRange: Args min and max as float64 bits, and the
// ZMinEx|ZMaxEx flags.
func scoreRange(min, max []byte) (lo, hi, fl int64, ok bool) {
	a, aex, ok1 := arg.ScoreBound(min)
	b, bex, ok2 := arg.ScoreBound(max)
	if !ok1 || !ok2 {
		return 0, 0, 0, false
	}
	if aex {
		fl |= request.ZMinEx
	}
	if bex {
		fl |= request.ZMaxEx
	}
	return int64(math.Float64bits(a)), int64(math.Float64bits(b)), fl, true
}

func parseZScoreRange(code request.Code) func([][]byte) (request.Request, string) {
	return func(args [][]byte) (request.Request, string) {
		lo, hi, fl, ok := scoreRange(args[2], args[3])
		if !ok {
			return request.Request{}, errZRangeFloat
		}
		r := request.Request{Code: code, Key: args[1]}
		r.SetArgs(lo, hi, fl)
		return r, ""
	}
}

func parseZRemRangeByRank(args [][]byte) (request.Request, string) {
	start, ok1 := redisInt(args[2])
	if !ok1 {
		return request.Request{}, ErrNotInteger
	}
	stop, ok2 := redisInt(args[3])
	if !ok2 {
		return request.Request{}, ErrNotInteger
	}
	r := request.Request{Code: request.ZRemRangeByRank, Key: args[1]}
	r.SetArgs(start, stop)
	return r, ""
}

// parseZRange is ZRANGE, ZRANGEBYSCORE and ZREVRANGEBYSCORE, as
// zrangeGenericCommand: the options (LIMIT's integers as they come), the
// conflicts, then the range, max first for a REV range by score or lex.
// Args: flags, the range's two ends, offset, count.
func parseZRange(args [][]byte) (request.Request, string) {
	var fl int64
	fixedType, fixedDir := false, false
	switch {
	case EqualFold(args[0], "zrangebyscore"):
		fl, fixedType, fixedDir = request.ZRangeByScore, true, true
	case EqualFold(args[0], "zrevrangebyscore"):
		fl, fixedType, fixedDir = request.ZRangeByScore|request.ZRangeRev, true, true
	}
	offset, limit := int64(0), int64(-1)
	for j := 4; j < len(args); j++ {
		o := args[j]
		left := len(args) - j - 1
		switch {
		case EqualFold(o, "withscores"):
			fl |= request.ZRangeWithScores
		case EqualFold(o, "limit") && left >= 2:
			var ok bool
			if offset, ok = redisInt(args[j+1]); !ok {
				return request.Request{}, ErrNotInteger
			}
			if limit, ok = redisInt(args[j+2]); !ok {
				return request.Request{}, ErrNotInteger
			}
			j += 2
		case !fixedDir && fl&request.ZRangeRev == 0 && EqualFold(o, "rev"):
			fl |= request.ZRangeRev
		case !fixedType && fl&(request.ZRangeByScore|request.ZRangeByLex) == 0 && EqualFold(o, "bylex"):
			fl |= request.ZRangeByLex
		case !fixedType && fl&(request.ZRangeByScore|request.ZRangeByLex) == 0 && EqualFold(o, "byscore"):
			fl |= request.ZRangeByScore
		default:
			return request.Request{}, ErrSyntax
		}
	}
	byScore, byLex := fl&request.ZRangeByScore != 0, fl&request.ZRangeByLex != 0
	if limit != -1 && !byScore && !byLex {
		return request.Request{}, errZLimitRank
	}
	if fl&request.ZRangeWithScores != 0 && byLex {
		return request.Request{}, errZScoresByLex
	}
	min, max := args[2], args[3]
	if fl&request.ZRangeRev != 0 && (byScore || byLex) {
		min, max = max, min
	}
	r := request.Request{Code: request.ZRange, Key: args[1]}
	var lo, hi int64
	switch {
	case byScore:
		var ex int64
		var ok bool
		if lo, hi, ex, ok = scoreRange(min, max); !ok {
			return request.Request{}, errZRangeFloat
		}
		fl |= ex
	case byLex:
		_, ok1 := request.ParseLexItem(min)
		_, ok2 := request.ParseLexItem(max)
		if !ok1 || !ok2 {
			return request.Request{}, errZRangeLex
		}
		r.Keys = [][]byte{min, max}
	default:
		// LIMIT offset -1 is accepted on a rank range, and its offset
		// ignored, as in Redis.
		offset = 0
		var ok bool
		if lo, ok = redisInt(min); !ok {
			return request.Request{}, ErrNotInteger
		}
		if hi, ok = redisInt(max); !ok {
			return request.Request{}, ErrNotInteger
		}
	}
	r.SetArgs(fl, lo, hi, offset, limit)
	return r, ""
}
