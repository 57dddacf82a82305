package server

import (
	"errors"
	"io"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestConfigSet: Redis 7's CONFIG SET texts, all-or-none, and CONFIG GET
// reading back what was set; RESETSTAT and REWRITE.
func TestConfigSet(t *testing.T) {
	n := startTestNode(t)
	level := new(slog.LevelVar)
	_, addr := n.serveConfig(Config{LogLevel: level, Save: "30 16384"})
	c := dialAddr(t, addr)
	steps := []struct {
		args []string
		want string
	}{
		{[]string{"CONFIG", "GET", "maxclients", "timeout", "loglevel"}, "*[$loglevel $notice $maxclients $10000 $timeout $0]"},
		{[]string{"CONFIG", "GET", "save", "append*"}, "*[$appendfsync $always $appendonly $yes $save $30 16384]"},
		{[]string{"CONFIG", "SET", "maxclients", "50", "timeout", "300", "loglevel", "debug"}, "+OK"},
		{[]string{"CONFIG", "GET", "maxclients", "timeout", "loglevel"}, "*[$loglevel $debug $maxclients $50 $timeout $300]"},
		{[]string{"CONFIG", "SET", "LogLevel", "WARNING"}, "+OK"},
		{[]string{"CONFIG", "GET", "loglevel"}, "*[$loglevel $warning]"},
		// Errors, each leaving everything as it was.
		{[]string{"CONFIG", "SET", "foo", "bar"}, "-ERR Unknown option or number of arguments for CONFIG SET - 'foo'"},
		{[]string{"CONFIG", "SET", "maxclients", "abc"}, "-ERR CONFIG SET failed (possibly related to argument 'maxclients') - argument couldn't be parsed into an integer"},
		{[]string{"CONFIG", "SET", "maxclients", "0"}, "-ERR CONFIG SET failed (possibly related to argument 'maxclients') - argument must be between 1 and 4294967295 inclusive"},
		{[]string{"CONFIG", "SET", "timeout", "-1"}, "-ERR CONFIG SET failed (possibly related to argument 'timeout') - argument must be between 0 and 2147483647 inclusive"},
		{[]string{"CONFIG", "SET", "loglevel", "loud"}, "-ERR CONFIG SET failed (possibly related to argument 'loglevel') - argument(s) must be one of the following: debug, verbose, notice, warning, nothing"},
		{[]string{"CONFIG", "SET", "maxclients", "10", "maxclients", "11"}, "-ERR CONFIG SET failed (possibly related to argument 'maxclients') - duplicate parameter"},
		{[]string{"CONFIG", "SET", "timeout", "5", "port", "1"}, "-ERR CONFIG SET failed (possibly related to argument 'port') - can't set immutable config"},
		{[]string{"CONFIG", "SET", "appendonly", "no"}, "-ERR CONFIG SET failed (possibly related to argument 'appendonly') - every decision is in the Raft log before it is answered; appendonly cannot be turned off"},
		{[]string{"CONFIG", "SET", "appendfsync", "everysec"}, "-ERR CONFIG SET failed (possibly related to argument 'appendfsync') - the Raft log is fsynced before every reply; appendfsync cannot be changed"},
		{[]string{"CONFIG", "SET", "save", ""}, "-ERR CONFIG SET failed (possibly related to argument 'save') - snapshots follow --snapshot-interval, --snapshot-threshold and --snapshot-log-bytes, set when the node starts"},
		{[]string{"CONFIG", "SET", "appendonly", "YES", "appendfsync", "always", "save", "30 16384"}, "+OK"},
		{[]string{"CONFIG", "SET", "timeout", "5", "maxclients"}, "-ERR wrong number of arguments for 'config|set' command"},
		{[]string{"CONFIG", "SET", "timeout"}, "-ERR wrong number of arguments for 'config|set' command"},
		{[]string{"CONFIG", "GET", "maxclients", "timeout"}, "*[$maxclients $50 $timeout $300]"}, // nothing half-applied
		{[]string{"CONFIG", "REWRITE"}, "-ERR The server is running without a config file"},
		{[]string{"CONFIG", "RESETSTAT"}, "+OK"},
		{[]string{"CONFIG", "SET", "timeout", "0", "maxclients", "10000", "loglevel", "notice"}, "+OK"},
	}
	for i, s := range steps {
		if got := c.do(s.args...); got != s.want {
			t.Errorf("step %d: %q = %s, want %s", i, s.args, got, s.want)
		}
	}
	if level.Level() != slog.LevelInfo {
		t.Errorf("loglevel notice: the logger is at %v", level.Level())
	}
	// RESETSTAT zeroed the counters: the few commands since then count.
	info := c.replyTreeOf("INFO", "stats").s
	if !strings.Contains(info, "total_commands_processed:2\r\n") || !strings.Contains(info, "total_error_replies:0\r\n") {
		t.Errorf("after CONFIG RESETSTAT:\n%s", info)
	}
}

// TestLogLevelMovesTheLogger: CONFIG SET loglevel changes what the node's
// logger writes.
func TestLogLevelMovesTheLogger(t *testing.T) {
	n := startTestNode(t)
	level := new(slog.LevelVar)
	var logged strings.Builder
	out := &lockedWriter{w: &logged}
	log := slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: level}))
	srv, addr := n.serveConfig(Config{LogLevel: level, Logger: log})
	c := dialAddr(t, addr)
	if got := c.do("CONFIG", "SET", "loglevel", "debug"); got != "+OK" {
		t.Fatal(got)
	}
	srv.log.Debug("a debug line")
	if got := c.do("CONFIG", "SET", "loglevel", "nothing"); got != "+OK" {
		t.Fatal(got)
	}
	srv.log.Error("an error line")
	out.mu.Lock()
	s := logged.String()
	out.mu.Unlock()
	if !strings.Contains(s, "a debug line") || strings.Contains(s, "an error line") {
		t.Errorf("log:\n%s", s)
	}
}

// lockedWriter serialises writes: the server's goroutines log too.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// TestMaxClients: a connection beyond maxclients gets Redis's error and is
// closed; it counts in rejected_connections; raising the limit lets it in.
func TestMaxClients(t *testing.T) {
	n := startTestNode(t)
	_, addr := n.serveConfig(Config{})
	admin := dialAddr(t, addr)
	if got := admin.do("CONFIG", "SET", "maxclients", "2"); got != "+OK" {
		t.Fatal(got)
	}
	second := dialAddr(t, addr)
	if got := second.do("PING"); got != "+PONG" {
		t.Fatalf("the second client: %s", got)
	}
	third := dialAddr(t, addr)
	if got := third.reply(); got != "-ERR max number of clients reached" {
		t.Errorf("the third client: %s", got)
	}
	third.expectEOF()
	if info := admin.replyTreeOf("INFO", "stats").s; !strings.Contains(info, "rejected_connections:1\r\n") {
		t.Errorf("INFO stats:\n%s", info)
	}
	if got := admin.do("CONFIG", "SET", "maxclients", "3"); got != "+OK" {
		t.Fatal(got)
	}
	if got := dialAddr(t, addr).do("PING"); got != "+PONG" {
		t.Errorf("after raising maxclients: %s", got)
	}
}

// TestIdleTimeout: with CONFIG SET timeout 1, a client that sends nothing
// is closed within about two seconds, and one that keeps sending is not.
func TestIdleTimeout(t *testing.T) {
	n := startTestNode(t)
	_, addr := n.serveConfig(Config{})
	busy := dialAddr(t, addr)
	if got := busy.do("CONFIG", "SET", "timeout", "1"); got != "+OK" {
		t.Fatal(got)
	}
	idle := dialAddr(t, addr)
	if got := idle.do("PING"); got != "+PONG" {
		t.Fatal(got)
	}
	start := time.Now()
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		buf := make([]byte, 1)
		_, _ = idle.nc.Read(buf) // returns when the server closes it
	}()
	for {
		select {
		case <-closed:
			if d := time.Since(start); d < time.Second || d > 5*time.Second {
				t.Errorf("the idle client was closed after %v, want 1-2 s", d)
			}
			if got := busy.do("PING"); got != "+PONG" {
				t.Errorf("the busy client: %s", got)
			}
			return
		case <-time.After(200 * time.Millisecond): // keep the busy client active
			if got := busy.do("PING"); got != "+PONG" {
				t.Fatalf("the busy client was closed too: %s", got)
			}
			if time.Since(start) > 10*time.Second {
				t.Fatal("the idle client was not closed within 10 s")
			}
		}
	}
}

// TestConfigStartValues: the flags' values are where CONFIG starts.
func TestConfigStartValues(t *testing.T) {
	n := startTestNode(t)
	_, addr := n.serveConfig(Config{MaxClients: 50, IdleTimeout: 7, RequirePass: "pw"})
	c := dialAddr(t, addr)
	c.do("AUTH", "pw")
	if got := c.do("CONFIG", "GET", "maxclients", "timeout", "requirepass"); got != "*[$maxclients $50 $requirepass $pw $timeout $7]" {
		t.Errorf("CONFIG GET = %s", got)
	}
	if info := c.replyTreeOf("INFO", "clients").s; !strings.Contains(info, "maxclients:50\r\n") {
		t.Errorf("INFO clients:\n%s", info)
	}
}

// TestConfigRewriteHook: CONFIG REWRITE hands Config.RewriteConfig every
// runtime parameter (not the fixed ones) at its current value, and
// answers Redis's error text when the hook fails.
func TestConfigRewriteHook(t *testing.T) {
	n := startTestNode(t)
	var got map[string]string
	fail := false
	rewrite := func(p map[string]string) error {
		got = p
		if fail {
			return errors.New("open /etc/redcell.conf: permission denied")
		}
		return nil
	}
	_, addr := n.serveConfig(Config{LogLevel: new(slog.LevelVar), Save: "30 16384", RewriteConfig: rewrite})
	c := dialAddr(t, addr)
	if r := c.do("CONFIG", "SET", "maxclients", "77"); r != "+OK" {
		t.Fatal(r)
	}
	if r := c.do("CONFIG", "REWRITE"); r != "+OK" {
		t.Fatal(r)
	}
	var names []string
	for name := range got {
		names = append(names, name)
	}
	sort.Strings(names)
	want := "client-output-buffer-limit client-query-buffer-limit latency-monitor-threshold latency-tracking loglevel maxclients maxmemory protected-mode proto-max-bulk-len requirepass slowlog-log-slower-than slowlog-max-len timeout"
	if strings.Join(names, " ") != want || got["maxclients"] != "77" {
		t.Errorf("RewriteConfig got %v", got)
	}
	fail = true
	if r := c.do("CONFIG", "REWRITE"); r != "-ERR Rewriting config file: open /etc/redcell.conf: permission denied" {
		t.Errorf("failed rewrite: %s", r)
	}
}
