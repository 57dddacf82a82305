package systemtest

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The keyspace's expiry commands against redis-server 7 as the oracle: the
// same command lines on a Redcell CL key (a string to Redis, as
// redis-cell's keys are) and on a Redis string with the same expiry,
// replies compared. Redcell's clock is frozen (DEBUG CLOCK SET) and Redis's
// runs, so replies that are instants or times left are compared relative to
// each server's own now, within a tolerance.

// startRedis starts a redis-server on a free port, not durable, stopped by
// PID when the test ends. It skips the test when redis-server is not
// installed (.ci/run installs it).
func startRedis(t *testing.T) *respConn {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server is not installed")
	}
	dir := t.TempDir()
	for attempt := 0; attempt < 5; attempt++ {
		port, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir)
		logf, err := os.Create(dir + "/redis.log")
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stdout, cmd.Stderr = logf, logf
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			logf.Close()
		})
		addr := "127.0.0.1:" + strconv.Itoa(port)
		for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) { // polling a bounded condition
			if c, err := dialRESP(addr); err == nil {
				if r, err := c.do("PING"); err == nil && r.kind == '+' {
					return c
				}
				c.close()
			}
			if cmd.ProcessState != nil {
				break
			}
		}
		_ = cmd.Process.Kill()
	}
	t.Fatal("redis-server did not start")
	return nil
}

// redisNowMs is Redis's clock in Unix ms (TIME).
func redisNowMs(t *testing.T, c *respConn) int64 {
	t.Helper()
	r := mustDo(t, c, "TIME")
	if r.kind != '*' || len(r.elems) != 2 {
		t.Fatalf("TIME: %v", r)
	}
	s, _ := strconv.ParseInt(r.elems[0].str, 10, 64)
	us, _ := strconv.ParseInt(r.elems[1].str, 10, 64)
	return s*1000 + us/1000
}

// How a reply is compared: exactly, or as a time (relative to the server's
// own now where it is an instant) within a tolerance.
const (
	exact  = iota
	inMs   // a PTTL: within 1000 ms
	inS    // a TTL: within 1 s
	atMs   // a PEXPIRETIME: minus now in ms, within 1000 ms
	atS    // an EXPIRETIME: minus now in s, within 1 s
	inSAbs // a TTL of a key with an absolute expiry: plus now in s, within 1 s
)

type oracleLine struct {
	line string // {s+N} and {ms+N} are the server's now in s or ms plus N
	cmp  int
}

// oracleCase is a sequence on key k, which exists with a 60 s expiry (or
// without one when persist) before it starts.
type oracleCase struct {
	name    string
	persist bool
	lines   []oracleLine
}

func ex(l string) oracleLine { return oracleLine{l, exact} }

var expireOracleCases = []oracleCase{
	{"options with expiry", false, []oracleLine{
		ex("EXPIRE k 100 NX"), ex("EXPIRE k 100 XX"), {"TTL k", inS}, {"PTTL k", inMs},
		ex("EXPIRE k 50 GT"), ex("EXPIRE k 200 GT"), ex("EXPIRE k 300 LT"), ex("EXPIRE k 150 LT"),
		ex("EXPIRE k 160 XX GT"), ex("EXPIRE k 100 xx lt"), {"TTL k", inS},
		{"EXPIRETIME k", atS}, {"PEXPIRETIME k", atMs}, ex("PEXPIRE k 5000 GT"), ex("PEXPIRE k 5000 LT"), {"PTTL k", inMs},
		ex("EXPIREAT k {s+1000} GT"), {"EXPIRETIME k", atS}, ex("PEXPIREAT k {ms+2000} LT"), {"PEXPIRETIME k", atMs},
		ex("PERSIST k"), ex("PERSIST k"), ex("TTL k"), ex("PTTL k"), ex("EXPIRETIME k"), ex("PEXPIRETIME k"),
	}},
	{"options without expiry", true, []oracleLine{
		ex("TTL k"), ex("EXPIRE k 10 GT"), ex("EXPIRE k 10 XX"), ex("EXPIRE k 10 XX GT"), ex("EXPIRE k 10 LT"), {"TTL k", inS},
		ex("PERSIST k"), ex("PEXPIRE k 10000 NX"), ex("PEXPIRE k 20000 NX"), {"PTTL k", inMs},
		ex("PERSIST k"), ex("EXPIREAT k {s+100} XX"), ex("EXPIREAT k {s+100} NX"), {"EXPIRETIME k", atS},
	}},
	{"deletion", false, []oracleLine{ex("EXPIRE k 0 NX"), ex("EXISTS k"), ex("EXPIRE k 0"), ex("EXISTS k"), ex("EXPIRE k 10"), ex("TTL k"), ex("PERSIST k"), ex("EXPIRETIME k"), ex("PEXPIRETIME k")}},
	{"negative", false, []oracleLine{ex("EXPIRE k -5 XX"), ex("EXISTS k")}},
	{"past instant", false, []oracleLine{ex("EXPIREAT k 1 GT"), ex("EXPIREAT k 1 LT"), ex("TOUCH k")}},
	{"pexpireat now", false, []oracleLine{ex("PEXPIREAT k -1"), ex("TOUCH k k")}},
	{"min pexpire", false, []oracleLine{ex("PEXPIRE k -9223372036854775808"), ex("EXISTS k")}},
	{"errors", false, []oracleLine{
		ex("EXPIRE k 10 NX XX"), ex("EXPIRE k 10 nx gt"), ex("EXPIRE k 10 LT NX"), ex("EXPIRE nokey 10 NX NX"), ex("EXPIRE k 10 GT LT"),
		ex("EXPIRE k abc Foo"), ex("EXPIRE k 10 20"), ex("EXPIRE k abc"), ex("EXPIRE k +10"), ex("EXPIRE k 010"), ex("EXPIRE k -0"),
		ex("EXPIRE k 1.5"), ex("PEXPIRE k 9223372036854775807"), ex("PEXPIRE k 9223372036854000000"),
		ex("EXPIRE k 9223372036854775"), ex("EXPIRE k 9223372036854000"), ex("EXPIRE k -9223372036854775808"),
		ex("EXPIREAT k 9223372036854776"), ex("EXPIRE k"), ex("PERSIST"), ex("PERSIST k j"), ex("EXPIRETIME"), ex("TOUCH"),
		{"PTTL k", inMs},
	}},
	{"far future", false, []oracleLine{
		ex("EXPIREAT k 9223372036854775"), ex("PEXPIRETIME k"), ex("EXPIRETIME k"),
		ex("PEXPIREAT k 9223372036854775807"), ex("PEXPIRETIME k"), ex("EXPIRETIME k"), {"TTL k", inSAbs},
		ex("EXPIRE k 10 GT"), ex("EXPIRE k 10 LT"), {"TTL k", inS},
	}},
	{"missing keys", false, []oracleLine{
		ex("EXPIRE nokey 10"), ex("PEXPIRE nokey 10 XX"), ex("EXPIREAT nokey 1"), ex("PERSIST nokey"),
		ex("EXPIRETIME nokey"), ex("PEXPIRETIME nokey"), ex("TOUCH k nokey k"), ex("TOUCH nokey"),
	}},
	{"multi", false, []oracleLine{
		ex("MULTI"), ex("EXPIRE k 100 XX"), ex("PERSIST k"), ex("EXPIRE k 10 GT"), ex("EXPIRE k 0"), ex("EXISTS k"), ex("EXEC"),
	}},
	// RENAME and RENAMENX: the expiry moves with the key; a missing source
	// is an error whatever the destination; a key renamed to itself.
	{"rename", false, []oracleLine{
		ex("RENAME k j"), ex("EXISTS k"), {"TTL j", inS}, {"PTTL j", inMs}, ex("RENAME k j"), ex("RENAMENX k j"),
		ex("RENAME j j"), ex("RENAMENX j j"), ex("RENAMENX j k"), ex("EXISTS j"), {"TTL k", inS},
		ex("PERSIST k"), ex("RENAME k j"), ex("TTL j"), ex("RENAME nokey nokey"), ex("RENAMENX nokey j"),
		ex("RENAME k"), ex("RENAMENX k j x"),
		ex("MULTI"), ex("RENAME j k"), ex("RENAMENX k j"), ex("RENAME nokey k"), ex("EXEC"),
	}},
	// An invalid option is queued and answers its error inside EXEC's
	// array; the rest of the transaction runs.
	{"multi-invalid-option", false, []oracleLine{
		ex("MULTI"), ex("EXPIRE k 100 FOO"), ex("EXPIRE k 100 NX XX"), ex("PERSIST k"), ex("EXPIRETIME k"), ex("EXEC"),
	}},
}

// TestExpireCommandsAgainstRedis runs expireOracleCases on Redcell and
// redis-server and compares every reply.
func TestExpireCommandsAgainstRedis(t *testing.T) {
	t.Parallel()
	rd := startRedis(t)
	n := startTestNode(t, "expire-oracle")
	rc := mustDial(t, n.addr())
	for _, tc := range expireOracleCases {
		// Redcell's clock frozen at a whole second at or after Redis's
		// now, so that absolute instants mean the same on both.
		base := ceilSecond(max(replicatedClock(t, rc)+second, redisNowMs(t, rd)*1e6))
		setClock(t, rc, base)
		// Redcell: a CL key with redis-cell's expiry of 60 s; Redis: a
		// string with the same.
		mustDo(t, rc, "DEL", "k", "j")
		if v, ok := mustDo(t, rc, "CL.THROTTLE", "k", "0", "1", "60").ints(); !ok || v[0] != 0 {
			t.Fatalf("%s: CL.THROTTLE: %v", tc.name, v)
		}
		mustDo(t, rd, "DEL", "k", "j")
		expectReply(t, rd, wantStatus("OK"), "SET", "k", "v", "PX", "60000")
		if tc.persist {
			expectReply(t, rc, wantInt(1), "PERSIST", "k")
			expectReply(t, rd, wantInt(1), "PERSIST", "k")
		}
		rcMs, rdMs := base/1e6, redisNowMs(t, rd)
		for _, l := range tc.lines {
			gotRC := mustDo(t, rc, fill(l.line, rcMs)...)
			gotRD := mustDo(t, rd, fill(l.line, rdMs)...)
			if !sameReply(l.cmp, gotRC, gotRD, rcMs, rdMs) {
				t.Errorf("%s: %s: Redcell %v, Redis %v", tc.name, l.line, gotRC, gotRD)
			}
		}
	}
}

// fill splits line into arguments with {s+N} and {ms+N} made instants from
// nowMs.
func fill(line string, nowMs int64) []string {
	args := strings.Fields(line)
	for i, a := range args {
		var base int64
		switch {
		case strings.HasPrefix(a, "{s+"):
			base = nowMs / 1000
		case strings.HasPrefix(a, "{ms+"):
			base = nowMs
		default:
			continue
		}
		off, _ := strconv.ParseInt(strings.TrimSuffix(a[strings.Index(a, "+")+1:], "}"), 10, 64)
		args[i] = strconv.FormatInt(base+off, 10)
	}
	return args
}

// sameReply compares a Redcell reply with Redis's as cmp says.
func sameReply(cmp int, rc, rd reply, rcMs, rdMs int64) bool {
	if cmp == exact || rc.kind != ':' || rd.kind != ':' || rc.num < 0 || rd.num < 0 {
		return rc.String() == rd.String()
	}
	a, b, tol := rc.num, rd.num, int64(1000)
	switch cmp {
	case inS:
		tol = 1
	case atMs:
		a, b = a-rcMs, b-rdMs
	case atS:
		a, b, tol = a-rcMs/1000, b-rdMs/1000, 1
	case inSAbs:
		a, b, tol = a+rcMs/1000, b+rdMs/1000, 1
	}
	return a-b <= tol && b-a <= tol
}

// TestClusterExpireThroughFollower: the expiry commands sent to a follower
// are forwarded to the leader, decided at the entry's now and applied alike
// on every replica: the follower's READONLY reads then answer the same
// expiries from its own state, the key set to expire is gone everywhere
// once the clock passes it, and the replicas agree (RAFT DIGEST).
func TestClusterExpireThroughFollower(t *testing.T) {
	c := startCluster(t, 3)
	leader := c.waitLeader()
	lc := mustDial(t, c.nodes[leader].addr())
	// Frozen at or after the wall clock: READONLY reads on followers are
	// judged at max(their clock, the replicated clock).
	base := ceilSecond(max(replicatedClock(t, lc)+second, time.Now().UnixNano()))
	setClock(t, lc, base)
	follower := (leader + 1) % 3
	fc := mustDial(t, c.nodes[follower].addr())
	for _, k := range []string{"e:a", "e:b", "e:c"} {
		if v, ok := mustDo(t, fc, "CL.THROTTLE", k, "0", "1", "60").ints(); !ok || v[0] != 0 {
			t.Fatalf("CL.THROTTLE %s through the follower: %v", k, v)
		}
	}
	baseMs := base / 1e6
	for _, s := range []struct {
		args []string
		want want
	}{
		{[]string{"EXPIRE", "e:a", "100", "XX"}, wantInt(1)},
		{[]string{"TTL", "e:a"}, wantInt(100)},
		{[]string{"PEXPIRE", "e:b", "30500"}, wantInt(1)},
		{[]string{"PERSIST", "e:c"}, wantInt(1)},
		{[]string{"EXPIRE", "e:c", "10", "GT"}, wantInt(0)},
		{[]string{"TTL", "e:c"}, wantInt(-1)},
		{[]string{"EXPIRE", "e:a", "70", "LT"}, wantInt(1)},
		{[]string{"PEXPIRETIME", "e:a"}, wantInt(baseMs + 70000)},
		{[]string{"EXPIRE", "nokey", "10"}, wantInt(0)},
		{[]string{"EXPIRE", "e:a", "1", "GT", "LT"}, wantErr("ERR GT and LT options at the same time are not compatible")},
	} {
		expectReply(t, fc, s.want, s.args...)
	}
	c.waitConverged(opTimeout)
	expectReply(t, fc, wantStatus("OK"), "READONLY")
	c.eachReadOnly(func(i int, nc *respConn) {
		expectReply(t, nc, wantInt(baseMs+70000), "PEXPIRETIME", "e:a")
		expectReply(t, nc, wantInt(baseMs+30500), "PEXPIRETIME", "e:b")
		expectReply(t, nc, wantInt(-1), "PEXPIRETIME", "e:c")
	})
	// Past e:b's instant: a write moves the replicated clock there, and
	// e:b is gone on every node (swept or not), e:c still there.
	setClock(t, lc, base+31*second)
	expectReply(t, lc, wantInt(1), "TOUCH", "e:a", "e:b")
	expectReply(t, lc, wantInt(0), "DEL", "nokey") // an entry at the new now
	c.waitConverged(opTimeout)
	c.eachReadOnly(func(i int, nc *respConn) {
		expectReply(t, nc, wantInt(-2), "PTTL", "e:b")
		expectReply(t, nc, wantInt(-1), "TTL", "e:c")
	})
	c.compareReplicas("after the expiry commands")
}

// TestExpirySurvivesSnapshotRestart: an explicit expiry, a persisted CL key
// and an expiry at PEXPIREAT's maximum are in the snapshot SAVE writes and
// answer the same after SIGKILL and a restart from it; the explicit expiry
// still ends the key at its instant.
func TestExpirySurvivesSnapshotRestart(t *testing.T) {
	t.Parallel()
	n := startTestNode(t, "expire-snapshot")
	c := mustDial(t, n.addr())
	base := freshBase(t, c)
	baseMs := base / 1e6
	for _, k := range []string{"x", "p", "w"} {
		if v, ok := mustDo(t, c, "CL.THROTTLE", k, "0", "1", "60").ints(); !ok || v[0] != 0 {
			t.Fatalf("CL.THROTTLE %s: %v", k, v)
		}
	}
	expectReply(t, c, wantInt(1), "PEXPIRE", "x", "123456")
	expectReply(t, c, wantInt(1), "PERSIST", "p")
	expectReply(t, c, wantInt(1), "PEXPIREAT", "w", "9223372036854775807")
	expectReply(t, c, wantStatus("OK"), "SAVE")
	c = killAndRestoreSnapshot(t, n)
	setClock(t, c, base)
	expectReply(t, c, wantInt(baseMs+123456), "PEXPIRETIME", "x")
	expectReply(t, c, wantInt(-1), "TTL", "p")
	expectReply(t, c, wantInt(9223372036854775807), "PEXPIRETIME", "w")
	setClock(t, c, base+123457*1e6)
	expectReply(t, c, wantInt(0), "DEL", "nokey") // an entry at the new now
	expectReply(t, c, wantInt(0), "EXISTS", "x")
	expectReply(t, c, wantInt(2), "TOUCH", "p", "w")
}
