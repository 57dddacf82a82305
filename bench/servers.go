package main

import (
	"bufio"
	"context"
	"crypto/sha1"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// gcraLua is the CL.THROTTLE script every Redis server under test runs.
//
//go:embed gcra.lua
var gcraLua string

// serverKind names one of the servers bench can compare.
type serverKind string

const (
	kindRedcell serverKind = "Redcell"
	// kindRedcellBaseline is Redcell built from another commit (-baseline),
	// run alternately with this one so that a change is measured against
	// the same machine minute by minute.
	kindRedcellBaseline serverKind = "Redcell-baseline"
	kindRedisLua        serverKind = "Redis-Lua"
	kindRedisLuaFsync   serverKind = "Redis-Lua-fsync"
)

// allServerKinds is the order servers run in within a scenario; the
// variants of -variants run after Redcell-baseline, before Redis-Lua.
var allServerKinds = []serverKind{kindRedcell, kindRedcellBaseline, kindRedisLua, kindRedisLuaFsync}

// isRedcell reports whether servers of kind k are Redcell: they take the
// native commands and have INFO raft. Every Redcell kind's name starts
// with "Redcell": this commit's, the baseline's, a variant's
// (Redcell[name], variants.go), the slow-disk mode's (slowdisk.go) and
// the cluster mode's rows.
func (k serverKind) isRedcell() bool { return strings.HasPrefix(string(k), string(kindRedcell)) }

// server is one running server process under test, bound to 127.0.0.1.
type server struct {
	kind    serverKind
	name    string // Raft node ID of a cluster node ("" for a single server)
	port    int
	dataDir string
	logPath string
	shas    map[family]string // SHA1 of each family's script the server loaded (loadScripts)
	cmd     *exec.Cmd
	bin     string        // the program cmd runs, and
	args    []string      // its arguments: what relaunch starts again
	readyCh chan struct{} // closed when the log shows the ready line
	env     []string      // added to bench's environment for the process (the slow-disk delay)
	exited  chan struct{} // closed once the process has been reaped
	waitErr error         // valid after exited is closed
}

// addr is the server's host:port.
func (s *server) addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

// throttleCommand is the command that makes one CL.THROTTLE decision on key
// with the given arguments: the native command on Redcell, EVALSHA of the
// loaded script on Redis.
func (s *server) throttleCommand(key string, args ...string) []string {
	return s.limiterCommand(familyCL, key, args...)
}

// pid is the server's process id.
func (s *server) pid() int { return s.cmd.Process.Pid }

// fleet starts server processes and owns their temporary directories. Every
// process it starts is stopped by PID, and every directory removed, by stop
// or by closeAll. Its methods are called from the main goroutine only.
type fleet struct {
	root       string // temp dir holding data dirs, logs and the redcell binary
	repoRoot   string
	redcellBin string
	// baseline is the commit kindRedcellBaseline is built from (see
	// resolveBaseline), and baselineBin that binary once built.
	baseline    string
	baselineBin string
	// slowDiskBin is this commit's Redcell built with -tags
	// redcell_slowdisk (slowdisk.go), once a kind needs it.
	slowDiskBin string
	// buildFlags go to go build before the package (the pgo mode builds
	// with -pgo=off, so that its profile is of the code without one).
	buildFlags []string
	// redcells are the Redcell kinds other than kindRedcell and
	// kindRedcellBaseline (the variants, the slow-disk rows) and how each
	// is started.
	redcells map[serverKind]redcellSpec
	servers  []*server
}

// redcellSpec is how the fleet starts a Redcell kind of this commit other
// than the default one: which build, and what it adds to the default
// command line and environment.
type redcellSpec struct {
	slowDisk bool     // the -tags redcell_slowdisk build
	flags    []string // after bench's own --bind, --port, --data-dir
	env      []string // KEY=value
}

// addRedcell registers kind, started as spec says.
func (f *fleet) addRedcell(kind serverKind, spec redcellSpec) {
	if f.redcells == nil {
		f.redcells = make(map[serverKind]redcellSpec)
	}
	f.redcells[kind] = spec
}

// newFleet creates the temp root under dataParent ("" = os.TempDir()).
func newFleet(repoRoot, dataParent string) (*fleet, error) {
	root, err := os.MkdirTemp(dataParent, "redcell-bench-")
	if err != nil {
		return nil, fmt.Errorf("create bench temp dir: %w", err)
	}
	return &fleet{root: root, repoRoot: repoRoot}, nil
}

// buildRedcell compiles ./cmd/redcell into the fleet's temp dir, once.
func (f *fleet) buildRedcell(ctx context.Context) error {
	if f.redcellBin != "" {
		return nil
	}
	bin := filepath.Join(f.root, "redcell")
	args := append(append([]string{"build"}, f.buildFlags...), "-o", bin, "./cmd/redcell")
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = f.repoRoot
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	f.redcellBin = bin
	return nil
}

// buildSlowDisk compiles ./cmd/redcell with -tags redcell_slowdisk into
// the fleet's temp dir, once: the binary whose WAL syncs take as much longer
// as its REDCELL_SLOWDISK_FSYNC says (cmd/redcell/slowdisk.go).
func (f *fleet) buildSlowDisk(ctx context.Context) error {
	if f.slowDiskBin != "" {
		return nil
	}
	bin := filepath.Join(f.root, "redcell-slowdisk")
	args := append(append([]string{"build", "-tags", slowDiskTag}, f.buildFlags...), "-o", bin, "./cmd/redcell")
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = f.repoRoot
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	f.slowDiskBin = bin
	return nil
}

// buildBaseline compiles ./cmd/redcell of the baseline revision, once: its
// tree is exported with git archive into the fleet's temp dir (no worktree
// is registered in the repository) and built as it is, with the module
// versions and the profile (default.pgo) it had.
func (f *fleet) buildBaseline(ctx context.Context) error {
	if f.baselineBin != "" {
		return nil
	}
	commit := f.baseline
	if commit == "" {
		return errors.New("no -baseline revision given")
	}
	src := filepath.Join(f.root, "baseline-src")
	if err := os.Mkdir(src, 0o755); err != nil {
		return fmt.Errorf("baseline source dir: %w", err)
	}
	archive := exec.CommandContext(ctx, "git", "archive", "--format=tar", commit)
	archive.Dir = f.repoRoot
	untar := exec.CommandContext(ctx, "tar", "-x", "-C", src)
	pipe, err := archive.StdoutPipe()
	if err != nil {
		return err
	}
	untar.Stdin = pipe
	var archiveErr, untarErr strings.Builder
	archive.Stderr, untar.Stderr = &archiveErr, &untarErr
	if err := untar.Start(); err != nil {
		return fmt.Errorf("tar: %w", err)
	}
	if err := archive.Run(); err != nil {
		untar.Wait()
		return fmt.Errorf("git archive %s: %w: %s", commit, err, archiveErr.String())
	}
	if err := untar.Wait(); err != nil {
		return fmt.Errorf("unpack git archive %s: %w: %s", commit, err, untarErr.String())
	}
	bin := filepath.Join(f.root, "redcell-baseline")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/redcell")
	build.Dir = src
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("build baseline %s: %w\n%s", commit, err, out)
	}
	f.baselineBin = bin
	return nil
}

// resolveBaseline sets the commit the baseline is built from, checking that
// rev names one before anything is measured.
func (f *fleet) resolveBaseline(ctx context.Context, rev string) error {
	commit, err := gitOutput(ctx, f.repoRoot, "rev-parse", "--verify", "--end-of-options", rev+"^{commit}")
	if err != nil {
		return fmt.Errorf("-baseline %q: %w", rev, err)
	}
	f.baseline = commit
	return nil
}

// gitOutput runs git in dir and returns its trimmed standard output.
func gitOutput(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}

// start launches a fresh server of the given kind on a free port with a new
// empty data dir and returns once it answers PING (and, for Redis, once the
// scripts are loaded).
func (f *fleet) start(ctx context.Context, kind serverKind) (*server, error) {
	return f.startNode(ctx, kind, "", nil)
}

// startNode is start with a node name (part of the data dir's name, "" for
// none) and extra command-line arguments for Redcell (cluster flags).
func (f *fleet) startNode(ctx context.Context, kind serverKind, name string, extra []string) (*server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	prefix := dirName(string(kind)) + "-"
	if name != "" {
		prefix += name + "-"
	}
	dir, err := os.MkdirTemp(f.root, prefix)
	if err != nil {
		return nil, fmt.Errorf("create data dir: %w", err)
	}
	s := &server{kind: kind, name: name, port: port, dataDir: dir, logPath: filepath.Join(dir, "server.log"), exited: make(chan struct{})}
	bin, args, env, err := f.command(ctx, kind, port, dir, extra)
	if err != nil {
		return nil, err
	}
	s.env = env
	readyLine := ""
	if !kind.isRedcell() {
		readyLine = "Ready to accept connections"
	}
	if err := s.launch(bin, args, readyLine); err != nil {
		return nil, err
	}
	f.servers = append(f.servers, s)
	if err := s.waitReady(ctx, readyLine != "", 30*time.Second); err != nil {
		return nil, err
	}
	if err := s.loadScripts(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// command is how a server of kind starts on port with its files in dir:
// the program (built first if it is this commit's or the baseline's
// Redcell and not built yet), its arguments, and what it adds to bench's
// environment. extra are further Redcell arguments (cluster flags).
func (f *fleet) command(ctx context.Context, kind serverKind, port int, dir string, extra []string) (bin string, args, env []string, err error) {
	spec, isSpec := f.redcells[kind]
	switch {
	case kind == kindRedcell || kind == kindRedcellBaseline || isSpec:
		build, built := f.buildRedcell, &f.redcellBin
		switch {
		case kind == kindRedcellBaseline:
			build, built = f.buildBaseline, &f.baselineBin
		case spec.slowDisk:
			build, built = f.buildSlowDisk, &f.slowDiskBin
		}
		if err := build(ctx); err != nil {
			return "", nil, nil, err
		}
		bin = *built
		args = []string{"--bind", "127.0.0.1", "--port", strconv.Itoa(port), "--data-dir", filepath.Join(dir, "data")}
		return bin, append(append(args, spec.flags...), extra...), spec.env, nil
	case kind == kindRedisLua || kind == kindRedisLuaFsync:
		if len(extra) > 0 {
			return "", nil, nil, fmt.Errorf("extra arguments %q are for Redcell only", extra)
		}
		return "redis-server", redisArgs(port, dir, kind == kindRedisLuaFsync), nil, nil
	}
	return "", nil, nil, fmt.Errorf("unknown server kind %q", kind)
}

// relaunch starts a Redcell node again after its process ended (the
// failover mode kills it): the same binary, arguments, port and data dir, a
// fresh log file beside the first (logName, in the same directory), and
// the same readiness (PING). The returned server replaces old; old stays in
// f.servers, already stopped.
func (f *fleet) relaunch(ctx context.Context, old *server, logName string) (*server, error) {
	select {
	case <-old.exited:
	default:
		return nil, fmt.Errorf("relaunch %s: pid %d still runs", old.label(), old.pid())
	}
	s := &server{kind: old.kind, name: old.name, port: old.port, dataDir: old.dataDir, env: old.env,
		logPath: filepath.Join(old.dataDir, logName), exited: make(chan struct{})}
	// A restart resumes its data dir: --bootstrap (the first node's first
	// start) would be refused there.
	args := slices.DeleteFunc(slices.Clone(old.args), func(a string) bool { return a == "--bootstrap" })
	if err := s.launch(old.bin, args, ""); err != nil {
		return nil, err
	}
	f.servers = append(f.servers, s)
	if err := s.waitReady(ctx, false, 30*time.Second); err != nil {
		return nil, err
	}
	return s, nil
}

// dirName is a server kind as a directory name: lower case, every
// character but letters, digits and '-' a '-' ("Redcell[direct+poll]" →
// "redcell-direct-poll-").
func dirName(kind string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-':
			return r
		case r >= 'A' && r <= 'Z':
			return r + 'a' - 'A'
		}
		return '-'
	}, kind)
}

// redisArgs is the redis-server command line: no RDB snapshots, and either
// no AOF or an AOF fsynced before every reply.
func redisArgs(port int, dir string, fsyncAlways bool) []string {
	args := []string{
		"--bind", "127.0.0.1", "--port", strconv.Itoa(port), "--dir", dir,
		"--save", "", "--daemonize", "no", "--logfile", "",
	}
	if fsyncAlways {
		return append(args, "--appendonly", "yes", "--appendfsync", "always")
	}
	return append(args, "--appendonly", "no")
}

// launch starts the process with its output copied to the server's log file.
// When readyLine is not empty, readyCh is closed once it appears in the
// output, so waitReady can wait for the event instead of polling.
func (s *server) launch(bin string, args []string, readyLine string) error {
	logFile, err := os.Create(s.logPath)
	if err != nil {
		return fmt.Errorf("create server log: %w", err)
	}
	pr, pw := io.Pipe()
	s.bin, s.args = bin, args
	s.cmd = exec.Command(bin, args...)
	if len(s.env) > 0 {
		s.cmd.Env = append(os.Environ(), s.env...)
	}
	s.cmd.Stdout, s.cmd.Stderr = pw, pw
	// Own process group: a terminal Ctrl-C reaches bench only, and bench
	// stops the servers itself. Pdeathsig covers bench being killed outright.
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := s.cmd.Start(); err != nil {
		logFile.Close()
		return fmt.Errorf("start %s: %w", bin, err)
	}
	s.readyCh = make(chan struct{})
	go s.copyLog(pr, logFile, readyLine)
	go func() {
		s.waitErr = s.cmd.Wait()
		pw.Close()
		close(s.exited)
	}()
	return nil
}

// copyLog copies the process output to the log file line by line and
// closes readyCh when readyLine appears. It runs until the process exits.
func (s *server) copyLog(r io.Reader, logFile *os.File, readyLine string) {
	defer logFile.Close()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var once sync.Once
	for sc.Scan() {
		line := sc.Text()
		fmt.Fprintln(logFile, line)
		if readyLine != "" && strings.Contains(line, readyLine) {
			once.Do(func() { close(s.readyCh) })
		}
	}
	io.Copy(io.Discard, r) // keep draining if a line was too long
}

// waitReady returns once the server answers PING. When the server announces
// readiness in its log, that event is awaited; otherwise (Redcell) PING is
// retried until the deadline. It fails early if the process exits.
func (s *server) waitReady(ctx context.Context, announced bool, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	if announced {
		select {
		case <-s.readyCh:
		case <-s.exited:
			return s.exitError("before it was ready")
		case <-ctx.Done():
			return fmt.Errorf("%s not ready after %v: %w (log: %s)%s", s.label(), limit, ctx.Err(), s.logPath, logTail(s.logPath, 10))
		}
	}
	retry := time.NewTicker(20 * time.Millisecond)
	defer retry.Stop()
	for {
		err := s.ping(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-retry.C:
		case <-s.exited:
			return s.exitError("before it was ready")
		case <-ctx.Done():
			return fmt.Errorf("%s not answering PING after %v: %v (log: %s)%s", s.label(), limit, err, s.logPath, logTail(s.logPath, 10))
		}
	}
}

// ping opens a connection and expects +PONG.
func (s *server) ping(ctx context.Context) error {
	c, err := dialRESP(ctx, s.addr())
	if err != nil {
		return err
	}
	defer c.Close()
	c.setDeadline(time.Now().Add(2 * time.Second))
	v, err := c.do("PING")
	if err != nil {
		return err
	}
	if v.Kind != '+' || v.Str != "PONG" {
		return fmt.Errorf("PING answered %s", v)
	}
	return nil
}

// loadScript loads script into the server and returns its SHA1.
func (s *server) loadScript(ctx context.Context, script string) (string, error) {
	c, err := dialRESP(ctx, s.addr())
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.setDeadline(time.Now().Add(5 * time.Second))
	v, err := c.do("SCRIPT", "LOAD", script)
	if err != nil {
		return "", fmt.Errorf("SCRIPT LOAD: %w", err)
	}
	sum := sha1.Sum([]byte(script))
	want := hex.EncodeToString(sum[:])
	if v.Kind != '$' || v.Str != want {
		return "", fmt.Errorf("SCRIPT LOAD answered %s, want %s", v, want)
	}
	return want, nil
}

func (s *server) exitError(when string) error {
	return fmt.Errorf("%s (pid %d) exited %s: %v (log: %s)%s", s.label(), s.pid(), when, s.waitErr, s.logPath, logTail(s.logPath, 10))
}

// label is the server's kind, with its node name for a cluster node.
func (s *server) label() string {
	if s.name == "" {
		return string(s.kind)
	}
	return string(s.kind) + " " + s.name
}

// logTail is the last n lines of a server log, indented, for error
// messages: the temp dir holding the log is removed when bench exits.
func logTail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil || len(b) == 0 {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "\n    last log lines:\n      " + strings.Join(lines, "\n      ")
}

// stop ends the process by PID: SIGTERM, then SIGKILL if it has not exited
// after ten seconds. It is idempotent.
func (s *server) stop() error {
	select {
	case <-s.exited:
		return nil
	default:
	}
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("signal %s (pid %d): %w", s.kind, s.pid(), err)
	}
	select {
	case <-s.exited:
		return nil
	case <-time.After(10 * time.Second):
	}
	if err := s.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("kill %s (pid %d): %w", s.kind, s.pid(), err)
	}
	<-s.exited
	return nil
}

// stop stops one server of the fleet and removes its data dir.
func (f *fleet) stop(s *server) error {
	err := s.stop()
	if rmErr := os.RemoveAll(s.dataDir); rmErr != nil && err == nil {
		err = fmt.Errorf("remove %s: %w", s.dataDir, rmErr)
	}
	return err
}

// closeAll stops every server still running and removes the temp root.
func (f *fleet) closeAll() error {
	var errs []error
	for _, s := range f.servers {
		if err := s.stop(); err != nil {
			errs = append(errs, err)
		}
	}
	f.servers = nil
	if err := os.RemoveAll(f.root); err != nil {
		errs = append(errs, fmt.Errorf("remove %s: %w", f.root, err))
	}
	return errors.Join(errs...)
}

// freePort asks the kernel for a free TCP port on 127.0.0.1. The port is
// released before the server binds it; another process could take it in
// between, in which case the server fails to start and says so.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// rssBytes reads the resident set size of pid from /proc/PID/status.
func rssBytes(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("read status of pid %d: %w", pid, err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest)
			if len(f) != 2 || f[1] != "kB" {
				return 0, fmt.Errorf("unexpected VmRSS line %q", line)
			}
			kb, err := strconv.ParseInt(f[0], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("parse VmRSS %q: %w", line, err)
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}
