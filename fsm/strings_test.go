package fsm_test

import (
	"strconv"
	"testing"
)

// The string family in the state machine: what redis-server cannot check
// (the systemtest compares everything else with it): CL keys read and
// written as strings, WRONGTYPE against the limiter families, expiry at the
// entry's now, and strings in a snapshot.

// TestCLKeysAreStrings: GET, STRLEN and MGET read a CL key's TAT as a
// decimal of ns; INCR and APPEND make it a plain string with its expiry;
// SET replaces it; CL.THROTTLE takes a string that parses as an int64 as
// its TAT and answers WRONGTYPE on any other.
func TestCLKeysAreStrings(t *testing.T) {
	e := newEngine(4)
	runSteps(t, e, []expireStep{{0, "CL.THROTTLE k 5 1 60", "[0 6 5 -1 60]"}})
	tat := strconv.FormatInt(t0+60e9, 10)
	runSteps(t, e, []expireStep{
		{0, "GET k", "+" + strconv.Quote(tat)},
		{0, "STRLEN k", strconv.Itoa(len(tat))},
		{0, "MGET k nokey", `+["` + tat + `" (nil)]`},
		{0, "TYPE k", "+string"},
	})
	runSteps(t, e, []expireStep{
		{0, "INCRBY k 1", tat[:len(tat)-1] + "1"},
		{0, "TYPE k", "+string"},
		{0, "PTTL k", "60000"},
		{0, "CL.THROTTLE k 5 1 60", "[0 6 3 -1 120]"}, // the string's TAT: 1 ns past one emission
		{0, "SET k abc KEEPTTL", "+OK"},
		{0, "PTTL k", "120000"},
		{0, "CL.THROTTLE k 5 1 60", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
		{0, "CL.PEEK k 5 1 60", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
		{0, "SET k +5", "+OK"},
		{0, "CL.PEEK k 5 1 60", "[0 6 5 -1 60]"}, // a TAT in the past: a fresh limiter
	})
}

// TestStringsAgainstLimiterKinds: a TB or SL key is WRONGTYPE to every
// string command but SET (which replaces it, as in Redis) and MGET (nil).
func TestStringsAgainstLimiterKinds(t *testing.T) {
	e := newEngine(4)
	runSteps(t, e, []expireStep{
		{0, "TB.TAKE b 5 1 60000", "[0 5 4 -1 60000]"},
		{0, "MGET b", "+[(nil)]"},
		{0, "GETEX b EX abc", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
		{0, "SET b v GET", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
		{0, "SET b v NX", "+(nil)"},
		{0, "SET b v", "+OK"},
		{0, "TYPE b", "+string"},
		{0, "TB.TAKE b 5 1 60000", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
		{0, "MSET s 1 b 2", "+OK"},
		{0, "MSETNX s 1 z 2", "0"},
		{0, "MGET s b z", `+["1" "2" (nil)]`},
	})
}

// TestStringExpiryAtEntryNow: the expiry options count from the entry's
// now, a relative time past int64 ms at that now is Redis's error, and the
// key is gone for every command once its instant passes.
func TestStringExpiryAtEntryNow(t *testing.T) {
	e := newEngine(4)
	ms := t0 / 1e6
	runSteps(t, e, []expireStep{
		{0, "SET k v PX 1500", "+OK"},
		{0, "PEXPIRETIME k", strconv.FormatInt(ms+1500, 10)},
		{1500e6, "GET k", `+"v"`},
		{1501e6, "GET k", "+(nil)"},
		{1501e6, "EXISTS k", "0"},
		{0, "SET k v PX 9223372036854775000", "-ERR invalid expire time in 'set' command"},
		{0, "PSETEX k 9223372036854775000 v", "-ERR invalid expire time in 'psetex' command"},
		{0, "SET k v", "+OK"},
		{0, "GETEX k PX 9223372036854775000", "-ERR invalid expire time in 'getex' command"},
		{0, "GETEX k EXAT " + strconv.FormatInt(ms/1000+10, 10), `+"v"`},
		{0, "EXPIRETIME k", strconv.FormatInt(ms/1000+10, 10)},
		{0, "APPEND k w", "2"},
		{0, "EXPIRETIME k", strconv.FormatInt(ms/1000+10, 10)},
	})
}

// TestStringsInSnapshots: strings, the empty one included, restore from a
// snapshot with their values and expiries.
func TestStringsInSnapshots(t *testing.T) {
	src := newEngine(4)
	runSteps(t, src, []expireStep{
		{0, "SET e x", "+OK"},
		{0, "APPEND a bc", "2"},
		{0, "SET n 5 PX 2000", "+OK"},
		{0, "GETDEL e", `+"x"`},
		{0, "MSET e \"\" f g", "+OK"},
	})
	dst := newEngine(2)
	restoreFrom(t, dst, src)
	runSteps(t, dst, []expireStep{
		{0, "MGET a e f n", `+["bc" "\"\"" "g" "5"]`},
		{0, "PTTL n", "2000"},
	})
	if recordsOf(t, dst.f) != recordsOf(t, src.f) {
		t.Errorf("the restored records differ from the source's")
	}
}
