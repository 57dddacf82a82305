package systemtest

import "strconv"

// WATCH in the differential test: WATCH and UNWATCH anywhere (UNWATCH also
// queued in MULTI), and watch blocks (watchBlock): WATCH of keys of the
// pool, then writes and reads, some from a second connection (another
// client), some that change nothing (a refused SET NX, DEL of a missing
// key, PERSIST of a key without TTL: Redis does not signal those), and a
// MULTI block whose EXEC both servers must answer alike: the array, or nil
// when a watched key changed. Expiry between WATCH and EXEC is not
// generated (Redis's clock runs while redcell's is frozen): the cluster and
// single-node WATCH tests cover it with DEBUG CLOCK.
var watchFamily = family{name: "watch", gens: []gen{
	{name: "WATCH", weight: 2, make: func(g *seqGen) step { return cmd(with("WATCH", g.keys(2)...)...) }},
	{name: "UNWATCH", weight: 1, inMulti: true, make: func(g *seqGen) step { return cmd("UNWATCH") }},
	{name: "write from another client", weight: 2, make: func(g *seqGen) step { return g.otherWrite() }},
}}

// otherWrite is a write, or a write that changes nothing, sent on the
// sequence's second connection.
func (g *seqGen) otherWrite() step {
	k := g.key()
	s := cmd(g.pickArgs(
		[]string{"SET", k, g.value()},
		[]string{"SET", k, "v"}, // often the same value again: still a change
		[]string{"SET", k, g.value(), "NX"},
		[]string{"SET", k, g.value(), "XX"},
		[]string{"DEL", k},
		[]string{"UNLINK", k, g.key()},
		[]string{"INCR", k},
		[]string{"APPEND", k, "x"},
		[]string{"GETDEL", k},
		[]string{"EXPIRE", k, strconv.Itoa(g.expirySeconds())},
		[]string{"EXPIRE", k, strconv.Itoa(g.expirySeconds()), "NX"},
		[]string{"PERSIST", k},
		[]string{"RENAME", k, g.key()},
		[]string{"RENAMENX", g.key(), k},
		[]string{"GET", k},
		[]string{"EXISTS", k},
	)...)
	s.second = true
	return s
}

// watchBlock is WATCH of one to three keys, zero to three steps that may
// touch them (mostly from the second connection), sometimes a second
// WATCH or an UNWATCH, then a MULTI block (usually ending in EXEC).
func (g *seqGen) watchBlock(all []gen, total int, queueable []gen, totalQ int, draw func([]gen, int) step) []step {
	block := []step{cmd(with("WATCH", g.keys(3)...)...)}
	for n := g.r.IntN(4); n > 0; n-- {
		switch p := g.r.IntN(100); {
		case p < 60:
			block = append(block, g.otherWrite())
		case p < 70:
			block = append(block, cmd(with("WATCH", g.keys(2)...)...))
		case p < 75:
			block = append(block, cmd("UNWATCH"))
		default:
			block = append(block, draw(all, total))
		}
	}
	return append(block, g.multiBlock(queueable, totalQ, draw)...)
}
