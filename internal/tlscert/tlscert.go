// Package tlscert holds a node's TLS material (its certificate and key, and
// the CA that signs clients' and peers' certificates), loaded from the files
// the flags name and reloaded from them on demand (SIGHUP), and makes the
// tls.Configs of the client TLS port and of the peer connections from it.
//
// Every Config it hands out reads the material current at each handshake,
// so a reload applies to every later connection without restarting a
// listener, and connections already open keep the certificate they
// negotiated. A reload that fails (a missing file, a key that does not match
// its certificate) changes nothing and reports why.
package tlscert

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
)

// Files names the PEM files of the material.
type Files struct {
	Cert string // this node's certificate (chain), presented to clients and peers
	Key  string // its private key
	CA   string // certificates of the authorities trusted for clients and peers; may be "" when none is verified
}

// ClientAuth is Redis's tls-auth-clients.
type ClientAuth int

const (
	// ClientAuthYes requires a client certificate signed by the CA (Redis's default).
	ClientAuthYes ClientAuth = iota
	// ClientAuthOptional verifies a certificate if the client sends one.
	ClientAuthOptional
	// ClientAuthNo asks for none.
	ClientAuthNo
)

// ParseClientAuth reads "yes", "optional" or "no".
func ParseClientAuth(s string) (ClientAuth, error) {
	switch s {
	case "yes":
		return ClientAuthYes, nil
	case "optional":
		return ClientAuthOptional, nil
	case "no":
		return ClientAuthNo, nil
	}
	return 0, fmt.Errorf("tls-auth-clients %q: want yes, optional or no", s)
}

func (a ClientAuth) String() string {
	return [...]string{"yes", "optional", "no"}[a]
}

type material struct {
	cert *tls.Certificate
	pool *x509.CertPool // nil without a CA file
}

// Store is the current material. Any goroutine.
type Store struct {
	files Files
	cur   atomic.Pointer[material]
}

// Load reads the files once; an error names the file at fault.
func Load(f Files) (*Store, error) {
	if f.Cert == "" || f.Key == "" {
		return nil, errors.New("TLS needs both a certificate file and a key file")
	}
	s := &Store{files: f}
	if err := s.Reload(); err != nil {
		return nil, err
	}
	return s, nil
}

// Reload reads the files again and, if all of them load, makes them
// current; otherwise the material stays as it was and the error says why.
func (s *Store) Reload() error {
	cert, err := tls.LoadX509KeyPair(s.files.Cert, s.files.Key)
	if err != nil {
		return fmt.Errorf("loading the certificate %s and key %s: %w", s.files.Cert, s.files.Key, err)
	}
	m := &material{cert: &cert}
	if s.files.CA != "" {
		pem, err := os.ReadFile(s.files.CA)
		if err != nil {
			return fmt.Errorf("reading the CA certificates: %w", err)
		}
		m.pool = x509.NewCertPool()
		if !m.pool.AppendCertsFromPEM(pem) {
			return fmt.Errorf("the CA file %s holds no PEM certificate", s.files.CA)
		}
	}
	s.cur.Store(m)
	return nil
}

// HasCA reports whether a CA file is configured.
func (s *Store) HasCA() bool { return s.files.CA != "" }

// ClientPort is the configuration of the client TLS port: this node's
// certificate, and client certificates required, verified if given, or not
// asked for, as auth says (verified against the CA).
func (s *Store) ClientPort(auth ClientAuth) *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			m := s.cur.Load()
			c := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{*m.cert}, ClientCAs: m.pool}
			switch auth {
			case ClientAuthYes:
				c.ClientAuth = tls.RequireAndVerifyClientCert
			case ClientAuthOptional:
				c.ClientAuth = tls.VerifyClientCertIfGiven
			default:
				c.ClientAuth = tls.NoClientCert
			}
			return c, nil
		},
	}
}

// PeerServer is the acceptor's side of mutual TLS between nodes: the peer
// must present a certificate that chains to the CA.
//
// Peers are verified by chain only, not by name: a node is dialled at
// whatever address the Raft configuration holds, and any certificate the
// cluster's CA signed is a member's (the cluster secret is still proven
// inside the TLS session). The CA should therefore sign nothing but the
// cluster's nodes.
func (s *Store) PeerServer() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS13,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			m := s.cur.Load()
			return &tls.Config{
				MinVersion:            tls.VersionTLS13,
				Certificates:          []tls.Certificate{*m.cert},
				ClientAuth:            tls.RequireAnyClientCert,
				VerifyPeerCertificate: verifyChain(m.pool),
			}, nil
		},
	}
}

// PeerClient is the dialer's side of mutual TLS between nodes: it presents
// this node's certificate and verifies the acceptor's against the CA (by
// chain, as PeerServer explains).
func (s *Store) PeerClient() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS13,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			return s.cur.Load().cert, nil
		},
		// The chain is verified below, against the CA current at this
		// handshake; crypto/tls's own check would also demand a name.
		InsecureSkipVerify: true,
		VerifyPeerCertificate: func(raw [][]byte, chains [][]*x509.Certificate) error {
			return verifyChain(s.cur.Load().pool)(raw, chains)
		},
	}
}

// verifyChain checks that the first certificate chains to pool through the
// others.
func verifyChain(pool *x509.CertPool) func([][]byte, [][]*x509.Certificate) error {
	return func(raw [][]byte, _ [][]*x509.Certificate) error {
		if pool == nil {
			return errors.New("no CA to verify the peer's certificate against")
		}
		if len(raw) == 0 {
			return errors.New("the peer presented no certificate")
		}
		certs := make([]*x509.Certificate, len(raw))
		for i, r := range raw {
			c, err := x509.ParseCertificate(r)
			if err != nil {
				return fmt.Errorf("the peer's certificate does not parse: %w", err)
			}
			certs[i] = c
		}
		inter := x509.NewCertPool()
		for _, c := range certs[1:] {
			inter.AddCert(c)
		}
		_, err := certs[0].Verify(x509.VerifyOptions{Roots: pool, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}})
		if err != nil {
			return fmt.Errorf("the peer's certificate is not from the cluster's CA: %w", err)
		}
		return nil
	}
}
