package fsm_test

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/redcell/redcell/commands"
	"github.com/redcell/redcell/fsm"
	"github.com/redcell/redcell/request"
)

// script runs a script command line (args as they arrive, blanks and all)
// and returns its reply: the RESP3 bytes of a KindReply, or the text of an
// error result prefixed with "-".
func (e *engine) script(t testing.TB, now int64, args ...string) string {
	t.Helper()
	_, res, text := e.exec(t, now, args)
	switch {
	case text != "":
		return "-" + text
	case res.Kind == request.KindError:
		return "-" + res.Err.Text()
	case res.Kind == request.KindReply:
		return string(res.Data)
	case res.Kind == request.KindOK:
		return "+OK"
	case res.Kind == request.KindInts:
		var b bytes.Buffer
		request.IntItems(res.Data, func(v int64) { b.WriteString(":" + strconv.FormatInt(v, 10)) })
		return b.String()
	}
	t.Fatalf("%q: reply of kind %d", args, res.Kind)
	return ""
}

const incrScript = "return redis.call('INCRBY', KEYS[1], ARGV[1])"
const incrSHA = "8cd00688c05c46bde4a2e60658ef20a2e5c0b248"

// TestScriptCacheIsReplicatedState: EVAL caches what it runs, EVALSHA finds
// it by its SHA-1 in any case, SCRIPT FLUSH empties the cache, and a script
// that does not compile is answered an error and never cached: what the
// state machine does with the cache at apply, identically on every replica.
func TestScriptCacheIsReplicatedState(t *testing.T) {
	e := newEngine(2)
	if got := e.script(t, t0, "EVALSHA", incrSHA, "1", "k", "1"); got != "-"+request.NoScriptText {
		t.Fatalf("EVALSHA before EVAL = %q", got)
	}
	if got := e.script(t, t0, "EVAL", incrScript, "1", "k", "5"); got != ":5\r\n" {
		t.Fatalf("EVAL = %q", got)
	}
	if got := e.script(t, t0, "SCRIPT", "EXISTS", incrSHA, "ffffffffffffffffffffffffffffffffffffffff"); got != ":1:0" {
		t.Fatalf("SCRIPT EXISTS = %q", got)
	}
	if got := e.script(t, t0, "EVALSHA", "8CD00688C05C46BDE4A2E60658EF20A2E5C0B248", "1", "k", "2"); got != ":7\r\n" {
		t.Fatalf("EVALSHA in upper case = %q", got)
	}
	if got := e.script(t, t0, "EVALSHA_RO", incrSHA, "1", "k", "2"); !bytes.HasPrefix([]byte(got), []byte("-ERR")) {
		t.Fatalf("EVALSHA_RO of a writing script = %q, want an error", got)
	}
	if got := e.script(t, t0, "SCRIPT", "FLUSH"); got != "+OK" {
		t.Fatalf("SCRIPT FLUSH = %q", got)
	}
	if got := e.script(t, t0, "EVALSHA", incrSHA, "1", "k", "1"); got != "-"+request.NoScriptText {
		t.Fatalf("EVALSHA after SCRIPT FLUSH = %q", got)
	}
	bad := "return +"
	if got := e.script(t, t0, "EVAL", bad, "0"); !bytes.HasPrefix([]byte(got), []byte("-ERR Error compiling script")) {
		t.Fatalf("EVAL of a script that does not compile = %q", got)
	}
	if got := e.script(t, t0, "SCRIPT", "LOAD", bad); !bytes.HasPrefix([]byte(got), []byte("-ERR Error compiling script")) {
		t.Fatalf("SCRIPT LOAD of a script that does not compile = %q", got)
	}
	if got := e.script(t, t0, "SCRIPT", "LOAD", incrScript); got != "$40\r\n"+incrSHA+"\r\n" {
		t.Fatalf("SCRIPT LOAD = %q", got)
	}
	if got := e.script(t, t0, "SCRIPT", "EXISTS", incrSHA); got != ":1" {
		t.Fatalf("SCRIPT EXISTS after SCRIPT LOAD = %q", got)
	}
}

// TestScriptsAreDeterministic: two replicas applying the same entries with
// scripts that read TIME, draw math.random and write what they got end in
// the same state and answer the same bytes; a different entry index draws
// different numbers (the seed is the entry's identity, not a constant).
func TestScriptsAreDeterministic(t *testing.T) {
	body := `local t = redis.call('TIME')
local r = math.random(1000000)
redis.call('SET', KEYS[1], t[1] .. '.' .. t[2] .. ':' .. r)
return {t[1], t[2], r}`
	a, b := newEngine(2), newEngine(8)
	var first string
	for i := range 5 {
		now := t0 + int64(i)*1_234_567
		ra := a.script(t, now, "EVAL", body, "1", "k")
		rb := b.script(t, now, "EVAL", body, "1", "k")
		if ra != rb {
			t.Fatalf("entry %d: replicas answered %q and %q", i, ra, rb)
		}
		if i == 0 {
			first = ra
		} else if ra == first {
			t.Errorf("entry %d answered what entry 0 did (%q): TIME or the seed does not move", i, ra)
		}
	}
	if da, db := digest(t, a.f), digest(t, b.f); da != db {
		t.Fatalf("replicas' digests differ after scripts")
	}
}

// TestScriptCacheSurvivesSnapshots: the cache is in the snapshot (version
// 5): a node restored from it runs EVALSHA of every cached script, and its
// digest equals the source's; the cache is part of the digest.
func TestScriptCacheSurvivesSnapshots(t *testing.T) {
	e := newEngine(2)
	e.script(t, t0, "SCRIPT", "LOAD", incrScript)
	e.script(t, t0, "EVAL", "return 'x'", "0")
	withScripts := digest(t, e.f)

	var buf bytes.Buffer
	if err := e.f.WriteSnapshot(&buf); err != nil {
		t.Fatal(err)
	}
	r := newEngine(4)
	if err := r.f.Restore(nopCloser{bytes.NewReader(buf.Bytes())}); err != nil {
		t.Fatal(err)
	}
	if got := r.script(t, t0, "EVALSHA", incrSHA, "1", "k", "3"); got != ":3\r\n" {
		t.Fatalf("EVALSHA after restore = %q", got)
	}
	r2 := newEngine(4)
	if err := r2.f.Restore(nopCloser{bytes.NewReader(buf.Bytes())}); err != nil {
		t.Fatal(err)
	}
	if digest(t, r2.f) != withScripts {
		t.Fatalf("a restored node's digest differs from its source's")
	}
	e.script(t, t0, "SCRIPT", "FLUSH")
	if digest(t, e.f) == withScripts {
		t.Fatalf("the digest does not cover the script cache")
	}
}

type nopCloser struct{ *bytes.Reader }

func (nopCloser) Close() error { return nil }

func digest(t testing.TB, f *fsm.FSM) [32]byte {
	t.Helper()
	_, d, err := f.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestScriptRepliesOutliveLaterEntries: scripts' replies are written one
// after another into shared buffers (scripts.go, replySlab); every reply
// keeps its bytes while later entries run scripts, across the buffers'
// replacement, a reply longer than the room left, and the requests of one
// entry.
func TestScriptRepliesOutliveLaterEntries(t *testing.T) {
	e := newEngine(2)
	const body = "return {KEYS[1], string.rep(ARGV[1], tonumber(ARGV[2]))}"
	var kept []request.Result
	var want []string
	for i := range 300 {
		var reqs []request.Request
		for j := range 4 {
			n := 1 + (i*4+j)%97
			if j == 3 && i%50 == 0 {
				n = 40_000 // longer than a whole buffer
			}
			key, rep := "k"+strconv.Itoa(i*4+j), strconv.Itoa(j)
			reqs = append(reqs, parsedArgs(t, "EVAL", body, "1", key, rep, strconv.Itoa(n)))
			s := strings.Repeat(rep, n)
			want = append(want, "*2\r\n$"+strconv.Itoa(len(key))+"\r\n"+key+"\r\n$"+strconv.Itoa(len(s))+"\r\n"+s+"\r\n")
		}
		kept = append(kept, e.entry(t, t0, reqs)...)
	}
	for i, res := range kept {
		if res.Kind != request.KindReply || string(res.Data) != want[i] {
			t.Fatalf("reply %d: kind %d, %.60q..., want %.60q...", i, res.Kind, res.Data, want[i])
		}
		if cap(res.Data) != len(res.Data) {
			t.Fatalf("reply %d: capacity %d beyond its %d bytes: an append would write over the next reply", i, cap(res.Data), len(res.Data))
		}
	}
}

// parsedArgs is the request a valid write command parses to, its
// arguments given one by one (a script has blanks).
func parsedArgs(t testing.TB, words ...string) request.Request {
	t.Helper()
	args := argsOf(words)
	var scratch []byte
	var r request.Request
	if text := commands.ParseWrite(commands.Lookup(args[0], &scratch), args, &r); text != "" {
		t.Fatalf("%q: %s", words, text)
	}
	return r
}

// TestScriptAboveMaxmemory: a script the leader proposed above maxmemory
// (request.MarkAboveMaxmemory) runs, but a write inside it that would
// create a key or grow a value answers Redis's OOM error (raised, or
// returned by pcall), until the script has written something, as Redis
// lets a script that has begun to write finish; a script with a shebang is
// refused before it runs unless it declares allow-oom. Without the mark
// the same scripts write.
func TestScriptAboveMaxmemory(t *testing.T) {
	const oom = "OOM command not allowed when used memory > 'maxmemory'."
	e := newEngine(2)
	if got := e.script(t, t0, "SET", "old", "5"); got != "+OK" {
		t.Fatalf("SET: %q", got)
	}
	run := func(mark bool, body string, keys ...string) string {
		t.Helper()
		words := append([]string{"EVAL", body, strconv.Itoa(len(keys))}, keys...)
		r := parsedArgs(t, words...)
		if mark {
			r.Mark(request.MarkAboveMaxmemory)
		}
		res := e.entry(t, t0, []request.Request{r})[0]
		if res.Kind == request.KindError {
			return "-" + res.Err.Text() + "\r\n"
		}
		return string(res.Data)
	}
	setNew := "return redis.call('SET', KEYS[1], 'v')"
	for _, c := range []struct {
		mark       bool
		body, key  string
		want       string
		wantPrefix bool
	}{
		{true, setNew, "new1", "-" + oom + " script: ", true},
		{true, "return redis.pcall('SET', KEYS[1], 'v')", "new1", "-" + oom + "\r\n", false},
		{true, "return redis.call('APPEND', KEYS[1], 'more')", "old", "-" + oom + " script: ", true}, // grows a live key
		{true, "return redis.call('INCRBY', KEYS[1], 1)", "old", ":6\r\n", false},                    // a live counter keeps counting
		{true, "redis.call('DEL', 'nothing') " + setNew, "new2", "+OK\r\n", false},                   // written: may finish
		{true, "redis.call('INCRBY', 'old', 1) " + setNew, "new3", "+OK\r\n", false},
		{true, "#!lua\nredis.call('DEL', 'old') return 1", "new4", "-" + oom + "\r\n", false}, // refused before it runs
		{true, "#!lua flags=allow-oom\n" + setNew, "new5", "+OK\r\n", false},
		{false, setNew, "new6", "+OK\r\n", false},
		{false, "#!lua\n" + setNew, "new7", "+OK\r\n", false},
	} {
		got := run(c.mark, c.body, c.key)
		if c.wantPrefix && !strings.HasPrefix(got, c.want) || !c.wantPrefix && got != c.want {
			t.Errorf("%q (marked %v): %q, want %q", c.body, c.mark, got, c.want)
		}
	}
	if _, res, _ := e.exec(t, t0, []string{"EXISTS", "old", "new1", "new2", "new3", "new4", "new5", "new6", "new7"}); res.Ints[0] != 6 {
		t.Errorf("%d keys after the scripts, want 6: old (not deleted by the refused script), new2, new3, new5, new6, new7", res.Ints[0])
	}
}
