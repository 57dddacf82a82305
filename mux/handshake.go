package mux

import (
	"bufio"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// The peer handshake proves, in both directions, that each side holds the
// cluster secret, without sending it. After the dialer's header byte H:
//
//	acceptor → dialer   "RCP1" | Na                 (Na: 32 fresh random bytes)
//	dialer   → acceptor Nd | L | ID | HMAC(K, "redcell-peer-dialer" | H | Na | Nd | L | ID)
//	acceptor → dialer        HMAC(K, "redcell-peer-acceptor" | H | Na | Nd | L | ID)
//
// ID is the dialer's node ID (L its length, at most 255 bytes), covered by
// both proofs: the acceptor learns which member connected, for its logs and
// for anyone observing the connection (a test proxy attributes links by it).
//
// K is SHA-256 of the secret. The acceptor's fresh nonce means a recorded
// handshake cannot be replayed; the dialer's nonce means the acceptor's
// proof cannot be replayed to a dialer either; the two labels keep one side's
// proof from being reflected as the other's, and H binds the proof to the
// protocol it opens. Both MACs are compared in constant time. A failure
// closes the connection with nothing sent and nothing passed on.
//
// What it does not do: encrypt or authenticate the bytes that follow. An
// attacker who can alter traffic on the path can still hijack an
// authenticated connection; mutual TLS between nodes (the hardening work)
// closes that. What it stops is anyone who can merely reach the port.

// MinSecretLen is the shortest cluster secret accepted, in bytes.
const MinSecretLen = 16

const (
	nonceLen      = 32
	macLen        = sha256.Size
	helloMagic    = "RCP1" // Redcell peer protocol, handshake version 1
	labelDialer   = "redcell-peer-dialer"
	labelAcceptor = "redcell-peer-acceptor"
)

type authenticator struct {
	key [sha256.Size]byte
}

func newAuthenticator(secret []byte) (*authenticator, error) {
	if len(secret) < MinSecretLen {
		return nil, fmt.Errorf("mux: the cluster secret has %d bytes; at least %d are needed", len(secret), MinSecretLen)
	}
	return &authenticator{key: sha256.Sum256(secret)}, nil
}

func (a *authenticator) mac(label string, header byte, na, nd []byte, id string) []byte {
	h := hmac.New(sha256.New, a.key[:])
	h.Write([]byte(label))
	h.Write([]byte{header})
	h.Write(na)
	h.Write(nd)
	h.Write([]byte{byte(len(id))})
	h.Write([]byte(id))
	return h.Sum(nil)
}

// MaxNodeIDLen is the longest node ID the handshake carries.
const MaxNodeIDLen = 255

var errBadProof = errors.New("the peer's proof of the cluster secret is wrong")

// accept runs the acceptor's side on c, whose header byte has been read;
// later bytes are read through br. It returns the dialer's node ID. The
// caller sets the deadline.
func (a *authenticator) accept(c net.Conn, br *bufio.Reader, header byte) (string, error) {
	var hello [len(helloMagic) + nonceLen]byte
	copy(hello[:], helloMagic)
	na := hello[len(helloMagic):]
	if _, err := rand.Read(na); err != nil {
		return "", fmt.Errorf("making a nonce: %w", err)
	}
	if _, err := c.Write(hello[:]); err != nil {
		return "", fmt.Errorf("sending the challenge: %w", err)
	}
	var nd [nonceLen + 1]byte // the dialer's nonce and its ID's length
	if _, err := io.ReadFull(br, nd[:]); err != nil {
		return "", fmt.Errorf("reading the answer to the challenge: %w", err)
	}
	rest := make([]byte, int(nd[nonceLen])+macLen) // at most 255+32 bytes
	if _, err := io.ReadFull(br, rest); err != nil {
		return "", fmt.Errorf("reading the answer to the challenge: %w", err)
	}
	id, proof := string(rest[:nd[nonceLen]]), rest[nd[nonceLen]:]
	if !hmac.Equal(proof, a.mac(labelDialer, header, na, nd[:nonceLen], id)) {
		return "", errBadProof
	}
	if _, err := c.Write(a.mac(labelAcceptor, header, na, nd[:nonceLen], id)); err != nil {
		return "", fmt.Errorf("sending our proof: %w", err)
	}
	return id, nil
}

// dial connects to addr and runs the dialer's side within timeout,
// presenting id: the header byte in clear, then (with tlsCfg) a TLS
// handshake, then the cluster-secret handshake inside it. Its errors say
// why the peer refused, where that can be known (dialerror.go).
func (a *authenticator) dial(addr string, header byte, id string, timeout time.Duration, tlsCfg *tls.Config) (net.Conn, error) {
	deadline := time.Now().Add(timeout)
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return nil, dialFailure(ErrUnreachable, addr, "cannot connect", err)
	}
	_ = c.SetDeadline(deadline)
	if _, err := c.Write([]byte{header}); err != nil {
		c.Close()
		return nil, dialFailure(ErrUnreachable, addr, "the connection broke at once", err)
	}
	if tlsCfg != nil {
		tc := tls.Client(c, tlsCfg)
		if err := tc.Handshake(); err != nil {
			c.Close()
			return nil, tlsHandshakeFailure(addr, deadline, err)
		}
		c = tc
	}
	if err := a.greet(c, addr, header, id, tlsCfg != nil, deadline); err != nil {
		c.Close()
		return nil, err
	}
	_ = c.SetDeadline(time.Time{})
	return c, nil
}

// greet runs the dialer's side of the handshake after the header byte.
func (a *authenticator) greet(c net.Conn, addr string, header byte, id string, overTLS bool, deadline time.Time) error {
	var hello [len(helloMagic) + nonceLen]byte
	if _, err := io.ReadFull(c, hello[:]); err != nil {
		return challengeFailure(addr, overTLS, deadline, err)
	}
	if string(hello[:len(helloMagic)]) != helloMagic {
		return fmt.Errorf("mux: peer %s answered %q, not a Redcell peer challenge", addr, hello[:len(helloMagic)])
	}
	na := hello[len(helloMagic):]
	nd := make([]byte, nonceLen)
	if _, err := rand.Read(nd); err != nil {
		return fmt.Errorf("mux: making a nonce: %w", err)
	}
	msg := append(nd, byte(len(id)))
	msg = append(msg, id...)
	msg = append(msg, a.mac(labelDialer, header, na, nd, id)...)
	if _, err := c.Write(msg); err != nil {
		return fmt.Errorf("mux: peer handshake with %s: sending this node's proof: %w", addr, err)
	}
	var proof [macLen]byte
	if _, err := io.ReadFull(c, proof[:]); err != nil {
		return proofFailure(addr, err)
	}
	if !hmac.Equal(proof[:], a.mac(labelAcceptor, header, na, nd, id)) {
		return proofFailure(addr, errBadProof)
	}
	return nil
}
