package fsm

import (
	"fmt"
	"strconv"

	"github.com/redcell/redcell/commands"
	"github.com/redcell/redcell/request"
)

// zsetOp is a random sorted-set write over the key pool, parsed as the
// command layer parses it: ZADD of a few pairs or many (both apply paths)
// with its options, ZINCRBY towards NaN, ZREM, the range removals.
func (g *opGen) zsetOp() request.Request {
	k := string(g.key())
	score := func() string {
		return []string{"1", "2", "-0", "0.5", "inf", "-inf", "3e2", strconv.Itoa(g.rng.IntN(50))}[g.rng.IntN(8)]
	}
	member := func() string { return "m" + strconv.Itoa(g.rng.IntN(12)) }
	var line []string
	switch g.rng.IntN(7) {
	case 0, 1:
		line = append([]string{"ZADD", k}, [][]string{nil, {"NX"}, {"XX", "CH"}, {"GT"}, {"LT", "CH"}}[g.rng.IntN(5)]...)
		n := 1 + g.rng.IntN(3)
		if g.rng.IntN(4) == 0 {
			n = 9 + g.rng.IntN(8)
		}
		for ; n > 0; n-- {
			line = append(line, score(), member())
		}
	case 2:
		line = []string{"ZINCRBY", k, score(), member()}
	case 3:
		line = []string{"ZREM", k, member(), member()}
	case 4:
		line = []string{"ZREMRANGEBYSCORE", k, "-inf", "(" + score()}
	case 5:
		line = []string{"ZREMRANGEBYRANK", k, strconv.Itoa(g.rng.IntN(4) - 2), strconv.Itoa(g.rng.IntN(4) - 1)}
	default:
		line = []string{"ZADD", k, "INCR", score(), member()}
	}
	var scratch []byte
	args := make([][]byte, len(line))
	for i, a := range line {
		args[i] = []byte(a)
	}
	r, text := commands.Lookup(args[0], &scratch).Parse(args)
	if text != "" {
		panic(fmt.Sprintf("%q: %s", line, text)) // a bug in this generator
	}
	return r
}
