package tlscert

import (
	"crypto/tls"
	"net"
	"os"
	"testing"

	"github.com/redcell/redcell/internal/testcert"
)

// serveOnce runs one TLS handshake of cfg on a real loopback socket against
// a client with clientCfg and returns the client's error and the server's
// certificate as the client saw it.
func serveOnce(t *testing.T, cfg, clientCfg *tls.Config) (string, error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		tc := tls.Server(c, cfg)
		_ = tc.Handshake()
		// TLS 1.3 reports a refused client certificate on the client's
		// first read: answer one byte if the handshake went through.
		_, _ = tc.Write([]byte{1})
		tc.Close()
	}()
	c, err := tls.Dial("tcp", ln.Addr().String(), clientCfg)
	if err != nil {
		<-done
		return "", err
	}
	defer c.Close()
	if _, err := c.Read(make([]byte, 1)); err != nil {
		<-done
		return "", err
	}
	<-done
	return c.ConnectionState().PeerCertificates[0].Subject.CommonName, nil
}

func issue(t *testing.T, ca *testcert.CA, dir, name string) testcert.Files {
	t.Helper()
	leaf, err := ca.Issue(name)
	if err != nil {
		t.Fatal(err)
	}
	f, err := testcert.WriteFiles(dir, "server", ca, leaf)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestClientAuthModes: yes refuses a client without a certificate, optional
// and no accept it; yes and optional refuse one from another CA; all accept
// a client certificate of the CA.
func TestClientAuthModes(t *testing.T) {
	ca, _ := testcert.NewCA("ca")
	other, _ := testcert.NewCA("other")
	f := issue(t, ca, t.TempDir(), "server")
	st, err := Load(Files{Cert: f.Cert, Key: f.Key, CA: f.CA})
	if err != nil {
		t.Fatal(err)
	}
	good, _ := ca.Issue("client")
	bad, _ := other.Issue("client")
	client := func(leaf *testcert.Leaf) *tls.Config {
		c := &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost"}
		if leaf != nil {
			// Sent whatever CAs the server names (with Certificates, Go's
			// client would withhold a certificate of another CA).
			cert := leaf.TLS()
			c.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil }
		}
		return c
	}
	for _, tc := range []struct {
		auth                  ClientAuth
		none, foreign, member bool // accepted?
	}{
		{ClientAuthYes, false, false, true},
		{ClientAuthOptional, true, false, true},
		{ClientAuthNo, true, true, true},
	} {
		cfg := st.ClientPort(tc.auth)
		for _, c := range []struct {
			what string
			leaf *testcert.Leaf
			want bool
		}{{"no certificate", nil, tc.none}, {"another CA's", bad, tc.foreign}, {"the CA's", good, tc.member}} {
			_, err := serveOnce(t, cfg, client(c.leaf))
			if (err == nil) != c.want {
				t.Errorf("tls-auth-clients %s, client with %s certificate: err %v, want accepted=%v", tc.auth, c.what, err, c.want)
			}
		}
	}
}

// TestReload: a reload picks up new files for the next handshake; one that
// fails (a key that does not match) keeps the old material and says why.
func TestReload(t *testing.T) {
	ca, _ := testcert.NewCA("ca")
	dir := t.TempDir()
	f := issue(t, ca, dir, "first")
	st, err := Load(Files{Cert: f.Cert, Key: f.Key, CA: f.CA})
	if err != nil {
		t.Fatal(err)
	}
	cfg := st.ClientPort(ClientAuthNo)
	client := &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost"}
	if cn, err := serveOnce(t, cfg, client); err != nil || cn != "first" {
		t.Fatalf("before: %q, %v", cn, err)
	}
	issue(t, ca, dir, "second")
	if err := st.Reload(); err != nil {
		t.Fatal(err)
	}
	if cn, err := serveOnce(t, cfg, client); err != nil || cn != "second" {
		t.Fatalf("after the reload: %q, %v", cn, err)
	}
	other, _ := ca.Issue("third")
	if err := os.WriteFile(f.Key, other.KeyPEM, 0o600); err != nil { // the certificate stays "second"
		t.Fatal(err)
	}
	if err := st.Reload(); err == nil {
		t.Fatal("a key that does not match its certificate reloaded")
	}
	if cn, err := serveOnce(t, cfg, client); err != nil || cn != "second" {
		t.Fatalf("after a failed reload: %q, %v", cn, err)
	}
	if _, err := Load(Files{Cert: f.Cert, Key: f.Key + ".missing"}); err == nil {
		t.Error("a missing key file loaded")
	}
}
