package systemtest

import "strconv"

// The expiry and rename commands in the differential test. Relative times
// only, at least 100 s, and no two equal in a sequence, nor equal to the CL
// keys' 1000 s (expirySeconds): Redis's clock runs during a sequence while
// Redcell's is frozen, so a short expiry could pass on one side only, and
// GT or LT between two equal relative times would compare the few ms
// Redis's clock moved. The absolute forms (EXPIREAT, EXPIRETIME) are
// compared in expire_test.go's oracle table, where both clocks are aligned.
var expiryFamily = family{name: "expiry", gens: []gen{
	{name: "EXPIRE", weight: 3, inMulti: true, make: func(g *seqGen) step {
		name, unit := "EXPIRE", 1
		if g.chance(50) {
			name, unit = "PEXPIRE", 1000
		}
		t := g.pick("0", "-5")
		if g.chance(85) {
			t = strconv.Itoa(g.expirySeconds() * unit)
		}
		args := []string{name, g.anyKey(), t}
		if g.chance(50) {
			args = append(args, g.pick("NX", "XX", "GT", "LT", "nx", "gt"))
		}
		return cmd(args...)
	}},
	{name: "expiry errors", weight: 1, inMulti: true, make: func(g *seqGen) step {
		return cmd(g.pickArgs([]string{"EXPIRE", g.key(), "abc"}, []string{"EXPIRE", g.key(), "100", "FOO"},
			[]string{"EXPIRE", g.key(), "100", "NX", "XX"}, []string{"PEXPIRE", g.key(), "100", "GT", "LT"},
			[]string{"EXPIRE", g.key(), "9223372036854775807"}, []string{"EXPIRE", g.key(), "+100"},
			[]string{"EXPIRE", g.key()}, []string{"PERSIST"})...)
	}},
	{name: "PERSIST", weight: 2, inMulti: true, make: func(g *seqGen) step { return cmd("PERSIST", g.anyKey()) }},
	{name: "TOUCH", weight: 1, inMulti: true, make: func(g *seqGen) step { return cmd(with("TOUCH", g.keys(3)...)...) }},
	{name: "RENAME", weight: 3, inMulti: true, make: func(g *seqGen) step {
		return cmd(g.pick("RENAME", "RENAMENX", "rename"), g.anyKey(), g.key())
	}},
}}

// expirySeconds is a relative expiry for this sequence: 100, 200, 500 or
// 2000 s, plus 3k + 1 s for the k-th handed out: distinct within any
// sequence of fewer than 100 of them (the bases differ by 100 s or more,
// which is not 3 times a smaller k), and never 1000 (base + 3k + 1 = 1000
// has no solution for these bases).
func (g *seqGen) expirySeconds() int {
	g.expiries++
	return []int{100, 200, 500, 2000}[g.r.IntN(4)] + 3*g.expiries - 2
}
