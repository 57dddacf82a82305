package systemtest

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestClusterScript: the README's scripts/cluster.sh starts a 3-node
// cluster that decides through any node, status names one leader and two
// followers in one term, a node that accepts connections but does not
// answer shows as "no answer" without holding status up for long,
// rolling-restart restarts each node in turn (the leader last) and the
// cluster decides again, and stop stops them all.
func TestClusterScript(t *testing.T) {
	base, metricsBase := freeTriple(t), freeTriple(t)
	dir := filepath.Join(t.TempDir(), "cluster")
	run := func(arg string) string {
		t.Helper()
		cmd := exec.Command("bash", "scripts/cluster.sh", arg)
		cmd.Dir = ".."
		cmd.Env = append(cmd.Environ(), "CLUSTER_DIR="+dir, "BASE_PORT="+strconv.Itoa(base), "METRICS_BASE_PORT="+strconv.Itoa(metricsBase))
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			t.Fatalf("cluster.sh %s: %v\n%s", arg, err, out.String())
		}
		return out.String()
	}
	t.Cleanup(func() { run("stop") })
	run("start")
	status := run("status")
	leaders, followers, terms := 0, 0, map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(status), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) < 6 {
			t.Fatalf("status line %q", line)
		}
		switch f[2] {
		case "leader":
			leaders++
		case "follower":
			followers++
		}
		terms[f[3]] = true
	}
	if leaders != 1 || followers != 2 || len(terms) != 1 {
		t.Fatalf("status:\n%s", status)
	}
	for i := 1; i <= 3; i++ {
		c := mustDial(t, "127.0.0.1:"+strconv.Itoa(base+i))
		if v, ok := mustDo(t, c, "CL.THROTTLE", "script-user", "15", "30", "60").ints(); !ok || v[0] != 0 {
			t.Fatalf("CL.THROTTLE through n%d: %v", i, v)
		}
		// Each node serves its metrics, so the local cluster can show the
		// dashboard and the leader's per-peer lag.
		resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(metricsBase+i) + "/metrics")
		if err != nil {
			t.Fatalf("n%d's /metrics: %v", i, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "redcell_raft_role") {
			t.Fatalf("n%d's /metrics: %s\n%.300s", i, resp.Status, body)
		}
	}
	// A hung node (SIGSTOP: the kernel still accepts its connections) is
	// reported as such; status waits half a second for it, not two.
	raw, err := os.ReadFile(filepath.Join(dir, "n3.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil {
		t.Fatalf("n3.pid: %v", err)
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGCONT) }) // before the stop above, if we fail below
	began := time.Now()
	status = run("status")
	took := time.Since(began)
	if !strings.Contains(status, "no answer") {
		t.Fatalf("status with n3 stopped by SIGSTOP:\n%s", status)
	}
	t.Logf("status with one silent node took %v", took)
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	// rolling-restart restarts all three, the leader last with a handover,
	// and the cluster decides through every node again.
	rolled := run("rolling-restart")
	if strings.Count(rolled, " restarted (pid ") != 3 || !strings.Contains(rolled, "leadership handed over") {
		t.Fatalf("rolling-restart:\n%s", rolled)
	}
	for i := 1; i <= 3; i++ {
		c := mustDial(t, "127.0.0.1:"+strconv.Itoa(base+i))
		if v, ok := mustDo(t, c, "CL.THROTTLE", "script-user", "15", "30", "60").ints(); !ok || v[0] != 0 {
			t.Fatalf("CL.THROTTLE through n%d after the rolling restart: %v", i, v)
		}
	}
	out := run("stop")
	if strings.Count(out, "stopped") != 3 {
		t.Fatalf("stop:\n%s", out)
	}
	if !strings.Contains(run("status"), "stopped") {
		t.Fatal("status after stop still finds a node running")
	}
}

// freeTriple is a port p such that p+1, p+2 and p+3 are free now.
func freeTriple(t *testing.T) int {
	t.Helper()
	for try := 0; try < 20; try++ {
		p, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		if p+3 < 65536 && portsFree(p+1, p+2, p+3) {
			return p
		}
	}
	t.Fatal("no three free consecutive ports")
	return 0
}

// portsFree reports whether each loopback port can be listened on now.
func portsFree(ports ...int) bool {
	for _, p := range ports {
		ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			return false
		}
		ln.Close()
	}
	return true
}
