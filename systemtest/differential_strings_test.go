package systemtest

import "strconv"

// The string family in the differential test. Expiries are relative, at
// least 100 s and distinct within a sequence (expirySeconds: see
// differential_expire_test.go for why).
var stringFamily = family{name: "string", gens: []gen{
	{name: "SET", weight: 6, inMulti: true, make: func(g *seqGen) step {
		args := []string{g.pick("SET", "set"), g.key(), g.value()}
		if g.chance(40) {
			switch g.r.IntN(4) {
			case 0:
				args = append(args, "EX", strconv.Itoa(g.expirySeconds()))
			case 1:
				args = append(args, "PX", strconv.Itoa(g.expirySeconds()*1000))
			case 2:
				args = append(args, "KEEPTTL")
			case 3:
				args = append(args, g.pick("EX", "PX"), g.pick("0", "-1", "abc", "9223372036854775807"))
			}
		}
		if g.chance(30) {
			args = append(args, g.pick("NX", "XX", "nx"))
		}
		if g.chance(20) {
			args = append(args, "GET")
		}
		if g.chance(5) {
			args = append(args, g.pick("NX", "EX", "BOGUS", "KEEPTTL"))
		}
		return cmd(args...)
	}},
	{name: "GET", weight: 5, inMulti: true, make: func(g *seqGen) step { return cmd("GET", g.anyKey()) }},
	{name: "MGET", weight: 2, inMulti: true, make: func(g *seqGen) step { return cmd(with("MGET", g.keys(4)...)...) }},
	{name: "MSET", weight: 2, inMulti: true, make: func(g *seqGen) step {
		args := []string{g.pick("MSET", "MSETNX")}
		for range 1 + g.r.IntN(3) {
			args = append(args, g.key(), g.value())
		}
		if g.chance(5) {
			args = args[:len(args)-1] // an odd count: a wrong arity
		}
		return cmd(args...)
	}},
	{name: "counters", weight: 5, inMulti: true, make: func(g *seqGen) step {
		switch g.r.IntN(5) {
		case 0:
			return cmd(g.pick("INCR", "DECR"), g.key())
		case 1:
			return cmd(g.pick("INCRBY", "DECRBY"), g.key(), g.pick("1", "5", "-7", "0", "+1", "01", "1.5", "x",
				"9223372036854775807", "-9223372036854775808"))
		case 2:
			return cmd("INCRBYFLOAT", g.key(), g.pick("0.1", "1.5", "-2", "1e3", "0x10", "abc", "inf", "3.0e-5"))
		case 3:
			return cmd("APPEND", g.key(), g.value())
		default:
			return cmd("STRLEN", g.anyKey())
		}
	}},
	{name: "string others", weight: 3, inMulti: true, make: func(g *seqGen) step {
		switch g.r.IntN(6) {
		case 0:
			return cmd("SETNX", g.key(), g.value())
		case 1:
			return cmd("GETSET", g.key(), g.value())
		case 2:
			return cmd("GETDEL", g.anyKey())
		case 3:
			return cmd(g.pick("SETEX", "PSETEX"), g.key(), strconv.Itoa(g.expirySeconds()*1000), g.value())
		case 4:
			return cmd("GETEX", g.anyKey(), g.pick("PERSIST", "EX", "PX"), strconv.Itoa(g.expirySeconds()*1000))
		default:
			return cmd(g.pickArgs([]string{"GETEX", g.key()}, []string{"GETEX", g.key(), "PERSIST"},
				[]string{"SETEX", g.key(), "0", "v"}, []string{"SET", g.key()}, []string{"GETEX", g.key(), "EX"})...)
		}
	}},
}}

// value is a string value: counters, floats, text, empty, binary.
func (g *seqGen) value() string {
	return g.pick("v", "10", "-3", "0", "1.5", "", "abc def", "9223372036854775806", "0x10", "bin\x00\xff", "007")
}
