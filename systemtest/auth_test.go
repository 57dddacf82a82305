package systemtest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// systemPass is the password of the nodes started by startPasswordNode.
const systemPass = "system-test-pass-7"

// startPasswordNode starts a node owned by the test that requires
// systemPass, given in a file (--requirepass-file) so that it is not on the
// process list; the file ends with a newline, which is not part of it.
func startPasswordNode(t *testing.T) *node {
	t.Helper()
	passFile := filepath.Join(t.TempDir(), "requirepass")
	if err := os.WriteFile(passFile, []byte(systemPass+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	n := newNode("requirepass", t.TempDir(), t.TempDir(), "--requirepass-file", passFile)
	n.password = systemPass
	registerNodeCleanup(t, n, 0)
	if err := n.start(); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestRequirePass runs the binary with --requirepass-file and checks what a
// user sees: NOAUTH until AUTH, the exact WRONGPASS, HELLO AUTH, redis-cli
// -a and go-redis with Password; CONFIG SET requirepass changes it for new
// connections.
func TestRequirePass(t *testing.T) {
	n := startPasswordNode(t)
	c := mustDial(t, n.addr())
	expectReply(t, c, wantErr("NOAUTH Authentication required."), "CL.THROTTLE", "k", "1", "1", "1")
	expectReply(t, c, wantErr("NOAUTH Authentication required."), "INFO")
	expectReply(t, c, wantErr("WRONGPASS invalid username-password pair or user is disabled."), "AUTH", "not-it")
	expectReply(t, c, wantErr("WRONGPASS invalid username-password pair or user is disabled."), "AUTH", "default", systemPass+"\n")
	expectReply(t, c, wantStatus("OK"), "AUTH", systemPass)
	expectReply(t, c, wantStatus("PONG"), "PING")
	rawExchange(t, c, "*5\r\n:0\r\n:2\r\n:1\r\n:-1\r\n:1\r\n", "CL.THROTTLE", "k", "1", "1", "1")

	t.Run("redis-cli", func(t *testing.T) {
		cli := requireTool(t, "redis-cli")
		port := strconv.Itoa(n.port)
		if out := runTool(t, nil, cli, "-p", port, "--no-auth-warning", "-a", systemPass, "PING"); out != "PONG\n" {
			t.Errorf("redis-cli -a: %q", out)
		}
		if out := runTool(t, nil, cli, "-p", port, "PING"); strings.TrimSpace(out) != "NOAUTH Authentication required." {
			t.Errorf("redis-cli without -a: %q", out)
		}
		if out := runTool(t, nil, cli, "-p", port, "--no-auth-warning", "-3", "--user", "default", "--pass", systemPass, "CL.THROTTLE", "cli", "1", "1", "1"); out != "0\n2\n1\n-1\n1\n" {
			t.Errorf("redis-cli -3 --user default --pass: %q", out)
		}
	})

	t.Run("go-redis", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for _, proto := range []int{3, 2} {
			rdb := redis.NewClient(&redis.Options{Addr: n.addr(), Protocol: proto, Password: systemPass, MaxRetries: -1})
			got, err := rdb.Do(ctx, "CL.THROTTLE", "gr"+strconv.Itoa(proto), 1, 1, 1).Result()
			if err != nil || len(got.([]any)) != 5 {
				t.Errorf("RESP%d with the password: %v, %v", proto, got, err)
			}
			rdb.Close()
			none := redis.NewClient(&redis.Options{Addr: n.addr(), Protocol: proto, MaxRetries: -1})
			err = none.Ping(ctx).Err()
			var rerr redis.Error
			if !errors.As(err, &rerr) || err.Error() != "NOAUTH Authentication required." {
				t.Errorf("RESP%d without the password: %v", proto, err)
			}
			none.Close()
		}
	})

	t.Run("config_set_at_runtime", func(t *testing.T) {
		expectReply(t, c, wantStatus("OK"), "CONFIG", "SET", "requirepass", "second-pass")
		expectReply(t, c, wantStatus("PONG"), "PING") // this connection stays authenticated
		late := mustDial(t, n.addr())
		expectReply(t, late, wantErr("WRONGPASS invalid username-password pair or user is disabled."), "AUTH", systemPass)
		expectReply(t, late, wantStatus("OK"), "AUTH", "second-pass")
		expectReply(t, c, wantStatus("OK"), "CONFIG", "SET", "requirepass", systemPass)
	})

	// The password never appears on the command line.
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(n.pid()) + "/cmdline")
	if err == nil && strings.Contains(string(cmdline), systemPass) {
		t.Errorf("the password is on the process list: %q", cmdline)
	}
}
