package mux

import (
	"bufio"
	"bytes"
	"net"
	"testing"
	"time"
)

// FuzzHandshakeAnswer plays a dialer that answers the acceptor's challenge
// with arbitrary bytes (a scanner, a forger, a peer with another secret or
// a truncated proof). The acceptor must refuse it with an error, never
// panic, and never send its own proof: the dialer receives the challenge
// and nothing else. TestHandshakeControl shows a genuine dialer admitted
// over the same path.
func FuzzHandshakeAnswer(f *testing.F) {
	a, err := newAuthenticator([]byte("fuzzing-the-cluster-secret"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(HeaderRaft, make([]byte, nonceLen+1+macLen))
	f.Add(HeaderForward, append(make([]byte, nonceLen), 255))
	f.Add(HeaderRaft, append(append(make([]byte, nonceLen), 3, 'n', '1', 'x'), make([]byte, macLen+10)...))
	f.Add(byte(0), []byte{})
	f.Fuzz(func(t *testing.T, header byte, answer []byte) {
		// The answer is all the dialer ever sends: then its side is closed.
		var sent recordingConn
		id, err := a.accept(&sent, bufio.NewReader(bytes.NewReader(answer)), header)
		if err == nil {
			t.Fatalf("an arbitrary answer of %d bytes was admitted as %q", len(answer), id)
		}
		if len(sent.b) != len(helloMagic)+nonceLen || string(sent.b[:len(helloMagic)]) != helloMagic {
			t.Fatalf("the acceptor sent %d bytes to a dialer it refused (%q...)", len(sent.b), sent.b[:min(8, len(sent.b))])
		}
	})
}

// recordingConn records what is written to it; nothing else is called.
type recordingConn struct {
	net.Conn
	b []byte
}

func (c *recordingConn) Write(p []byte) (int, error) {
	c.b = append(c.b, p...)
	return len(p), nil
}

func TestHandshakeControl(t *testing.T) {
	a, _ := newAuthenticator([]byte("fuzzing-the-cluster-secret"))
	acceptor, dialer := net.Pipe()
	defer dialer.Close()
	defer acceptor.Close()
	done := make(chan error, 1)
	go func() {
		_, err := a.accept(acceptor, bufio.NewReader(acceptor), HeaderRaft)
		done <- err
	}()
	if err := a.greet(dialer, "pipe", HeaderRaft, "n1", false, time.Now().Add(5*time.Second)); err != nil {
		t.Fatalf("a genuine dialer: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatalf("the acceptor refused a genuine dialer: %v", err)
	}
}
