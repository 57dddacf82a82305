package commands

import (
	"slices"
	"strings"
	"testing"
)

// keyspaceWithoutKeys are the commands that touch the keyspace as a whole
// (no key positions) and so are Read or Write without a first key.
var keyspaceWithoutKeys = map[string]bool{"dbsize": true, "flushall": true, "flushdb": true, "scan": true, "keys": true,
	"script|load": true, "script|exists": true, "script|flush": true}

// TestTableSanity checks the invariants COMMAND, dispatch and clients rely
// on, for every command and subcommand.
func TestTableSanity(t *testing.T) {
	seen := map[string]bool{}
	var check func(s *Spec, parent *Spec)
	check = func(s *Spec, parent *Spec) {
		if seen[s.Name] {
			t.Errorf("%s: listed twice", s.Name)
		}
		seen[s.Name] = true
		if s.Name == "" || s.Name != strings.ToLower(s.Name) || strings.ContainsAny(s.Name, " \t\r\n") {
			t.Errorf("%q: names are lower case without blanks", s.Name)
		}
		if parent == nil && strings.Contains(s.Name, "|") {
			t.Errorf("%s: a top-level name has no '|'", s.Name)
		}
		if parent != nil {
			sub, ok := strings.CutPrefix(s.Name, parent.Name+"|")
			if !ok || sub == "" || strings.Contains(sub, "|") {
				t.Errorf("%s: a subcommand of %s is named %s|<sub>", s.Name, parent.Name, parent.Name)
			}
			if s.Arity > 0 && s.Arity < 2 || s.Arity < 0 && -s.Arity < 2 {
				t.Errorf("%s: a subcommand has arity of at least 2 (container and sub), got %d", s.Name, s.Arity)
			}
			if parent.Sub([]byte(strings.ToUpper(sub))) != s {
				t.Errorf("%s: Sub(%q) does not find it", s.Name, strings.ToUpper(sub))
			}
		}
		if s.Arity == 0 {
			t.Errorf("%s: arity 0", s.Name)
		}
		if len(s.Subs) > 0 && s.Arity != -2 && s.Name != "command" { // bare COMMAND is valid
			t.Errorf("%s: a container has arity -2, got %d", s.Name, s.Arity)
		}
		// Key positions.
		switch {
		case s.FirstKey == 0:
			if s.LastKey != 0 || s.Step != 0 {
				t.Errorf("%s: no first key but last key %d, step %d", s.Name, s.LastKey, s.Step)
			}
		case s.FirstKey < 0:
			t.Errorf("%s: first key %d", s.Name, s.FirstKey)
		default:
			if s.Step <= 0 {
				t.Errorf("%s: step %d", s.Name, s.Step)
			}
			if s.LastKey != -1 && s.LastKey < s.FirstKey {
				t.Errorf("%s: last key %d before first key %d", s.Name, s.LastKey, s.FirstKey)
			}
			minWords := s.Arity
			if minWords < 0 {
				minWords = -minWords
			}
			if s.FirstKey >= minWords {
				t.Errorf("%s: first key %d is beyond the %d words its arity guarantees", s.Name, s.FirstKey, minWords)
			}
			if s.Arity > 0 && s.LastKey >= s.Arity {
				t.Errorf("%s: last key %d is beyond its arity %d", s.Name, s.LastKey, s.Arity)
			}
			if s.Arity < 0 && s.LastKey > 0 && s.LastKey >= minWords && s.Name != "cl.throttle" && s.Name != "cl.peek" {
				t.Errorf("%s: last key %d with variable arity %d", s.Name, s.LastKey, s.Arity)
			}
		}
		// Class against keys and flags.
		switch s.Class {
		case Read, Write:
			// A script's keys follow a count (movablekeys), as in Redis.
			if s.FirstKey == 0 && !keyspaceWithoutKeys[s.Name] && !s.HasFlag("movablekeys") {
				t.Errorf("%s: class %d without keys and not a whole-keyspace command", s.Name, s.Class)
			}
			// A data type's commands carry its own category (@string, @set,
			// @sortedset for the group sorted-set) instead, as in Redis.
			if !slices.Contains(s.ACL, "@keyspace") && !slices.Contains(s.ACL, "@"+strings.ReplaceAll(s.Group, "-", "")) && s.Group != "module" {
				t.Errorf("%s: a keyspace command without the @keyspace ACL category", s.Name)
			}
			// SCRIPT's subcommands that reach the script cache are the
			// exception, as in Redis.
			if len(s.Subs) > 0 || parent != nil && parent.Name != "script" {
				t.Errorf("%s: keyspace commands are not containers or subcommands", s.Name)
			}
		case Connection:
			// WATCH names keys (cluster clients route it by them) but
			// only answers that it is not supported; MEMORY USAGE names
			// its key as Redis does, and reads it locally (diagnostics.go).
			if s.FirstKey != 0 && s.Name != "watch" && s.Name != "memory|usage" {
				t.Errorf("%s: a Connection command with key positions", s.Name)
			}
		default:
			t.Errorf("%s: class %d", s.Name, s.Class)
		}
		// OwnFlags specs list Redis's flags as they are (EVAL: the script
		// decides whether it writes, so neither "write" nor "readonly").
		if !s.OwnFlags && (s.Class == Write) != slices.Contains(s.Flags, "write") {
			t.Errorf("%s: class %d but flags %v", s.Name, s.Class, s.Flags)
		}
		if !s.OwnFlags && (s.Class == Read) != slices.Contains(s.Flags, "readonly") {
			t.Errorf("%s: class %d but flags %v", s.Name, s.Class, s.Flags)
		}
		if s.OwnArity && s.Class == Connection {
			t.Errorf("%s: OwnArity is for keyspace commands parsed in this package", s.Name)
		}
		for _, f := range s.Flags {
			if f != strings.ToLower(f) || strings.Contains(f, " ") {
				t.Errorf("%s: flag %q", s.Name, f)
			}
		}
		for _, a := range s.ACL {
			if !strings.HasPrefix(a, "@") {
				t.Errorf("%s: ACL category %q", s.Name, a)
			}
		}
		if s.Summary == "" || s.Since == "" || s.Group == "" || s.Complexity == "" {
			t.Errorf("%s: missing docs (summary %q, since %q, group %q, complexity %q)", s.Name, s.Summary, s.Since, s.Group, s.Complexity)
		}
		for _, sub := range s.Subs {
			check(sub, s)
		}
	}
	all := All()
	for i, s := range all {
		check(s, nil)
		if i > 0 && all[i-1].Name >= s.Name {
			t.Errorf("All() is not sorted: %s before %s", all[i-1].Name, s.Name)
		}
	}
	if len(all) != len(table) {
		t.Errorf("All() has %d commands, the table %d", len(all), len(table))
	}
	// All returns a copy: callers may not reorder the table.
	all[0] = nil
	if All()[0] == nil {
		t.Errorf("All() returns the table itself")
	}
}

// TestParseOnlyOnKeyspaceCommands: a Read or Write command has its Parse
// (dispatch has no other way to build its request), a Connection command
// none.
func TestParseOnlyOnKeyspaceCommands(t *testing.T) {
	for _, s := range All() {
		if (s.Class == Connection) != (s.Parse == nil) {
			t.Errorf("%s: class %d with Parse set %v", s.Name, s.Class, s.Parse != nil)
		}
	}
}

// TestCheckArity: Redis's convention, n = exactly n words, -n = at least n.
func TestCheckArity(t *testing.T) {
	for _, tt := range []struct {
		arity, n int
		want     bool
	}{
		{2, 2, true}, {2, 1, false}, {2, 3, false},
		{-2, 2, true}, {-2, 5, true}, {-2, 1, false},
		{-1, 1, true}, {1, 1, true}, {1, 2, false},
	} {
		if got := (&Spec{Arity: tt.arity}).CheckArity(tt.n); got != tt.want {
			t.Errorf("arity %d, %d words: %v, want %v", tt.arity, tt.n, got, tt.want)
		}
	}
}

// TestSpecArities pins the arities clients see in COMMAND (redis-py's
// cluster client and others route by them).
func TestSpecArities(t *testing.T) {
	want := map[string]int{
		"cl.throttle": -5, "cl.peek": -5, "del": -2, "unlink": -2, "exists": -2, "pttl": 2, "ttl": 2,
		"expire": -3, "pexpire": -3, "expireat": -3, "pexpireat": -3, "persist": 2, "expiretime": 2, "pexpiretime": 2, "touch": -2, "rename": 3, "renamenx": 3,
		"type": 2, "dbsize": 1, "flushall": -1, "flushdb": -1, "ping": -1, "echo": 2, "quit": -1,
		"reset": 1, "hello": -1, "auth": -2, "select": 2, "client": -2, "info": -1, "time": 1,
		"command": -1, "config": -2, "debug": -2, "cluster": -2, "raft": -2, "readonly": 1, "readwrite": 1, "asking": 1,
		"multi": 1, "exec": 1, "discard": 1, "watch": -2, "unwatch": 1, "subscribe": -2, "unsubscribe": -1,
		"tb.take": -5, "tb.peek": -5, "sl.hit": -4, "sl.peek": -4, "scan": -2, "keys": 2,
		"save": 1, "bgsave": -1, "lastsave": 1, "shutdown": -1,
		"eval": -3, "evalsha": -3, "eval_ro": -3, "evalsha_ro": -3, "script": -2,
		"get": 2, "set": -3, "setnx": 3, "setex": 4, "psetex": 4, "getset": 3, "getdel": 2, "getex": -2,
		"strlen": 2, "append": 3, "incr": 2, "decr": 2, "incrby": 3, "decrby": 3, "mget": -2, "mset": -3, "msetnx": -3, "incrbyfloat": 3,
		"hset": -4, "hmset": -4, "hsetnx": 4, "hget": 3, "hmget": -3, "hgetall": 2, "hdel": -3, "hexists": 3, "hlen": 2,
		"hkeys": 2, "hvals": 2, "hincrby": 4, "hincrbyfloat": 4,
		"lpush": -3, "rpush": -3, "lpushx": -3, "rpushx": -3, "lpop": -2, "rpop": -2, "llen": 2, "lindex": 3, "lrange": 4, "ltrim": 4, "lrem": 4, "lset": 4,
		"increx": -2, "sadd": -3, "srem": -3, "sismember": 3, "smismember": -3, "scard": 2, "smembers": 2,
		"zadd": -4, "zincrby": 4, "zrem": -3, "zcard": 2, "zcount": 4, "zscore": 3, "zrank": 3, "zrange": -4,
		"zrangebyscore": -4, "zrevrangebyscore": -4, "zremrangebyscore": 4, "zremrangebyrank": 4,
		"slowlog": -2, "latency": -2, "memory": -2,
	}
	for _, s := range All() {
		w, ok := want[s.Name]
		if !ok {
			t.Errorf("%s: not in this test's list; add its Redis arity", s.Name)
			continue
		}
		if s.Arity != w {
			t.Errorf("%s: arity %d, Redis says %d", s.Name, s.Arity, w)
		}
	}
}
