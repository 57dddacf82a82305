package systemtest

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Bounds on process life cycles. Generous for a loaded 2-core machine, small
// enough that a hung node fails its test quickly.
const (
	readyTimeout = 20 * time.Second // start → raft_ready:1
	stopTimeout  = 15 * time.Second // SIGTERM → exit
	pollEvery    = 20 * time.Millisecond
)

// redcellBinary is the path of the binary TestMain built for this run.
var redcellBinary string

// node is one redcell process, started on a loopback port with its own data
// directory. The same node value is restarted on the same port and data
// directory after a stop or a kill.
//
// A node is driven by one test goroutine; only the waiter goroutine started
// with the process writes exitErr, and it closes exited when it has.
type node struct {
	name    string
	dataDir string
	port    int
	extra   []string // extra flags (--node-id ...)
	// binary is the redcell binary it runs; "" is the one TestMain built
	// (a rolling-upgrade test restarts a node with another build).
	binary string
	// firstStart are flags for the starts before the node has once been
	// ready (--bootstrap: a later start with it is refused, as it should
	// be for a data dir that holds Raft state).
	firstStart []string
	everReady  bool
	// repick, when set, lets a node whose port was given before its first
	// start (a cluster node: its proxy forwards there) take another one
	// when that port turns out to be taken: start calls it with the new
	// port before retrying, to point whatever names the old one at it.
	repick func(port int) error
	// password, when the node requires one (--requirepass-file), is what
	// the readiness probe authenticates with.
	password string
	logPath  string // stderr of every incarnation, appended
	// readyWhen decides readiness from this process's INFO server+raft
	// text; nil means a ready leader (raft_ready:1), which a follower of a
	// cluster never is.
	readyWhen func(info string) bool
	// argv, when set, is the node's whole command line for a port (the
	// container's entry point, packaging_test.go), instead of the
	// harness's flags and extra.
	argv func(port int) []string

	cmd     *exec.Cmd
	logFile *os.File
	exited  chan struct{}
	exitErr error // valid once exited is closed
	starts  int
}

// addr is the node's client address.
func (n *node) addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(n.port)) }

// pid is the current process id.
func (n *node) pid() int { return n.cmd.Process.Pid }

// handedOut holds every port freePort has returned in this test process.
// The kernel may give a just-closed port again to the next listen on :0, so
// two calls in a row (a node's client port and its --metrics-addr) could
// name the same port and the node would fail to bind its own second
// listener, on every retry, since a cluster node keeps its client port.
var handedOut struct {
	sync.Mutex
	ports map[int]bool
}

// freePort asks the kernel for a free loopback port that no earlier call in
// this process returned. Another process may take it before redcell binds
// it; start retries with a new port then.
func freePort() (int, error) {
	handedOut.Lock()
	defer handedOut.Unlock()
	if handedOut.ports == nil {
		handedOut.ports = make(map[int]bool)
	}
	for range 100 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		port := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		if !handedOut.ports[port] {
			handedOut.ports[port] = true
			return port, nil
		}
	}
	return 0, fmt.Errorf("no loopback port that was not handed out already after 100 tries")
}

// newNode prepares a node that has not started yet.
func newNode(name, dataDir, logDir string, extra ...string) *node {
	return &node{name: name, dataDir: dataDir, extra: extra, logPath: filepath.Join(logDir, name+".log")}
}

// launch starts the process once, without waiting for readiness.
func (n *node) launch() error {
	lf, err := os.OpenFile(n.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	n.starts++
	fmt.Fprintf(lf, "=== systemtest: start #%d of %s on port %d at %s\n", n.starts, n.name, n.port, time.Now().Format(time.RFC3339Nano))
	args := []string{"--bind", "127.0.0.1", "--port", strconv.Itoa(n.port), "--data-dir", n.dataDir, "--enable-debug-command", "--log-level", "info"}
	args = append(args, n.extra...)
	if !n.everReady {
		args = append(args, n.firstStart...)
	}
	if n.argv != nil {
		args = n.argv(n.port)
	}
	bin := redcellBinary
	if n.binary != "" {
		bin = n.binary
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout = lf
	cmd.Stderr = lf
	if err := cmd.Start(); err != nil {
		lf.Close()
		return fmt.Errorf("starting %s: %w", bin, err)
	}
	n.cmd, n.logFile, n.exited, n.exitErr = cmd, lf, make(chan struct{}), nil
	go func(cmd *exec.Cmd, exited chan struct{}) {
		err := cmd.Wait()
		n.exitErr = err
		close(exited)
	}(cmd, n.exited)
	return nil
}

// running reports whether the current process has not exited yet.
func (n *node) running() bool {
	if n.cmd == nil {
		return false
	}
	select {
	case <-n.exited:
		return false
	default:
		return true
	}
}

// start starts the node and waits until it is a ready leader (or what
// readyWhen asks for). On its first
// start a node picks a free port and retries with another one when the port
// was taken in between; a restart keeps its port (the Raft configuration
// holds the address) and retries only briefly.
func (n *node) start() error {
	firstStart := n.port == 0
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		// A port picked by freePort may be taken before the node binds it,
		// by a listener or by an outgoing connection's local port that lives
		// as long as the test: retry on another one until the node has once
		// been ready (after that the Raft configuration holds its address).
		if firstStart || (attempt > 0 && n.repick != nil && !n.everReady) {
			p, err := freePort()
			if err != nil {
				return err
			}
			n.port = p
			if n.repick != nil && !firstStart {
				if err := n.repick(p); err != nil {
					return err
				}
			}
		}
		if err := n.launch(); err != nil {
			return err
		}
		err := n.waitReady(readyTimeout)
		if err == nil {
			n.everReady = true
			return nil
		}
		lastErr = err
		if n.running() || !strings.Contains(n.logTail(4096), "address already in use") {
			n.kill()
			return err
		}
		n.logFile.Close()
		<-time.After(100 * time.Millisecond) // back off before retrying the bind
	}
	return fmt.Errorf("%s: could not bind a port: %w", n.name, lastErr)
}

// waitReady polls INFO until this process reports raft_ready:1 (in every
// group: ready=1 on each raft_group line), it exits, or the deadline
// passes. Polling readiness is the only waiting on time in these tests;
// algorithm behaviour is always driven by the injected clock.
func (n *node) waitReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	var lastErr error
	for {
		ready, err := n.probeReady()
		if ready {
			return nil
		}
		if err != nil {
			lastErr = err
		}
		select {
		case <-n.exited:
			return fmt.Errorf("%s exited before becoming ready: %v", n.name, n.exitErr)
		case <-tick.C:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready after %v (last probe: %v)", n.name, timeout, lastErr)
		}
	}
}

func (n *node) probeReady() (bool, error) {
	nc, err := net.DialTimeout("tcp", n.addr(), time.Second)
	if err != nil {
		return false, err
	}
	c := &respConn{nc: nc, br: bufio.NewReader(nc), bw: bufio.NewWriter(nc)}
	defer c.close()
	_ = nc.SetDeadline(time.Now().Add(2 * time.Second))
	if n.password != "" {
		c.send("AUTH", n.password)
	}
	c.send("INFO", "server", "raft")
	if err := c.bw.Flush(); err != nil {
		return false, err
	}
	if n.password != "" {
		if r, err := c.parse(); err != nil || r.kind != '+' {
			return false, fmt.Errorf("AUTH: %v %v", r, err)
		}
	}
	r, err := c.parse()
	if err != nil {
		return false, err
	}
	// Another node may have taken the port between freePort and our bind:
	// only our own process counts.
	if pid := infoField(r.str, "process_id"); pid != strconv.Itoa(n.pid()) {
		return false, fmt.Errorf("port %d is served by process %s, not %s's %d", n.port, pid, n.name, n.pid())
	}
	if n.readyWhen != nil {
		return n.readyWhen(r.str), nil
	}
	// A ready leader of every group: raft_ready is group 0's alone, and a
	// node of several groups answers LOADING until each has loaded.
	for _, g := range parseRaftStatus(r.str).groups {
		if !g.ready {
			return false, nil
		}
	}
	return true, nil
}

// infoField returns the value of "name:value" in an INFO text, or "".
func infoField(info, name string) string {
	for _, l := range strings.Split(info, "\n") {
		l = strings.TrimRight(l, "\r")
		if v, ok := strings.CutPrefix(l, name+":"); ok {
			return v
		}
	}
	return ""
}

// signal sends sig to the current process by PID.
func (n *node) signal(sig syscall.Signal) error {
	return syscall.Kill(n.pid(), sig)
}

// stop sends SIGTERM and waits for the exit; after stopTimeout it kills the
// process and reports that. It returns the exit code.
func (n *node) stop() (int, error) {
	if !n.running() {
		return n.exitCode(), nil
	}
	if err := n.signal(syscall.SIGTERM); err != nil {
		return -1, fmt.Errorf("SIGTERM to %s (pid %d): %w", n.name, n.pid(), err)
	}
	select {
	case <-n.exited:
		n.logFile.Close()
		return n.exitCode(), nil
	case <-time.After(stopTimeout):
		n.kill()
		return -1, fmt.Errorf("%s (pid %d) did not exit within %v of SIGTERM; killed", n.name, n.pid(), stopTimeout)
	}
}

// kill sends SIGKILL by PID and waits for the process to be gone.
func (n *node) kill() {
	if !n.running() {
		return
	}
	_ = n.signal(syscall.SIGKILL)
	<-n.exited
	n.logFile.Close()
}

// exitCode is the exit status of the last incarnation (-1 when killed by a
// signal or still running).
func (n *node) exitCode() int {
	if n.cmd == nil || n.cmd.ProcessState == nil {
		return -1
	}
	return n.cmd.ProcessState.ExitCode()
}

// waitExit waits for the process to exit by itself, up to timeout.
func (n *node) waitExit(timeout time.Duration) error {
	select {
	case <-n.exited:
		n.logFile.Close()
		return nil
	case <-time.After(timeout):
		return fmt.Errorf("%s still running after %v", n.name, timeout)
	}
}

// logTail returns up to max bytes from the end of the node's log.
func (n *node) logTail(max int64) string {
	f, err := os.Open(n.logPath)
	if err != nil {
		return ""
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return ""
	}
	off := max64(0, st.Size()-max)
	buf := make([]byte, st.Size()-off)
	_, _ = f.ReadAt(buf, off)
	return string(buf)
}

// logSince returns the log written after byte offset off.
func (n *node) logSince(off int64) string {
	data, err := os.ReadFile(n.logPath)
	if err != nil || int64(len(data)) < off {
		return string(data)
	}
	return string(data[off:])
}

func (n *node) logSize() int64 {
	st, err := os.Stat(n.logPath)
	if err != nil {
		return 0
	}
	return st.Size()
}

func max64(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}

// startTestNode starts a node owned by one test: data dir from t.TempDir(),
// killed at the end of the test if still running, its log printed when the
// test failed.
func startTestNode(t testing.TB, name string, extra ...string) *node {
	t.Helper()
	n := newNode(name, t.TempDir(), t.TempDir(), extra...)
	registerNodeCleanup(t, n, 0)
	if err := n.start(); err != nil {
		t.Fatal(err)
	}
	return n
}

// registerNodeCleanup kills n at the end of the test and prints the log
// written since logOffset when the test failed.
func registerNodeCleanup(t testing.TB, n *node, logOffset int64) {
	t.Cleanup(func() {
		n.kill()
		if t.Failed() {
			t.Logf("log of %s (%s):\n%s", n.name, n.logPath, orNothing(lastLines(n.logSince(logOffset), 200)))
		}
	})
}

// restart starts the node again on its data dir and port and waits for
// readiness, failing the test otherwise.
func (n *node) mustRestart(t testing.TB) {
	t.Helper()
	if n.running() {
		t.Fatalf("%s: restart while still running", n.name)
	}
	if err := n.start(); err != nil {
		t.Fatal(err)
	}
}

// mustStop stops the node with SIGTERM and requires exit code 0.
func (n *node) mustStop(t testing.TB) {
	t.Helper()
	code, err := n.stop()
	if err != nil {
		t.Fatal(err)
	}
	if code != 0 {
		t.Fatalf("%s exited with code %d after SIGTERM, want 0", n.name, code)
	}
}

func orNothing(s string) string {
	if strings.TrimSpace(s) == "" {
		return "(nothing logged)"
	}
	return s
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{fmt.Sprintf("... (%d earlier lines)", len(lines)-n)}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}

// shared is the node that tests which reset their state with FLUSHALL share,
// started on first use and stopped by TestMain.
var shared struct {
	once sync.Once
	node *node
	dir  string
	err  error
}

// sharedNode returns the shared node, starting it on first use. The test's
// failure prints the part of the node's log written during the test.
func sharedNode(t testing.TB) *node {
	t.Helper()
	shared.once.Do(func() {
		dir, err := os.MkdirTemp("", "redcell-systemtest-shared-")
		if err != nil {
			shared.err = err
			return
		}
		shared.dir = dir
		n := newNode("shared", filepath.Join(dir, "data"), dir)
		if err := n.start(); err != nil {
			shared.err = err
			n.kill()
			return
		}
		shared.node = n
	})
	if shared.err != nil {
		t.Fatalf("starting the shared node: %v", shared.err)
	}
	off := shared.node.logSize()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("log of the shared node during this test:\n%s", orNothing(lastLines(shared.node.logSince(off), 200)))
		}
	})
	return shared.node
}

// stopShared stops the shared node (requiring a clean exit) and removes its
// directory; called by TestMain after the tests ran.
func stopShared() error {
	if shared.node == nil {
		if shared.dir != "" {
			os.RemoveAll(shared.dir)
		}
		return nil
	}
	code, err := shared.node.stop()
	if err == nil && code != 0 {
		err = fmt.Errorf("shared node exited with code %d after SIGTERM, want 0", code)
	}
	if err != nil {
		err = fmt.Errorf("%w\nlog tail:\n%s", err, lastLines(shared.node.logTail(1<<20), 100))
	}
	os.RemoveAll(shared.dir)
	return err
}

// buildRedcell builds ./cmd/redcell into dir and returns the binary's path.
// REDCELL_BINARY, when set, names a prebuilt binary to use instead.
func buildRedcell(dir string) (string, error) {
	if p := os.Getenv("REDCELL_BINARY"); p != "" {
		return filepath.Abs(p)
	}
	return buildRedcellTags(dir, "")
}

// buildRedcellTags builds ./cmd/redcell with the build tags tags (none when
// "") into dir and returns the binary's path.
func buildRedcellTags(dir, tags string) (string, error) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("finding the go tool: %w", err)
	}
	out := filepath.Join(dir, "redcell")
	args := []string{"build", "-o", out}
	if tags != "" {
		args = append(args, "-tags", tags)
	}
	cmd := exec.Command(goTool, append(args, "./cmd/redcell")...)
	cmd.Dir = ".." // the module root, from the package directory go test runs in
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build ./cmd/redcell: %w\n%s", err, stderr.String())
	}
	return out, nil
}
