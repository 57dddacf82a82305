package fsm_test

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"io"
	"strings"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/redcell/redcell/fsm"
)

const t0 = int64(1_700_000_000_000_000_000)

// line runs one command line at now and returns its reply as text.
func (e *engine) line(t testing.TB, now int64, line string) string {
	t.Helper()
	return expectedString(e.do(t, now, strings.Fields(line)))
}

// The four families and, for each, commands of that family that read or
// write a key: the limiter call, its PEEK, COST 0 and a refund.
var familyCommands = map[string][]string{
	"CL": {"CL.THROTTLE k 5 1 60", "CL.PEEK k 5 1 60", "CL.THROTTLE k 5 1 60 0", "CL.THROTTLE k 5 1 60 -1"},
	"TB": {"TB.TAKE k 5 1 60000", "TB.PEEK k 5 1 60000", "TB.TAKE k 5 1 60000 COST 0", "TB.TAKE k 5 1 60000 COST -1"},
	"TI": {"TB.TAKE k 5 1 60000 INTERVAL", "TB.PEEK k 5 1 60000 INTERVAL", "TB.TAKE k 5 1 60000 COST 0 INTERVAL", "TB.TAKE k 5 1 60000 INTERVAL COST -1"},
	"SL": {"SL.HIT k 5 60000", "SL.PEEK k 5 60000", "SL.HIT k 5 60000 DENIED COUNT MINGAP 5", "SL.PEEK k 5 60000 MINGAP 1"},
	// Strings: SET replaces a key of any kind (as in Redis), so the key is
	// made by stringCreate and the commands here are the others.
	"string": {"GET k", "INCR k", "APPEND k x", "STRLEN k", "GETDEL k", "SET k v GET", "GETSET k v", "GETEX k PERSIST", "INCRBYFLOAT k 1", "INCREX k EX 10"},
	"hash": {"HSET k f v", "HGET k f", "HSETNX k f v", "HMSET k f v", "HMGET k f", "HGETALL k", "HDEL k f", "HEXISTS k f",
		"HLEN k", "HKEYS k", "HVALS k", "HINCRBY k f 1", "HINCRBYFLOAT k f 1"},
	// Lists: made by listCreate; the index errors LINDEX and LSET answer
	// after the type check, LPOP's count 0 after it too.
	"list": {"LPUSH k x", "RPUSHX k x", "LPOP k", "RPOP k 0", "LLEN k", "LINDEX k abc", "LRANGE k 0 -1", "LTRIM k 0 0", "LREM k 0 x", "LSET k abc x"},
	"set":  {"SADD k a", "SREM k a", "SISMEMBER k a", "SMISMEMBER k a b", "SCARD k", "SMEMBERS k"},
	"zset": {"ZADD k 1 a", "ZINCRBY k 1 a", "ZREM k a", "ZCARD k", "ZCOUNT k 0 1", "ZSCORE k a", "ZRANGE k 0 -1", "ZRANK k a",
		"ZREMRANGEBYSCORE k 5 6", "ZREMRANGEBYRANK k 5 6", "ZRANGEBYSCORE k 0 1", "ZREVRANGEBYSCORE k 1 0"},
}

var familyTypes = map[string]string{"CL": "+string", "TB": "+tokenbucket", "TI": "+tokenbucket", "SL": "+slidinglog", "string": "+string", "hash": "+hash", "list": "+list", "set": "+set", "zset": "+zset"}

// stringCreate makes a string key in the WRONGTYPE matrix. CL keys are
// strings (the spec), so the CL and string pair is not in the matrix
// (strings_test.go checks it).
const stringCreate = "SET k 5"

// listCreate makes a list key in the WRONGTYPE matrix.
const listCreate = "RPUSH k a b"

// TestWrongTypeMatrix: a live key of one family answers WRONGTYPE to every
// command of the other three (peeks, COST 0 and refunds included) and
// changes nothing; its own family's commands are never WRONGTYPE; argument
// errors (rule 5 steps 1-5) come before WRONGTYPE; once the key is deleted
// any family may take the name.
func TestWrongTypeMatrix(t *testing.T) {
	const wrongType = "-WRONGTYPE Operation against a key holding the wrong kind of value"
	for owner, create := range familyCommands {
		for other, cmds := range familyCommands {
			if owner == "string" && other == "CL" || owner == "CL" && other == "string" {
				continue
			}
			for _, cmd := range cmds {
				e := newEngine(8)
				if owner == "string" {
					if got := e.line(t, t0, stringCreate); got != "+OK" {
						t.Fatalf("%s: %s", stringCreate, got)
					}
				} else if owner == "hash" || owner == "set" || owner == "zset" {
					if got := e.line(t, t0, create[0]); got != "1" {
						t.Fatalf("%s: %s", create[0], got)
					}
				} else if owner == "list" {
					if got := e.line(t, t0, listCreate); got != "2" {
						t.Fatalf("%s: %s", listCreate, got)
					}
				} else if got := e.line(t, t0, create[0]); !strings.HasPrefix(got, "[0 ") {
					t.Fatalf("%s: %s", create[0], got)
				}
				if got := e.line(t, t0, "TYPE k"); got != familyTypes[owner] {
					t.Fatalf("%s key: TYPE %s", owner, got)
				}
				before := recordsOf(t, e.f)
				got := e.line(t, t0+1e6, cmd)
				switch {
				case owner == other && got == wrongType:
					t.Errorf("%s key, %s: WRONGTYPE from its own family", owner, cmd)
				case owner != other && got != wrongType:
					t.Errorf("%s key, %s: %s, want WRONGTYPE", owner, cmd, got)
				}
				if owner != other && recordsOf(t, e.f) != before {
					t.Errorf("%s key, %s: a WRONGTYPE call changed the state", owner, cmd)
				}
				if owner != other {
					if got := e.line(t, t0+2e6, "DEL k"); got != "1" {
						t.Errorf("DEL of the %s key: %s", owner, got)
					}
					if got := e.line(t, t0+3e6, cmd); got == wrongType {
						t.Errorf("%s after DEL of the %s key: still WRONGTYPE", cmd, owner)
					}
				}
			}
		}
	}
	// Argument errors, including the overflow checks that need the
	// entry's now, come before WRONGTYPE (rule 5).
	e := newEngine(1)
	e.line(t, t0, "CL.THROTTLE k 5 1 60")
	for cmd, want := range map[string]string{
		"TB.TAKE k 1 1 9223372036854":          "-ERR value is not an integer or out of range", // now + capacity·T > 2^63-1
		"TB.PEEK k 1 1 9223372036854 INTERVAL": "-ERR value is not an integer or out of range",
		"SL.HIT k 1 9223372036854":             "-ERR value is not an integer or out of range", // now + W > 2^63-1
		"SL.PEEK k 1 9223372036854":            "-ERR value is not an integer or out of range",
		"TB.TAKE k 0 1 1":                      "-ERR capacity must be positive",
		"SL.HIT k 1 1 FOO":                     "-ERR syntax error",
	} {
		if got := e.line(t, t0, cmd); got != want {
			t.Errorf("on a CL key, %s: %s, want %s", cmd, got, want)
		}
	}
}

// TestKeyLifetimes: EXISTS, PTTL, TYPE of TB and SL keys follow rule 2 and
// 4 to the nanosecond: present until expire_at, gone at expire_at, fresh
// for any family afterwards; DEL and FLUSHALL reset them.
func TestKeyLifetimes(t *testing.T) {
	e := newEngine(4)
	e.line(t, t0, "TB.TAKE g 10 10 1000")         // greedy: full again in 100 ms
	e.line(t, t0, "TB.TAKE i 10 5 1000 INTERVAL") // one refill (5 tokens) due in 1 s
	e.line(t, t0, "SL.HIT s 3 250")               // log empty after 250 ms
	for _, tt := range []struct {
		at         int64
		key, reply string
	}{
		{t0, "PTTL g", "100"}, {t0, "PTTL i", "1000"}, {t0, "PTTL s", "250"},
		{t0 + 1, "PTTL g", "100"}, {t0 + 99_000_001, "PTTL g", "1"},
		{t0 + 100e6 - 1, "EXISTS g", "1"}, {t0 + 100e6, "EXISTS g", "0"}, {t0 + 100e6, "PTTL g", "-2"}, {t0 + 100e6, "TYPE g", "+none"},
		{t0 + 250e6 - 1, "TYPE s", "+slidinglog"}, {t0 + 250e6, "EXISTS s", "0"},
		{t0 + 1e9 - 1, "TYPE i", "+tokenbucket"}, {t0 + 1e9 - 1, "TTL i", "0"}, {t0 + 1e9, "EXISTS i g s", "0"},
	} {
		if got := e.line(t, tt.at, tt.key); got != tt.reply {
			t.Errorf("at +%d ns, %s: %s, want %s", tt.at-t0, tt.key, got, tt.reply)
		}
	}
	// Gone means fresh for every family.
	now := t0 + 2e9
	for _, cmd := range []string{"SL.HIT g 1 1000", "CL.THROTTLE i 1 1 1", "TB.TAKE s 2 1 1000 INTERVAL"} {
		if got := e.line(t, now, cmd); !strings.HasPrefix(got, "[0 ") {
			t.Errorf("%s on an expired key: %s", cmd, got)
		}
	}
	if got := e.line(t, now, "DEL g i s g nokey"); got != "3" {
		t.Errorf("DEL: %s", got)
	}
	e.line(t, now, "SL.HIT s 3 250")
	e.line(t, now, "TB.TAKE g 10 10 1000")
	if got := e.line(t, now, "FLUSHALL"); got != "+OK" {
		t.Errorf("FLUSHALL: %s", got)
	}
	if got := e.line(t, now, "DBSIZE"); got != "0" {
		t.Errorf("DBSIZE after FLUSHALL: %s", got)
	}
	// A limited or peeking call never creates or refreshes a key.
	e.line(t, now, "SL.HIT s 1 1000")
	for _, cmd := range []string{"SL.HIT s 1 5000", "SL.PEEK s 1 5000", "TB.PEEK t 5 1 1000", "TB.TAKE t 5 1 1000 COST 6", "TB.TAKE t 5 1 1000 COST 0", "TB.TAKE t 5 1 1000 COST -2"} {
		e.line(t, now+1e6, cmd)
	}
	if got := e.line(t, now+1e6, "PTTL s"); got != "999" {
		t.Errorf("PTTL of s after a denied SL.HIT and SL.PEEK with a longer window: %s, want 999", got)
	}
	if got := e.line(t, now+1e6, "EXISTS t"); got != "0" {
		t.Errorf("a TB.PEEK, a limited take, COST 0 or a refund created t")
	}
}

// allFamilies builds a state with keys of every family, several of each,
// some with long sliding logs and a binary key.
func allFamilies(t *testing.T, e *engine) int64 {
	now := t0
	for i := 0; i < 40; i++ {
		now += 7e6
		for _, cmd := range []string{
			"CL.THROTTLE cl:%d 50 10 60", "TB.TAKE tb:%d 50 1 60000", "TB.TAKE ti:%d 50 1 60000 INTERVAL COST 2",
			"SL.HIT sl:%d 1000 60000", "SL.HIT sl:%d 1000 60000 COST 3", "SL.HIT sl:x%d 20 5000 DENIED COUNT",
		} {
			e.line(t, now, strings.ReplaceAll(cmd, "%d", string(rune('a'+i%7))))
		}
	}
	e.line(t, now, "SL.HIT \x00\xff\r\n 5 1000")
	return now
}

// TestSnapshotRoundTripAllFamilies: a snapshot of keys of every family
// restores to a state whose snapshot is byte-identical and which answers
// every command the same; the restored node's digest is the original's.
func TestSnapshotRoundTripAllFamilies(t *testing.T) {
	a := newEngine(64)
	now := allFamilies(t, a)
	data := []byte(snapshotOf(t, a.f))
	b := newEngine(1)
	if err := b.f.Restore(io.NopCloser(bytes.NewReader(data))); err != nil {
		t.Fatal(err)
	}
	b.index = a.index // the log goes on where the snapshot was taken
	if got := snapshotOf(t, b.f); got != string(data) {
		t.Fatalf("the restored state's snapshot differs")
	}
	_, da, _ := a.f.Digest()
	_, db, _ := b.f.Digest()
	if da != db {
		t.Errorf("digests differ after restore")
	}
	for i := 0; i < 7; i++ {
		k := string(rune('a' + i))
		for _, cmd := range []string{
			"TYPE cl:" + k, "PTTL tb:" + k, "PTTL sl:" + k, "PTTL sl:x" + k,
			"CL.THROTTLE cl:" + k + " 50 10 60", "TB.TAKE tb:" + k + " 50 1 60000", "TB.TAKE ti:" + k + " 50 1 60000 INTERVAL",
			"SL.HIT sl:" + k + " 1000 60000 COST 5", "SL.PEEK sl:x" + k + " 20 5000", "SL.HIT sl:x" + k + " 20 1000 DENIED COUNT",
		} {
			at := now + 3e9
			if ga, gb := a.line(t, at, cmd), b.line(t, at, cmd); ga != gb {
				t.Errorf("%s: original %s, restored %s", cmd, ga, gb)
			}
		}
	}
	if sa, sb := snapshotOf(t, a.f), snapshotOf(t, b.f); sa != sb {
		t.Errorf("the states diverged after the same commands")
	}
}

// TestSnapshotVersion1StillRestores: version 1 and 2 streams of CL keys
// (whose expiries lie before 2262) restore; they are the version 3 stream of
// the same state with another version byte, since such records did not
// change. A version 1 stream with a value, and a version 2 stream with an
// unknown kind or a corrupt sliding log, are refused.
func TestSnapshotVersion1StillRestores(t *testing.T) {
	e := newEngine(4)
	for i := 0; i < 30; i++ {
		e.line(t, t0+int64(i)*1e6, "CL.THROTTLE key:"+string(rune('a'+i%11))+" 20 5 60")
	}
	cur := []byte(snapshotOf(t, e.f))
	if cur[4] != fsm.SnapshotVersion {
		t.Fatalf("snapshot version %d, want %d", cur[4], fsm.SnapshotVersion)
	}
	for _, old := range []byte{1, 2, 3} {
		r := newEngine(8)
		if err := r.f.Restore(io.NopCloser(bytes.NewReader(fsm.SnapshotAs(cur, old)))); err != nil {
			t.Fatalf("restoring version %d: %v", old, err)
		}
		if got := snapshotOf(t, r.f); got != string(fsm.RestoredFromOld(cur)) {
			t.Errorf("a restored version %d snapshot snapshots differently", old)
		}
	}

	s := newEngine(1)
	s.line(t, t0, "SL.HIT k 10 1000")
	s.line(t, t0+1, "SL.HIT k 10 1000 COST 2")
	withLog := []byte(snapshotOf(t, s.f))
	refuse := func(name string, data []byte) {
		t.Helper()
		if err := newEngine(1).f.Restore(io.NopCloser(bytes.NewReader(data))); err == nil {
			t.Errorf("%s: restored", name)
		}
	}
	refuse("a value in version 1", fsm.SnapshotAs(withLog, 1))
	// Record layout after the header: kind, key length 1, "k",
	// expire, a, b, marker, value length, value.
	kindAt := fsm.SnapshotHeaderLen
	if withLog[kindAt] != 4|0x80 || withLog[kindAt+2] != 'k' {
		t.Fatalf("unexpected record layout % x", withLog[kindAt:])
	}
	bad := bytes.Clone(withLog)
	bad[kindAt] = 9 | 0x80
	refuse("unknown kind", recrc(bad))
	bad = bytes.Clone(withLog)
	bad[kindAt] = 1 | 0x80
	refuse("a CL key with a value", recrc(bad))
	bad = bytes.Clone(withLog)
	bad[len(bad)-5] ^= 0x7f // the log's last byte
	refuse("a corrupt sliding log", recrc(bad))
}

// recordsOf is the state's snapshot without its header and checksum: the
// keys and their states, not the replicated clock (which every write
// advances, WRONGTYPE or not).
func recordsOf(t testing.TB, f *fsm.FSM) string {
	s := snapshotOf(t, f)
	return s[fsm.SnapshotHeaderLen : len(s)-4]
}

func withVersion(data []byte, v byte) []byte {
	out := bytes.Clone(data)
	out[4] = v
	return recrc(out)
}

// recrc rewrites a snapshot's CRC-32C trailer for its (changed) content.
func recrc(data []byte) []byte {
	n := len(data) - 4
	binary.LittleEndian.PutUint32(data[n:], crc32.Checksum(data[:n], crc32.MakeTable(crc32.Castagnoli)))
	return data
}

// TestLimiterEntriesAreAppliedLikeReplicas: TB and SL requests in one
// entry among CL requests, reads included (MULTI/EXEC will do that), give
// the same results one by one as in one entry at the same instant.
func TestLimiterEntriesAreAppliedLikeReplicas(t *testing.T) {
	lines := []string{"SL.HIT k 3 1000", "SL.HIT k 3 1000 COST 2", "SL.PEEK k 3 1000", "SL.HIT k 3 1000",
		"TB.TAKE b 2 1 1000", "TB.PEEK b 2 1 1000 COST 2", "TB.TAKE b 2 1 1000", "TB.TAKE b 2 1 1000",
		"TYPE b", "PTTL k", "CL.THROTTLE b 1 1 1"}
	one := newEngine(2)
	var want []string
	for _, l := range lines {
		want = append(want, one.line(t, t0, l))
	}
	batch := newEngine(16)
	var enc fsm.Encoder
	enc.Reset(t0)
	for _, l := range lines {
		r := parsed(t, l)
		enc.Add(&r)
	}
	out := batch.f.ApplyBatch([]*raft.Log{{Type: raft.LogCommand, Index: 1, Term: 1, Data: bytes.Clone(enc.Finish())}})
	rs := out[0].(*fsm.Results)
	for i := range lines {
		if got := expectedString(resultAsExpected(rs.R[i])); got != want[i] {
			t.Errorf("%s in one entry: %s, alone %s", lines[i], got, want[i])
		}
	}
	// The keys' change markers are the entries' indexes, which differ.
	if !bytes.Equal(fsm.RestoredFromOld([]byte(snapshotOf(t, one.f))), fsm.RestoredFromOld([]byte(snapshotOf(t, batch.f)))) {
		t.Errorf("states differ")
	}
}
