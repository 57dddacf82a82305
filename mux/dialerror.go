package mux

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"time"
)

// Why a Dial failed, for whoever has to say it to an operator. A dialer
// sees little: an acceptor that refuses a peer closes the connection
// without a word (anything more would help an attacker), so each error
// below is read from where in the handshake the connection ended, and the
// ambiguous case — closed before the challenge — is settled by probing the
// peer once more (probe). Dial's errors wrap one of these sentinels (and
// the error underneath); errors.Is tells them apart.
var (
	// ErrUnreachable: no TCP connection to the peer's port (refused, no
	// route, timed out), or the peer accepted it and never answered the
	// handshake. Possibly temporary: the peer may be starting, or busy.
	ErrUnreachable = errors.New("unreachable")
	// ErrSecretMismatch: the peer refused this node's proof of the cluster
	// secret (it closed the connection after reading it), its own proof
	// was wrong, or it has no cluster secret at all and admits no peers.
	// Retrying cannot help until one of the two nodes is restarted with
	// the other's secret.
	ErrSecretMismatch = errors.New("cluster secret mismatch")
	// ErrTLSMismatch: the two nodes disagree on TLS between nodes: one has
	// --tls-cluster yes and the other not, or one side's certificate is
	// not signed by the CA the other trusts. Retrying cannot help either.
	ErrTLSMismatch = errors.New("TLS mismatch between nodes")
	// ErrNoSecret: this node has no cluster secret, so it cannot prove one
	// to any peer and Dial fails before connecting.
	ErrNoSecret = errors.New("this node has no cluster secret, so it cannot reach peers")
)

// dialFailure wraps err with the kind of failure (one of the sentinels
// above) and a sentence saying what it means for this peer.
func dialFailure(kind error, addr, why string, err error) error {
	if err == nil {
		return fmt.Errorf("mux: peer %s: %w: %s", addr, kind, why)
	}
	return fmt.Errorf("mux: peer %s: %w: %s: %w", addr, kind, why, err)
}

// tlsHandshakeFailure classifies the dialer's failed TLS handshake with
// addr. A peer that answers in clear does not use TLS between nodes; one
// whose certificate does not verify, or that sends an alert (it refused
// this node's certificate), belongs to another CA. A connection closed
// with no answer at all is the case probe settles.
func tlsHandshakeFailure(addr string, deadline time.Time, err error) error {
	var rh tls.RecordHeaderError
	var cv *tls.CertificateVerificationError
	var ua x509.UnknownAuthorityError
	var ci x509.CertificateInvalidError
	switch {
	case errors.As(err, &rh):
		return dialFailure(ErrTLSMismatch, addr, "the peer answered in clear: it does not use TLS between nodes (--tls-cluster no) while this node does (--tls-cluster yes)", err)
	case errors.As(err, &cv), errors.As(err, &ua), errors.As(err, &ci):
		return dialFailure(ErrTLSMismatch, addr, "the peer's certificate is not signed by the CA this node trusts (--tls-ca-cert-file)", err)
	case isRemoteAlert(err):
		return dialFailure(ErrTLSMismatch, addr, "the peer refused the TLS handshake (does its CA sign this node's certificate?)", err)
	case isClosed(err):
		return closedBeforeChallenge(addr, true, deadline, err)
	case timedOut(err):
		return dialFailure(ErrUnreachable, addr, "no answer to the TLS handshake", err)
	}
	return fmt.Errorf("mux: TLS handshake with peer %s: %w", addr, err)
}

// challengeFailure classifies a failure to read the acceptor's challenge,
// the first thing it sends; overTLS says whether this node runs TLS
// underneath.
func challengeFailure(addr string, overTLS bool, deadline time.Time, err error) error {
	switch {
	case isRemoteAlert(err):
		// Under TLS 1.3 the client's handshake ends before the server has
		// checked the client's certificate; a refusal arrives as an alert
		// on the first read.
		return dialFailure(ErrTLSMismatch, addr, "the peer refused this node's certificate: it is not signed by the CA the peer trusts", err)
	case isClosed(err):
		return closedBeforeChallenge(addr, overTLS, deadline, err)
	case timedOut(err):
		return dialFailure(ErrUnreachable, addr, "the peer accepted the connection but sent no handshake challenge", err)
	}
	return fmt.Errorf("mux: peer handshake with %s: reading the challenge: %w", addr, err)
}

// proofFailure classifies a failure after this node sent its proof: an
// acceptor that disagrees about the secret closes the connection then, and
// only then.
func proofFailure(addr string, err error) error {
	switch {
	case errors.Is(err, errBadProof):
		return dialFailure(ErrSecretMismatch, addr, "the peer's proof of the cluster secret is wrong: it holds another secret", nil)
	case isRemoteAlert(err):
		return dialFailure(ErrTLSMismatch, addr, "the peer refused this node's certificate: it is not signed by the CA the peer trusts", err)
	case isClosed(err):
		return dialFailure(ErrSecretMismatch, addr, "the peer closed the connection on reading this node's proof: it holds another cluster secret", err)
	case timedOut(err):
		return dialFailure(ErrUnreachable, addr, "no answer to this node's proof of the cluster secret", err)
	}
	return fmt.Errorf("mux: peer handshake with %s: reading the peer's proof: %w", addr, err)
}

// closedBeforeChallenge settles why a peer closed the connection before
// its challenge. An acceptor closes at once when it has no cluster secret;
// an acceptor under TLS waits for a TLS handshake this node did not start
// and closes when its handshake deadline passes; an acceptor without TLS
// sends its challenge in clear, which a TLS dialer cannot read. Which one
// it was shows in how the peer answers a probe, if there is time left for
// one; a peer that answers as this node expects (the first failure was
// passing) or not at all leaves the failure unclassified.
func closedBeforeChallenge(addr string, overTLS bool, deadline time.Time, err error) error {
	switch kind := probe(addr, deadline); {
	case kind == peerSpeaksTLS && !overTLS:
		return dialFailure(ErrTLSMismatch, addr, "the peer uses TLS between nodes (--tls-cluster yes) while this node does not", err)
	case kind == peerSpeaksClear && overTLS:
		return dialFailure(ErrTLSMismatch, addr, "the peer does not use TLS between nodes (--tls-cluster no) while this node does", err)
	case kind == peerRefusesAll:
		return dialFailure(ErrSecretMismatch, addr, "the peer closes every peer connection at once: it has no cluster secret", err)
	}
	return fmt.Errorf("mux: peer %s closed the connection before its handshake challenge: %w", addr, err)
}

// What a probe learnt of a peer.
type peerKind int

const (
	peerUnknown     peerKind = iota // no connection, no answer, or an answer of no known kind
	peerSpeaksTLS                   // answered a TLS ClientHello with a certificate
	peerSpeaksClear                 // sent a handshake challenge in clear
	peerRefusesAll                  // closed the connection on reading the header byte
)

// errProbeDone ends a probe's TLS handshake once the peer has shown a
// certificate: that alone says it speaks TLS, and nothing is trusted.
var errProbeDone = errors.New("mux: probe: the peer presented a certificate")

// probeMin is the least time worth a probe: less, and a loaded peer's
// silence would be taken for an answer.
const probeMin = 200 * time.Millisecond

// probe opens one more connection to addr, sends a header byte and a TLS
// ClientHello, and reports how the peer answers: a TLS acceptor replies
// with its certificate (the probe aborts there, presenting none), an
// acceptor without TLS with its challenge in clear (which the TLS client
// reports as a record that is not TLS), and an acceptor without a cluster
// secret closes at once. The header is the forwarding protocol's whatever
// the failed dial's was: a node that turns one protocol away for a while
// (a joining node refusing Raft until it is a member) still answers it. The
// acceptor counts the probe as a refused peer connection, like the dial
// before it. It runs only after a dial failed, within that dial's deadline.
func probe(addr string, deadline time.Time) peerKind {
	if time.Until(deadline) < probeMin {
		return peerUnknown
	}
	c, err := net.DialTimeout("tcp", addr, time.Until(deadline))
	if err != nil {
		return peerUnknown
	}
	defer c.Close()
	_ = c.SetDeadline(deadline)
	if _, err := c.Write([]byte{HeaderForward}); err != nil {
		return peerUnknown
	}
	tc := tls.Client(c, &tls.Config{
		// Nothing is sent over this connection and nothing it says is
		// believed: the handshake is stopped as soon as the peer has shown
		// that it speaks TLS.
		InsecureSkipVerify: true, //nolint:gosec // see above
		VerifyConnection:   func(tls.ConnectionState) error { return errProbeDone },
	})
	err = tc.Handshake()
	var rh tls.RecordHeaderError
	switch {
	case errors.Is(err, errProbeDone):
		return peerSpeaksTLS
	case errors.As(err, &rh) && string(rh.RecordHeader[:len(helloMagic)]) == helloMagic:
		return peerSpeaksClear
	case isClosed(err):
		return peerRefusesAll
	}
	return peerUnknown
}

// isClosed: the peer closed (or reset) the connection.
func isClosed(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

func timedOut(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// isRemoteAlert: the peer's TLS stack sent an alert (crypto/tls reports
// one as a net.OpError whose Op is "remote error").
func isRemoteAlert(err error) bool {
	var oe *net.OpError
	return errors.As(err, &oe) && oe.Op == "remote error"
}
