package fsm

import (
	"fmt"
	"strconv"

	"github.com/redcell/redcell/commands"
	"github.com/redcell/redcell/request"
)

// increxOp is a random INCREX over the key pool, parsed as the command
// layer parses it: both modes, bounds that skip and saturate, every expiry
// option near the log's stamps, ENX.
func (g *opGen) increxOp() request.Request {
	line := []string{"INCREX", string(g.key())}
	if g.rng.IntN(3) == 0 {
		line = append(line, "BYFLOAT", []string{"0.5", "-1.25", "3", "1e3"}[g.rng.IntN(4)])
	} else if g.rng.IntN(2) == 0 {
		line = append(line, "BYINT", strconv.Itoa(g.rng.IntN(20)-5))
	}
	if g.rng.IntN(3) == 0 {
		line = append(line, "LBOUND", strconv.Itoa(-g.rng.IntN(10)))
	}
	if g.rng.IntN(2) == 0 {
		line = append(line, "UBOUND", strconv.Itoa(g.rng.IntN(30)))
	}
	if g.rng.IntN(3) == 0 {
		line = append(line, "SATURATE")
	}
	timed := true
	switch g.rng.IntN(6) {
	case 0:
		line = append(line, "PX", strconv.Itoa(1+g.rng.IntN(20_000)))
	case 1:
		line = append(line, "EX", strconv.Itoa(1+g.rng.IntN(20)))
	case 2:
		line = append(line, "PXAT", strconv.Itoa(1_700_000_000_000+g.rng.IntN(60_000)))
	case 3:
		line = append(line, "PERSIST")
		timed = false
	default:
		timed = false
	}
	if timed && g.rng.IntN(2) == 0 {
		line = append(line, "ENX")
	}
	var scratch []byte
	args := make([][]byte, len(line))
	for i, a := range line {
		args[i] = []byte(a)
	}
	r, text := commands.Lookup(args[0], &scratch).Parse(args)
	if text != "" {
		panic(fmt.Sprintf("%q: %s", line, text)) // a bug in this generator (LBOUND <= 0 <= UBOUND)
	}
	return r
}
