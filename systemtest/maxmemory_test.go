package systemtest

import (
	"strings"
	"testing"
	"time"
)

// TestMaxmemoryRefusesNewKeysNeverEvicts: CONFIG SET maxmemory below what
// the node uses makes every command that would create a key answer Redis's
// OOM error, while existing limiters (of every family) keep deciding with
// their state intact; back to 0, new keys are accepted again. CONFIG GET
// and INFO show the limit.
func TestMaxmemoryRefusesNewKeysNeverEvicts(t *testing.T) {
	t.Parallel()
	n := startTestNode(t, "maxmemory")
	c := mustDial(t, n.addr())
	freshBase(t, c)
	expectReply(t, c, wantInts(0, 10, 9, -1, 86400), "CL.THROTTLE", "old", "9", "1", "86400")
	tb := mustDo(t, c, "TB.TAKE", "oldtb", "5", "1", "1000000")
	if tb.kind != '*' {
		t.Fatalf("TB.TAKE: %v", tb)
	}

	expectReply(t, c, wantStatus("OK"), "SET", "counter", "1")
	expectReply(t, c, wantStatus("OK"), "CONFIG", "SET", "maxmemory", "1mb")
	deadline := time.Now().Add(5 * time.Second)
	for {
		r := mustDo(t, c, "CL.THROTTLE", "new", "9", "1", "86400")
		if r.kind == '-' {
			if r.str != "OOM command not allowed when used memory > 'maxmemory'." {
				t.Fatalf("new key above maxmemory: %q", r.str)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("new keys still accepted 5 s after maxmemory went below used memory: %v", r)
		}
		expectReply(t, c, wantInt(1), "DEL", "new") // keep the key new for the next try
	}
	for _, args := range [][]string{{"TB.TAKE", "newtb", "5", "1", "1000"}, {"SL.HIT", "newsl", "5", "1000"}} {
		if r := mustDo(t, c, args...); r.kind != '-' || !strings.HasPrefix(r.str, "OOM ") {
			t.Errorf("%q above maxmemory: %v; want OOM", args, r)
		}
	}
	expectReply(t, c, wantInts(0, 10, 8, -1, 2*86400), "CL.THROTTLE", "old", "9", "1", "86400")
	if r := mustDo(t, c, "TB.TAKE", "oldtb", "5", "1", "1000000"); r.kind != '*' || r.elems[2].num != 3 {
		t.Errorf("an existing token bucket above maxmemory: %v; want remaining 3", r)
	}
	// Scripts run, and the writes inside them are refused as a client's
	// (a library's scripted limiter keeps deciding on its live keys).
	const setNew = "return redis.call('SET', KEYS[1], 'v')"
	if r := mustDo(t, c, "EVAL", setNew, "1", "newscript"); r.kind != '-' || !strings.HasPrefix(r.str, "OOM command not allowed when used memory > 'maxmemory'. script: ") {
		t.Errorf("EVAL creating a key above maxmemory: %v; want OOM raised in the script", r)
	}
	expectReply(t, c, wantInt(2), "EVAL", "return redis.call('INCRBY', KEYS[1], 1)", "1", "counter")
	if r := mustDo(t, c, "EVAL", "#!lua\nreturn 1", "0"); r.kind != '-' || r.str != "OOM command not allowed when used memory > 'maxmemory'." {
		t.Errorf("EVAL of a shebang script above maxmemory: %v; want OOM before it runs", r)
	}
	expectReply(t, c, wantInt(0), "EXISTS", "new", "newtb", "newsl", "newscript")
	info := mustDo(t, c, "INFO", "memory")
	if infoField(info.str, "maxmemory") != "1048576" || infoField(info.str, "maxmemory_policy") != "noeviction" {
		t.Errorf("INFO memory:\n%s", info.str)
	}
	if r := mustDo(t, c, "CONFIG", "GET", "maxmemory"); len(r.elems) != 2 || r.elems[1].str != "1048576" {
		t.Errorf("CONFIG GET maxmemory = %v", r)
	}

	expectReply(t, c, wantStatus("OK"), "CONFIG", "SET", "maxmemory", "0")
	deadline = time.Now().Add(5 * time.Second)
	for {
		r := mustDo(t, c, "CL.THROTTLE", "new", "9", "1", "86400")
		if r.kind == '*' {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("new keys still refused 5 s after maxmemory 0: %v", r)
		}
	}
	expectReply(t, c, wantStatus("OK"), "EVAL", setNew, "1", "newscript")
}
