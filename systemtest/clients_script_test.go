package systemtest

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// The sessions of clients in other languages: redis-py (Debian's
// python3-redis under /usr/bin/python3), ioredis and node-redis (npm, pinned
// by clients/node/package-lock.json and installed by .ci/run with npm ci),
// and a scripted redis-cli session. Each script reports what its client
// returned (sessionReport); the expectations stay here.

// repoDir is the repository root (this file's parent directory's parent).
func repoDir(t *testing.T) string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("cannot locate the repository")
	}
	return filepath.Dir(filepath.Dir(file))
}

// requireSetup fails in CI (CI=true), and skips elsewhere, when what a test
// needs is missing.
func requireSetup(t *testing.T, ok bool, what string) {
	t.Helper()
	if ok {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is required in CI (.ci/run installs it)", what)
	}
	t.Skipf("%s is missing (.ci/run installs it)", what)
}

// nodeClients installs clients/node's packages once per test binary.
var nodeClients struct {
	once sync.Once
	ok   bool
}

// installNodeClients makes sure clients/node/node_modules holds exactly what
// package-lock.json pins, running `npm ci` once if it does not (so that
// `go test ./...` on a machine with npm runs the Node clients instead of
// skipping them; .ci/run has already installed them). It reports whether the
// packages are there; a failed install is logged.
func installNodeClients(t *testing.T, dir string) bool {
	t.Helper()
	installed := func() bool {
		_, err := os.Stat(filepath.Join(dir, "node_modules", ".package-lock.json"))
		return err == nil && nodeDependenciesInstalled(dir)
	}
	nodeClients.once.Do(func() {
		if nodeClients.ok = installed(); nodeClients.ok {
			return
		}
		npm, err := exec.LookPath("npm")
		if err != nil {
			t.Logf("npm not found: %v", err)
			return
		}
		cmd := exec.Command(npm, "ci", "--no-audit", "--no-fund", "--loglevel=error")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Logf("npm ci in %s: %v\n%s", dir, err, out)
			return
		}
		nodeClients.ok = installed()
	})
	return nodeClients.ok
}

// nodeDependenciesInstalled reports whether every dependency package.json
// names is in node_modules at the version it pins (package.json pins exact
// versions): a node_modules installed from an older lock file, before a
// dependency was added or moved, is not what package-lock.json pins.
func nodeDependenciesInstalled(dir string) bool {
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err != nil || json.Unmarshal(b, &pkg) != nil {
		return false
	}
	for name, version := range pkg.Dependencies {
		var installed struct {
			Version string `json:"version"`
		}
		b, err := os.ReadFile(filepath.Join(dir, "node_modules", name, "package.json"))
		if err != nil || json.Unmarshal(b, &installed) != nil || installed.Version != version {
			return false
		}
	}
	return true
}

// runReport runs a session script and decodes its report.
func runReport(t *testing.T, s clientSession, name string, argv ...string) sessionReport {
	t.Helper()
	out := runTool(t, nil, name, argv...)
	var r sessionReport
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &r); err != nil {
		t.Fatalf("%s: the report is not JSON (%v):\n%s", name, err, out)
	}
	for _, p := range s.check(r) {
		t.Errorf("%s %s: %s", r.Lib, r.Version, p)
	}
	return r
}

func testRedisPy(t *testing.T, n *node) {
	const python = "/usr/bin/python3"
	_, err := os.Stat(python)
	requireSetup(t, err == nil, python)
	requireSetup(t, exec.Command(python, "-c", "import redis").Run() == nil, "redis-py (Debian's python3-redis)")
	s := newClientSession("redis-py")
	r := runReport(t, s, python, filepath.Join(repoDir(t), "clients", "python", "session.py"), strconv.Itoa(n.port), s.json())
	t.Logf("redis-py %s, RESP%d", r.Version, r.Proto)
}

// testNodeClient runs the session with lib ("ioredis" or "node-redis") with
// its default options (resp "default") or the protocol resp ("2", "3").
func testNodeClient(t *testing.T, n *node, lib, resp string, wantProto int) {
	node := requireTool(t, "node")
	dir := filepath.Join(repoDir(t), "clients", "node")
	requireSetup(t, installNodeClients(t, dir), "clients/node/node_modules (npm ci)")
	s := newClientSession(lib + "-" + resp)
	checkCache := lib == "node-redis" && resp == "default"
	if checkCache {
		s.CacheKey = s.Plain[0][1] + ":cached"
	}
	r := runReport(t, s, node, filepath.Join(dir, "session.js"), lib, resp, strconv.Itoa(n.port), s.json())
	if r.Proto != wantProto {
		t.Errorf("%s %s with RESP %s: HELLO says proto %d, want %d", lib, r.Version, resp, r.Proto, wantProto)
	}
	// node-redis's client-side cache: a miss, a hit, and after a write on
	// another connection, a miss with the new value.
	if want := "[none miss none hit string miss]"; checkCache && fmt.Sprint(r.Cache) != want {
		t.Errorf("node-redis client-side cache: TYPE gave %v, want %s", r.Cache, want)
	}
	t.Logf("%s %s, RESP%d", lib, r.Version, r.Proto)
}

// testRedisCLIScript feeds a session to redis-cli on stdin, as a shell script
// would, and checks its whole output.
func testRedisCLIScript(t *testing.T, n *node) {
	cli := requireTool(t, "redis-cli")
	s := newClientSession("cli-script")
	var in strings.Builder
	line := func(cmd []string) { in.WriteString(strings.Join(cmd, " ") + "\n") }
	var want []string
	ints := func(v []int64) {
		for _, x := range v {
			want = append(want, strconv.FormatInt(x, 10))
		}
	}
	for i, cmd := range s.Plain {
		line(cmd)
		ints(s.wantPlain[i])
	}
	line([]string{"MULTI"})
	want = append(want, "OK")
	for _, cmd := range s.Tx {
		line(cmd)
		want = append(want, "QUEUED")
	}
	line([]string{"EXEC"})
	for _, v := range s.wantTx {
		ints(v)
	}
	line(s.Bad)
	want = append(want, s.wantErr, "") // not on a terminal, an error is followed by an empty line
	for i, cmd := range s.After {
		line(cmd)
		ints(s.wantAfter[i])
	}
	out := runTool(t, []byte(in.String()), cli, "-p", strconv.Itoa(n.port))
	if got := strings.Split(strings.TrimRight(out, "\n"), "\n"); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("redis-cli session:\n got %q\nwant %q", got, want)
	}
}
