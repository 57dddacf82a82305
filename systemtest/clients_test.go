package systemtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestRealClients drives the node with the clients users have: go-redis v9
// (RESP3 by default, and RESP2), redis-cli (plain, -3, --pipe) and
// redis-benchmark. Replies are checked exactly at a frozen instant.
func TestRealClients(t *testing.T) {
	n := sharedNode(t)
	c := mustDial(t, n.addr())
	freshBase(t, c)
	expectReply(t, c, wantStatus("OK"), "FLUSHALL")

	t.Run("go-redis_resp3", func(t *testing.T) { testGoRedis(t, n, 3) })
	t.Run("go-redis_resp2", func(t *testing.T) { testGoRedis(t, n, 2) })
	t.Run("redis-cli", func(t *testing.T) { testRedisCLI(t, n, c) })
	t.Run("redis-benchmark", func(t *testing.T) { testRedisBenchmark(t, n) })

	// The session every client runs (clients_session_test.go).
	t.Run("session/go-redis_defaults", func(t *testing.T) { testGoRedisSession(t, n, 0) })
	t.Run("session/go-redis_resp2", func(t *testing.T) { testGoRedisSession(t, n, 2) })
	t.Run("session/rueidis_defaults", func(t *testing.T) { testRueidis(t, n, false) })
	t.Run("session/rueidis_resp2", func(t *testing.T) { testRueidis(t, n, true) })
	t.Run("session/redigo", func(t *testing.T) { testRedigo(t, n) })
	t.Run("session/redis-cli", func(t *testing.T) { testRedisCLIScript(t, n) })
	t.Run("session/redis-py", func(t *testing.T) { testRedisPy(t, n) })
	t.Run("session/ioredis_defaults", func(t *testing.T) { testNodeClient(t, n, "ioredis", "default", 3) })
	t.Run("session/ioredis_resp2", func(t *testing.T) { testNodeClient(t, n, "ioredis", "2", 2) })
	t.Run("session/node-redis_defaults", func(t *testing.T) { testNodeClient(t, n, "node-redis", "default", 3) })
	t.Run("session/node-redis_resp2", func(t *testing.T) { testNodeClient(t, n, "node-redis", "2", 2) })
}

func testGoRedis(t *testing.T, n *node, protocol int) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	name := fmt.Sprintf("systemtest-resp%d", protocol)
	rdb := redis.NewClient(&redis.Options{
		Addr:       n.addr(),
		Protocol:   protocol,
		ClientName: name, // HELLO ... SETNAME, or CLIENT SETNAME: must answer +OK
		MaxRetries: -1,   // see every error instead of a retried success
	})
	defer rdb.Close()
	prefix := name + ":"

	if got, err := rdb.Ping(ctx).Result(); err != nil || got != "PONG" {
		t.Fatalf("PING: %q, %v", got, err)
	}
	if got, err := rdb.ClientGetName(ctx).Result(); err != nil || got != name {
		t.Errorf("CLIENT GETNAME: %q, %v; want %q", got, err, name)
	}
	hello, err := rdb.Do(ctx, "HELLO").Result()
	if err != nil {
		t.Fatalf("HELLO: %v", err)
	}
	if p := helloProto(hello); p != int64(protocol) {
		t.Errorf("HELLO on a go-redis connection: proto %d, want %d (%v)", p, protocol, hello)
	}

	got, err := rdb.Do(ctx, "CL.THROTTLE", prefix+"k", 15, 30, 60).Result()
	wantReply := []interface{}{int64(0), int64(16), int64(15), int64(-1), int64(2)}
	if err != nil || !reflect.DeepEqual(got, wantReply) {
		t.Errorf("Do(CL.THROTTLE %sk 15 30 60) = %#v, %v; want %#v", prefix, got, err, wantReply)
	}

	// A pipeline of 100 decisions on one key at one instant.
	pipe := rdb.Pipeline()
	cmds := make([]*redis.Cmd, 100)
	for i := range cmds {
		cmds[i] = pipe.Do(ctx, "CL.THROTTLE", prefix+"pipe", 199, 1, 1)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatalf("pipeline of 100 CL.THROTTLE: %v", err)
	}
	for i, cmd := range cmds {
		want := []interface{}{int64(0), int64(200), int64(199 - i), int64(-1), int64(i + 1)}
		if got, err := cmd.Result(); err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("pipelined CL.THROTTLE #%d = %#v, %v; want %#v", i, got, err, want)
			break
		}
	}

	if got, err := rdb.Exists(ctx, prefix+"k", prefix+"pipe", prefix+"none").Result(); err != nil || got != 2 {
		t.Errorf("EXISTS: %d, %v; want 2", got, err)
	}
	if got, err := rdb.Del(ctx, prefix+"k", prefix+"k").Result(); err != nil || got != 1 {
		t.Errorf("DEL k k: %d, %v; want 1", got, err)
	}
	if got, err := rdb.Exists(ctx, prefix+"k").Result(); err != nil || got != 0 {
		t.Errorf("EXISTS after DEL: %d, %v; want 0", got, err)
	}
	if got, err := rdb.Do(ctx, "CL.THROTTLE", prefix+"k", 15, 30, 60).Result(); err != nil || !reflect.DeepEqual(got, wantReply) {
		t.Errorf("CL.THROTTLE after DEL = %#v, %v; want a full bucket %#v", got, err, wantReply)
	}

	// Error replies reach the caller as redis.Error with the exact text.
	err = rdb.Do(ctx, "CL.THROTTLE", prefix+"k", "x", 1, 1).Err()
	var rerr redis.Error
	if !errors.As(err, &rerr) || err.Error() != "Cell error: Store error: Couldn't parse as integer: x" {
		t.Errorf("CL.THROTTLE with a bad integer: %v (%T)", err, err)
	}
}

// helloProto extracts proto from a HELLO reply as go-redis decodes it (a map
// under RESP3, a flat list under RESP2).
func helloProto(v interface{}) int64 {
	switch h := v.(type) {
	case map[interface{}]interface{}:
		p, _ := h["proto"].(int64)
		return p
	case []interface{}:
		for i := 0; i+1 < len(h); i += 2 {
			if h[i] == "proto" {
				p, _ := h[i+1].(int64)
				return p
			}
		}
	}
	return -1
}

// requireTool finds a command-line tool: missing is a failure in CI
// (CI=true) and a skip elsewhere.
func requireTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is required in CI: %v", name, err)
		}
		t.Skipf("%s not installed: %v", name, err)
	}
	return p
}

// runTool runs a tool with a deadline and returns its combined output.
func runTool(t *testing.T, stdin []byte, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

func testRedisCLI(t *testing.T, n *node, c *respConn) {
	cli := requireTool(t, "redis-cli")
	port := strconv.Itoa(n.port)

	// Not on a terminal, redis-cli prints each integer on a line of its own.
	if out := runTool(t, nil, cli, "-p", port, "CL.THROTTLE", "cli:k", "15", "30", "60"); out != "0\n16\n15\n-1\n2\n" {
		t.Errorf("redis-cli CL.THROTTLE: got %q", out)
	}
	if out := runTool(t, nil, cli, "-3", "-p", port, "CL.THROTTLE", "cli:k", "15", "30", "60"); out != "0\n16\n14\n-1\n4\n" {
		t.Errorf("redis-cli -3 CL.THROTTLE: got %q", out)
	}
	if out := runTool(t, nil, cli, "-p", port, "CL.THROTTLE", "cli:k", "x", "30", "60"); !strings.Contains(out, "Cell error: Store error: Couldn't parse as integer: x") {
		t.Errorf("redis-cli CL.THROTTLE with a bad integer: got %q", out)
	}

	// Mass insertion: redis-cli --pipe ends with an ECHO of random bytes and
	// waits for it to come back, so ECHO must be binary-safe.
	const mass = 1000
	var in bytes.Buffer
	for i := 0; i < mass; i++ {
		in.WriteString("*5\r\n$11\r\nCL.THROTTLE\r\n$8\r\ncli:pipe\r\n$4\r\n5000\r\n$1\r\n1\r\n$1\r\n1\r\n")
	}
	out := runTool(t, in.Bytes(), cli, "-p", port, "--pipe")
	if !strings.Contains(out, fmt.Sprintf("errors: 0, replies: %d", mass)) {
		t.Errorf("redis-cli --pipe: got %q", out)
	}
	expectReply(t, c, wantInts(0, 5001, 5001-mass, -1, mass), "CL.PEEK", "cli:pipe", "5000", "1", "1", "0")
}

func testRedisBenchmark(t *testing.T, n *node) {
	bench := requireTool(t, "redis-benchmark")
	port := strconv.Itoa(n.port)
	runs := [][]string{
		{"-p", port, "-c", "50", "-P", "16", "-r", "100000", "-n", "20000", "-q", "CL.THROTTLE", "user:__rand_int__", "15", "30", "60", "1"},
		{"-p", port, "-c", "50", "-P", "1", "-r", "100000", "-n", "5000", "-q", "CL.THROTTLE", "user:__rand_int__", "15", "30", "60", "1"},
		{"-p", port, "-c", "50", "-P", "16", "-r", "100000", "-n", "10000", "-q", "TB.TAKE", "tb:__rand_int__", "10", "1", "1000"},
		{"-p", port, "-c", "50", "-P", "16", "-r", "100000", "-n", "10000", "-q", "SL.HIT", "sl:__rand_int__", "10", "60000"},
	}
	for _, args := range runs {
		out := runTool(t, nil, bench, args...)
		if strings.Contains(out, "rror") || strings.Contains(out, "ERR") {
			t.Errorf("redis-benchmark %s: error lines in the output:\n%s", strings.Join(args, " "), out)
		}
		if !strings.Contains(out, "requests per second") {
			t.Errorf("redis-benchmark %s: no result line:\n%s", strings.Join(args, " "), out)
		}
		t.Logf("redis-benchmark %s: %s", strings.Join(args[2:10], " "), lastResultLine(out))
	}
}

// lastResultLine is the final line of redis-benchmark -q output (it redraws
// progress with carriage returns).
func lastResultLine(out string) string {
	out = strings.TrimSpace(out)
	if i := strings.LastIndexAny(out, "\r\n"); i >= 0 {
		return strings.TrimSpace(out[i+1:])
	}
	return out
}
