package systemtest

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// logLines is what a node wrote to its log since off, without the
// harness's own "=== systemtest:" lines.
func logLines(n *node, off int64) []string {
	var lines []string
	for _, l := range strings.Split(n.logSince(off), "\n") {
		if l == "" || strings.HasPrefix(l, "=== systemtest:") {
			continue
		}
		lines = append(lines, l)
	}
	return lines
}

// someRequests sends requests of many kinds, allowed, limited and
// refused, on fresh connections and on one pipelined connection: what a
// node serves all day, none of which should cost a log line at info.
func someRequests(t *testing.T, addr string) {
	t.Helper()
	for i := 0; i < 50; i++ { // a connection per request, as some clients do
		c := mustDial(t, addr)
		c.send("CL.THROTTLE", fmt.Sprintf("conn:%d", i), "1", "60", "60")
		c.send("NOSUCHCOMMAND", "x")
		c.send("CL.THROTTLE", "bad", "x")
		if err := c.flush(); err != nil {
			t.Fatal(err)
		}
		for j := 0; j < 3; j++ {
			if _, err := c.read(); err != nil {
				t.Fatal(err)
			}
		}
		c.close()
	}
	c := mustDial(t, addr)
	defer c.close()
	const pipelined = 2000
	for i := 0; i < pipelined; i++ {
		switch i % 8 {
		case 0:
			c.send("TB.TAKE", "tb", "10", "1000")
		case 1:
			c.send("SL.HIT", "sl", "5", "60000")
		case 2:
			c.send("SET", "s", "v")
		case 3:
			c.send("GET", "nokey")
		case 4:
			c.send("EVAL", "return redis.call('INCR', KEYS[1])", "1", "ctr")
		case 5:
			c.send("AUTH", "wrong") // no password set: an error reply
		case 6:
			c.send("INCR", "s") // not an integer
		default:
			c.send("CL.THROTTLE", "hot", "1", "1", "3600") // limited after the first
		}
	}
	if err := c.flush(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < pipelined; i++ {
		if _, err := c.read(); err != nil {
			t.Fatal(err)
		}
	}
	expectReply(t, c, wantStatus("OK"), "MULTI")
	expectReply(t, c, wantStatus("QUEUED"), "INCR", "m")
	if r, err := c.do("EXEC"); err != nil || r.isErr() {
		t.Fatalf("EXEC: %v %v", r, err)
	}
}

// TestNoLogLinePerRequest: at the default level a node that serves
// thousands of requests of every kind (allowed, limited, refused, new
// connections, scripts, transactions) logs nothing for them.
func TestNoLogLinePerRequest(t *testing.T) {
	t.Parallel()
	n := startTestNode(t, "quiet")
	off := n.logSize()
	someRequests(t, n.addr())
	// A line written while the requests were served is in the file by the
	// time their replies were read (a log line is one write to stderr
	// before, or concurrently with, the reply); the PING's round trip
	// orders this read after any of them.
	c := mustDial(t, n.addr())
	expectReply(t, c, wantStatus("PONG"), "PING")
	c.close()
	if lines := logLines(n, off); len(lines) > 0 {
		t.Errorf("%d lines logged at info while serving requests:\n%s", len(lines), strings.Join(lines, "\n"))
	}
}

// TestJSONLogLines: with --log-format json every line the node writes,
// from start to a clean stop and at debug (Pebble's and Raft's own lines
// included, and a script's redis.log), is one JSON object with time,
// level and msg.
func TestJSONLogLines(t *testing.T) {
	t.Parallel()
	n := startTestNode(t, "json", "--log-format", "json", "--log-level", "debug")
	someRequests(t, n.addr())
	c := mustDial(t, n.addr())
	expectReply(t, c, wantBulk(""), "EVAL", "redis.log(redis.LOG_WARNING, 'from a script') return ''", "0")
	expectReply(t, c, wantStatus("OK"), "SAVE") // a snapshot: raft's and the group's lines
	c.close()
	n.mustStop(t)

	lines := logLines(n, 0)
	components := map[string]bool{}
	script := false
	for i, l := range lines {
		var obj map[string]any
		if err := json.Unmarshal([]byte(l), &obj); err != nil {
			t.Errorf("line %d is not a JSON object (%v): %s", i+1, err, l)
			continue
		}
		ts, _ := obj["time"].(string)
		if _, err := time.Parse(time.RFC3339Nano, ts); err != nil {
			t.Errorf("line %d: time %q: %v", i+1, obj["time"], err)
		}
		switch obj["level"] {
		case "DEBUG", "INFO", "WARN", "ERROR":
		default:
			t.Errorf("line %d: level %v", i+1, obj["level"])
		}
		msg, ok := obj["msg"].(string)
		if !ok || msg == "" {
			t.Errorf("line %d: no msg: %s", i+1, l)
		}
		if c, ok := obj["component"].(string); ok {
			components[c] = true
		}
		if s, ok := obj["source"].(string); ok {
			components[s] = true
		}
		script = script || msg == "from a script"
	}
	// The adapters write through the same handler: raft's hclog lines and
	// Pebble's (at debug: the WALs found on start) are JSON too.
	for _, c := range []string{"raft", "pebble"} {
		if !components[c] {
			t.Errorf("no line from %s among the %d lines", c, len(lines))
		}
	}
	if !script {
		t.Error("the script's redis.log line is missing")
	}
	if t.Failed() {
		t.Logf("log:\n%s", strings.Join(lines, "\n"))
	}
}

// TestRepeatedClientWarningIsRateLimited: a client speaking HTTP to the
// Redis port is closed with a warning, as Redis does; twenty of them (a
// health checker pointed at the wrong port probes all day) cost the log
// one line, not twenty.
func TestRepeatedClientWarningIsRateLimited(t *testing.T) {
	t.Parallel()
	n := startTestNode(t, "httpprobe")
	off := n.logSize()
	for i := 0; i < 20; i++ {
		c := mustDial(t, n.addr())
		if err := c.writeRaw([]byte("POST / HTTP/1.1\r\nHost: redcell\r\n\r\n")); err != nil {
			t.Fatal(err)
		}
		if err := c.expectClosed(); err != nil {
			t.Fatalf("probe %d: %v", i, err)
		}
		c.close()
	}
	warned := 0
	for _, l := range logLines(n, off) {
		if strings.Contains(l, "cross-protocol") {
			warned++
		}
	}
	if warned != 1 {
		t.Errorf("%d warnings for 20 HTTP probes, want 1:\n%s", warned, strings.Join(logLines(n, off), "\n"))
	}
}
