package mux

import (
	"crypto/tls"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redcell/redcell/internal/testcert"
)

// TestDialErrorsNameTheCause: each way a peer can refuse a dial comes back
// as the sentinel that names it (errors.Is), with a sentence saying which
// side has what, and the definitive ones come back at once, not after a
// timeout. The acceptors under TLS wait for a dialer's TLS handshake at most
// their handshake timeout, shortened here so the plain dialer's case is
// quick.
func TestDialErrorsNameTheCause(t *testing.T) {
	ca, other := newCA(t, "cluster CA"), newCA(t, "another cluster's CA")
	tlsCfg := func(ca *testcert.CA, name string) Config {
		c, _, _ := peerTLS(t, ca, name)
		c.HandshakeTimeout = 500 * time.Millisecond
		return c
	}
	plainA, _ := startMux(t, Config{Secret: secretA, NodeID: "plain-a"})
	plainB, _ := startMux(t, Config{Secret: secretB, NodeID: "plain-b"})
	noSecret, _ := startMux(t, Config{NodeID: "no-secret"})
	tlsA, _ := startMux(t, tlsCfg(ca, "tls-a"))
	tlsOther, _ := startMux(t, tlsCfg(other, "tls-other"))
	// A node that trusts the cluster's CA but presents a certificate of
	// another: the acceptor refuses it after the dialer's handshake ended.
	leaf, err := other.Issue("stranger")
	if err != nil {
		t.Fatal(err)
	}
	strangerCert := leaf.TLS()
	strangerCfg := tlsCfg(other, "stranger")
	strangerCfg.TLSClient = &tls.Config{
		MinVersion:           tls.VersionTLS13,
		InsecureSkipVerify:   true, // trusts any acceptor: only its own certificate is wrong
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &strangerCert, nil },
	}
	stranger, _ := startMux(t, strangerCfg)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	nobody := ln.Addr().String()
	ln.Close()

	for _, tc := range []struct {
		name   string
		dialer *Mux
		addr   string
		want   error
		says   string
	}{
		{"nothing listens", plainA, nobody, ErrUnreachable, "cannot connect"},
		{"another secret", plainB, plainA.Addr().String(), ErrSecretMismatch, "another cluster secret"},
		{"an acceptor without a secret", plainA, noSecret.Addr().String(), ErrSecretMismatch, "has no cluster secret"},
		{"a TLS dialer, a plain acceptor", tlsA, plainA.Addr().String(), ErrTLSMismatch, "answered in clear"},
		{"a plain dialer, a TLS acceptor", plainA, tlsA.Addr().String(), ErrTLSMismatch, "the peer uses TLS between nodes"},
		{"an acceptor of another CA", tlsA, tlsOther.Addr().String(), ErrTLSMismatch, "not signed by the CA this node trusts"},
		{"a dialer of another CA", stranger, tlsA.Addr().String(), ErrTLSMismatch, "refused this node's certificate"},
	} {
		start := time.Now()
		c, err := tc.dialer.Dial(tc.addr, HeaderRaft, 5*time.Second)
		took := time.Since(start)
		t.Logf("%s (%v): %v", tc.name, took.Round(time.Millisecond), err)
		if err == nil {
			c.Close()
			t.Errorf("%s: the dial succeeded", tc.name)
			continue
		}
		if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: %v; want %v saying %q", tc.name, err, tc.want, tc.says)
		}
		for _, s := range []error{ErrUnreachable, ErrSecretMismatch, ErrTLSMismatch} {
			if s != tc.want && errors.Is(err, s) {
				t.Errorf("%s: %v is also %v", tc.name, err, s)
			}
		}
		// Only the plain dialer waits: for the TLS acceptor's handshake
		// timeout, before it is closed and probes.
		if took > 3*time.Second {
			t.Errorf("%s: took %v; a definitive refusal must not wait out the dial's timeout", tc.name, took)
		}
	}

	if _, err := noSecret.Dial(plainA.Addr().String(), HeaderRaft, time.Second); !errors.Is(err, ErrNoSecret) {
		t.Errorf("a dialer without a secret: %v, want ErrNoSecret", err)
	}
	// The right secret and TLS on both sides: no error at all.
	if c, err := plainB.Dial(plainB.Addr().String(), HeaderRaft, 5*time.Second); err != nil {
		t.Errorf("a genuine plain dial: %v", err)
	} else {
		c.Close()
	}
}

// TestDialSilentPeerIsUnreachable: a port whose listener accepts and never
// says anything (not a Redcell node, or one that is stuck) is a timeout,
// reported as unreachable rather than as a mismatch.
func TestDialSilentPeerIsUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	held := make(chan net.Conn, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held <- c // kept open, and silent, until the test ends
		}
	}()
	defer func() {
		for len(held) > 0 {
			(<-held).Close()
		}
	}()
	dialer, _ := startMux(t, Config{Secret: secretA})
	_, err = dialer.Dial(ln.Addr().String(), HeaderRaft, 300*time.Millisecond)
	if !errors.Is(err, ErrUnreachable) || errors.Is(err, ErrSecretMismatch) || errors.Is(err, ErrTLSMismatch) {
		t.Fatalf("a silent peer: %v, want ErrUnreachable only", err)
	}
}

// TestDialRefusedProtocolIsNotASecretMismatch: a node that closes one
// protocol's connections at once (here it never registered Raft; a joining
// node may turn Raft away until it is a member) but admits peers on
// another is not blamed on the secret: the probe, on the forwarding
// protocol, finds a peer that speaks as this node does, and the error is
// left unclassified.
func TestDialRefusedProtocolIsNotASecretMismatch(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(ln, Config{Secret: secretA, NodeID: "forward-only", Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Listen(HeaderForward); err != nil {
		t.Fatal(err)
	}
	go m.Run()
	defer m.Close()
	dialer, _ := startMux(t, Config{Secret: secretA})
	_, err = dialer.Dial(m.Addr().String(), HeaderRaft, 5*time.Second)
	if err == nil {
		t.Fatal("a dial of an unregistered protocol succeeded")
	}
	for _, s := range []error{ErrUnreachable, ErrSecretMismatch, ErrTLSMismatch} {
		if errors.Is(err, s) {
			t.Errorf("%v: classified as %v", err, s)
		}
	}
}
