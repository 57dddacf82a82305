package server

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redcell/redcell/commands"
)

const testPass = "s3cret-Pa55"

// startAuthNode starts a test node whose server requires testPass.
func startAuthNode(t *testing.T) (*testNode, *Server, string) {
	t.Helper()
	n := startTestNode(t)
	srv, addr := n.serveConfig(Config{RequirePass: testPass})
	return n, srv, addr
}

// TestAuthSession walks one connection through Redis 7's authentication
// replies with a password set, in order (each step depends on the state the
// previous ones left).
func TestAuthSession(t *testing.T) {
	_, _, addr := startAuthNode(t)
	c := dialAddr(t, addr)
	steps := []struct {
		args []string
		want string
	}{
		// Before AUTH: NOAUTH, except for the unknown-command, unknown-
		// subcommand and arity errors, which Redis checks first.
		{[]string{"PING"}, "-NOAUTH Authentication required."},
		{[]string{"CL.THROTTLE", "k", "1", "1", "1"}, "-NOAUTH Authentication required."},
		{[]string{"EXISTS", "k"}, "-NOAUTH Authentication required."},
		{[]string{"CLIENT", "ID"}, "-NOAUTH Authentication required."},
		{[]string{"CONFIG", "GET", "requirepass"}, "-NOAUTH Authentication required."},
		{[]string{"FOO", "bar"}, "-ERR unknown command 'FOO', with args beginning with: 'bar' "},
		{[]string{"CLIENT", "NOPE"}, "-ERR unknown subcommand 'NOPE'. Try CLIENT HELP."},
		{[]string{"CONFIG", "GET"}, "-ERR wrong number of arguments for 'config|get' command"},
		// PING checks its own arguments (arity -1), after the password.
		{[]string{"PING", "a", "b"}, "-NOAUTH Authentication required."},
		{[]string{"CLIENT", "ID", "x"}, "-ERR wrong number of arguments for 'client|id' command"},
		{[]string{"HELLO", "3"}, "-" + "NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time"},
		{[]string{"HELLO"}, "-NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time"},
		{[]string{"HELLO", "4"}, "-NOPROTO unsupported protocol version"},
		{[]string{"HELLO", "3", "AUTH", "default", "wrong"}, "-WRONGPASS invalid username-password pair or user is disabled."},
		{[]string{"HELLO", "3", "AUTH", "bob", testPass}, "-WRONGPASS invalid username-password pair or user is disabled."},
		{[]string{"AUTH", "wrong"}, "-WRONGPASS invalid username-password pair or user is disabled."},
		{[]string{"AUTH", testPass + "x"}, "-WRONGPASS invalid username-password pair or user is disabled."},
		{[]string{"AUTH", testPass[:len(testPass)-1]}, "-WRONGPASS invalid username-password pair or user is disabled."},
		{[]string{"AUTH", ""}, "-WRONGPASS invalid username-password pair or user is disabled."},
		{[]string{"AUTH", "Default", testPass}, "-WRONGPASS invalid username-password pair or user is disabled."},
		{[]string{"AUTH", "a", "b", "c"}, "-ERR syntax error"},
		{[]string{"AUTH"}, "-ERR wrong number of arguments for 'auth' command"},
		{[]string{"PING"}, "-NOAUTH Authentication required."},
		// AUTH password, then everything works.
		{[]string{"AUTH", testPass}, "+OK"},
		{[]string{"PING"}, "+PONG"},
		{[]string{"CONFIG", "GET", "requirepass"}, "*[$requirepass $" + testPass + "]"},
		// A failed AUTH does not log the connection out (as in Redis).
		{[]string{"AUTH", "wrong"}, "-WRONGPASS invalid username-password pair or user is disabled."},
		{[]string{"PING"}, "+PONG"},
		// RESET does.
		{[]string{"RESET"}, "+RESET"},
		{[]string{"PING"}, "-NOAUTH Authentication required."},
		{[]string{"AUTH", "default", testPass}, "+OK"},
		{[]string{"PING"}, "+PONG"},
		{[]string{"RESET"}, "+RESET"},
		// HELLO with AUTH and SETNAME: authenticates, names, switches.
		{[]string{"HELLO", "3", "AUTH", "default", testPass, "SETNAME", "app1"}, hello3},
		{[]string{"CLIENT", "GETNAME"}, "$app1"},
		{[]string{"PING"}, "+PONG"},
		{[]string{"HELLO"}, hello3},
	}
	for i, s := range steps {
		if got := hideIDs(c.do(s.args...)); got != s.want {
			t.Errorf("step %d: %q = %s, want %s", i, s.args, got, s.want)
		}
	}
}

// TestAuthQuitBeforeAuth: QUIT needs no password.
func TestAuthQuitBeforeAuth(t *testing.T) {
	_, _, addr := startAuthNode(t)
	c := dialAddr(t, addr)
	if got := c.do("QUIT"); got != "+OK" {
		t.Errorf("QUIT = %s", got)
	}
	c.expectEOF()
}

// TestAuthPipelines: the unauthenticated limits apply to each command as it
// is read, after the commands before it have run, as Redis executes one
// command before it parses the next. So an AUTH that succeeds lifts the
// limits for the rest of the same write, and one that fails does not.
func TestAuthPipelines(t *testing.T) {
	_, _, addr := startAuthNode(t)
	eleven := encodeCmd("NOSUCH", "a", "b", "c", "d", "e", "f", "g", "h", "i", "j")
	big := encodeCmd("ECHO", strings.Repeat("x", 16385))
	tests := []struct {
		name, input string
		want        []string
		closed      bool
	}{
		{"auth then 11 args", encodeCmd("AUTH", testPass) + eleven,
			[]string{"+OK", "-ERR unknown command 'NOSUCH', with args beginning with: 'a' 'b' 'c' 'd' 'e' 'f' 'g' 'h' 'i' 'j' "}, false},
		{"auth then a big bulk", encodeCmd("AUTH", testPass) + big,
			[]string{"+OK", "$" + strings.Repeat("x", 16385)}, false},
		{"failed auth then 11 args", encodeCmd("AUTH", "nope") + eleven,
			[]string{"-WRONGPASS invalid username-password pair or user is disabled.", "-ERR Protocol error: unauthenticated multibulk length"}, true},
		{"ping then a big bulk", "PING\r\n" + big,
			[]string{"-NOAUTH Authentication required.", "-ERR Protocol error: unauthenticated bulk length"}, true},
		{"10 args and 16384 bytes are allowed", encodeCmd("NOSUCH", "1", "2", "3", "4", "5", "6", "7", "8", strings.Repeat("y", 16384)),
			[]string{"-ERR unknown command 'NOSUCH', with args beginning with: '1' '2' '3' '4' '5' '6' '7' '8' '" + strings.Repeat("y", 128-8*4) + "' "}, false},
		{"hello auth then 11 args", encodeCmd("HELLO", "2", "AUTH", "default", testPass) + eleven,
			[]string{hello2, "-ERR unknown command 'NOSUCH', with args beginning with: 'a' 'b' 'c' 'd' 'e' 'f' 'g' 'h' 'i' 'j' "}, false},
		{"reset logs out before the next command is read", encodeCmd("AUTH", testPass) + encodeCmd("RESET") + eleven,
			[]string{"+OK", "+RESET", "-ERR Protocol error: unauthenticated multibulk length"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := dialAddr(t, addr)
			c.send(tt.input)
			for i, w := range tt.want {
				if got := hideIDs(c.reply()); got != w {
					t.Fatalf("reply %d = %.200s, want %.200s", i, got, w)
				}
			}
			if tt.closed {
				c.expectEOF()
				return
			}
			want := "+PONG"
			if strings.HasPrefix(tt.name, "10 args") { // still unauthenticated
				want = "-NOAUTH Authentication required."
			}
			if got := c.do("PING"); got != want {
				t.Errorf("PING after = %s, want %s", got, want)
			}
		})
	}
}

// TestAuthWithoutPassword: with no password the default user has nopass, as
// in a default Redis: every connection is authenticated, AUTH <password>
// says no password is configured, AUTH default <anything> succeeds.
func TestAuthWithoutPassword(t *testing.T) {
	n := startTestNode(t)
	c := n.dial()
	for _, s := range []struct {
		args []string
		want string
	}{
		{[]string{"PING"}, "+PONG"},
		{[]string{"AUTH", "x"}, "-ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?"},
		{[]string{"AUTH", "default", "anything"}, "+OK"},
		{[]string{"AUTH", "bob", "anything"}, "-WRONGPASS invalid username-password pair or user is disabled."},
		{[]string{"HELLO", "2", "AUTH", "default", "x"}, hello2},
		{[]string{"RESET"}, "+RESET"},
		{[]string{"PING"}, "+PONG"},
	} {
		if got := hideIDs(c.do(s.args...)); got != s.want {
			t.Errorf("%q = %s, want %s", s.args, got, s.want)
		}
	}
	// No unauthenticated limits either.
	c.send(encodeCmd("NOSUCH", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11"))
	if got := c.reply(); !strings.HasPrefix(got, "-ERR unknown command 'NOSUCH'") {
		t.Errorf("11 arguments without a password: %s", got)
	}
}

// TestRequirePassAtRuntime: CONFIG SET requirepass applies to connections
// that start afterwards; the connections already open (among them the one
// that set it) stay authenticated, as in Redis. Removing the password lets
// everyone in again.
func TestRequirePassAtRuntime(t *testing.T) {
	n := startTestNode(t)
	admin := n.dial()
	if got := admin.do("CONFIG", "SET", "requirepass", testPass); got != "+OK" {
		t.Fatalf("CONFIG SET requirepass = %s", got)
	}
	if got := admin.do("PING"); got != "+PONG" {
		t.Errorf("the connection that set the password: PING = %s", got)
	}
	if got := admin.do("CONFIG", "GET", "requirepass"); got != "*[$requirepass $"+testPass+"]" {
		t.Errorf("CONFIG GET requirepass = %s", got)
	}
	late := n.dial()
	if got := late.do("PING"); got != "-NOAUTH Authentication required." {
		t.Errorf("a connection opened after: PING = %s", got)
	}
	if got := late.do("AUTH", testPass); got != "+OK" {
		t.Errorf("AUTH = %s", got)
	}
	// A new password: the old one no longer works for new connections.
	if got := admin.do("CONFIG", "SET", "requirepass", "other-pass"); got != "+OK" {
		t.Fatalf("CONFIG SET requirepass = %s", got)
	}
	third := n.dial()
	if got := third.do("AUTH", testPass); got != "-WRONGPASS invalid username-password pair or user is disabled." {
		t.Errorf("AUTH with the old password = %s", got)
	}
	if got := third.do("AUTH", "default", "other-pass"); got != "+OK" {
		t.Errorf("AUTH with the new password = %s", got)
	}
	// Removing it.
	nopass := n.dial()
	if got := admin.do("CONFIG", "SET", "requirepass", ""); got != "+OK" {
		t.Fatalf("CONFIG SET requirepass '' = %s", got)
	}
	if got := nopass.do("PING"); got != "+PONG" {
		t.Errorf("after removing the password, a connection that never authenticated: PING = %s", got)
	}
	if got := nopass.do("AUTH", "x"); !strings.HasPrefix(got, "-ERR AUTH <password> called without any password configured") {
		t.Errorf("AUTH x after removing the password = %s", got)
	}
}

// TestPasswordCheck: the comparison accepts exactly the password for the
// user "default", whatever the lengths of the inputs.
func TestPasswordCheck(t *testing.T) {
	var a authState
	if !a.check([]byte("default"), []byte("anything")) || a.check([]byte("bob"), nil) {
		t.Error("without a password: default with any password in, anyone else out")
	}
	a.set("pw")
	for _, tt := range []struct {
		user, pass string
		ok         bool
	}{
		{"default", "pw", true}, {"default", "pW", false}, {"default", "pw ", false}, {"default", "p", false},
		{"default", "", false}, {"default", strings.Repeat("pw", 1000), false}, {"bob", "pw", false}, {"", "pw", false},
	} {
		if got := a.check([]byte(tt.user), []byte(tt.pass)); got != tt.ok {
			t.Errorf("check(%q, %.10q) = %v", tt.user, tt.pass, got)
		}
	}
	a.set("")
	if a.required() {
		t.Error("an empty password still required")
	}
}

// TestAuthGoRedis: go-redis v9 with a password authenticates in its HELLO
// (RESP3) or with AUTH (RESP2); without it, or with a wrong one, it gets the
// server's errors as redis errors.
func TestAuthGoRedis(t *testing.T) {
	_, _, addr := startAuthNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, proto := range []int{3, 2} {
		rdb := redis.NewClient(&redis.Options{Addr: addr, Protocol: proto, Password: testPass, ClientName: "authed", MaxRetries: -1})
		if got, err := rdb.Do(ctx, "CL.THROTTLE", "gr", 5, 1, 60).Result(); err != nil || len(got.([]any)) != 5 {
			t.Errorf("RESP%d with the password: CL.THROTTLE = %v, %v", proto, got, err)
		}
		if got, err := rdb.ClientGetName(ctx).Result(); err != nil || got != "authed" {
			t.Errorf("RESP%d: CLIENT GETNAME = %q, %v", proto, got, err)
		}
		rdb.Close()

		wrong := redis.NewClient(&redis.Options{Addr: addr, Protocol: proto, Password: "wrong", MaxRetries: -1})
		err := wrong.Ping(ctx).Err()
		var rerr redis.Error
		if !errors.As(err, &rerr) || !strings.HasPrefix(err.Error(), "WRONGPASS") {
			t.Errorf("RESP%d with a wrong password: PING error %v (%T)", proto, err, err)
		}
		wrong.Close()

		none := redis.NewClient(&redis.Options{Addr: addr, Protocol: proto, MaxRetries: -1})
		err = none.Ping(ctx).Err()
		if !errors.As(err, &rerr) || err.Error() != "NOAUTH Authentication required." {
			t.Errorf("RESP%d without a password: PING error %v (%T)", proto, err, err)
		}
		none.Close()
	}
}

// TestAuthRedisCLI: redis-cli -a authenticates; without it the user sees
// NOAUTH. Missing redis-cli fails in CI.
func TestAuthRedisCLI(t *testing.T) {
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("redis-cli is required in CI: %v", err)
		}
		t.Skipf("redis-cli not installed: %v", err)
	}
	_, _, addr := startAuthNode(t)
	host, port := splitHostPort(addr)
	run := func(args ...string) string {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, cli, append([]string{"-h", host, "-p", port}, args...)...).CombinedOutput()
		if err != nil && ctx.Err() != nil {
			t.Fatalf("redis-cli %q: %v", args, err)
		}
		return strings.TrimSpace(string(out))
	}
	if got := run("--no-auth-warning", "-a", testPass, "PING"); got != "PONG" {
		t.Errorf("redis-cli -a: %q", got)
	}
	if got := run("--no-auth-warning", "-a", testPass, "-3", "CL.THROTTLE", "cli", "5", "1", "60"); got != "0\n6\n5\n-1\n60" {
		t.Errorf("redis-cli -a -3 CL.THROTTLE: %q", got)
	}
	if got := run("PING"); got != "NOAUTH Authentication required." {
		t.Errorf("redis-cli without -a: %q", got)
	}
	if got := run("--no-auth-warning", "-a", "wrong", "PING"); !strings.Contains(got, "WRONGPASS invalid username-password pair or user is disabled.") {
		t.Errorf("redis-cli -a wrong: %q", got)
	}
	if got := run("--no-auth-warning", "--user", "default", "--pass", testPass, "PING"); got != "PONG" {
		t.Errorf("redis-cli --user default --pass: %q", got)
	}
}

// TestAuthSubcommandErrorsComeFirst: for every container command, an
// unknown subcommand and a subcommand with the wrong number of arguments
// get the same error before AUTH as after it (Redis checks both before the
// password); a valid subcommand gets NOAUTH.
func TestAuthSubcommandErrorsComeFirst(t *testing.T) {
	_, _, addr := startAuthNode(t)
	before, after := dialAddr(t, addr), dialAddr(t, addr)
	if got := after.do("AUTH", testPass); got != "+OK" {
		t.Fatal(got)
	}
	for _, s := range commands.All() {
		for _, sub := range s.Subs {
			container, name, _ := strings.Cut(sub.Name, "|")
			wrong := []string{container, name}
			if sub.CheckArity(2) { // give it one argument too many
				for len(wrong) <= max(sub.Arity, 2) {
					wrong = append(wrong, "x")
				}
			}
			for _, args := range [][]string{{container, "nosuchsub"}, wrong} {
				if sub.CheckArity(len(args)) && args[1] != "nosuchsub" {
					continue
				}
				want := after.do(args...)
				if got := before.do(args...); got != want {
					t.Errorf("%q before AUTH = %s, after = %s", args, got, want)
				}
			}
		}
		if len(s.Subs) > 0 {
			if got := before.do(s.Name, "help"); got != "-NOAUTH Authentication required." {
				t.Errorf("%s HELP before AUTH = %s", s.Name, got)
			}
		}
	}
}
