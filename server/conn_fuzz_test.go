package server

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// scriptConn is a client that sends input and then closes its side; what
// the server writes is recorded.
type scriptConn struct {
	in  *bytes.Reader
	out bytes.Buffer
}

var scriptAddr = &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 6379}

func (s *scriptConn) Read(b []byte) (int, error)       { return s.in.Read(b) }
func (s *scriptConn) Write(b []byte) (int, error)      { return s.out.Write(b) }
func (s *scriptConn) Close() error                     { return nil }
func (s *scriptConn) LocalAddr() net.Addr              { return scriptAddr }
func (s *scriptConn) RemoteAddr() net.Addr             { return scriptAddr }
func (s *scriptConn) SetDeadline(time.Time) error      { return nil }
func (s *scriptConn) SetReadDeadline(time.Time) error  { return nil }
func (s *scriptConn) SetWriteDeadline(time.Time) error { return nil }

// FuzzConn runs whatever a client may send through a whole connection —
// reader, dispatch, AUTH, every handler (CONFIG, CLIENT, HELLO, MULTI,
// SHUTDOWN ...), the reply writer — in front of a stub backend, with and
// without a password. The server must never panic, and everything it
// writes must be well-formed RESP2/RESP3 replies, however the input ends.
func FuzzConn(f *testing.F) {
	for _, s := range []string{
		"PING\r\n", "AUTH pw\r\nPING\r\n", "HELLO 3 AUTH default pw SETNAME x\r\nCLIENT INFO\r\n",
		"CONFIG SET maxclients 5 timeout 1\r\nCONFIG GET *\r\n", "CONFIG SET requirepass \"\"\r\nRESET\r\nPING\r\n",
		"CLIENT KILL ID 1 SKIPME no\r\n", "CLIENT KILL 127.0.0.1:6379\r\nPING\r\n", "CLIENT LIST TYPE normal ID 1\r\n",
		"MULTI\r\nCL.THROTTLE k 1 1 1\r\nSAVE\r\nEXEC\r\n", "SHUTDOWN NOSAVE\r\n", "BGSAVE\r\nLASTSAVE\r\nINFO\r\n",
		"*11\r\n", "*1\r\n$16385\r\n", "HELLO 3\r\nCLIENT TRACKING ON OPTIN\r\nCLIENT CACHING YES\r\nCL.PEEK k 1 1 1\r\n",
		"DEBUG CLOCK SET 1\r\nTB.TAKE b 10 1 1000 COST -1\r\nSL.HIT l 3 100 MINGAP 10\r\n", "set \"\"\"a\r\n",
		"*2\r\n$4\r\nECHO\r\n$3\r\na\x00b\r\nPOST / HTTP/1.1\r\n",
	} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, input []byte, pass bool) {
		cfg := Config{Backend: BackendOf(&stubBackend{}), Logger: quietLogger(), EnableDebug: true}
		if pass {
			cfg.RequirePass = "pw"
		}
		s := New(cfg)
		defer s.Close()
		sc := &scriptConn{in: bytes.NewReader(input)}
		c := s.newConn(sc)
		c.serve()
		br := bufio.NewReader(bytes.NewReader(sc.out.Bytes()))
		for {
			if _, err := readReply(br); err != nil {
				if errors.Is(err, io.EOF) && br.Buffered() == 0 {
					break
				}
				t.Fatalf("input %q: the server wrote a malformed reply (%v) in %q", input, err, sc.out.Bytes())
			}
		}
	})
}
