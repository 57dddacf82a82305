package mux

import (
	"crypto/tls"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/redcell/redcell/internal/testcert"
	"github.com/redcell/redcell/internal/tlscert"
)

// peerTLS writes a certificate signed by ca to a temporary directory and
// returns a Config carrying the TLS pair made from it, and the store (so a
// test can rotate it).
func peerTLS(t *testing.T, ca *testcert.CA, name string) (Config, *tlscert.Store, testcert.Files) {
	t.Helper()
	leaf, err := ca.Issue(name)
	if err != nil {
		t.Fatal(err)
	}
	files, err := testcert.WriteFiles(t.TempDir(), name, ca, leaf)
	if err != nil {
		t.Fatal(err)
	}
	st, err := tlscert.Load(tlscert.Files{Cert: files.Cert, Key: files.Key, CA: files.CA})
	if err != nil {
		t.Fatal(err)
	}
	return Config{Secret: secretA, NodeID: name, TLSServer: st.PeerServer(), TLSClient: st.PeerClient()}, st, files
}

func newCA(t *testing.T, name string) *testcert.CA {
	t.Helper()
	ca, err := testcert.NewCA(name)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

// TestPeerTLSAdmitsMembersOfTheCA: two nodes whose certificates the same CA
// signed connect under TLS 1.3, the cluster-secret handshake runs inside it,
// and the protocol's bytes cross it both ways.
func TestPeerTLSAdmitsMembersOfTheCA(t *testing.T) {
	ca := newCA(t, "cluster CA")
	accCfg, _, _ := peerTLS(t, ca, "n1")
	dialCfg, _, _ := peerTLS(t, ca, "n2")
	acceptor, raftLn := startMux(t, accCfg)
	dialer, _ := startMux(t, dialCfg)

	c, err := dialer.Dial(acceptor.Addr().String(), HeaderRaft, 5*time.Second)
	if err != nil {
		t.Fatalf("Dial under mutual TLS: %v", err)
	}
	defer c.Close()
	tc, ok := c.(*tls.Conn)
	if !ok {
		t.Fatalf("the dialled connection is a %T, not TLS", c)
	}
	if st := tc.ConnectionState(); st.Version != tls.VersionTLS13 || len(st.PeerCertificates) == 0 || st.PeerCertificates[0].Subject.CommonName != "n1" {
		t.Fatalf("TLS state: version %x, peer certificates %d", st.Version, len(st.PeerCertificates))
	}
	in := acceptOne(raftLn, 5*time.Second)
	if in == nil {
		t.Fatal("the connection never reached the raft listener")
	}
	defer in.Close()
	if pc := in.(*PeerConn); pc.PeerID() != "n2" {
		t.Errorf("peer ID %q", pc.PeerID())
	}
	if _, err := c.Write([]byte("over tls")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 8)
	if _, err := io.ReadFull(in, buf); err != nil || string(buf) != "over tls" {
		t.Fatalf("acceptor read %q, %v", buf, err)
	}
	if _, err := in.Write([]byte("ack")); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(c, buf[:3]); err != nil || string(buf[:3]) != "ack" {
		t.Fatalf("dialer read %q, %v", buf[:3], err)
	}
}

// TestPeerTLSRefusals: a node whose certificate another CA signed is
// refused by the acceptor, and refuses an acceptor of another CA itself; a
// peer that skips TLS (right secret, plain handshake) is refused; a TLS
// node cannot reach one without TLS. Nothing reaches raft.
func TestPeerTLSRefusals(t *testing.T) {
	ca, other := newCA(t, "cluster CA"), newCA(t, "someone else's CA")
	accCfg, _, _ := peerTLS(t, ca, "n1")
	acceptor, raftLn := startMux(t, accCfg)
	strangerCfg, _, _ := peerTLS(t, other, "stranger")
	stranger, _ := startMux(t, strangerCfg)
	plain, _ := startMux(t, Config{Secret: secretA, NodeID: "plain"})
	plainAcceptor, plainRaftLn := startMux(t, Config{Secret: secretA, NodeID: "plain-acceptor"})
	member, _ := startMux(t, func() Config { c, _, _ := peerTLS(t, ca, "n2"); return c }())

	for name, dial := range map[string]func() error{
		"a certificate of another CA": func() error { return closeIfOK(stranger.Dial(acceptor.Addr().String(), HeaderRaft, 5*time.Second)) },
		"no TLS, right secret":        func() error { return closeIfOK(plain.Dial(acceptor.Addr().String(), HeaderRaft, 5*time.Second)) },
		"an acceptor of another CA":   func() error { return closeIfOK(member.Dial(stranger.Addr().String(), HeaderRaft, 5*time.Second)) },
		"an acceptor without TLS":     func() error { return closeIfOK(member.Dial(plainAcceptor.Addr().String(), HeaderRaft, 2*time.Second)) },
	} {
		if err := dial(); err == nil {
			t.Errorf("%s: the dial succeeded", name)
		}
	}
	if c := acceptOne(raftLn, 200*time.Millisecond); c != nil {
		c.Close()
		t.Fatal("a refused peer reached raft")
	}
	if c := acceptOne(plainRaftLn, 200*time.Millisecond); c != nil {
		c.Close()
		t.Fatal("a TLS dialer reached the raft of a node without TLS")
	}
	checkRejected(t, acceptor, 2)
}

func closeIfOK(c interface{ Close() error }, err error) error {
	if err == nil {
		c.Close()
	}
	return err
}

// TestPeerTLSReload: after the node's certificate files are replaced by
// ones of a new CA and reloaded, new connections use them: a peer of the old
// CA is refused, one of the new CA admitted.
func TestPeerTLSReload(t *testing.T) {
	oldCA, newCA_ := newCA(t, "old CA"), newCA(t, "new CA")
	accCfg, store, files := peerTLS(t, oldCA, "n1")
	acceptor, raftLn := startMux(t, accCfg)
	oldPeer, _ := startMux(t, func() Config { c, _, _ := peerTLS(t, oldCA, "n2"); return c }())
	newPeer, _ := startMux(t, func() Config { c, _, _ := peerTLS(t, newCA_, "n3"); return c }())

	if err := closeIfOK(oldPeer.Dial(acceptor.Addr().String(), HeaderRaft, 5*time.Second)); err != nil {
		t.Fatalf("before the reload: %v", err)
	}
	acceptOne(raftLn, 5*time.Second).Close()

	leaf, err := newCA_.Issue("n1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := testcert.WriteFiles(filepath.Dir(files.Cert), "n1", newCA_, leaf); err != nil {
		t.Fatal(err)
	}
	if err := store.Reload(); err != nil {
		t.Fatalf("Reload: %v", err)
	}
	if err := closeIfOK(oldPeer.Dial(acceptor.Addr().String(), HeaderRaft, 5*time.Second)); err == nil {
		t.Error("a peer of the old CA was admitted after the reload")
	}
	if err := closeIfOK(newPeer.Dial(acceptor.Addr().String(), HeaderRaft, 5*time.Second)); err != nil {
		t.Errorf("a peer of the new CA after the reload: %v", err)
	}
}
