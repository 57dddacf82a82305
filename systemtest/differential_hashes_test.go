package systemtest

import "sort"

// The hash family in the differential test. Fields come from a small pool
// so that writes collide on them; values are the string family's. HGETALL,
// HKEYS and HVALS are compared in any order (data-types.md: their order is
// unspecified; Redis's own changes when a hash becomes a hashtable).
var hashFamily = family{name: "hash", gens: []gen{
	{name: "HSET", weight: 5, inMulti: true, make: func(g *seqGen) step {
		args := []string{g.pick("HSET", "HMSET", "hset"), g.key()}
		for range 1 + g.r.IntN(3) {
			args = append(args, g.field(), g.value())
		}
		if g.chance(5) {
			args = args[:len(args)-1] // an odd count: a wrong arity
		}
		return cmd(args...)
	}},
	{name: "HSETNX", weight: 2, inMulti: true, make: func(g *seqGen) step { return cmd("HSETNX", g.key(), g.field(), g.value()) }},
	{name: "HGET", weight: 4, inMulti: true, make: func(g *seqGen) step { return cmd("HGET", g.anyKey(), g.field()) }},
	{name: "HMGET", weight: 3, inMulti: true, make: func(g *seqGen) step {
		args := []string{"HMGET", g.anyKey()}
		for range 1 + g.r.IntN(4) {
			args = append(args, g.field())
		}
		return cmd(args...)
	}},
	{name: "HEXISTS HLEN", weight: 3, inMulti: true, make: func(g *seqGen) step {
		if g.chance(50) {
			return cmd("HEXISTS", g.anyKey(), g.field())
		}
		return cmd("HLEN", g.anyKey())
	}},
	{name: "HGETALL", weight: 3, inMulti: true, make: func(g *seqGen) step {
		s := cmd("HGETALL", g.anyKey())
		s.compare, s.cmpName = pairMultiset, "field/value pairs in any order"
		return s
	}},
	{name: "HKEYS HVALS", weight: 2, inMulti: true, make: func(g *seqGen) step {
		s := cmd(g.pick("HKEYS", "HVALS"), g.anyKey())
		s.compare, s.cmpName = multiset, "multiset"
		return s
	}},
	{name: "HDEL", weight: 3, inMulti: true, make: func(g *seqGen) step {
		args := []string{"HDEL", g.key()}
		for range 1 + g.r.IntN(3) {
			args = append(args, g.field())
		}
		return cmd(args...)
	}},
	{name: "HINCRBY", weight: 4, inMulti: true, make: func(g *seqGen) step {
		return cmd("HINCRBY", g.key(), g.field(), g.pick("1", "-1", "5", "0", "+1", "01", "1.5", "x", "-0",
			"9223372036854775807", "-9223372036854775808"))
	}},
	{name: "HINCRBYFLOAT", weight: 3, inMulti: true, make: func(g *seqGen) step {
		return cmd("HINCRBYFLOAT", g.key(), g.field(), g.pick("0.1", "1.5", "-2", "1e3", "0x10", "abc", "inf", "3.0e-5", "-0", "1e400"))
	}},
	{name: "hash errors", weight: 1, inMulti: true, make: func(g *seqGen) step {
		return cmd(g.pickArgs([]string{"HSET", g.key(), g.field()}, []string{"HGET", g.key()}, []string{"HMGET", g.key()},
			[]string{"HDEL", g.key()}, []string{"HINCRBY", g.key(), g.field()}, []string{"HGETALL"}, []string{"HSETNX", g.key(), g.field()},
			[]string{"HLEN", g.key(), g.field()}, []string{"HINCRBYFLOAT", g.key(), g.field(), "1", "2"})...)
	}},
}}

// field is a hash field: short names that collide, empty, binary.
func (g *seqGen) field() string {
	return g.pick("f", "g", "tokens", "ts", "", "a b", "bin\x00", "10")
}

// pairMultiset: HGETALL's field/value pairs (a RESP2 array or a RESP3 map,
// alternating) the same in any order.
func pairMultiset(a, b rawValue) bool {
	if a.kind != b.kind || a.null != b.null || len(a.elems) != len(b.elems) || len(a.elems)%2 != 0 || len(a.elems) == 0 {
		return sameBytes(a, b)
	}
	pairs := func(v rawValue) []string {
		s := make([]string, 0, len(v.elems)/2)
		for i := 0; i < len(v.elems); i += 2 {
			s = append(s, string(v.elems[i].raw)+string(v.elems[i+1].raw))
		}
		sort.Strings(s)
		return s
	}
	x, y := pairs(a), pairs(b)
	for i := range x {
		if x[i] != y[i] {
			return false
		}
	}
	return true
}
