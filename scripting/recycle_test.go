package scripting

import (
	"testing"
)

// runOn runs body on one vm (the engine's pool could hand out another, and
// a test of what one call leaves for the next must run both on the same).
func runOn(t *testing.T, v *vm, x Executor, body string, keys, args []string) string {
	t.Helper()
	c := newCall(body, keys, args)
	s, errText := v.e.compiled(c.Body, c.SHA)
	if errText != "" {
		t.Fatalf("%q: %s", body, errText)
	}
	return string(v.run(nil, s, c, x))
}

// TestReplyTablesAreRecycledOnlyWhenIntact: a status reply's table and an
// array reply's table go back to the vm's free lists at the end of a call
// when the script left them as redis.call made them, and not when it
// changed them; whatever a call did to a reply table, the next call's
// replies are fresh in every way a script can see.
func TestReplyTablesAreRecycledOnlyWhenIntact(t *testing.T) {
	e := NewEngine(Config{})
	f := newFake()
	f.hashes["h"] = [][2]string{{"f1", "v1"}}
	v := e.getVM()
	defer e.putVM(v)

	runOn(t, v, f, "redis.call('SET', 'k', 'v') redis.call('HGETALL', 'h') return 1", nil, nil)
	if len(v.tables.free[statusShape]) != 1 || len(v.tables.free[2]) != 1 {
		t.Fatalf("intact tables not recycled: %d status, %d of two", len(v.tables.free[statusShape]), len(v.tables.free[2]))
	}

	// Each way a script can change a table keeps it out of the free lists.
	for _, c := range []struct {
		change        string
		changedStatus bool // else the array
	}{
		{"s.extra = 1", true},
		{"s.ok = nil", true},
		{"s[1] = 'x'", true},
		{"setmetatable(s, {})", true},
		{"a[3] = 'x'", false},
		{"a.extra = 1", false},
		{"a[2] = nil", false},
		{"setmetatable(a, {__index = function() return 'leak' end})", false},
	} {
		change, changedStatus := c.change, c.changedStatus
		runOn(t, v, f, "local s = redis.call('SET', 'k', 'v') local a = redis.call('HGETALL', 'h') "+change+" return 1", nil, nil)
		if got := len(v.tables.free[statusShape]); (got == 1) == changedStatus {
			t.Errorf("after %q: %d status tables free", change, got)
		}
		if got := len(v.tables.free[2]); (got == 1) != changedStatus {
			t.Errorf("after %q: %d arrays of two free", change, got)
		}
		// The next call's replies are as new, whichever were reused.
		const look = `local s = redis.call('SET', 'k', 'v') local a = redis.call('HGETALL', 'h')
local n = 0 for _ in pairs(s) do n = n + 1 end for _ in pairs(a) do n = n + 1 end
return {n, s.ok, #a, a[1], a[2], tostring(a[3]), tostring(getmetatable(s)), tostring(getmetatable(a))}`
		want := "*8\r\n:3\r\n$2\r\nOK\r\n:2\r\n$2\r\nf1\r\n$2\r\nv1\r\n$3\r\nnil\r\n$3\r\nnil\r\n$3\r\nnil\r\n"
		if got := runOn(t, v, f, look, nil, nil); got != want {
			t.Errorf("after %q, the next call's replies:\n got %q\nwant %q", change, got, want)
		}
	}
}

// TestReplyTablesAreDistinctWithinACall: two replies of one call are two
// tables, as in Redis, however many were recycled before.
func TestReplyTablesAreDistinctWithinACall(t *testing.T) {
	e := NewEngine(Config{})
	f := newFake()
	v := e.getVM()
	defer e.putVM(v)
	const body = `local a = redis.call('SET', 'k', '1') local b = redis.call('SET', 'k', '2')
a.ok = 'changed' return {tostring(rawequal(a, b)), b.ok}`
	for i := range 3 {
		if got := runOn(t, v, f, body, nil, nil); got != "*2\r\n$5\r\nfalse\r\n$2\r\nOK\r\n" {
			t.Fatalf("call %d: %q", i, got)
		}
	}
}

// TestKeysAndArgvDoNotCarryAMetatable: KEYS and ARGV tables are reused
// from call to call; one a script gave a metatable is replaced, so the
// next call's KEYS[5] is nil, not what the metatable answered.
func TestKeysAndArgvDoNotCarryAMetatable(t *testing.T) {
	e := NewEngine(Config{})
	f := newFake()
	v := e.getVM()
	defer e.putVM(v)
	runOn(t, v, f, "setmetatable(KEYS, {__index = function() return 'leak' end}) setmetatable(ARGV, getmetatable(KEYS)) return 1", []string{"a"}, []string{"b"})
	if got := runOn(t, v, f, "return {tostring(KEYS[5]), tostring(ARGV[5]), KEYS[1], ARGV[1]}", []string{"c"}, []string{"d"}); got != "*4\r\n$3\r\nnil\r\n$3\r\nnil\r\n$1\r\nc\r\n$1\r\nd\r\n" {
		t.Fatalf("the next call's KEYS and ARGV: %q", got)
	}
}

// TestShortStringsShareOnlyEqualBytes: the cache answers the same value
// for the same bytes, and never a value for other bytes that share a slot.
func TestShortStringsShareOnlyEqualBytes(t *testing.T) {
	var c shortStrings
	for i := range 10_000 {
		s := []byte{byte('a' + i%26), byte(i >> 8), byte(i)}
		got := c.value(s)
		if got.String() != string(s) {
			t.Fatalf("value(%q) = %q", s, got)
		}
	}
	long := make([]byte, maxShortString+1)
	if got := c.value(long).String(); got != string(long) {
		t.Fatalf("a long string: %q", got)
	}
}
