package systemtest

import (
	"testing"
)

// timedStep is one command at an instant relative to a test's time origin,
// with its expected reply.
type timedStep struct {
	at   int64 // ns after the origin
	args []string
	want want
}

// runTimedSteps replays steps in order, freezing the clock at origin+at
// before each one (only when it changes). Reads may step the clock back
// (they are judged at the frozen instant); writes in these tables only move
// forward.
func runTimedSteps(t *testing.T, c *respConn, origin int64, steps []timedStep) {
	t.Helper()
	clock := int64(-1)
	for i, s := range steps {
		if s.at != clock {
			setClock(t, c, origin+s.at)
			clock = s.at
		}
		if r := mustDo(t, c, s.args...); !s.want.matches(r) {
			t.Errorf("step %d at origin%+dns: %s: got %v, want %v", i, s.at, quoteArgs(s.args), r, s.want)
		}
	}
}

func argv(a ...string) []string { return a }

// TestKeyspaceCommands checks PTTL, TTL, EXISTS, TYPE, DEL, UNLINK, DBSIZE
// and FLUSHALL on CL keys against the injected clock. A CL key expires as
// redis-cell stores it (the contract's vectors depend on it): written at now
// with TTL = TAT-now, it expires at millisecond ms(now) + trunc_ms(TTL) and
// lives while the millisecond clock has not passed that; PTTL is that
// millisecond minus the current one (0 in the key's last millisecond), TTL
// Redis's rounding (PTTL+500)/1000. So a key can outlive its TAT by less than
// 1 ms, or vanish up to 1 ms before it. Each subtest starts from an empty
// keyspace at an origin with a sub-millisecond part, S.123456789 s.
func TestKeyspaceCommands(t *testing.T) {
	n := sharedNode(t)
	c := mustDial(t, n.addr())
	const ms = int64(1_000_000)
	tat := second // CL.THROTTLE k 4 1 1 once at the origin: TAT = origin + 1 s
	// The origin is S.123456789 s; Redis's millisecond clock ticks 543211 ns
	// after it, and a key written at the origin with a 1 s TTL is gone at
	// S+1.124 s, 543211 ns after its TAT.
	const msBoundary = int64(543_211)
	gone := tat + msBoundary
	first := timedStep{0, argv("CL.THROTTLE", "k", "4", "1", "1"), wantInts(0, 5, 4, -1, 1)}

	cases := []struct {
		name      string
		subSecond int64 // the origin's part after the whole second; 0: 123456789 ns
		steps     []timedStep
	}{
		{"counts_and_types", 0, []timedStep{
			{0, argv("DBSIZE"), wantInt(0)},
			first,
			{0, argv("PTTL", "k"), wantInt(1000)},
			{0, argv("TTL", "k"), wantInt(1)},
			{0, argv("EXISTS", "k"), wantInt(1)},
			{0, argv("EXISTS", "k", "k", "k"), wantInt(3)},
			{0, argv("EXISTS", "k", "missing", "k"), wantInt(2)},
			{0, argv("EXISTS", "missing"), wantInt(0)},
			{0, argv("TYPE", "k"), wantStatus("string")},
			{0, argv("TYPE", "missing"), wantStatus("none")},
			{0, argv("DBSIZE"), wantInt(1)},
			{0, argv("PTTL", "missing"), wantInt(-2)},
			{0, argv("TTL", "missing"), wantInt(-2)},
			// Quantity 0 on a missing key leaves nothing behind.
			{0, argv("CL.THROTTLE", "q", "5", "1", "10", "0"), wantInts(0, 6, 6, -1, 0)},
			{0, argv("EXISTS", "q"), wantInt(0)},
			// Binary-safe keys.
			{0, argv("CL.THROTTLE", "bin\x00\r\nkey", "1", "1", "1"), wantInts(0, 2, 1, -1, 1)},
			{0, argv("EXISTS", "bin\x00\r\nkey"), wantInt(1)},
			{0, argv("EXISTS", "bin"), wantInt(0)},
			{0, argv("DBSIZE"), wantInt(2)},
		}},
		{"pttl_in_redis_milliseconds", 0, []timedStep{
			// Written at origin = S.123456789 s with a 1 s TTL: Redis
			// expires it at millisecond S.123 + 1000 = S+1.123, so PTTL is
			// that minus the current millisecond.
			first,
			{1, argv("PTTL", "k"), wantInt(1000)},
			{ms / 2, argv("PTTL", "k"), wantInt(1000)},
			{msBoundary - 1, argv("PTTL", "k"), wantInt(1000)},
			{msBoundary, argv("PTTL", "k"), wantInt(999)},
			{ms, argv("PTTL", "k"), wantInt(999)},
			// TTL = (PTTL+500)/1000, as Redis rounds.
			{500*ms - 1, argv("PTTL", "k"), wantInt(500)},
			{500*ms - 1, argv("TTL", "k"), wantInt(1)},
			{501 * ms, argv("PTTL", "k"), wantInt(499)},
			{501 * ms, argv("TTL", "k"), wantInt(0)},
			{tat - ms, argv("PTTL", "k"), wantInt(1)},
			{tat - 1, argv("PTTL", "k"), wantInt(0)}, // the key's last millisecond
		}},
		{"gone_after_its_last_millisecond", 0, []timedStep{
			first,
			{tat - 1, argv("EXISTS", "k"), wantInt(1)},
			{tat - 1, argv("TYPE", "k"), wantStatus("string")},
			{tat - 1, argv("DBSIZE"), wantInt(1)},
			{tat - 1, argv("TTL", "k"), wantInt(0)},
			{tat - 1, argv("CL.PEEK", "k", "4", "1", "1", "0"), wantInts(0, 5, 4, -1, 0)}, // 1 ns left: reset 0 s
			// At its TAT the key is equivalent to a fresh one but, as in
			// redis-cell, lives to the end of its expiry millisecond.
			{tat, argv("EXISTS", "k"), wantInt(1)},
			{tat, argv("PTTL", "k"), wantInt(0)},
			{tat, argv("CL.PEEK", "k", "4", "1", "1", "0"), wantInts(0, 5, 5, -1, 0)},
			{gone - 1, argv("EXISTS", "k"), wantInt(1)},
			{gone - 1, argv("PTTL", "k"), wantInt(0)},
			// Then it is gone, without any write or sweep.
			{gone, argv("EXISTS", "k"), wantInt(0)},
			{gone, argv("PTTL", "k"), wantInt(-2)},
			{gone, argv("TTL", "k"), wantInt(-2)},
			{gone, argv("TYPE", "k"), wantStatus("none")},
			{gone, argv("DBSIZE"), wantInt(0)},
			{gone, argv("CL.PEEK", "k", "4", "1", "1", "0"), wantInts(0, 5, 5, -1, 0)},
			{gone, argv("CL.THROTTLE", "k", "4", "1", "1"), wantInts(0, 5, 4, -1, 1)}, // a full bucket
		}},
		{"vanishes_before_tat_as_in_redis_cell", 600_000, []timedStep{
			// At origin = S.000600000 s (see subSecond): 2000 per second
			// (T = 500 us) gives TAT = S.001100000, but redis-cell sets a
			// whole-millisecond TTL of 0 ms, so the key is gone at S.001,
			// 0.1 ms before its TAT, and the next call sees a full bucket
			// (vector high_rate_2000_per_second, step 3).
			{0, argv("CL.THROTTLE", "f", "0", "2000", "1"), wantInts(0, 1, 0, -1, 0)},
			{0, argv("EXISTS", "f"), wantInt(1)},
			{0, argv("PTTL", "f"), wantInt(0)},
			{0, argv("CL.THROTTLE", "f", "0", "2000", "1"), wantInts(1, 1, 0, 0, 0)},
			{400_000 - 1, argv("EXISTS", "f"), wantInt(1)},
			{400_000 - 1, argv("CL.PEEK", "f", "0", "2000", "1"), wantInts(1, 1, 0, 0, 0)},
			{400_000, argv("EXISTS", "f"), wantInt(0)},
			{400_000, argv("PTTL", "f"), wantInt(-2)},
			{400_000, argv("CL.PEEK", "f", "0", "2000", "1"), wantInts(0, 1, 0, -1, 0)},
			{400_000, argv("CL.THROTTLE", "f", "0", "2000", "1"), wantInts(0, 1, 0, -1, 0)},
		}},
		{"limited_calls_keep_ttl", 0, []timedStep{
			// 1 per 10 s, no burst: TAT = origin + 10 s.
			{0, argv("CL.THROTTLE", "r", "0", "1", "10"), wantInts(0, 1, 0, -1, 10)},
			{0, argv("PTTL", "r"), wantInt(10000)},
			{3 * second, argv("CL.THROTTLE", "r", "0", "1", "10"), wantInts(1, 1, 0, 7, 7)},
			{3 * second, argv("PTTL", "r"), wantInt(7000)},
			{3 * second, argv("CL.THROTTLE", "r", "0", "1", "10", "0"), wantInts(0, 1, 0, -1, 7)},
			{3 * second, argv("PTTL", "r"), wantInt(7000)},
			{5 * second, argv("CL.THROTTLE", "r", "0", "1", "10"), wantInts(1, 1, 0, 5, 5)},
			{5 * second, argv("PTTL", "r"), wantInt(5000)},
		}},
		{"del_resets_the_limiter", 0, []timedStep{
			{0, argv("CL.THROTTLE", "r", "0", "1", "10"), wantInts(0, 1, 0, -1, 10)},
			{0, argv("CL.THROTTLE", "r", "0", "1", "10"), wantInts(1, 1, 0, 10, 10)},
			{0, argv("DEL", "r"), wantInt(1)},
			{0, argv("EXISTS", "r"), wantInt(0)},
			{0, argv("PTTL", "r"), wantInt(-2)},
			{0, argv("CL.THROTTLE", "r", "0", "1", "10"), wantInts(0, 1, 0, -1, 10)},
			// A key named twice is removed (and counted) once.
			{0, argv("DEL", "r", "r"), wantInt(1)},
			{0, argv("DEL", "r"), wantInt(0)},
			{0, argv("CL.THROTTLE", "r", "0", "1", "10"), wantInts(0, 1, 0, -1, 10)},
			{0, argv("UNLINK", "r", "missing", "r"), wantInt(1)},
			{0, argv("CL.THROTTLE", "r", "0", "1", "10"), wantInts(0, 1, 0, -1, 10)},
			{0, argv("DEL", "missing"), wantInt(0)},
			{0, argv("CL.THROTTLE", "s", "0", "1", "10"), wantInts(0, 1, 0, -1, 10)},
			{0, argv("DEL", "r", "s", "missing"), wantInt(2)},
			{0, argv("DBSIZE"), wantInt(0)},
		}},
		{"flushall_resets_everything", 0, []timedStep{
			first,
			{0, argv("CL.THROTTLE", "r", "0", "1", "10"), wantInts(0, 1, 0, -1, 10)},
			{0, argv("FLUSHALL"), wantStatus("OK")},
			{0, argv("DBSIZE"), wantInt(0)},
			{0, argv("EXISTS", "k", "r"), wantInt(0)},
			{0, argv("PTTL", "r"), wantInt(-2)},
			{0, argv("CL.THROTTLE", "r", "0", "1", "10"), wantInts(0, 1, 0, -1, 10)},
			{0, argv("FLUSHDB", "SYNC"), wantStatus("OK")},
			{0, argv("EXISTS", "r"), wantInt(0)},
			{0, argv("FLUSHALL", "ASYNC"), wantStatus("OK")},
			{0, argv("FLUSHALL", "bogus"), wantErr("ERR syntax error")},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sub := tc.subSecond
			if sub == 0 {
				sub = 123_456_789
			}
			origin := freshBase(t, c) + sub
			setClock(t, c, origin)
			expectReply(t, c, wantStatus("OK"), "FLUSHALL")
			runTimedSteps(t, c, origin, tc.steps)
		})
	}

	t.Run("arity_errors", func(t *testing.T) {
		arity := []struct {
			args []string
			name string
		}{
			{argv("PTTL"), "pttl"},
			{argv("pttl", "a", "b"), "pttl"},
			{argv("TTL"), "ttl"},
			{argv("TTL", "a", "b"), "ttl"},
			{argv("TYPE"), "type"},
			{argv("Type", "a", "b"), "type"},
			{argv("EXISTS"), "exists"},
			{argv("DEL"), "del"},
			{argv("UNLINK"), "unlink"},
			{argv("DBSIZE", "x"), "dbsize"},
		}
		for _, a := range arity {
			expectReply(t, c, wantErr("ERR wrong number of arguments for '"+a.name+"' command"), a.args...)
		}
	})
}
