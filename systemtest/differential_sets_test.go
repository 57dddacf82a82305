package systemtest

// The set family in the differential test: members from a small pool (so
// SADD meets present members and SREM empties sets), integers among them
// (Redis 7.0 keeps an all-integer set as an intset, sorted, and converts
// it on the first other member), repeats, wrong arities. SMEMBERS's order
// is unspecified (data-types.md): compared as a multiset.
var setFamily = family{name: "set", gens: []gen{
	{name: "SADD", weight: 6, inMulti: true, make: func(g *seqGen) step {
		return cmd(with(g.pick("SADD", "sadd"), append([]string{g.key()}, g.setMembers(4)...)...)...)
	}},
	{name: "SREM", weight: 4, inMulti: true, make: func(g *seqGen) step {
		return cmd(with("SREM", append([]string{g.anyKey()}, g.setMembers(3)...)...)...)
	}},
	{name: "SISMEMBER", weight: 3, inMulti: true, make: func(g *seqGen) step {
		return cmd("SISMEMBER", g.anyKey(), g.setMember())
	}},
	{name: "SMISMEMBER", weight: 3, inMulti: true, make: func(g *seqGen) step {
		return cmd(with("SMISMEMBER", append([]string{g.anyKey()}, g.setMembers(4)...)...)...)
	}},
	{name: "SCARD", weight: 3, inMulti: true, make: func(g *seqGen) step { return cmd("SCARD", g.anyKey()) }},
	{name: "SMEMBERS", weight: 3, inMulti: true, make: func(g *seqGen) step {
		s := cmd("SMEMBERS", g.anyKey())
		s.compare, s.cmpName = multiset, "multiset"
		return s
	}},
	{name: "set arity", weight: 1, inMulti: true, make: func(g *seqGen) step {
		return cmd(g.pickArgs([]string{"SADD", g.key()}, []string{"SREM", g.key()}, []string{"SISMEMBER", g.key()},
			[]string{"SISMEMBER", g.key(), "a", "b"}, []string{"SMISMEMBER", g.key()}, []string{"SCARD"},
			[]string{"SCARD", g.key(), "x"}, []string{"SMEMBERS"}, []string{"SMEMBERS", g.key(), "x"}, []string{"SADD"})...)
	}},
}}

// setMember is a set member: text, integers (intset in Redis), empty, binary.
func (g *seqGen) setMember() string {
	return g.pick("a", "b", "c", "1", "2", "10", "-5", "", "bin\x00\xff", "a long member with spaces")
}

// setMembers returns 1..max members, possibly repeated.
func (g *seqGen) setMembers(max int) []string {
	ms := make([]string, 1+g.r.IntN(max))
	for i := range ms {
		ms[i] = g.setMember()
	}
	return ms
}
