package systemtest

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// watchScriptStep is one step of TestWatchLikeRedis: a command on the
// first or the second connection, or "let k expire" (expire).
type watchScriptStep struct {
	second bool
	args   []string
	expire string // the key to wait out: redis polls PTTL, redcell's clock advances
}

func w1(args ...string) watchScriptStep { return watchScriptStep{args: args} }
func w2(args ...string) watchScriptStep { return watchScriptStep{second: true, args: args} }

// TestWatchLikeRedis runs WATCH scripts on redis-server 7 and on redcell and
// compares every reply byte for byte, RESP2 and RESP3: a watched key written
// (with the same value, INCR, DEL, GETDEL, RENAME, EXPIRE, FLUSHALL) by the
// same or another client makes EXEC answer nil; a write that changes nothing
// does not; the key expiring between WATCH and EXEC does (redcell's clock
// is advanced with DEBUG CLOCK; redis's key is waited out with a bounded
// poll of PTTL from the other connection); WATCH then EXEC without change
// runs; UNWATCH, DISCARD and EXEC forget.
func TestWatchLikeRedis(t *testing.T) {
	redisAddr := startRedisServer(t)
	n := startTestNode(t, "watch")

	tx := func(cmds ...[]string) []watchScriptStep {
		s := []watchScriptStep{w1("MULTI")}
		for _, c := range cmds {
			s = append(s, w1(c...))
		}
		return append(s, w1("EXEC"))
	}
	incr := []string{"INCR", "tx"}
	scripts := map[string][]watchScriptStep{
		"no change":             append([]watchScriptStep{w1("SET", "k", "v"), w1("WATCH", "k", "missing")}, tx(incr, []string{"GET", "k"})...),
		"SET twice, same value": append([]watchScriptStep{w1("SET", "k", "v"), w1("WATCH", "k"), w2("SET", "k", "v")}, tx(incr)...),
		"own INCR":              append([]watchScriptStep{w1("SET", "k", "1"), w1("WATCH", "k"), w1("INCR", "k")}, tx(incr)...),
		"DEL by another":        append([]watchScriptStep{w1("SET", "k", "1"), w1("WATCH", "k"), w2("DEL", "k")}, tx(incr)...),
		"GETDEL":                append([]watchScriptStep{w1("SET", "k", "1"), w1("WATCH", "k"), w2("GETDEL", "k")}, tx(incr)...),
		"RENAME source":         append([]watchScriptStep{w1("SET", "k", "1"), w1("WATCH", "k"), w2("RENAME", "k", "j")}, tx(incr)...),
		"RENAME destination":    append([]watchScriptStep{w1("SET", "k", "1"), w1("WATCH", "j"), w2("RENAME", "k", "j")}, tx(incr)...),
		"EXPIRE":                append([]watchScriptStep{w1("SET", "k", "1"), w1("WATCH", "k"), w2("EXPIRE", "k", "100")}, tx(incr)...),
		"FLUSHALL":              append([]watchScriptStep{w1("WATCH", "nothing"), w2("FLUSHALL")}, tx(incr)...),
		"created and deleted":   append([]watchScriptStep{w1("WATCH", "k"), w2("SET", "k", "v"), w2("DEL", "k")}, tx(incr)...),
		"writes that change nothing": append([]watchScriptStep{w1("SET", "k", "v"), w1("WATCH", "k", "m"),
			w2("DEL", "m"), w2("SET", "k", "w", "NX"), w2("SET", "m", "w", "XX"), w2("EXPIRE", "k", "100", "XX"),
			w2("PERSIST", "k"), w2("GETDEL", "m"), w2("INCR", "k"), w2("RENAMENX", "k", "k"), w2("SET", "other", "x")}, tx(incr)...),
		"expiry between WATCH and EXEC": append([]watchScriptStep{w1("SET", "k", "v", "PX", "50"), w1("WATCH", "k"),
			{expire: "k"}}, tx(incr)...),
		"expired before WATCH": append([]watchScriptStep{w1("SET", "k", "v", "PX", "50"), {expire: "k"}, w1("WATCH", "k")}, tx(incr)...),
		"UNWATCH":              append([]watchScriptStep{w1("WATCH", "k"), w1("UNWATCH"), w2("SET", "k", "v")}, tx(incr)...),
		"EXEC forgets": append(append([]watchScriptStep{w1("WATCH", "k")}, tx()...),
			append([]watchScriptStep{w2("SET", "k", "v")}, tx(incr)...)...),
		"DISCARD forgets":    {w1("WATCH", "k"), w1("MULTI"), w1("DISCARD"), w2("SET", "k", "v"), w1("MULTI"), w1("INCR", "tx"), w1("EXEC")},
		"empty transaction":  append([]watchScriptStep{w1("WATCH", "k"), w2("SET", "k", "v")}, tx()...),
		"WATCH inside MULTI": {w1("WATCH", "k"), w1("MULTI"), w1("WATCH", "k"), w1("UNWATCH"), w1("INCR", "tx"), w1("EXEC")},
		"two WATCHes":        append([]watchScriptStep{w1("WATCH", "a"), w1("WATCH", "b", "a"), w2("SET", "b", "1")}, tx(incr)...),
	}
	for name, script := range scripts {
		for _, proto := range []string{"2", "3"} {
			t.Run(fmt.Sprintf("%s/RESP%s", name, proto), func(t *testing.T) {
				var got [2][]string
				for side, addr := range []string{redisAddr, n.addr()} {
					c, c2 := mustDial(t, addr), mustDial(t, addr)
					for _, setup := range [][]string{{"FLUSHALL"}, {"HELLO", proto}} {
						if _, err := doRaw(c, setup...); err != nil {
							t.Fatal(err)
						}
					}
					if side == 1 {
						freshBase(t, c) // frozen, past every earlier script's instants
					}
					for _, s := range script {
						if s.expire != "" {
							waitExpired(t, side, c, c2, s.expire)
							continue
						}
						on := c
						if s.second {
							on = c2
						}
						v, err := doRaw(on, s.args...)
						if err != nil {
							t.Fatalf("%v: %v", s.args, err)
						}
						got[side] = append(got[side], v.quoted())
					}
				}
				for i := range got[0] {
					if got[0][i] != got[1][i] {
						t.Fatalf("step %d differs:\n redis:   %s\n redcell: %s\nall redis:   %s\nall redcell: %s", i, got[0][i], got[1][i],
							strings.Join(got[0], " "), strings.Join(got[1], " "))
					}
				}
			})
		}
	}
}

// waitExpired lets key expire: redis's clock runs, so the other connection
// polls PTTL (which does not touch the key) until -2, within a bound;
// redcell's frozen clock is moved past the key's expiry instead.
func waitExpired(t *testing.T, side int, c, c2 *respConn, key string) {
	t.Helper()
	if side == 1 {
		if _, err := doRaw(c2, "DEBUG", "CLOCK", "ADVANCE", "1000000000"); err != nil {
			t.Fatal(err)
		}
		return
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		v, err := doRaw(c2, "PTTL", key)
		if err != nil {
			t.Fatal(err)
		}
		if v.str == "-2" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("redis: %s did not expire within 10 s (PTTL %s)", key, v.str)
		}
		time.Sleep(5 * time.Millisecond) // polling redis's running clock, bounded above
	}
}
