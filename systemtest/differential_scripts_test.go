package systemtest

import (
	"crypto/sha1"
	"encoding/hex"
	"strconv"
	"strings"
)

// The script family in the differential test: EVAL of scripts generated
// from fragments that call the data commands on KEYS (through redis.call
// and redis.pcall), raise errors, and return every Lua type (numbers,
// strings, booleans, nil, arrays with holes, status and error tables,
// nested tables, cjson's output); EVALSHA of cached and unknown scripts,
// SCRIPT LOAD, EXISTS and FLUSH, EVAL_RO, and KEYS/ARGV edge cases (no
// keys, missing indexes, empty and binary arguments).
//
// Not generated (deliberate differences, scripting/DESIGN.md): the order in
// which a Lua table with string keys is iterated (a cjson object of several
// fields, a RESP3 map from a table), math.random's draws (Redcell seeds
// them from the log entry), TIME and os.clock, the wording of Lua's own
// compile and runtime messages (gopher-lua's), and the budget errors.
var scriptFamily = family{name: "script", gens: []gen{
	{name: "EVAL", weight: 6, inMulti: true, make: func(g *seqGen) step {
		keys := g.scriptKeys()
		args := g.scriptArgs()
		return cmd(scriptCall(g.pick("EVAL", "eval"), g.script(len(keys), len(args)), keys, args)...)
	}},
	{name: "EVALSHA", weight: 3, inMulti: true, make: func(g *seqGen) step {
		keys := g.scriptKeys()
		args := g.scriptArgs()
		body := cachedScripts[g.r.IntN(len(cachedScripts))]
		sha := sha1Hex(body)
		if g.chance(20) {
			sha = strings.ToUpper(sha)
		}
		return cmd(scriptCall("EVALSHA", sha, keys, args)...)
	}},
	{name: "SCRIPT LOAD", weight: 2, inMulti: true, make: func(g *seqGen) step {
		return cmd("SCRIPT", "LOAD", cachedScripts[g.r.IntN(len(cachedScripts))])
	}},
	{name: "SCRIPT EXISTS", weight: 1, inMulti: true, make: func(g *seqGen) step {
		args := []string{"SCRIPT", "EXISTS"}
		for range 1 + g.r.IntN(3) {
			args = append(args, sha1Hex(cachedScripts[g.r.IntN(len(cachedScripts))]))
		}
		return cmd(append(args, strings.Repeat("f", 40))...)
	}},
	{name: "SCRIPT FLUSH", weight: 1, inMulti: true, make: func(g *seqGen) step {
		return cmd("SCRIPT", "FLUSH", g.pick("", "SYNC", "ASYNC", "async")).trimEmpty()
	}},
	{name: "EVAL_RO", weight: 2, inMulti: true, make: func(g *seqGen) step {
		key := g.anyKey()
		return cmd("EVAL_RO", g.pick(
			"return redis.call('GET', KEYS[1])",
			"return redis.call('EXISTS', KEYS[1])",
			"return redis.call('TYPE', KEYS[1])",
			"return redis.call('SET', KEYS[1], 'v')",
			"return redis.pcall('INCR', KEYS[1])",
		), "1", key)
	}},
	{name: "script errors", weight: 1, inMulti: true, make: func(g *seqGen) step {
		return cmd(g.pickArgs(
			[]string{"EVAL", "return 1", "x"}, []string{"EVAL", "return 1", "-1"}, []string{"EVAL", "return 1", "2", "a"},
			[]string{"EVAL", "return 1"}, []string{"EVALSHA", "abc", "0"}, []string{"EVALSHA", strings.Repeat("0", 40), "0"},
			[]string{"SCRIPT", "FLUSH", "x"}, []string{"SCRIPT", "EXISTS"}, []string{"SCRIPT", "KILL"}, []string{"SCRIPT", "nope"},
			[]string{"EVAL", "return redis.call('EVAL', 'return 1', 0)", "0"}, []string{"EVAL", "return undefined_global", "0"},
			[]string{"EVAL", "newglobal = 1", "0"}, []string{"EVAL", "return redis.call('MULTI')", "0"},
		)...)
	}},
}}

// cachedScripts are the scripts EVALSHA runs and SCRIPT LOAD loads.
var cachedScripts = []string{
	"return redis.call('INCRBY', KEYS[1] or 'n', ARGV[1] or '1')",
	"return {KEYS[1], ARGV[1], #KEYS, #ARGV}",
	"local v = redis.call('GET', KEYS[1] or 'n') if v then return v else return false end",
}

// scriptCall is an EVAL or EVALSHA command line.
func scriptCall(name, script string, keys, args []string) []string {
	out := []string{name, script, strconv.Itoa(len(keys))}
	return append(append(out, keys...), args...)
}

// scriptKeys are 0 to 3 keys of the pool, never a CL key: scripts write
// their KEYS, and a CL key must only ever hold a limiter's state for the
// CL step's Redis side to mirror it (clKeyPool).
func (g *seqGen) scriptKeys() []string {
	keys := make([]string, g.r.IntN(4))
	for i := range keys {
		keys[i] = g.key()
	}
	return keys
}

// scriptArgs are 0 to 3 arguments: integers, text, empty, binary.
func (g *seqGen) scriptArgs() []string {
	args := make([]string, g.r.IntN(4))
	for i := range args {
		args[i] = g.pick("1", "5", "-3", "0", "abc", "", "2.5", "bin\x00\xff", "9223372036854775807")
	}
	return args
}

// script builds a script of 1 to 3 statements and a return, for nk KEYS
// and na ARGV (fragments index only what exists, or deliberately one past).
func (g *seqGen) script(nk, na int) string {
	key := func() string {
		if nk == 0 || g.chance(10) {
			return "'" + g.pick("a", "b", "user:1") + "'"
		}
		return "KEYS[" + strconv.Itoa(1+g.r.IntN(nk)) + "]"
	}
	arg := func() string {
		if na == 0 || g.chance(10) {
			return "'" + g.pick("1", "x", "") + "'"
		}
		return "ARGV[" + strconv.Itoa(1+g.r.IntN(na)) + "]"
	}
	var b strings.Builder
	for range 1 + g.r.IntN(3) {
		switch g.r.IntN(10) {
		case 0:
			b.WriteString("redis.call('INCRBY', " + key() + ", 1) ")
		case 1:
			b.WriteString("redis.pcall('INCRBY', " + key() + ", " + arg() + ") ")
		case 2:
			b.WriteString("redis.call('SET', " + key() + ", " + arg() + ") ")
		case 3:
			b.WriteString("redis.pcall('HSET', " + key() + ", 'f', " + arg() + ") ")
		case 4:
			b.WriteString("redis.pcall('RPUSH', " + key() + ", " + arg() + ") ")
		case 5:
			b.WriteString("redis.pcall('ZADD', " + key() + ", 1, " + arg() + ") ")
		case 6:
			b.WriteString("redis.pcall('SADD', " + key() + ", " + arg() + ") ")
		case 7:
			b.WriteString("redis.call('DEL', " + key() + ") ")
		case 8:
			b.WriteString("redis.pcall('EXPIRE', " + key() + ", 1000) ")
		default:
			b.WriteString("local _ = redis.pcall('GET', " + key() + ") ")
		}
	}
	if g.chance(3) {
		// Past the apply slice (100,000 instructions) after its writes:
		// the script is deferred, undone and run beside the log
		// (fsm/deferred.go), unless it is inside MULTI or not the last of a
		// pipelined run; its reply and writes must be Redis's either way.
		b.WriteString("for i = 1, 150000 do end ")
	}
	b.WriteString("return ")
	switch g.r.IntN(22) {
	case 0:
		b.WriteString("redis.call('GET', " + key() + ")")
	case 1:
		b.WriteString("redis.pcall('INCR', " + key() + ")")
	case 2:
		b.WriteString("redis.pcall('HGET', " + key() + ", 'f')")
	case 3:
		b.WriteString("redis.pcall('LRANGE', " + key() + ", 0, -1)")
	case 4:
		b.WriteString("redis.pcall('ZRANGE', " + key() + ", 0, -1, 'WITHSCORES')")
	case 5:
		b.WriteString("redis.pcall('TTL', " + key() + ")")
	case 6:
		b.WriteString(g.pick("3.99", "-2.5", "0", "1e3", "2^53", "-0.0"))
	case 7:
		b.WriteString(g.pick("'text'", "''", "tostring(0.1)", "tostring(1/3)", "tostring(1e15)", "tostring(100)", "'a' .. 1"))
	case 8:
		b.WriteString(g.pick("true", "false", "nil"))
	case 9:
		b.WriteString(g.pick("{1, 'two', {3, {4}}, false, 5}", "{1, nil, 3}", "{}", "{{}, {{}}}", "{true, false}"))
	case 10:
		b.WriteString(g.pick("{ok='fine'}", "{err='ERR custom'}", "{err='plain'}", "redis.status_reply('S')", "redis.error_reply('E x')", "{ok=1}"))
	case 11:
		b.WriteString("{" + key() + ", " + arg() + ", #KEYS, #ARGV}")
	case 12:
		b.WriteString(g.pick("cjson.encode({1, 'a', {b=2}})", "cjson.encode({x="+arg()+"})", "cjson.decode('[1,2,[3]]')",
			"cjson.decode('{\"a\":[1,2]}').a", "cjson.encode(cjson.decode('[1,null,true]'))", "cjson.encode({})"))
	case 13:
		b.WriteString(g.pick("redis.sha1hex("+arg()+")", "string.format('%d-%s', 7, 'x')", "string.rep('ab', 3)", "tonumber("+arg()+")"))
	case 14:
		b.WriteString(g.pick("redis.call('NOPE')", "redis.call('GET')", "redis.call('SET', 'k', {})", "redis.call()"))
	case 15:
		b.WriteString(g.pick("error('boom')", "error({err='ERR from table'})", "error()"))
	case 16:
		b.WriteString("redis.pcall(" + g.pick("'NOPE'", "'GET'", "'INCR', 'user:1', 'x'") + ")")
	case 17:
		b.WriteString(g.pick("bit.band(0xff, "+arg()+" == '' and 1 or 3)", "bit.tohex(255)", "struct.pack('>I2', 258)"))
	case 18:
		b.WriteString("type(" + g.pick("redis", "cjson", "KEYS", "ARGV[1]", "math.huge", "table.concat") + ")")
	case 19:
		b.WriteString("table.concat({" + arg() + ", 'x', " + arg() + "}, ',')")
	case 20:
		b.WriteString("redis.pcall('SET', " + key() + ", " + arg() + ", 'NX')")
	default:
		b.WriteString("redis.call('EXISTS', " + key() + ")")
	}
	return b.String()
}

// sha1Hex is a script's SHA-1 as SCRIPT LOAD answers it.
func sha1Hex(body string) string {
	sum := sha1.Sum([]byte(body))
	return hex.EncodeToString(sum[:])
}
