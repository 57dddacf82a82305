package fsm_test

import (
	"bytes"
	"io"
	"testing"

	"github.com/redcell/redcell/request"
)

// expireStep is one command at t0 + at (ns) and its reply as text.
type expireStep struct {
	at   int64
	line string
	want string
}

func runSteps(t *testing.T, e *engine, steps []expireStep) {
	t.Helper()
	for i, s := range steps {
		if got := e.line(t, t0+s.at, s.line); got != s.want {
			t.Errorf("step %d at +%d ns, %s: %s, want %s", i, s.at, s.line, got, s.want)
		}
	}
}

// TestExpireOptionMatrix: the options on a CL key (a string to Redis) with
// and without expiry, with the replies Redis 7.0 gives a string key in the
// same state (checked against redis-server; systemtest/expire_test.go does
// it live).
func TestExpireOptionMatrix(t *testing.T) {
	e := newEngine(4)
	runSteps(t, e, []expireStep{
		{0, "CL.THROTTLE k 5 1 60", "[0 6 5 -1 60]"},
		{0, "PTTL k", "60000"},
		{0, "EXPIRE k 100 NX", "0"},
		{0, "EXPIRE k 100 XX", "1"},
		{0, "TTL k", "100"},
		{0, "PEXPIRETIME k", "1700000100000"},
		{0, "EXPIRETIME k", "1700000100"},
		{0, "EXPIRE k 50 GT", "0"},
		{0, "EXPIRE k 100 GT", "0"},
		{0, "EXPIRE k 200 GT", "1"},
		{0, "EXPIRE k 300 LT", "0"},
		{0, "EXPIRE k 200 LT", "0"},
		{0, "EXPIRE k 150 LT", "1"},
		{0, "EXPIRE k 160 XX GT", "1"},
		{0, "TTL k", "160"},
		{0, "PERSIST k", "1"},
		{0, "PERSIST k", "0"},
		{0, "TTL k", "-1"},
		{0, "PTTL k", "-1"},
		{0, "EXPIRETIME k", "-1"},
		{0, "PEXPIRETIME k", "-1"},
		{0, "EXPIRE k 10 GT", "0"}, // no expiry counts as infinite
		{0, "EXPIRE k 10 XX", "0"},
		{0, "EXPIRE k 10 LT", "1"},
		{0, "PERSIST k", "1"},
		{0, "EXPIRE k 10 NX", "1"},
		{0, "PEXPIRE k 2500", "1"},
		{0, "PTTL k", "2500"},
		{0, "TTL k", "3"}, // rounded to the nearest second, as Redis
		{0, "PEXPIREAT k 1700000001234", "1"},
		{0, "PTTL k", "1234"},
		{1_234_000_000, "EXISTS k", "1"}, // its last millisecond
		{1_234_000_000, "PTTL k", "0"},
		{1_235_000_000, "EXISTS k", "0"},
		{1_235_000_000, "EXPIRE k 10", "0"},
		{1_235_000_000, "PERSIST k", "0"},
		{1_235_000_000, "EXPIRETIME k", "-2"},
		{1_235_000_000, "PEXPIRETIME k", "-2"},
	})
}

// TestExpireNonPositiveDeletes: a time at or before now deletes the key and
// answers 1, in every form, unless an option refuses first.
func TestExpireNonPositiveDeletes(t *testing.T) {
	for _, line := range []string{"EXPIRE k 0", "EXPIRE k -5", "PEXPIRE k 0", "PEXPIRE k -9223372036854775808",
		"EXPIREAT k 1", "EXPIREAT k -1", "PEXPIREAT k 1700000000000", "EXPIREAT k 1 LT", "EXPIRE k 0 XX"} {
		e := newEngine(2)
		runSteps(t, e, []expireStep{
			{0, "CL.THROTTLE k 5 1 60", "[0 6 5 -1 60]"},
			{0, line, "1"},
			{0, "EXISTS k", "0"},
			{0, "DBSIZE", "0"},
		})
	}
	e := newEngine(2)
	runSteps(t, e, []expireStep{
		{0, "CL.THROTTLE k 5 1 60", "[0 6 5 -1 60]"},
		{0, "EXPIREAT k 1 GT", "0"},
		{0, "EXPIRE k 0 NX", "0"},
		{0, "EXISTS k", "1"},
	})
}

// TestExpireErrorsAndRanges: Redis 7.0's option errors (before the
// integer), the integer syntax of string2ll, and the overflows: seconds to
// ms at parse time, a relative time plus now at apply time.
func TestExpireErrorsAndRanges(t *testing.T) {
	const nxErr = "-ERR NX and XX, GT or LT options at the same time are not compatible"
	e := newEngine(2)
	runSteps(t, e, []expireStep{
		{0, "CL.THROTTLE k 5 1 60", "[0 6 5 -1 60]"},
		{0, "EXPIRE k 10 NX XX", nxErr},
		{0, "EXPIRE k 10 nx gt", nxErr},
		{0, "EXPIRE nokey 10 LT NX", nxErr},
		{0, "EXPIRE k 10 GT LT", "-ERR GT and LT options at the same time are not compatible"},
		{0, "EXPIRE k abc Foo", "-ERR Unsupported option Foo"},
		{0, "EXPIRE k 10 20", "-ERR Unsupported option 20"},
		{0, "EXPIRE k abc", "-ERR value is not an integer or out of range"},
		{0, "EXPIRE k +10", "-ERR value is not an integer or out of range"},
		{0, "EXPIRE k 010", "-ERR value is not an integer or out of range"},
		{0, "EXPIRE k -0", "-ERR value is not an integer or out of range"},
		{0, "EXPIRE k 9223372036854775", "-ERR invalid expire time in 'expire' command"},
		{0, "EXPIRE k -9223372036854775808", "-ERR invalid expire time in 'expire' command"},
		{0, "EXPIREAT k 9223372036854776", "-ERR invalid expire time in 'expireat' command"},
		{0, "PEXPIRE k 9223372036854775807", "-ERR invalid expire time in 'pexpire' command"},
		{0, "PEXPIRE k 9223372036854000000", "-ERR invalid expire time in 'pexpire' command"},
		{0, "EXPIRE k 9223372036854000", "-ERR invalid expire time in 'expire' command"},
		{0, "EXPIRE k", "-ERR wrong number of arguments for 'expire' command"},
		{0, "PTTL k", "60000"}, // nothing changed
		{0, "EXPIREAT k 9223372036854775", "1"},
		{0, "PEXPIRETIME k", "9223372036854775000"},
		{0, "EXPIRETIME k", "9223372036854775"},
		{0, "PEXPIREAT k 9223372036854775807", "1"},
		{0, "PEXPIRETIME k", "9223372036854775807"},
		{0, "EXPIRETIME k", "9223372036854776"},
		{0, "TTL k", "9223370336854776"},
		{0, "EXPIRE k 10 GT", "0"},
		{0, "EXPIRE k 10 LT", "1"},
		{0, "TTL k", "10"},
	})
}

// TestExpireOnLimiterKeys: an explicit expiry is a CL key's lifetime (gone
// at that instant, then fresh to CL.THROTTLE; PERSIST keeps it until the
// next CL.THROTTLE sets redis-cell's expiry again); TB and SL keys keep
// their own expiry, which is their state, and only a time at or before now
// (deletion) applies to them.
func TestExpireOnLimiterKeys(t *testing.T) {
	e := newEngine(4)
	runSteps(t, e, []expireStep{
		{0, "CL.THROTTLE c 5 1 60", "[0 6 5 -1 60]"},
		{0, "CL.THROTTLE c 5 1 60", "[0 6 4 -1 120]"},
		{0, "EXPIRE c 5", "1"},
		{4_000_000_000, "CL.PEEK c 5 1 60", "[0 6 3 -1 176]"}, // the TAT is intact
		{5_001_000_000, "EXISTS c", "0"},
		{5_001_000_000, "CL.THROTTLE c 5 1 60", "[0 6 5 -1 60]"}, // fresh
		{5_001_000_000, "PERSIST c", "1"},
		{5_001_000_000, "TTL c", "-1"},
		{3600e9, "EXISTS c", "1"}, // past its TAT, still there
		{3600e9, "TYPE c", "+string"},
		{3600e9, "CL.THROTTLE c 5 1 60", "[0 6 5 -1 60]"}, // a TAT in the past is a fresh limiter
		{3600e9, "PTTL c", "60000"},                       // redis-cell's expiry again
	})
	e = newEngine(4)
	runSteps(t, e, []expireStep{
		{0, "TB.TAKE t 5 1 60000", "[0 5 4 -1 60000]"},
		{0, "PTTL t", "60000"},
		{0, "EXPIRE t 100", "0"},
		{0, "EXPIRE t 10 LT", "0"},
		{0, "PERSIST t", "0"},
		{0, "PTTL t", "60000"},
		{0, "PEXPIRETIME t", "1700000060000"},
		{0, "EXPIRETIME t", "1700000060"},
		{0, "EXPIRE t 100 NX", "0"},
		{0, "EXPIRE t 0 GT", "0"},
		{0, "EXPIRE t 0", "1"},
		{0, "EXISTS t", "0"},

		{0, "SL.HIT s 5 60000", "[0 5 4 -1 60000]"},
		{0, "EXPIRE s 1", "0"},
		{0, "PERSIST s", "0"},
		{0, "PTTL s", "60000"},
		{0, "PEXPIREAT s 1", "1"},
		{0, "EXISTS s", "0"},

		{0, "TB.TAKE u 5 1 60000 INTERVAL", "[0 5 4 -1 60000]"},
		{0, "TOUCH u t s u nokey", "2"},
		{0, "EXPIREAT u 1700000000", "1"},
		{0, "TOUCH u", "0"},
	})
}

// TestExpireSnapshotKeepsExplicitExpiry: an explicit expiry, a persisted
// CL key and an expiry past 2262 survive a snapshot and restore unchanged
// (Expire and B already carry them: no new snapshot version).
func TestExpireSnapshotKeepsExplicitExpiry(t *testing.T) {
	a := newEngine(8)
	runSteps(t, a, []expireStep{
		{0, "CL.THROTTLE x 5 1 60", "[0 6 5 -1 60]"},
		{0, "CL.THROTTLE p 5 1 60", "[0 6 5 -1 60]"},
		{0, "CL.THROTTLE w 5 1 60", "[0 6 5 -1 60]"},
		{0, "CL.THROTTLE n 5 1 60", "[0 6 5 -1 60]"},
		{0, "PEXPIRE x 123456", "1"},
		{0, "PERSIST p", "1"},
		{0, "PEXPIREAT w 9223372036854775807", "1"},
	})
	data := []byte(snapshotOf(t, a.f))
	b := newEngine(1)
	if err := b.f.Restore(io.NopCloser(bytes.NewReader(data))); err != nil {
		t.Fatal(err)
	}
	if got := snapshotOf(t, b.f); got != string(data) {
		t.Fatal("the restored state's snapshot differs")
	}
	for _, line := range []string{"PTTL x", "PEXPIRETIME x", "TTL p", "PEXPIRETIME p", "PEXPIRETIME w", "TTL w", "PTTL n", "DBSIZE"} {
		if ga, gb := a.line(t, t0+1e9, line), b.line(t, t0+1e9, line); ga != gb {
			t.Errorf("%s: original %s, restored %s", line, ga, gb)
		}
	}
	runSteps(t, b, []expireStep{
		{1e9, "PTTL x", "122456"},
		{1e9, "TTL p", "-1"},
		{1e9, "PEXPIRETIME w", "9223372036854775807"},
	})
}

// TestExpireInOneEntry: a MULTI/EXEC is one entry at one now: the expiry
// set by its first command is what the later ones see.
func TestExpireInOneEntry(t *testing.T) {
	e := newEngine(2)
	runSteps(t, e, []expireStep{{0, "CL.THROTTLE k 5 1 60", "[0 6 5 -1 60]"}})
	reqs := []string{"PEXPIRE k 5000 XX", "PTTL k", "PERSIST k", "TTL k", "EXPIRE k 0", "EXISTS k"}
	var rs []request.Request
	for _, l := range reqs {
		rs = append(rs, parsed(t, l))
	}
	got := e.entry(t, t0+1e9, rs)
	want := []int64{1, 5000, 1, -1, 1, 0}
	for i := range want {
		if got[i].Ints[0] != want[i] {
			t.Errorf("%s: %d, want %d", reqs[i], got[i].Ints[0], want[i])
		}
	}
}

// TestKeyspaceCountsKeysWithoutExpiry: INFO keyspace's expires counts only
// the keys with an expiry, and avg_ttl averages over those alone (Redis's
// rule): a key made persistent still counts as a key.
func TestKeyspaceCountsKeysWithoutExpiry(t *testing.T) {
	e := newEngine(4)
	runSteps(t, e, []expireStep{
		{0, "CL.THROTTLE a 5 1 60", "[0 6 5 -1 60]"},
		{0, "CL.THROTTLE b 5 1 60", "[0 6 5 -1 60]"},
		{0, "EXPIRE b 120", "1"},
		{0, "CL.THROTTLE c 5 1 60", "[0 6 5 -1 60]"},
		{0, "PERSIST c", "1"},
	})
	keys, expires, avg := e.f.Keyspace(t0)
	// a's redis-cell expiry is its TAT, a little past 60 s; b's 120 s.
	if keys != 3 || expires != 2 || avg < 90_000 || avg > 90_001 {
		t.Errorf("Keyspace: %d keys, %d expiring, avg_ttl %d ms; want 3, 2, about 90000", keys, expires, avg)
	}
	runSteps(t, e, []expireStep{{0, "PERSIST a", "1"}, {0, "PERSIST b", "1"}})
	if keys, expires, avg := e.f.Keyspace(t0); keys != 3 || expires != 0 || avg != 0 {
		t.Errorf("Keyspace with no expiry left: %d keys, %d expiring, avg_ttl %d ms; want 3, 0, 0", keys, expires, avg)
	}
}

// TestRenameMovesTheWholeKey: a limiter key goes on deciding under its new
// name (its state, value and expiry move), the old name is a fresh key,
// RENAME replaces a key of another family, RENAMENX leaves a live one.
func TestRenameMovesTheWholeKey(t *testing.T) {
	e := newEngine(4)
	runSteps(t, e, []expireStep{
		{0, "CL.THROTTLE k 5 1 60", "[0 6 5 -1 60]"},
		{0, "RENAME k j", "+OK"},
		{0, "EXISTS k", "0"},
		{0, "CL.THROTTLE j 5 1 60", "[0 6 4 -1 120]"},
		{0, "CL.THROTTLE k 5 1 60", "[0 6 5 -1 60]"},
		{0, "SL.HIT s 3 60000", "[0 3 2 -1 60000]"},
		{0, "SL.HIT s 3 60000", "[0 3 1 -1 60000]"},
		{0, "RENAMENX s j", "0"},
		{0, "RENAME s j", "+OK"},
		{0, "TYPE j", "+slidinglog"},
		{0, "SL.HIT j 3 60000", "[0 3 0 -1 60000]"},
		{0, "RENAME s j", "-ERR no such key"},
		{0, "RENAMENX j j", "0"},
		{0, "RENAME j j", "+OK"},
		{0, "RENAMENX j fresh", "1"},
		{0, "SL.HIT fresh 3 60000", "[1 3 0 60000 60000]"},
	})
}
