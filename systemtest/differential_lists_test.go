package systemtest

import "strings"

// The list family in the differential test. Lists share keyPool with the
// other families, so pushes meet strings (WRONGTYPE both ways) and SET
// meets lists; reads also take CL keys (anyKey), strings to both servers.
var listFamily = family{name: "list", gens: []gen{
	{name: "push", weight: 5, inMulti: true, make: func(g *seqGen) step {
		args := []string{g.pick("LPUSH", "RPUSH", "LPUSHX", "RPUSHX", "lpush", "rpushx"), g.key()}
		for range 1 + g.r.IntN(4) {
			args = append(args, g.listElem())
		}
		return cmd(args...)
	}},
	{name: "pop", weight: 4, inMulti: true, make: func(g *seqGen) step {
		args := []string{g.pick("LPOP", "RPOP", "rpop"), g.anyKey()}
		if g.chance(50) {
			args = append(args, g.pick("0", "1", "2", "3", "10", "-1", "abc", "01", "9223372036854775807"))
		}
		if g.chance(3) {
			args = append(args, "1") // a wrong arity at run time
		}
		return cmd(args...)
	}},
	{name: "LRANGE", weight: 4, inMulti: true, make: func(g *seqGen) step {
		return cmd("LRANGE", g.anyKey(), g.listIndex(), g.listIndex())
	}},
	{name: "LINDEX", weight: 3, inMulti: true, make: func(g *seqGen) step { return cmd("LINDEX", g.anyKey(), g.listIndex()) }},
	{name: "LLEN", weight: 2, inMulti: true, make: func(g *seqGen) step { return cmd("LLEN", g.anyKey()) }},
	{name: "LTRIM", weight: 3, inMulti: true, make: func(g *seqGen) step {
		return cmd("LTRIM", g.key(), g.listIndex(), g.listIndex())
	}},
	{name: "LREM", weight: 2, inMulti: true, make: func(g *seqGen) step {
		return cmd("LREM", g.key(), g.pick("0", "1", "-1", "2", "-2", "-9223372036854775808", "x", "+1"), g.listElem())
	}},
	{name: "LSET", weight: 2, inMulti: true, make: func(g *seqGen) step {
		return cmd("LSET", g.key(), g.listIndex(), g.listElem())
	}},
	{name: "list arity", weight: 1, inMulti: true, make: func(g *seqGen) step {
		return cmd(g.pickArgs([]string{"LPUSH", "a"}, []string{"RPUSHX"}, []string{"LPOP"}, []string{"LLEN"},
			[]string{"LLEN", "a", "b"}, []string{"LINDEX", "a"}, []string{"LRANGE", "a", "0"}, []string{"LTRIM", "a", "0", "1", "2"},
			[]string{"LREM", "a", "0"}, []string{"LSET", "a", "0"})...)
	}},
}}

// listElem is a list element: short, empty, numeric, spaced, binary, long.
func (g *seqGen) listElem() string {
	return g.pick("a", "b", "c", "a", "", "1700000000123", "with space", "bin\x00\xff", strings.Repeat("z", 300))
}

// listIndex is an index or range end around a short list's ends, the
// int64 extremes and what is not an integer.
func (g *seqGen) listIndex() string {
	return g.pick("0", "1", "2", "-1", "-2", "-3", "5", "-100", "100", "9223372036854775807", "-9223372036854775808",
		"0", "-1", "abc", "1.5", "+1", "01")
}
