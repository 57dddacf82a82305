package fsm_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/redcell/redcell/request"
)

// The hash family in the state machine: what redis-server cannot check
// (the systemtest compares every reply with it): other kinds' keys,
// expiry at the entry's now, writes that change nothing leaving the record
// as it was, large hashes (the map path), and hashes in a snapshot.

// hline runs one command and renders its reply as e.line does, arrays and
// maps as ["a" "b"].
func hline(t *testing.T, e *engine, now int64, line string) string {
	t.Helper()
	_, res, text := e.exec(t, now, strings.Fields(line))
	if text != "" {
		return "-" + text
	}
	if res.Kind == request.KindArray || res.Kind == request.KindMap {
		var parts []string
		request.Items(res.Data, func(item []byte) { parts = append(parts, strconv.Quote(string(item))) })
		return "+[" + strings.Join(parts, " ") + "]"
	}
	return expectedString(resultAsExpected(res))
}

func runHashSteps(t *testing.T, e *engine, steps []expireStep) {
	t.Helper()
	for i, s := range steps {
		if got := hline(t, e, t0+s.at, s.line); got != s.want {
			t.Errorf("step %d at +%d ns, %s: %s, want %s", i, s.at, s.line, got, s.want)
		}
	}
}

const wrongType = "-WRONGTYPE Operation against a key holding the wrong kind of value"

// TestHashBasics: fields keep their insertion order, a field set again
// keeps its place, a deleted one leaves the others in order, the last
// field's deletion deletes the key.
func TestHashBasics(t *testing.T) {
	e := newEngine(4)
	runHashSteps(t, e, []expireStep{
		{0, "HSET h b 1 a 2 c 3", "3"},
		{0, "HSET h a 20 d 4 a 21", "1"},
		{0, "HGETALL h", `+["b" "1" "a" "21" "c" "3" "d" "4"]`},
		{0, "HKEYS h", `+["b" "a" "c" "d"]`},
		{0, "HVALS h", `+["1" "21" "3" "4"]`},
		{0, "HLEN h", "4"},
		{0, "HDEL h a x a", "1"},
		{0, "HGETALL h", `+["b" "1" "c" "3" "d" "4"]`},
		{0, "HMGET h d x b", `+["4" (nil) "1"]`},
		{0, "HMSET h e 5", "+OK"},
		{0, "HSETNX h e 6", "0"},
		{0, "HSETNX h f 6", "1"},
		{0, "HEXISTS h f", "1"},
		{0, "HEXISTS h x", "0"},
		{0, "HDEL h b c d e f", "5"},
		{0, "EXISTS h", "0"},
		{0, "HGETALL h", `+[]`},
		{0, "HLEN h", "0"},
		{0, "HGET h b", "+(nil)"},
		{0, "TYPE h", "+none"},
		{0, "HINCRBY h n 5", "5"},
		{0, "HINCRBYFLOAT h n 0.1", `+"5.1"`},
		{0, "HINCRBY h n 1", "-ERR hash value is not an integer"},
		{0, "HINCRBYFLOAT h x inf", "-ERR value is NaN or Infinity"},
		{0, "TYPE h", "+hash"},
	})
}

// TestHashesAgainstOtherKinds: every hash command answers WRONGTYPE on a
// CL, TB, SL or string key and changes nothing; the increment's own errors
// come first, as in Redis; SET replaces a hash; once a hash is gone any
// family may take the name.
func TestHashesAgainstOtherKinds(t *testing.T) {
	e := newEngine(4)
	runHashSteps(t, e, []expireStep{
		{0, "CL.THROTTLE c 5 1 60", "[0 6 5 -1 60]"},
		{0, "TB.TAKE b 5 1 60000", "[0 5 4 -1 60000]"},
		{0, "SL.HIT l 5 60000", "[0 5 4 -1 60000]"},
		{0, "SET s v", "+OK"},
	})
	before := recordsOf(t, e.f)
	for _, k := range []string{"c", "b", "l", "s"} {
		for _, cmd := range []string{"HSET %s f v", "HMSET %s f v", "HSETNX %s f v", "HGET %s f", "HMGET %s f g", "HGETALL %s",
			"HDEL %s f", "HEXISTS %s f", "HLEN %s", "HKEYS %s", "HVALS %s", "HINCRBY %s f 1", "HINCRBYFLOAT %s f 1"} {
			line := fmt.Sprintf(cmd, k)
			if got := hline(t, e, t0, line); got != wrongType {
				t.Errorf("%s: %s, want WRONGTYPE", line, got)
			}
		}
	}
	runHashSteps(t, e, []expireStep{
		{0, "HINCRBY c f x", "-ERR value is not an integer or out of range"},
		{0, "HINCRBYFLOAT c f abc", "-ERR value is not a valid float"},
		{0, "HINCRBYFLOAT c f -inf", "-ERR value is NaN or Infinity"},
	})
	if recordsOf(t, e.f) != before {
		t.Errorf("a refused hash command changed the state")
	}
	runHashSteps(t, e, []expireStep{
		{0, "HSET h f v", "1"},
		{0, "CL.THROTTLE h 5 1 60", wrongType},
		{0, "TB.TAKE h 5 1 60000", wrongType},
		{0, "GET h", wrongType},
		{0, "INCR h", wrongType},
		{0, "MGET h s", `+[(nil) "v"]`},
		{0, "SET h v", "+OK"},
		{0, "TYPE h", "+string"},
		{0, "DEL h", "1"},
		{0, "TB.TAKE h 5 1 60000", "[0 5 4 -1 60000]"},
	})
}

// TestHashExpiryAtEntryNow: a hash keeps its expiry through every write,
// is gone for every command at its instant, and a write after that makes
// a new hash without one.
func TestHashExpiryAtEntryNow(t *testing.T) {
	e := newEngine(4)
	runHashSteps(t, e, []expireStep{
		{0, "HSET h a 1 b 2", "2"},
		{0, "PEXPIRE h 1500", "1"},
		{0, "HSET h c 3", "1"},
		{0, "HINCRBY h a 1", "2"},
		{0, "HINCRBYFLOAT h a 1", `+"3"`},
		{0, "HSETNX h d 4", "1"},
		{0, "HDEL h d", "1"},
		{0, "PTTL h", "1500"},
		{1500e6, "HGET h a", `+"3"`},
		{1501e6, "HGET h a", "+(nil)"},
		{1501e6, "HLEN h", "0"},
		{1501e6, "HGETALL h", "+[]"},
		{1501e6, "HDEL h a", "0"},
		{1501e6, "HINCRBY h a 1", "1"},
		{1501e6, "PTTL h", "-1"},
		{1501e6, "HGETALL h", `+["a" "1"]`},
		{1501e6, "PEXPIREAT h 9223372036854775807", "1"},
		{1501e6, "HSET h b 2", "1"},
		{1501e6, "PEXPIRETIME h", "9223372036854775807"},
	})
}

// TestHashWritesThatChangeNothing: HDEL of missing fields, HSETNX of a
// present one, the increments' errors leave the record as it was (no
// snapshot difference) and create no key.
func TestHashWritesThatChangeNothing(t *testing.T) {
	e := newEngine(4)
	runHashSteps(t, e, []expireStep{{0, "HSET h a 1 s abc m 9223372036854775807", "3"}})
	before := recordsOf(t, e.f)
	runHashSteps(t, e, []expireStep{
		{1e6, "HDEL h x y", "0"},
		{1e6, "HSETNX h a 2", "0"},
		{1e6, "HINCRBY h s 1", "-ERR hash value is not an integer"},
		{1e6, "HINCRBY h m 1", "-ERR increment or decrement would overflow"},
		{1e6, "HINCRBYFLOAT h s 1", "-ERR hash value is not a float"},
		{1e6, "HINCRBYFLOAT h a 1e5000", "-ERR value is not a valid float"},
		{1e6, "HDEL nokey a", "0"},
		{1e6, "HINCRBYFLOAT nokey a x", "-ERR value is not a valid float"},
		{1e6, "EXISTS nokey", "0"},
	})
	if recordsOf(t, e.f) != before {
		t.Errorf("writes that change nothing changed the hash's record")
	}
}

// TestLargeHashes: a hash of thousands of fields answers the same through
// the map a call builds for many lookups as through the linear scan of a
// few, and a multi-field HSET, HDEL and HMGET on it agree with one field at
// a time.
func TestLargeHashes(t *testing.T) {
	e := newEngine(4)
	const n = 3000
	var set, get []string
	set = append(set, "HSET", "big")
	get = append(get, "HMGET", "big")
	for i := 0; i < n; i++ {
		set = append(set, "f"+strconv.Itoa(i), "v"+strconv.Itoa(i))
		get = append(get, "f"+strconv.Itoa(n-i))
	}
	if got := hline(t, e, t0, strings.Join(set, " ")); got != strconv.Itoa(n) {
		t.Fatalf("HSET of %d fields: %s", n, got)
	}
	// Again, half new: only the new ones count, the old keep their place.
	set2 := []string{"HSET", "big"}
	for i := n / 2; i < n+n/2; i++ {
		set2 = append(set2, "f"+strconv.Itoa(i), "w"+strconv.Itoa(i))
	}
	if got := hline(t, e, t0, strings.Join(set2, " ")); got != strconv.Itoa(n/2) {
		t.Fatalf("HSET of %d fields, half new: %s", n, got)
	}
	got := hline(t, e, t0, strings.Join(get, " "))
	var want []string
	for i := 0; i < n; i++ {
		switch j := n - i; {
		case j >= n/2:
			want = append(want, `"w`+strconv.Itoa(j)+`"`)
		default:
			want = append(want, `"v`+strconv.Itoa(j)+`"`)
		}
	}
	if w := "+[" + strings.Join(want, " ") + "]"; got != w {
		t.Errorf("HMGET of %d fields: %.200s…", n, got)
	}
	keys := hline(t, e, t0, "HKEYS big")
	if !strings.HasPrefix(keys, `+["f0" "f1" "f2"`) || !strings.HasSuffix(keys, `"f4499"]`) {
		t.Errorf("HKEYS of the large hash: %.100s … %s", keys, keys[len(keys)-30:])
	}
	del := []string{"HDEL", "big"}
	for i := 0; i < n+n/2; i += 2 {
		del = append(del, "f"+strconv.Itoa(i), "f"+strconv.Itoa(i))
	}
	del = append(del, "nope")
	if got := hline(t, e, t0, strings.Join(del, " ")); got != strconv.Itoa((n+n/2)/2) {
		t.Errorf("HDEL of every other field: %s", got)
	}
	runHashSteps(t, e, []expireStep{
		{0, "HLEN big", strconv.Itoa((n + n/2) / 2)},
		{0, "HGET big f1", `+"v1"`},
		{0, "HGET big f2", "+(nil)"},
		{0, "HGET big f4499", `+"w4499"`},
		{0, "HEXISTS big f4498", "0"},
		{0, "HINCRBY big f4499 1", "-ERR hash value is not an integer"},
	})
	if got := hline(t, e, t0, "HVALS big"); !strings.HasPrefix(got, `+["v1" "v3"`) {
		t.Errorf("HVALS after HDEL: %.60s", got)
	}
}

// TestHashesInSnapshots: hashes restore from a snapshot with their fields
// in order, their count and their expiries.
func TestHashesInSnapshots(t *testing.T) {
	src := newEngine(4)
	runHashSteps(t, src, []expireStep{
		{0, "HSET h b 1 a 2", "2"},
		{0, "HSET x tokens 7", "1"},
		{0, "PEXPIRE x 2000", "1"},
		{0, "HSET w f v", "1"},
		{0, "PEXPIREAT w 9223372036854775807", "1"},
	})
	dst := newEngine(2)
	restoreFrom(t, dst, src)
	runHashSteps(t, dst, []expireStep{
		{0, "HGETALL h", `+["b" "1" "a" "2"]`},
		{0, "HLEN h", "2"},
		{0, "PTTL x", "2000"},
		{0, "HINCRBY x tokens -1", "6"},
		{0, "PEXPIRETIME w", "9223372036854775807"},
		{0, "TYPE w", "+hash"},
	})
	if recordsOf(t, dst.f) == recordsOf(t, src.f) {
		t.Errorf("HINCRBY after the restore changed nothing")
	}
}
