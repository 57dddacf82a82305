package node

import (
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"time"

	"github.com/redcell/redcell/internal/lograte"
	"github.com/redcell/redcell/internal/pending"
)

// tlsHandshakeTimeout bounds a client's TLS handshake on the TLS port, so
// a connection that opens and says nothing holds a goroutine that long at
// most before it is closed (after the handshake the server's own idle
// timeout applies, as on the plain port).
const tlsHandshakeTimeout = 10 * time.Second

// tlsListener accepts on the client TLS port, completes each handshake in a
// goroutine of its own (a slow client holds up nobody) and hands finished
// *tls.Conns to the server through Accept. A handshake that fails is closed
// and logged at most once per 10 s.
//
// Goroutines: run accepts in its own; Accept is called by the server's
// Serve; Close by the node, once.
type tlsListener struct {
	ln      net.Listener
	cfg     *tls.Config
	log     *slog.Logger
	conns   chan net.Conn
	pending *pending.Conns // connections in their TLS handshake

	failLog *lograte.Limiter // failed handshakes: a line per 10 s at most
}

func newTLSListener(ln net.Listener, cfg *tls.Config, log *slog.Logger) *tlsListener {
	return &tlsListener{ln: ln, cfg: cfg, log: log, conns: make(chan net.Conn), pending: pending.New(), failLog: lograte.New(10 * time.Second)}
}

func (l *tlsListener) run() {
	for {
		c, err := l.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			l.log.Warn("TLS port: accept failed", "err", err)
			select {
			case <-l.pending.Done():
				return
			case <-time.After(50 * time.Millisecond): // back off on fd exhaustion
			}
			continue
		}
		if !l.pending.Start(c) {
			c.Close()
			return
		}
		go l.handshake(c)
	}
}

func (l *tlsListener) handshake(c net.Conn) {
	defer l.pending.Finish()
	tc := tls.Server(c, l.cfg)
	_ = c.SetDeadline(time.Now().Add(tlsHandshakeTimeout))
	err := tc.Handshake()
	_ = c.SetDeadline(time.Time{})
	l.pending.Forget(c)
	if err != nil {
		if n, ok := l.failLog.Allow("handshake"); ok {
			l.log.Warn("TLS port: handshake failed", "remote", c.RemoteAddr().String(), "err", err, "failed_since_last_report", n)
		}
	}
	if err != nil {
		c.Close()
		return
	}
	select {
	case l.conns <- tc:
	case <-l.pending.Done():
		tc.Close()
	}
}

// Accept returns the next client whose handshake succeeded.
func (l *tlsListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.pending.Done():
		return nil, net.ErrClosed
	}
}

// Close stops accepting, closes the connections still in their handshake
// and waits for their goroutines.
func (l *tlsListener) Close() error { return l.pending.Close(l.ln) }

func (l *tlsListener) Addr() net.Addr { return l.ln.Addr() }
