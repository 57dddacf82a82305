// Package testcert makes real X.509 certificates (ECDSA P-256) for tests: a
// certificate authority and the server, client and peer certificates it
// signs, written as PEM files where the binary's flags expect them. Tests
// only; nothing in the server imports it.
package testcert

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// CA is a certificate authority that signs leaf certificates.
type CA struct {
	Cert    *x509.Certificate
	key     *ecdsa.PrivateKey
	CertPEM []byte
}

// NewCA makes a self-signed CA named name.
func NewCA(name string) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{Cert: cert, key: key, CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}, nil
}

// Leaf is a certificate with its private key, in PEM and parsed.
type Leaf struct {
	Cert    *x509.Certificate
	CertPEM []byte
	KeyPEM  []byte
}

// TLS is the leaf as a tls.Certificate.
func (l *Leaf) TLS() tls.Certificate {
	c, err := tls.X509KeyPair(l.CertPEM, l.KeyPEM)
	if err != nil {
		panic(fmt.Sprintf("testcert: a pair it made does not load: %v", err))
	}
	return c
}

// Issue signs a certificate for name, valid for 127.0.0.1, ::1 and
// localhost, usable by servers and clients alike (a node is both).
func (ca *CA) Issue(name string) (*Leaf, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	return &Leaf{
		Cert:    cert,
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	}, nil
}

// Pool is a pool holding only the CA.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

// Files are the paths WriteFiles wrote.
type Files struct{ Cert, Key, CA string }

// WriteFiles writes leaf's certificate and key and the CA's certificate as
// PEM files named <prefix>.crt, <prefix>.key and ca.crt in dir (key 0600).
// Writing to the same paths again replaces them atomically (rename), as an
// operator rotating certificates would.
func WriteFiles(dir, prefix string, ca *CA, leaf *Leaf) (Files, error) {
	f := Files{Cert: filepath.Join(dir, prefix+".crt"), Key: filepath.Join(dir, prefix+".key"), CA: filepath.Join(dir, "ca.crt")}
	for _, w := range []struct {
		path string
		data []byte
		mode os.FileMode
	}{{f.Cert, leaf.CertPEM, 0o644}, {f.Key, leaf.KeyPEM, 0o600}, {f.CA, ca.CertPEM, 0o644}} {
		tmp := w.path + ".tmp"
		if err := os.WriteFile(tmp, w.data, w.mode); err != nil {
			return f, err
		}
		if err := os.Rename(tmp, w.path); err != nil {
			return f, err
		}
	}
	return f, nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		panic(err)
	}
	return n
}
