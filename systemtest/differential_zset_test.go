package systemtest

import "strings"

// The sorted-set family in the differential test: ZADD with every option
// and their conflicts, ZINCRBY, ZREM, the reads, the three kinds of ZRANGE
// with REV, LIMIT and WITHSCORES, and the range removals, over a small pool
// of members and of scores and bounds that include strtod's edge cases
// (hexadecimal, -0, inf, out of range, NaN, not numbers).
var zsetFamily = family{name: "zset", gens: []gen{
	{name: "ZADD", weight: 6, inMulti: true, make: func(g *seqGen) step {
		args := []string{g.pick("ZADD", "zadd"), g.zkey()}
		for _, opt := range g.r.Perm(6) {
			if g.chance(15) {
				args = append(args, []string{"NX", "XX", "GT", "LT", "CH", "INCR"}[opt])
			}
		}
		for n := 1 + g.r.IntN(3); n > 0; n-- {
			args = append(args, g.score(), g.member())
		}
		if g.chance(5) {
			args = args[:len(args)-1] // a score without its member
		}
		return cmd(args...)
	}},
	{name: "ZINCRBY", weight: 3, inMulti: true, make: func(g *seqGen) step {
		return cmd("ZINCRBY", g.zkey(), g.pick(g.score(), "nx", "incr"), g.member())
	}},
	{name: "ZREM", weight: 3, inMulti: true, make: func(g *seqGen) step {
		args := []string{"ZREM", g.zkey()}
		for n := 1 + g.r.IntN(3); n > 0; n-- {
			args = append(args, g.member())
		}
		return cmd(args...)
	}},
	{name: "zset reads", weight: 4, inMulti: true, make: func(g *seqGen) step {
		switch g.r.IntN(4) {
		case 0:
			return cmd("ZCARD", g.zkey())
		case 1:
			return cmd("ZSCORE", g.zkey(), g.member())
		case 2:
			return cmd("ZRANK", g.zkey(), g.member())
		default:
			return cmd("ZCOUNT", g.zkey(), g.scoreBound(), g.scoreBound())
		}
	}},
	{name: "ZRANGE", weight: 5, inMulti: true, make: func(g *seqGen) step {
		kind := g.r.IntN(3)
		args := []string{"ZRANGE", g.zkey()}
		var opts [][]string // shuffled as groups: LIMIT keeps its two numbers
		switch kind {
		case 0:
			args = append(args, g.rank(), g.rank())
		case 1:
			args = append(args, g.scoreBound(), g.scoreBound())
			opts = append(opts, []string{"BYSCORE"})
		default:
			args = append(args, g.lexBound(), g.lexBound())
			opts = append(opts, []string{"BYLEX"})
		}
		if g.chance(40) {
			opts = append(opts, []string{"REV"})
		}
		if g.chance(25) {
			count := g.pick("-1", "0", "1", "2", "-5", "x")
			if kind == 0 && g.chance(70) {
				count = "-1" // a rank range takes only this count
			}
			opts = append(opts, []string{"LIMIT", g.pick("0", "1", "2", "-1", "5", "x"), count})
		}
		if g.chance(40 - kind*15) {
			opts = append(opts, []string{g.pick("WITHSCORES", "withscores")})
		}
		if g.chance(5) {
			opts = append(opts, []string{g.pick("BYSCORE", "BYLEX", "REV", "BOGUS", "LIMIT")})
		}
		if g.chance(50) {
			g.r.Shuffle(len(opts), func(i, j int) { opts[i], opts[j] = opts[j], opts[i] })
		}
		for _, o := range opts {
			args = append(args, o...)
		}
		return cmd(args...)
	}},
	{name: "ZRANGEBYSCORE", weight: 3, inMulti: true, make: func(g *seqGen) step {
		args := []string{g.pick("ZRANGEBYSCORE", "ZREVRANGEBYSCORE"), g.zkey(), g.scoreBound(), g.scoreBound()}
		if g.chance(40) {
			args = append(args, "WITHSCORES")
		}
		if g.chance(30) {
			args = append(args, "LIMIT", g.pick("0", "1", "-1", "3"), g.pick("-1", "0", "1", "2"))
		}
		if g.chance(5) {
			args = append(args, g.pick("REV", "BYSCORE", "LIMIT"))
		}
		return cmd(args...)
	}},
	{name: "zset removals", weight: 3, inMulti: true, make: func(g *seqGen) step {
		if g.chance(50) {
			return cmd("ZREMRANGEBYSCORE", g.zkey(), g.scoreBound(), g.scoreBound())
		}
		return cmd("ZREMRANGEBYRANK", g.zkey(), g.rank(), g.rank())
	}},
}}

// score is a ZADD score: numbers in the forms strtod reads, and words that
// are not numbers.
func (g *seqGen) score() string {
	return g.pick("1", "2", "3", "-1", "0", "-0", "0.1", "1.5", "inf", "-inf", "+inf", "1e3", "0x10", "5", "2.5e-3",
		"nan", "abc", "", "1e400", " 1", "-0x1p-3")
}

// member is a sorted-set member.
// One is longer than Redis's listpacks take (64 bytes): its set becomes a
// skiplist, which keeps a -0 score.
func (g *seqGen) member() string {
	return g.pick("a", "b", "c", "d", "m", "", "bin\x00\xff", "aa", strings.Repeat("L", 65))
}

// scoreBound is one end of a score range.
func (g *seqGen) scoreBound() string {
	return g.pick("-inf", "+inf", "inf", "(1", "1", "(0", "0", "2", "(2", "5", "(5", "x", "(", "-0", "(-0", "1e400", "nan", "0x1", " 3", "")
}

// lexBound is one end of a lex range.
func (g *seqGen) lexBound() string {
	return g.pick("-", "+", "[a", "(a", "[c", "(c", "[", "(", "a", "[b", "(bin", "-x", "[aa")
}

// rank is a rank index.
func (g *seqGen) rank() string { return g.pick("0", "1", "-1", "-2", "2", "5", "-100", "x", "+1") }

// zsetKeyPool holds keys that only the sorted-set commands write, so that
// most of their commands meet a sorted set of several members; zkey takes
// the shared pool too, where they meet the other types (WRONGTYPE) and
// the keyspace commands.
var zsetKeyPool = []string{"z:1", "z:2"}

func (g *seqGen) zkey() string {
	if g.chance(70) {
		return zsetKeyPool[g.r.IntN(len(zsetKeyPool))]
	}
	return g.anyKey()
}
