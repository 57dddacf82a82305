package fsm_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/redcell/redcell/request"
)

// The set family in the state machine: replies, the empty set deleted,
// changes of nothing keeping the record (WATCH), expiry at the entry's now,
// a CL key and a string against it, and sets in a snapshot. The systemtest
// compares every reply with redis-server.

// collectionReplyText renders a result as runCollectionSteps compares it:
// the collection kinds the sets and INCREX answer, and expectedString's
// rendering for every other.
func collectionReplyText(res request.Result) string {
	switch res.Kind {
	case request.KindSet, request.KindArray:
		var parts []string
		request.Items(res.Data, func(item []byte) { parts = append(parts, strconv.Quote(string(item))) })
		return "~[" + strings.Join(parts, " ") + "]"
	case request.KindInts:
		var parts []string
		request.IntItems(res.Data, func(v int64) { parts = append(parts, strconv.FormatInt(v, 10)) })
		return "*[" + strings.Join(parts, " ") + "]"
	case request.KindDoubles:
		var parts []string
		request.Items(res.Data, func(item []byte) { parts = append(parts, string(item)) })
		return ",[" + strings.Join(parts, " ") + "]"
	}
	return expectedString(resultAsExpected(res))
}

// runCollectionSteps is runSteps with collectionReplyText.
func runCollectionSteps(t *testing.T, e *engine, steps []expireStep) {
	t.Helper()
	for i, s := range steps {
		_, res, text := e.exec(t, t0+s.at, strings.Fields(s.line))
		got := "-" + text
		if text == "" {
			got = collectionReplyText(res)
		}
		if got != s.want {
			t.Errorf("step %d at +%d ns, %s: %s, want %s", i, s.at, s.line, got, s.want)
		}
	}
}

const setWrongTypeReply = "-WRONGTYPE Operation against a key holding the wrong kind of value"

// TestSetCommands: every command's replies, the members sorted bytewise,
// repeats counted once, the emptied set deleted.
func TestSetCommands(t *testing.T) {
	e := newEngine(4)
	runCollectionSteps(t, e, []expireStep{
		{0, "SCARD s", "0"},
		{0, "SMEMBERS s", "~[]"},
		{0, "SISMEMBER s a", "0"},
		{0, "SMISMEMBER s a b", "*[0 0]"},
		{0, "SREM s a", "0"},
		{0, "EXISTS s", "0"},
		{0, "SADD s c a b a", "3"},
		{0, "TYPE s", "+set"},
		{0, "SCARD s", "3"},
		{0, "SMEMBERS s", `~["a" "b" "c"]`},
		{0, "SADD s b c", "0"},
		{0, "SADD s \"\" d", "2"},
		{0, "SMEMBERS s", `~["\"\"" "a" "b" "c" "d"]`},
		{0, "SISMEMBER s c", "1"},
		{0, "SISMEMBER s cc", "0"},
		{0, "SMISMEMBER s d x a a", "*[1 0 1 1]"},
		{0, "SREM s a x a", "1"},
		{0, "SMEMBERS s", `~["\"\"" "b" "c" "d"]`},
		{0, "SREM s b c d \"\"", "4"},
		{0, "EXISTS s", "0"},
		{0, "TYPE s", "+none"},
		{0, "SMEMBERS s", "~[]"},
	})
}

// TestSetBinarySearch: membership of every member and of every gap of
// sets whose offsets take 1, 2 and 4 bytes, built one SADD at a time in a
// scrambled order.
func TestSetBinarySearch(t *testing.T) {
	for _, size := range []int{1, 2, 3, 40, 300, 3000} {
		e := newEngine(1)
		for i := 0; i < size; i++ {
			j := (i * 7919) % size
			if got := e.line(t, t0, fmt.Sprintf("SADD s m%05d-%s", j, strings.Repeat("x", j%30))); got != "1" {
				t.Fatalf("size %d, SADD %d: %s", size, j, got)
			}
		}
		if got := e.line(t, t0, "SCARD s"); got != strconv.Itoa(size) {
			t.Fatalf("size %d: SCARD %s", size, got)
		}
		for j := 0; j < size; j++ {
			in := fmt.Sprintf("m%05d-%s", j, strings.Repeat("x", j%30))
			if got := e.line(t, t0, "SISMEMBER s "+in); got != "1" {
				t.Fatalf("size %d: SISMEMBER %s: %s", size, in, got)
			}
			for _, gap := range []string{in + "\x00", in[:len(in)-1], fmt.Sprintf("m%05d", j)} {
				if gap == in {
					continue
				}
				if got := e.line(t, t0, "SISMEMBER s "+gap); got != "0" {
					t.Fatalf("size %d: SISMEMBER %q: %s", size, gap, got)
				}
			}
		}
		// Remove every other member; the rest stay found.
		for j := 0; j < size; j += 2 {
			e.line(t, t0, fmt.Sprintf("SREM s m%05d-%s", j, strings.Repeat("x", j%30)))
		}
		for j := 0; j < size; j++ {
			want := strconv.Itoa(j % 2)
			if got := e.line(t, t0, fmt.Sprintf("SISMEMBER s m%05d-%s", j, strings.Repeat("x", j%30))); got != want {
				t.Fatalf("size %d after SREM: SISMEMBER %d: %s", size, j, got)
			}
		}
	}
}

// TestSetNoChangeKeepsRecord: SADD of present members, SREM of absent
// ones and a WRONGTYPE call leave the key's record exactly as it was (WATCH
// sees no write); a change keeps the key's expiry.
func TestSetNoChangeKeepsRecord(t *testing.T) {
	e := newEngine(2)
	runCollectionSteps(t, e, []expireStep{
		{0, "SADD s a b", "2"},
		{0, "PEXPIRE s 5000", "1"},
		{0, "SET str v", "+OK"},
	})
	before := recordsOf(t, e.f)
	runCollectionSteps(t, e, []expireStep{
		{0, "SADD s a b a", "0"},
		{0, "SREM s x y", "0"},
		{0, "SREM nokey a", "0"},
		{0, "SADD str a", setWrongTypeReply},
		{0, "SREM str a", setWrongTypeReply},
	})
	if recordsOf(t, e.f) != before {
		t.Errorf("a set command that changed nothing rewrote a record")
	}
	runCollectionSteps(t, e, []expireStep{
		{1000e6, "SADD s c", "1"},
		{1000e6, "PTTL s", "4000"},
		{1000e6, "SREM s a", "1"},
		{1000e6, "PTTL s", "4000"},
		{5000e6, "SCARD s", "2"},
		{5001e6, "SCARD s", "0"},
		{5001e6, "SISMEMBER s b", "0"},
		{5001e6, "SADD s z", "1"},
		{5001e6, "PTTL s", "-1"},
		{5001e6, "SMEMBERS s", `~["z"]`},
	})
}

// TestSetWrongType: a string, a CL key (a string to Redis) and a TB key
// are WRONGTYPE to every set command; a set is WRONGTYPE to the string
// commands but SET, which replaces it.
func TestSetWrongType(t *testing.T) {
	e := newEngine(2)
	runCollectionSteps(t, e, []expireStep{
		{0, "SET str 5", "+OK"},
		{0, "CL.THROTTLE cl 5 1 60", "[0 6 5 -1 60]"},
		{0, "TB.TAKE tb 5 1 60000", "[0 5 4 -1 60000]"},
		{0, "SADD s a", "1"},
	})
	for _, k := range []string{"str", "cl", "tb"} {
		for _, cmd := range []string{"SADD %s a", "SREM %s a", "SISMEMBER %s a", "SMISMEMBER %s a", "SCARD %s", "SMEMBERS %s"} {
			runCollectionSteps(t, e, []expireStep{{0, fmt.Sprintf(cmd, k), setWrongTypeReply}})
		}
	}
	runCollectionSteps(t, e, []expireStep{
		{0, "GET s", setWrongTypeReply},
		{0, "INCR s", setWrongTypeReply},
		{0, "CL.THROTTLE s 5 1 60", setWrongTypeReply},
		{0, "MGET s", "+[(nil)]"},
		{0, "RENAME s t", "+OK"},
		{0, "SMEMBERS t", `~["a"]`},
		{0, "SET t v", "+OK"},
		{0, "TYPE t", "+string"},
	})
}

// TestSetScanType: SCAN TYPE set selects sets only, KEYS and DBSIZE count
// them.
func TestSetScanType(t *testing.T) {
	e := newEngine(2)
	runCollectionSteps(t, e, []expireStep{
		{0, "SADD s1 a", "1"},
		{0, "SADD s2 a b", "2"},
		{0, "SET str v", "+OK"},
		{0, "DBSIZE", "3"},
	})
	_, res, _ := e.exec(t, t0, strings.Fields("SCAN 0 TYPE set COUNT 100"))
	var keys []string
	request.Items(res.Data, func(k []byte) { keys = append(keys, string(k)) })
	if len(keys) != 2 || !(keys[0] == "s1" && keys[1] == "s2" || keys[0] == "s2" && keys[1] == "s1") {
		t.Errorf("SCAN TYPE set: %q", keys)
	}
	_, res, _ = e.exec(t, t0, strings.Fields("SCAN 0 TYPE SET COUNT 100"))
	if n := request.Items(res.Data, nil); n != 2 {
		t.Errorf("SCAN TYPE SET: %d keys", n)
	}
}

// TestSetsInSnapshots: sets restore with their members and expiries, and
// a corrupt set record (members out of order, a wrong width, a count that
// disagrees with the value) is refused at restore.
func TestSetsInSnapshots(t *testing.T) {
	src := newEngine(4)
	big := make([]string, 0, 300)
	for i := 0; i < 300; i++ {
		big = append(big, fmt.Sprintf("member-%03d", i))
	}
	runCollectionSteps(t, src, []expireStep{
		{0, "SADD a x", "1"},
		{0, "SADD b \"\" y z", "3"},
		{0, "PEXPIRE b 2000", "1"},
		{0, "SADD big " + strings.Join(big, " "), "300"},
	})
	dst := newEngine(2)
	restoreFrom(t, dst, src)
	runCollectionSteps(t, dst, []expireStep{
		{0, "SMEMBERS a", `~["x"]`},
		{0, "SMEMBERS b", `~["\"\"" "y" "z"]`},
		{0, "PTTL b", "2000"},
		{0, "SCARD big", "300"},
		{0, "SISMEMBER big member-299", "1"},
	})
	if recordsOf(t, dst.f) != recordsOf(t, src.f) {
		t.Errorf("the restored records differ from the source's")
	}
}
