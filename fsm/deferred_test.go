package fsm_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/redcell/redcell/request"
)

// loopPast is Lua that runs past the apply slice (100,000 instructions)
// and then goes on: n iterations of about two instructions each.
func loopPast(n int) string { return "for i = 1, " + strconv.Itoa(n) + " do end " }

// TestLongScriptIsDeferredAndLeavesNothing: a script that runs past the
// apply slice is answered ErrScriptDeferred, and every key it wrote before
// is as it was: values, expiries and change markers, and a key it created
// is gone without a tombstone. A short script, and a long one marked to run
// with its whole budget, run in the log.
func TestLongScriptIsDeferredAndLeavesNothing(t *testing.T) {
	e := newEngine(2)
	e.script(t, t0, "SET", "a", "1")
	e.script(t, t0, "SET", "b", "x")
	e.exec(t, t0, []string{"EXPIRE", "b", "100"})
	markA, markB, markC := watchMark(e, "a"), watchMark(e, "b"), watchMark(e, "c")
	body := "redis.call('INCRBY', 'a', 5) redis.call('APPEND', 'b', 'yz') redis.call('PERSIST', 'b') redis.call('SET', 'c', 'new') " + loopPast(300_000) + "return 1"
	res := e.entry(t, t0, []request.Request{parsedArgs(t, "EVAL", body, "0")})[0]
	if res.Kind != request.KindError || res.Err != request.ErrScriptDeferred {
		t.Fatalf("a long script: %+v, want ErrScriptDeferred", res)
	}
	if v := getString(t, e, "a"); v != "1" {
		t.Errorf("a = %q after the deferred script, want 1", v)
	}
	if v := getString(t, e, "b"); v != "x" {
		t.Errorf("b = %q after the deferred script, want x", v)
	}
	if _, r, _ := e.exec(t, t0, []string{"TTL", "b"}); r.Ints[0] != 100 {
		t.Errorf("TTL b = %d after the deferred script, want 100", r.Ints[0])
	}
	if _, r, _ := e.exec(t, t0, []string{"EXISTS", "c"}); r.Ints[0] != 0 {
		t.Errorf("c exists after the deferred script")
	}
	if m := [3]uint64{watchMark(e, "a"), watchMark(e, "b"), watchMark(e, "c")}; m != [3]uint64{markA, markB, markC} || markC != 0 {
		t.Errorf("change markers %v after the deferred script, want %v (c none)", m, [3]uint64{markA, markB, markC})
	}

	if got := e.script(t, t0, "EVAL", "redis.call('INCRBY', 'a', 5) "+loopPast(1000)+"return 1", "0"); got != ":1\r\n" {
		t.Errorf("a short script: %q", got)
	}
	long := parsedArgs(t, "EVAL", "redis.call('INCRBY', 'a', 5) "+loopPast(300_000)+"return 1", "0")
	long.Mark(request.MarkWholeBudget)
	if res := e.entry(t, t0, []request.Request{long})[0]; res.Kind != request.KindReply || string(res.Data) != ":1\r\n" {
		t.Errorf("a long script with its whole budget: %+v", res)
	}
	if v := getString(t, e, "a"); v != "11" {
		t.Errorf("a = %q, want 11", v)
	}
	// FLUSHALL cannot be undone: a script that calls it is never deferred.
	if got := e.script(t, t0, "EVAL", "redis.call('FLUSHALL') "+loopPast(300_000)+"return 2", "0"); got != ":2\r\n" {
		t.Errorf("a long script after FLUSHALL: %q", got)
	}
}

// TestDeferredScriptRunsBesideAndItsEffectsApply: RunBeside runs the
// script on copies of its keys and returns effects that, applied, leave
// the state and the reply a run in the log would have; applied after a
// guarded key changed, they conflict and change nothing. A script that
// calls a command about no named key cannot run beside.
func TestDeferredScriptRunsBesideAndItsEffectsApply(t *testing.T) {
	e := newEngine(2)
	e.script(t, t0, "SET", "n", "10")
	body := loopPast(200_000) + "local v = redis.call('INCRBY', KEYS[1], ARGV[1]) redis.call('SET', KEYS[2], v) redis.call('DEL', KEYS[3]) return {v, redis.call('GET', 'n')}"
	e.script(t, t0, "SET", "gone", "1")
	r := parsedArgs(t, "EVAL", body, "3", "n", "copy", "gone", "5")
	eff, whole := e.f.RunBeside(&r, t0)
	if whole {
		t.Fatal("RunBeside answered whole")
	}
	if v := getString(t, e, "n"); v != "10" {
		t.Fatalf("n = %q after running beside: the state machine's keys changed", v)
	}
	res := e.entry(t, t0, []request.Request{eff})[0]
	if res.Kind != request.KindReply || string(res.Data) != "*2\r\n:15\r\n$2\r\n15\r\n" {
		t.Fatalf("effects applied: %+v %q", res, res.Data)
	}
	if getString(t, e, "n") != "15" || getString(t, e, "copy") != "15" {
		t.Fatalf("n, copy = %q, %q", getString(t, e, "n"), getString(t, e, "copy"))
	}
	if _, r, _ := e.exec(t, t0, []string{"EXISTS", "gone"}); r.Ints[0] != 0 {
		t.Fatal("the deleted key survived the effects")
	}

	// The same effects again: n changed since they were computed.
	eff2, _ := e.f.RunBeside(&r, t0)
	e.exec(t, t0, []string{"INCRBY", "n", "1"})
	if res := e.entry(t, t0, []request.Request{eff2})[0]; res.Kind != request.KindError || res.Err != request.ErrScriptConflict {
		t.Fatalf("effects after a guarded key changed: %+v", res)
	}
	if getString(t, e, "n") != "16" || getString(t, e, "copy") != "15" {
		t.Fatalf("after the conflict: n, copy = %q, %q", getString(t, e, "n"), getString(t, e, "copy"))
	}

	dbsize := parsedArgs(t, "EVAL", "return redis.call('DBSIZE')", "0")
	if _, whole := e.f.RunBeside(&dbsize, t0); !whole {
		t.Error("a script calling DBSIZE ran beside")
	}
}

func getString(t *testing.T, e *engine, key string) string {
	t.Helper()
	_, res, text := e.exec(t, t0, []string{"GET", key})
	if text != "" || res.Kind == request.KindError {
		t.Fatalf("GET %s: %q %+v", key, text, res)
	}
	return string(res.Data)
}

func watchMark(e *engine, key string) uint64 {
	_, mark := e.f.WatchMark([]byte(key), t0)
	return mark
}

// TestLongReadOnlyScriptRunsBeside: EVAL_RO past the apply slice is
// answered from a run beside the state machine, as a run under the lock
// would answer it; a write from it is still Redis's error.
func TestLongReadOnlyScriptRunsBeside(t *testing.T) {
	e := newEngine(2)
	e.script(t, t0, "SET", "k", "v")
	r := parsed(t, "EVAL_RO x 0")
	r.Keys[0] = []byte(loopPast(200_000) + "return redis.call('GET', 'k')")
	var res request.Result
	e.f.Read(&r, t0, &res)
	if res.Kind != request.KindReply || string(res.Data) != "$1\r\nv\r\n" {
		t.Fatalf("a long EVAL_RO: %+v %q", res, res.Data)
	}
	r.Keys[0] = []byte(loopPast(200_000) + "return redis.call('SET', 'k', 'w')")
	e.f.Read(&r, t0, &res)
	if res.Kind != request.KindReply || !strings.HasPrefix(string(res.Data), "-ERR Write commands are not allowed from read-only scripts") {
		t.Fatalf("a long EVAL_RO that writes: %+v %q", res, res.Data)
	}
	if v := getString(t, e, "k"); v != "v" {
		t.Fatalf("k = %q", v)
	}
}

// TestRunawayReadOnlyScriptDoesNotHoldApply: while a read-only script that
// loops forever runs (beside the state machine, past the apply slice),
// entries keep being applied; it ends with its budget's error.
func TestRunawayReadOnlyScriptDoesNotHoldApply(t *testing.T) {
	e := newEngine(2)
	r := parsed(t, "EVAL_RO x 0")
	r.Keys[0] = []byte("while true do end")
	done := make(chan request.Result, 1)
	started := make(chan struct{})
	go func() {
		var res request.Result
		close(started)
		e.f.Read(&r, t0, &res)
		done <- res
	}()
	<-started
	applied := 0
	for {
		select {
		case res := <-done:
			if res.Kind != request.KindReply || !strings.HasPrefix(string(res.Data), "-ERR script exceeded its budget") {
				t.Fatalf("the runaway EVAL_RO: %+v %q", res, res.Data)
			}
			if applied < 10 {
				t.Fatalf("%d entries applied while a read-only script ran: it held the state machine", applied)
			}
			return
		default:
		}
		e.entry(t, t0, []request.Request{parsed(t, "INCR n")})
		applied++
	}
}

// TestDeferredScriptsFailedWriteLeavesTheKey: a write a script's pcall
// tried and the state machine refused (WRONGTYPE) changed nothing, so the
// effects of a run beside do not install the key again: its WATCH marker
// does not move, and a client that watched it can still EXEC (as on Redis,
// where a failed command does not touch a watched key).
func TestDeferredScriptsFailedWriteLeavesTheKey(t *testing.T) {
	e := newEngine(2)
	e.exec(t, t0, []string{"HSET", "h", "f", "v"})
	before := watchMark(e, "h")
	body := loopPast(200_000) + "redis.pcall('SADD', KEYS[1], 'x') redis.pcall('INCRBY', KEYS[1], '') return redis.call('INCRBY', KEYS[2], 1)"
	r := parsedArgs(t, "EVAL", body, "2", "h", "n")
	eff, whole := e.f.RunBeside(&r, t0)
	if whole {
		t.Fatal("RunBeside answered whole")
	}
	if res := e.entry(t, t0, []request.Request{eff})[0]; res.Kind != request.KindReply || string(res.Data) != ":1\r\n" {
		t.Fatalf("effects applied: %+v %q", res, res.Data)
	}
	if after := watchMark(e, "h"); after != before {
		t.Fatalf("the hash's WATCH marker moved from %d to %d: a refused write was installed", before, after)
	}
}
