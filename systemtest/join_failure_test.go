package systemtest

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Joins that cannot succeed end, and say why (issue 31, finding 6): a
// joining node whose cluster secret or TLS setting differs from the
// cluster's, or whose --join address answers nothing, exits with status 1
// and an error naming the cause, instead of retrying forever; RAFT JOIN of
// a member the node cannot reach is an error and adds nothing; a node
// bound beyond loopback with neither a password nor a cluster secret says
// so once at start.

// definitiveJoinBound is how long a joiner may take to give up on a secret
// or TLS mismatch: well under its --join-timeout (the default, 60 s), so
// passing shows it did not wait the deadline out. The slowest case is a
// joiner without TLS facing one with it, which waits out the member's 5 s
// handshake timeout on each of its two attempts.
const definitiveJoinBound = 40 * time.Second

// writeSecret writes a cluster secret file and returns its path.
func writeSecret(t *testing.T, secret string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(path, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// joinerExit starts a node with an empty data dir that joins via addr with
// extra flags, waits up to within for it to exit by itself, and returns its
// exit code, how long it ran and its log. A port taken between freePort
// and the bind is retried with another.
func joinerExit(t *testing.T, name, via string, within time.Duration, extra ...string) (code int, took time.Duration, log string) {
	t.Helper()
	for attempt := 0; ; attempt++ {
		port, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		flags := append([]string{"--node-id", name, "--join", via}, extra...)
		n := newNode(name, t.TempDir(), t.TempDir(), flags...)
		n.port = port
		registerNodeCleanup(t, n, 0)
		start := time.Now()
		if err := n.launch(); err != nil {
			t.Fatal(err)
		}
		if err := n.waitExit(within); err != nil {
			t.Fatalf("%v: a join that cannot succeed must end the process (log:\n%s)", err, lastLines(n.logSince(0), 30))
		}
		took, log = time.Since(start), n.logSince(0)
		if strings.Contains(log, "address already in use") && attempt < 3 {
			continue
		}
		return n.exitCode(), took, log
	}
}

// expectJoinFailure checks a joiner's end: status 1 (not a flag error's 2),
// and the fatal error's line naming the cause.
func expectJoinFailure(t *testing.T, code int, took time.Duration, log, cause string) {
	t.Helper()
	t.Logf("exited with %d after %v", code, took.Round(time.Millisecond))
	var fatal string
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, "stopping after a fatal error") {
			fatal = l
		}
	}
	if code != 1 || !strings.Contains(fatal, "cannot join the cluster via") || !strings.Contains(fatal, cause) {
		t.Fatalf("exit code %d, fatal error line %q; want 1 and an error naming %q (log:\n%s)", code, fatal, cause, lastLines(log, 30))
	}
	t.Logf("%s", fatal)
}

// clusterMembers is INFO replication's cluster_members of the node at addr.
func clusterMembers(t *testing.T, addr string) string {
	t.Helper()
	r, err := callAddr(addr, probeTimeout, "INFO", "replication")
	if err != nil || r.isErr() {
		t.Fatalf("INFO replication: %v %v", r, err)
	}
	return infoField(r.str, "cluster_members")
}

// TestJoinWithAnotherSecretExits: a node joining with a cluster secret
// other than the cluster's exits with status 1 long before its join
// timeout, naming a secret mismatch; the cluster stays one member.
func TestJoinWithAnotherSecretExits(t *testing.T) {
	member := startTestNode(t, "member", "--node-id", "member", "--cluster-secret-file", writeSecret(t, clusterSecret), "--bootstrap")
	code, took, log := joinerExit(t, "joiner", member.addr(), definitiveJoinBound,
		"--cluster-secret-file", writeSecret(t, "another-secret-entirely-0123456789"))
	expectJoinFailure(t, code, took, log, "cluster secret mismatch")
	if m := clusterMembers(t, member.addr()); m != "1" {
		t.Errorf("the member reports cluster_members:%s, want 1", m)
	}
}

// TestJoinTLSMismatchExits: with the right secret, a node without
// --tls-cluster joining a member that has it, and a node with it joining a
// member without it, both exit with status 1 naming a TLS mismatch, not the
// secret, and long before their join timeout.
func TestJoinTLSMismatchExits(t *testing.T) {
	s := newTLSSetup(t)
	secret := writeSecret(t, clusterSecret)
	tlsFlags := append([]string{"--tls-cluster", "yes"}, s.flags()...)
	for _, tc := range []struct {
		name                 string
		memberTLS, joinerTLS bool
	}{
		{"plain joiner, TLS member", true, false},
		{"TLS joiner, plain member", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			memberFlags := []string{"--node-id", "member", "--cluster-secret-file", secret, "--bootstrap"}
			if tc.memberTLS {
				memberFlags = append(memberFlags, tlsFlags...)
			}
			member := startTestNode(t, "member", memberFlags...)
			joinerFlags := []string{"--cluster-secret-file", secret}
			if tc.joinerTLS {
				joinerFlags = append(joinerFlags, tlsFlags...)
			}
			code, took, log := joinerExit(t, "joiner", member.addr(), definitiveJoinBound, joinerFlags...)
			expectJoinFailure(t, code, took, log, "TLS mismatch")
			if strings.Contains(log, "cluster secret mismatch") {
				t.Errorf("a TLS mismatch was blamed on the secret")
			}
			if m := clusterMembers(t, member.addr()); m != "1" {
				t.Errorf("the member reports cluster_members:%s, want 1", m)
			}
		})
	}
}

// TestJoinUnreachableExits: a node whose --join address has nothing
// listening retries until --join-timeout, then exits with status 1 naming
// the address unreachable.
func TestJoinUnreachableExits(t *testing.T) {
	nobody, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	const joinTimeout = 3 * time.Second
	code, took, log := joinerExit(t, "joiner", net.JoinHostPort("127.0.0.1", strconv.Itoa(nobody)), joinTimeout+20*time.Second,
		"--cluster-secret-file", writeSecret(t, clusterSecret), "--join-timeout", joinTimeout.String())
	expectJoinFailure(t, code, took, log, "unreachable")
	if took < joinTimeout {
		t.Errorf("gave up after %v, before its --join-timeout of %v", took, joinTimeout)
	}
	if n := strings.Count(log, `msg="join: retrying"`); n < 2 {
		t.Errorf("%d retries logged before giving up; an unreachable member is retried until the timeout", n)
	}
}

// TestRaftJoinOfAnUnreachableMember: RAFT JOIN on a node without a cluster
// secret (which can reach no peer) is an error naming that, and adds no
// member; on a node with a secret, RAFT JOIN of an address where nothing
// listens is an error too. The node's configuration keeps one member.
func TestRaftJoinOfAnUnreachableMember(t *testing.T) {
	nobody, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	ghost := net.JoinHostPort("127.0.0.1", strconv.Itoa(nobody))
	for _, tc := range []struct {
		name  string
		flags []string
		says  string
	}{
		{"without a secret", nil, "no cluster secret"},
		{"with a secret", []string{"--cluster-secret-file", writeSecret(t, clusterSecret), "--bootstrap"}, "cannot reach"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := startTestNode(t, "alone", tc.flags...)
			logFrom := n.logSize()
			r, err := callAddr(n.addr(), 15*time.Second, "RAFT", "JOIN", "ghost", ghost)
			if err != nil {
				t.Fatal(err)
			}
			if !r.isErr() || !strings.HasPrefix(r.str, "ERR ") || !strings.Contains(r.str, tc.says) {
				t.Errorf("RAFT JOIN ghost %s: %v; want an ERR saying %q", ghost, r, tc.says)
			}
			t.Logf("RAFT JOIN: -%s", r.str)
			if m := clusterMembers(t, n.addr()); m != "1" {
				t.Errorf("cluster_members:%s after the refused RAFT JOIN, want 1", m)
			}
			if info, err := callAddr(n.addr(), probeTimeout, "RAFT", "INFO"); err != nil || strings.Contains(info.String(), "ghost") {
				t.Errorf("RAFT INFO names the refused member: %v %v", info, err)
			}
			if strings.Contains(n.logSince(logFrom), `msg="added a non-voting member"`) {
				t.Errorf("the node logged adding the refused member")
			}
		})
	}
}

// TestBindBeyondLoopbackWarnsOnce: a node bound to 0.0.0.0 (protected mode
// on, its default) with neither a password nor a cluster secret logs one
// warning at start naming what is exposed and the flags that fix it; with a
// cluster secret, or bound to loopback, it logs none. Only loopback is
// dialled.
func TestBindBeyondLoopbackWarnsOnce(t *testing.T) {
	const warning = `level=WARN msg="listening beyond loopback with neither a client password nor a cluster secret"`
	for _, tc := range []struct {
		name  string
		flags []string
		want  int
	}{
		{"0.0.0.0, no secret, no password", []string{"--bind", "0.0.0.0"}, 1},
		{"0.0.0.0 with a secret", []string{"--bind", "0.0.0.0", "--cluster-secret-file", writeSecret(t, clusterSecret), "--bootstrap"}, 0},
		{"loopback", nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := startTestNode(t, "bind", tc.flags...)
			// The warning is logged before "redcell started": once that
			// line is there, so is the warning, if any.
			deadline := time.Now().Add(readyTimeout)
			for !strings.Contains(n.logSince(0), `msg="redcell started"`) {
				if time.Now().After(deadline) {
					t.Fatalf("no \"redcell started\" in the log after %v", readyTimeout)
				}
				<-time.After(pollEvery)
			}
			log := n.logSince(0)
			if got := strings.Count(log, warning); got != tc.want {
				t.Fatalf("the exposure warning appears %d times, want %d (log:\n%s)", got, tc.want, lastLines(log, 20))
			}
			if tc.want == 0 {
				return
			}
			for _, l := range strings.Split(log, "\n") {
				if strings.Contains(l, warning) {
					t.Logf("%s", l)
					for _, s := range []string{"bind=0.0.0.0", "protected mode", "--requirepass-file", "--cluster-secret-file", "--bind 127.0.0.1"} {
						if !strings.Contains(l, s) {
							t.Errorf("the warning does not mention %q", s)
						}
					}
				}
			}
		})
	}
}
