package systemtest

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redcell/redcell/internal/testcert"
)

// tlsSetup is a CA, a server certificate for the node and a client
// certificate, all real (ECDSA P-256) and written as PEM files.
type tlsSetup struct {
	ca     *testcert.CA
	server testcert.Files
	client *testcert.Leaf
	dir    string
}

func newTLSSetup(t *testing.T) *tlsSetup {
	t.Helper()
	ca, err := testcert.NewCA("redcell test CA")
	if err != nil {
		t.Fatal(err)
	}
	s := &tlsSetup{ca: ca, dir: t.TempDir()}
	s.rotate(t, "redcell-node")
	if s.client, err = ca.Issue("test-client"); err != nil {
		t.Fatal(err)
	}
	return s
}

// rotate replaces the node's certificate files with a new certificate named
// cn (the operator's side of a SIGHUP reload).
func (s *tlsSetup) rotate(t *testing.T, cn string) {
	t.Helper()
	leaf, err := s.ca.Issue(cn)
	if err != nil {
		t.Fatal(err)
	}
	if s.server, err = testcert.WriteFiles(s.dir, "node", s.ca, leaf); err != nil {
		t.Fatal(err)
	}
}

func (s *tlsSetup) flags() []string {
	return []string{"--tls-cert-file", s.server.Cert, "--tls-key-file", s.server.Key, "--tls-ca-cert-file", s.server.CA}
}

// clientConfig trusts the CA and presents the client certificate when
// withCert is set.
func (s *tlsSetup) clientConfig(withCert bool) *tls.Config {
	c := &tls.Config{RootCAs: s.ca.Pool(), ServerName: "localhost"}
	if withCert {
		c.Certificates = []tls.Certificate{s.client.TLS()}
	}
	return c
}

// startTLSNode starts a node with a client TLS port and extra flags, and
// returns it with its TLS address.
func startTLSNode(t *testing.T, s *tlsSetup, extra ...string) (*node, string) {
	t.Helper()
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	flags := append([]string{"--tls-port", strconv.Itoa(port)}, s.flags()...)
	n := newNode("tls", t.TempDir(), t.TempDir(), append(flags, extra...)...)
	registerNodeCleanup(t, n, 0)
	if err := n.start(); err != nil {
		t.Fatal(err)
	}
	return n, net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
}

// serverName is the common name of the certificate the TLS port presents
// to a new connection.
func serverName(t *testing.T, addr string, cfg *tls.Config) string {
	t.Helper()
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, cfg)
	if err != nil {
		t.Fatalf("TLS dial %s: %v", addr, err)
	}
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0].Subject.CommonName
}

// TestTLSClients: the binary with --tls-port serves go-redis (RESP2 and
// RESP3) and redis-cli --tls with a client certificate, refuses a client
// without one (tls-auth-clients yes, Redis's default), reports its setup
// in CONFIG GET, keeps serving plain clients on --port, and takes a new
// certificate on SIGHUP for new connections while open ones keep working.
func TestTLSClients(t *testing.T) {
	s := newTLSSetup(t)
	n, tlsAddr := startTLSNode(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	var kept *redis.Client
	for _, proto := range []int{3, 2} {
		rdb := redis.NewClient(&redis.Options{Addr: tlsAddr, Protocol: proto, TLSConfig: s.clientConfig(true), MaxRetries: -1})
		got, err := rdb.Do(ctx, "CL.THROTTLE", "tls:"+strconv.Itoa(proto), 1, 1, 60).Result()
		if err != nil || fmt.Sprint(got) != "[0 2 1 -1 60]" {
			t.Errorf("go-redis RESP%d over TLS: %v, %v", proto, got, err)
		}
		if proto == 3 {
			kept = rdb
			defer rdb.Close()
		} else {
			rdb.Close()
		}
	}

	// Without a client certificate the handshake is refused.
	none := redis.NewClient(&redis.Options{Addr: tlsAddr, TLSConfig: s.clientConfig(false), MaxRetries: -1})
	if err := none.Ping(ctx).Err(); err == nil {
		t.Error("a TLS client without a certificate was served (tls-auth-clients yes)")
	}
	none.Close()
	// Plain RESP on the TLS port is not served either.
	if r, err := callAddr(tlsAddr, 3*time.Second, "PING"); err == nil {
		t.Errorf("plain PING on the TLS port answered %v", r)
	}

	c := mustDial(t, n.addr())
	expectConfig(t, c, "tls-port", strings.TrimPrefix(tlsAddr, "127.0.0.1:"))
	expectConfig(t, c, "tls-auth-clients", "yes")
	expectReply(t, c, wantStatus("PONG"), "PING")

	t.Run("redis-cli", func(t *testing.T) {
		cli := requireTool(t, "redis-cli")
		dir := t.TempDir()
		files, err := testcert.WriteFiles(dir, "client", s.ca, s.client)
		if err != nil {
			t.Fatal(err)
		}
		port := strings.TrimPrefix(tlsAddr, "127.0.0.1:")
		out := runTool(t, nil, cli, "--tls", "--cacert", files.CA, "--cert", files.Cert, "--key", files.Key, "--sni", "localhost", "-p", port, "CL.THROTTLE", "tls:cli", "1", "1", "60")
		if out != "0\n2\n1\n-1\n60\n" {
			t.Errorf("redis-cli --tls: %q", out)
		}
	})

	t.Run("SIGHUP reload", func(t *testing.T) {
		if cn := serverName(t, tlsAddr, s.clientConfig(true)); cn != "redcell-node" {
			t.Fatalf("before the reload the port presents %q", cn)
		}
		off := n.logSize()
		s.rotate(t, "rotated-node")
		if err := n.signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		waitLog(t, n, off, "SIGHUP: TLS certificates reloaded")
		if cn := serverName(t, tlsAddr, s.clientConfig(true)); cn != "rotated-node" {
			t.Errorf("after SIGHUP the port presents %q, want the rotated certificate", cn)
		}
		// The connection opened before the reload still works.
		if err := kept.Ping(ctx).Err(); err != nil {
			t.Errorf("a connection from before the reload: %v", err)
		}
		// A reload that fails keeps the certificate in use and says why.
		if err := os.WriteFile(s.server.Key, []byte("not a key\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		off = n.logSize()
		if err := n.signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		waitLog(t, n, off, "SIGHUP: TLS material not reloaded")
		if cn := serverName(t, tlsAddr, s.clientConfig(true)); cn != "rotated-node" {
			t.Errorf("after a failed reload the port presents %q", cn)
		}
		if !n.running() {
			t.Fatal("the node stopped on SIGHUP")
		}
	})
}

// waitLog waits until the node's log after offset off holds line (the node
// writes it once the event happened; a deadline turns a missing line into
// a failure).
func waitLog(t *testing.T, n *node, off int64, line string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(n.logSince(off), line) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q in the log:\n%s", line, lastLines(n.logSince(off), 20))
		}
		<-time.After(pollEvery)
	}
}

// TestTLSClientAuthOptionalAndNo: optional serves a client without a
// certificate and refuses one from another CA; no asks for none.
func TestTLSClientAuthOptionalAndNo(t *testing.T) {
	s := newTLSSetup(t)
	other, err := testcert.NewCA("someone else")
	if err != nil {
		t.Fatal(err)
	}
	foreign, _ := other.Issue("intruder")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, mode := range []string{"optional", "no"} {
		_, addr := startTLSNode(t, s, "--tls-auth-clients", mode)
		ping := func(cfg *tls.Config) error {
			rdb := redis.NewClient(&redis.Options{Addr: addr, TLSConfig: cfg, MaxRetries: -1})
			defer rdb.Close()
			return rdb.Ping(ctx).Err()
		}
		if err := ping(s.clientConfig(false)); err != nil {
			t.Errorf("%s: a client without a certificate: %v", mode, err)
		}
		if err := ping(s.clientConfig(true)); err != nil {
			t.Errorf("%s: a client with the CA's certificate: %v", mode, err)
		}
		cfg := s.clientConfig(false)
		fc := foreign.TLS()
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &fc, nil }
		if err := ping(cfg); (err == nil) != (mode == "no") {
			t.Errorf("%s: a client with another CA's certificate: %v", mode, err)
		}
	}
}

// TestTLSCluster: three nodes with --tls-cluster form a cluster (Raft and
// joins over mutual TLS through the test proxies), a write through a
// follower is forwarded to the leader, and every node agrees.
func TestTLSCluster(t *testing.T) {
	s := newTLSSetup(t)
	c := startCluster(t, 3, append([]string{"--tls-cluster", "yes"}, s.flags()...)...)
	leader := c.waitLeader()
	follower := (leader + 1) % len(c.nodes)
	for i := 0; i < 3; i++ {
		r, err := c.call(follower, "CL.THROTTLE", "tls:cluster", "5", "1", "60")
		if err != nil || r.isErr() {
			t.Fatalf("CL.THROTTLE through follower %s: %v %v", c.nodes[follower].id, r, err)
		}
	}
	c.compareReplicas("after writes through a follower over mutual TLS")
	if r, err := c.call(leader, "CONFIG", "GET", "tls-cluster"); err != nil || r.String() != `["tls-cluster" "yes"]` {
		t.Errorf("CONFIG GET tls-cluster: %v %v", r, err)
	}
}

// TestTLSClusterRefusesAPlainNode: a node started without TLS but with the
// right cluster secret cannot join a cluster whose nodes demand TLS: the
// join is refused and the node stops with an error, never joining.
func TestTLSClusterRefusesAPlainNode(t *testing.T) {
	s := newTLSSetup(t)
	c := startCluster(t, 1, append([]string{"--tls-cluster", "yes"}, s.flags()...)...)
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	n := newNode("plain", t.TempDir(), c.logDir, "--cluster-secret-file", c.secretFile, "--node-id", "plain", "--join", c.nodes[0].addr())
	n.port = port
	n.readyWhen = serving
	registerNodeCleanup(t, n, 0)
	if err := n.launch(); err != nil {
		t.Fatal(err)
	}
	// The TLS node refuses the plain node's peer connections (its join
	// call, over the forwarding protocol): wait until it has, then check
	// the cluster did not grow.
	deadline := time.Now().Add(30 * time.Second)
	for {
		r, err := callAddr(c.nodes[0].addr(), probeTimeout, "INFO", "stats")
		rejected := infoField(r.str, "peer_connections_rejected")
		if err == nil && rejected != "" && rejected != "0" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the TLS node never refused the plain node's connection; peer_connections_rejected %q, %v", rejected, err)
		}
		<-time.After(pollEvery)
	}
	if st, err := c.status(0); err != nil || st.voters != 1 {
		t.Errorf("the TLS cluster: %+v, %v; want still 1 voter", st, err)
	}
	if r, err := callAddr(c.nodes[0].addr(), probeTimeout, "RAFT", "INFO"); err != nil || strings.Contains(r.String(), "plain") {
		t.Errorf("RAFT INFO of the TLS node names the plain node: %v %v", r, err)
	}
	n.kill()
}

// TestProtectedMode: bound beyond loopback without a password, the node
// answers a client from another interface with Redis 7's exact -DENIED
// text and closes it, while loopback clients are served; CONFIG SET
// protected-mode no (from loopback) or a password lets remote clients in.
func TestProtectedMode(t *testing.T) {
	ip := nonLoopbackIPv4(t)
	n := newNode("protected", t.TempDir(), t.TempDir(), "--bind", "0.0.0.0")
	registerNodeCleanup(t, n, 0)
	if err := n.start(); err != nil {
		t.Fatal(err)
	}
	remote := net.JoinHostPort(ip, strconv.Itoa(n.port))
	const denied = "-DENIED Redis is running in protected mode because protected mode is enabled and no password is set for the default user. In this mode connections are only accepted from the loopback interface. If you want to connect from external computers to Redis you may adopt one of the following solutions: 1) Just disable protected mode sending the command 'CONFIG SET protected-mode no' from the loopback interface by connecting to Redis from the same host the server is running, however MAKE SURE Redis is not publicly accessible from internet if you do so. Use CONFIG REWRITE to make this change permanent. 2) Alternatively you can just disable the protected mode by editing the Redis configuration file, and setting the protected mode option to 'no', and then restarting the server. 3) If you started the server manually just for testing, restart it with the '--protected-mode no' option. 4) Set up an authentication password for the default user. NOTE: You only need to do one of the above things in order for the server to start accepting connections from the outside.\r\n"
	// The node speaks first and closes: read everything until EOF.
	nc, err := net.DialTimeout("tcp", remote, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	_, _ = nc.Write([]byte("PING\r\n"))
	got, err := io.ReadAll(nc)
	nc.Close()
	if string(got) != denied || err != nil {
		t.Fatalf("a remote client got %q (%v), want Redis's DENIED text and the connection closed", got, err)
	}
	// redis-cli shows the explanation as Redis's would be shown. (go-redis
	// v9 sends HELLO first and, on an error reply to it, goes on with the
	// closed connection: it reports EOF, with Redis too.)
	cli := requireTool(t, "redis-cli")
	out, _ := exec.Command(cli, "-h", ip, "-p", strconv.Itoa(n.port), "PING").CombinedOutput()
	if want := strings.TrimPrefix(strings.TrimSuffix(denied, "\r\n"), "-"); strings.TrimSpace(string(out)) != want {
		t.Errorf("redis-cli -h %s PING: %q", ip, out)
	}

	local := mustDial(t, n.addr())
	expectReply(t, local, wantStatus("PONG"), "PING")
	expectConfig(t, local, "protected-mode", "yes")
	expectReply(t, local, wantStatus("OK"), "CONFIG", "SET", "protected-mode", "no")
	if r, err := callAddr(remote, 5*time.Second, "PING"); err != nil || r.str != "PONG" {
		t.Errorf("remote PING with protected mode off: %v %v", r, err)
	}
	expectReply(t, local, wantStatus("OK"), "CONFIG", "SET", "protected-mode", "yes")
	expectReply(t, local, wantStatus("OK"), "CONFIG", "SET", "requirepass", systemPass)
	// With a password the remote client is served, and must authenticate.
	if r, err := callAddr(remote, 5*time.Second, "PING"); err != nil || r.str != "NOAUTH Authentication required." {
		t.Errorf("remote PING with a password set: %v %v", r, err)
	}
}

// nonLoopbackIPv4 is an address of this machine beyond the loopback
// interface, to connect from as a remote client would.
func nonLoopbackIPv4(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil && !ipn.IP.IsLoopback() {
			return ipn.IP.String()
		}
	}
	err = errors.New("this machine has no IPv4 address beyond loopback to act as a remote client from")
	if os.Getenv("CI") == "true" {
		t.Fatal(err)
	}
	t.Skip(err)
	return ""
}

// TestAdminCommandsNeedAuth: with a password, the commands that change or
// reveal the node's state (RAFT, CONFIG SET, FLUSHALL, DEBUG) answer
// NOAUTH before AUTH and change nothing.
func TestAdminCommandsNeedAuth(t *testing.T) {
	n := startPasswordNode(t)
	c := mustDial(t, n.addr())
	for _, cmd := range [][]string{
		{"RAFT", "REMOVE", "n2"}, {"RAFT", "INFO"}, {"RAFT", "SNAPSHOT"}, {"CONFIG", "SET", "requirepass", ""},
		{"CONFIG", "SET", "protected-mode", "no"}, {"FLUSHALL"}, {"DEBUG", "CLOCK", "SET", "0"}, {"SHUTDOWN"},
	} {
		expectReply(t, c, wantErr("NOAUTH Authentication required."), cmd...)
	}
	expectReply(t, c, wantStatus("OK"), "AUTH", systemPass)
	expectConfig(t, c, "requirepass", systemPass)
	expectConfig(t, c, "protected-mode", "yes")
}

// expectConfig checks CONFIG GET name answers exactly [name value].
func expectConfig(t *testing.T, c *respConn, name, value string) {
	t.Helper()
	r := mustDo(t, c, "CONFIG", "GET", name)
	if r.kind != '*' || len(r.elems) != 2 || r.elems[0].str != name || r.elems[1].str != value {
		t.Errorf("CONFIG GET %s: %v, want [%q %q]", name, r, name, value)
	}
}
