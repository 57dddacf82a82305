package systemtest

import (
	"bufio"
	"bytes"
	"strconv"
	"testing"
	"time"
)

// One request used to be able to poison the log: a DEL of 1,048,577 keys was
// accepted and committed, then every replica stopped applying it (the
// decoder capped key counts at 1<<20), on every restart. These tests send
// boundary-sized and oversized requests of every command that writes and
// require a clear answer for each, then restart the node on the same data
// directory — after kill -9 and after SIGTERM — and require it to come up
// with the state those answers promised.

// maxRequestLogBytes is commands.MaxRequestLogBytes, repeated here because
// the limit is part of what clients see.
const maxRequestLogBytes = 16 << 20

// millionKeys is one more than the decoder's old cap.
const millionKeys = 1<<20 + 1

// tooLarge is the answer to a write request of n bytes in the log.
func tooLarge(n int) string {
	return "ERR request too large for the replicated log: " + strconv.Itoa(n) + " bytes, the limit is " + strconv.Itoa(maxRequestLogBytes)
}

// sendBig buffers one command of name and n generated arguments straight
// into c's writer (no per-argument strings; the buffered writer flushes as it
// fills). arg appends argument i to dst.
func sendBig(c *respConn, name string, n int, arg func(dst []byte, i int) []byte) {
	_ = c.nc.SetWriteDeadline(time.Now().Add(opTimeout)) // the writer flushes on its own as it fills
	w := c.bw
	w.WriteString("*" + strconv.Itoa(n+1) + "\r\n")
	writeBulk(w, []byte(name))
	var b []byte
	for i := 0; i < n; i++ {
		b = arg(b[:0], i)
		writeBulk(w, b)
	}
}

func writeBulk(w *bufio.Writer, b []byte) {
	w.WriteByte('$')
	w.WriteString(strconv.Itoa(len(b)))
	w.WriteString("\r\n")
	w.Write(b)
	w.WriteString("\r\n")
}

// shortKey is prefix + i in base 36: at most 5 bytes for the million keys.
func shortKey(prefix byte) func([]byte, int) []byte {
	return func(dst []byte, i int) []byte { return strconv.AppendInt(append(dst, prefix), int64(i), 36) }
}

// bigReply sends a big command and reads its one reply.
func bigReply(t *testing.T, c *respConn, what string, name string, n int, arg func([]byte, int) []byte) reply {
	t.Helper()
	start := time.Now()
	sendBig(c, name, n, arg)
	r := readN(t, c, 1)[0]
	t.Logf("%s: answered %v in %v", what, r, time.Since(start).Round(time.Millisecond))
	return r
}

// throttleKeyOfSize sends CL.THROTTLE with a key of keyLen bytes and
// "4 1 100": in the log (request/codec.go) that request takes 1 (code) +
// 1 (key count) + 4 (key length varint) + keyLen + 1 (argument count) +
// 6 (T = 100 s, zig-zag varint) + 1 (limit 5) + 1 (quantity 1) bytes.
const throttleOverhead = 1 + 1 + 4 + 1 + 6 + 1 + 1

func throttleKeyOfSize(t *testing.T, c *respConn, keyLen int) reply {
	t.Helper()
	key := bytes.Repeat([]byte{'K'}, keyLen)
	params := [][]byte{key, []byte("4"), []byte("1"), []byte("100")}
	return bigReply(t, c, "CL.THROTTLE with a key of "+strconv.Itoa(keyLen)+" bytes", "CL.THROTTLE", len(params),
		func(dst []byte, i int) []byte { return append(dst, params[i]...) })
}

// delOfSize sends name with 131072 keys whose request takes exactly size
// bytes: 1 (code) + 3 (key count varint) + 131071 keys of 127 bytes (128 with
// their length byte) + one last key making up the rest (size at most the
// limit + 4, so that key stays under 128 bytes and its length takes one
// byte) + 1 (argument count, 0).
func delOfSize(t *testing.T, c *respConn, name string, size int) reply {
	t.Helper()
	const n, keyLen = 131072, 127
	key := bytes.Repeat([]byte{'D'}, keyLen)
	last := bytes.Repeat([]byte{'E'}, size-(1+3+(n-1)*(1+keyLen))-1-1)
	return bigReply(t, c, name+" taking "+strconv.Itoa(size)+" bytes", name, n, func(dst []byte, i int) []byte {
		if i == n-1 {
			return append(dst, last...)
		}
		return append(dst, key...)
	})
}

func TestPoisonRequestsAndRestart(t *testing.T) {
	t.Parallel()
	n := startTestNode(t, "poison")
	c := mustDial(t, n.addr())
	origin := freshBase(t, c)

	// FLUSHALL and FLUSHDB, with each mode, go through the log too.
	expectReply(t, c, wantStatus("OK"), "FLUSHALL")
	expectReply(t, c, wantStatus("OK"), "FLUSHALL", "ASYNC")
	expectReply(t, c, wantStatus("OK"), "FLUSHDB")
	expectReply(t, c, wantStatus("OK"), "FLUSHDB", "SYNC")
	expectReply(t, c, wantErr("ERR syntax error"), "FLUSHDB", "SOON")

	// The key whose state must survive everything: 3 of its 5 tokens taken.
	for j := int64(1); j <= 3; j++ {
		expectReply(t, c, wantInts(0, 5, 5-j, -1, 100*j), "CL.THROTTLE", "survivor", "4", "1", "100")
	}
	// Live keys among those of the million-key DEL and UNLINK, one of
	// them beyond the old cap.
	del, unlink := shortKey('m'), shortKey('u')
	for _, k := range [][]byte{del(nil, 0), del(nil, millionKeys-1), unlink(nil, millionKeys-1)} {
		expectReply(t, c, wantInts(0, 5, 4, -1, 100), "CL.THROTTLE", string(k), "4", "1", "100")
	}

	if r := bigReply(t, c, "DEL of 1,048,577 keys", "DEL", millionKeys, del); !wantInt(2).matches(r) {
		t.Fatalf("DEL of %d keys: got %v, want 2", millionKeys, r)
	}
	if r := bigReply(t, c, "UNLINK of 1,048,577 keys", "UNLINK", millionKeys, unlink); !wantInt(1).matches(r) {
		t.Fatalf("UNLINK of %d keys: got %v, want 1", millionKeys, r)
	}

	// At the limit: accepted (the key is stored). One byte over: refused.
	if r := throttleKeyOfSize(t, c, maxRequestLogBytes-throttleOverhead); !wantInts(0, 5, 4, -1, 100).matches(r) {
		t.Fatalf("CL.THROTTLE at the limit: got %v", r)
	}
	if r := throttleKeyOfSize(t, c, maxRequestLogBytes-throttleOverhead+1); !wantErr(tooLarge(maxRequestLogBytes + 1)).matches(r) {
		t.Fatalf("CL.THROTTLE one byte over the limit: got %v, want -%s", r, tooLarge(maxRequestLogBytes+1))
	}
	if r := delOfSize(t, c, "DEL", maxRequestLogBytes); !wantInt(0).matches(r) {
		t.Fatalf("DEL at the limit: got %v, want 0", r)
	}
	if r := delOfSize(t, c, "DEL", maxRequestLogBytes+1); !wantErr(tooLarge(maxRequestLogBytes + 1)).matches(r) {
		t.Fatalf("DEL one byte over the limit: got %v, want -%s", r, tooLarge(maxRequestLogBytes+1))
	}
	if r := delOfSize(t, c, "UNLINK", maxRequestLogBytes+1); !wantErr(tooLarge(maxRequestLogBytes + 1)).matches(r) {
		t.Fatalf("UNLINK one byte over the limit: got %v, want -%s", r, tooLarge(maxRequestLogBytes+1))
	}

	// The node is still deciding, and holds the survivor and the big key.
	expectReply(t, c, wantInts(0, 5, 1, -1, 400), "CL.THROTTLE", "survivor", "4", "1", "100")
	expectReply(t, c, wantInt(2), "DBSIZE")

	// kill -9 first, so the restart replays every entry above from the
	// log; then SIGTERM. Each restart must come up and continue the count.
	n.kill()
	n.mustRestart(t)
	c = mustDial(t, n.addr())
	setClock(t, c, origin) // the entries were stamped at the origin
	expectReply(t, c, wantInt(2), "DBSIZE")
	expectReply(t, c, wantInts(0, 5, 0, -1, 500), "CL.THROTTLE", "survivor", "4", "1", "100")

	n.mustStop(t)
	n.mustRestart(t)
	c = mustDial(t, n.addr())
	setClock(t, c, origin)
	expectReply(t, c, wantInt(2), "DBSIZE")
	expectReply(t, c, wantInts(1, 5, 0, 100, 500), "CL.THROTTLE", "survivor", "4", "1", "100")
}
