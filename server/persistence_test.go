package server

import (
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestSaveAndLastsave: SAVE takes a Raft snapshot on the real store (INFO
// raft's last snapshot index moves to the applied index), LASTSAVE answers
// its time; before any snapshot LASTSAVE is the server's start.
func TestSaveAndLastsave(t *testing.T) {
	n := startTestNode(t)
	srv, addr := n.serveConfig(Config{})
	c := dialAddr(t, addr)
	before := time.Now().Unix()
	if got := c.do("LASTSAVE"); got != ":"+strconv.FormatInt(srv.started.Unix(), 10) {
		t.Errorf("LASTSAVE without a snapshot = %s, want the start %d", got, srv.started.Unix())
	}
	for i := 0; i < 5; i++ {
		if got := c.do("CL.THROTTLE", "save"+strconv.Itoa(i), "1", "1", "1"); !strings.HasPrefix(got, "*[") {
			t.Fatal(got)
		}
	}
	if got := c.do("SAVE"); got != "+OK" {
		t.Fatalf("SAVE = %s", got)
	}
	raft := c.replyTreeOf("INFO", "raft").s
	if snap, applied := infoValue(raft, "raft_last_snapshot_index"), infoValue(raft, "raft_applied_index"); snap == "0" || snap != applied {
		t.Errorf("after SAVE: last snapshot index %s, applied %s", snap, applied)
	}
	last, err := strconv.ParseInt(strings.TrimPrefix(c.do("LASTSAVE"), ":"), 10, 64)
	if err != nil || last < before || last > time.Now().Unix() {
		t.Errorf("LASTSAVE after SAVE = %d (%v), want between %d and now", last, err, before)
	}
	if p := c.replyTreeOf("INFO", "persistence").s; !strings.Contains(p, "rdb_last_save_time:"+strconv.FormatInt(last, 10)+"\r\n") ||
		!strings.Contains(p, "aof_enabled:1\r\n") || !strings.Contains(p, "rdb_bgsave_in_progress:0\r\n") {
		t.Errorf("INFO persistence:\n%s", p)
	}
	if got := c.do("SAVE", "x"); got != "-ERR wrong number of arguments for 'save' command" {
		t.Errorf("SAVE x = %s", got)
	}
}

// TestBgsave: BGSAVE answers at once, the snapshot happens in the
// background (INFO shows it in progress, then done and ok), and a second
// one while the first runs is refused with Redis's text.
func TestBgsave(t *testing.T) {
	n := startTestNode(t)
	srv, addr := n.serveConfig(Config{})
	c := dialAddr(t, addr)
	if got := c.do("CL.THROTTLE", "bg", "1", "1", "1"); !strings.HasPrefix(got, "*[") {
		t.Fatal(got)
	}
	if got := c.do("BGSAVE", "nope"); got != "-ERR syntax error" {
		t.Errorf("BGSAVE nope = %s", got)
	}
	// Hold the save slot as a running BGSAVE does.
	srv.persist.saving.Store(true)
	if got := c.do("BGSAVE"); got != "-ERR Background save already in progress" {
		t.Errorf("BGSAVE during a save = %s", got)
	}
	if got := c.do("SAVE"); got != "-ERR Background save already in progress" {
		t.Errorf("SAVE during a save = %s", got)
	}
	if p := c.replyTreeOf("INFO", "persistence").s; !strings.Contains(p, "rdb_bgsave_in_progress:1\r\n") {
		t.Errorf("INFO persistence during a save:\n%s", p)
	}
	srv.persist.saving.Store(false)
	if got := c.do("BGSAVE", "SCHEDULE"); got != "+Background saving started" {
		t.Fatalf("BGSAVE SCHEDULE = %s", got)
	}
	srv.persist.bg.Wait() // the background save is done
	raft := c.replyTreeOf("INFO", "raft").s
	if snap := infoValue(raft, "raft_last_snapshot_index"); snap == "0" || snap == "" {
		t.Errorf("after BGSAVE: last snapshot index %q", snap)
	}
	if p := c.replyTreeOf("INFO", "persistence").s; !strings.Contains(p, "rdb_last_bgsave_status:ok\r\n") {
		t.Errorf("INFO persistence after BGSAVE:\n%s", p)
	}
}

// TestShutdownCommand: SHUTDOWN snapshots (unless NOSAVE), asks the owner
// to stop through Config.Shutdown and closes the connection without a
// reply; its argument errors are Redis's; a failed snapshot aborts it
// unless FORCE.
func TestShutdownCommand(t *testing.T) {
	n := startTestNode(t)
	asked := make(chan struct{}, 4)
	_, addr := n.serveConfig(Config{Shutdown: func(bool) { asked <- struct{}{} }})
	c := dialAddr(t, addr)
	for _, s := range []struct {
		args []string
		want string
	}{
		{[]string{"SHUTDOWN", "ABORT"}, "-ERR No shutdown in progress."},
		{[]string{"SHUTDOWN", "NOW", "ABORT"}, "-ERR syntax error"},
		{[]string{"SHUTDOWN", "SAVE", "NOSAVE"}, "-ERR syntax error"},
		{[]string{"SHUTDOWN", "LATER"}, "-ERR syntax error"},
	} {
		if got := c.do(s.args...); got != s.want {
			t.Errorf("%q = %s, want %s", s.args, got, s.want)
		}
	}
	if len(asked) != 0 {
		t.Fatal("an invalid SHUTDOWN asked the node to stop")
	}
	if got := c.do("CL.THROTTLE", "sd", "1", "1", "1"); !strings.HasPrefix(got, "*[") {
		t.Fatal(got)
	}
	c.sendCmd("SHUTDOWN", "save", "now")
	c.expectEOF()
	if len(asked) != 1 {
		t.Errorf("SHUTDOWN SAVE asked %d times, want 1", len(asked))
	}
	d := dialAddr(t, addr)
	raft := d.replyTreeOf("INFO", "raft").s
	if snap, applied := infoValue(raft, "raft_last_snapshot_index"), infoValue(raft, "raft_applied_index"); snap == "0" || snap != applied {
		t.Errorf("SHUTDOWN SAVE took no snapshot: last snapshot index %s, applied %s", snap, applied)
	}
	d.sendCmd("SHUTDOWN", "NOSAVE")
	d.expectEOF()
	if len(asked) != 2 {
		t.Errorf("SHUTDOWN NOSAVE: asked %d times in all, want 2", len(asked))
	}

	// A snapshot that fails (the stub backend has no cluster) aborts it,
	// unless FORCE.
	var stopped atomic.Int32
	sc := dialAddr(t, serveStub(t, Config{Shutdown: func(bool) { stopped.Add(1) }}))
	if got := sc.do("SHUTDOWN"); got != "-ERR Errors trying to SHUTDOWN. Check logs." || stopped.Load() != 0 {
		t.Errorf("SHUTDOWN with a failing snapshot = %s (stopped %d)", got, stopped.Load())
	}
	sc.sendCmd("SHUTDOWN", "FORCE")
	sc.expectEOF()
	if stopped.Load() != 1 {
		t.Errorf("SHUTDOWN FORCE: stopped %d, want 1", stopped.Load())
	}
	// Without a way to stop the node, SHUTDOWN says so.
	nostop := dialAddr(t, serveStub(t, Config{}))
	if got := nostop.do("SHUTDOWN", "NOSAVE"); !strings.HasPrefix(got, "-ERR SHUTDOWN is not available") {
		t.Errorf("SHUTDOWN without Config.Shutdown = %s", got)
	}
}

// serveStub serves cfg with a stub backend on a loopback port until the
// test ends, and returns the address.
func serveStub(t *testing.T, cfg Config) string {
	t.Helper()
	return serveBackend(t, cfg, &stubBackend{})
}

// serveBackend is serveStub with the given backend.
func serveBackend(t *testing.T, cfg Config, backend interface {
	Decider
	Reader
	Administrator
	Status
	TestClock
}) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Backend, cfg.Logger = BackendOf(backend), quietLogger()
	srv := New(cfg)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	t.Cleanup(func() {
		ln.Close()
		<-served
		srv.Close()
	})
	return ln.Addr().String()
}

// infoValue is the value of "name:value" in an INFO text.
func infoValue(info, name string) string {
	for _, l := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(l, name+":"); ok {
			return v
		}
	}
	return ""
}

// TestSaveInsideMulti: SAVE and SHUTDOWN are refused inside MULTI, which
// EXEC then discards, as Redis does (their no_multi flag).
func TestSaveInsideMulti(t *testing.T) {
	n := startTestNode(t)
	c := n.dial()
	for _, s := range []struct {
		args []string
		want string
	}{
		{[]string{"MULTI"}, "+OK"},
		{[]string{"SAVE"}, "-ERR Command not allowed inside a transaction"},
		{[]string{"SHUTDOWN", "NOSAVE"}, "-ERR Command not allowed inside a transaction"},
		{[]string{"EXEC"}, "-EXECABORT Transaction discarded because of previous errors."},
	} {
		if got := c.do(s.args...); got != s.want {
			t.Errorf("%q = %s, want %s", s.args, got, s.want)
		}
	}
}
