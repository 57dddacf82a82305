package systemtest

import (
	"io"
	"net"
	"testing"
	"time"
)

// isolateInbound cuts the links into one node and nothing else: a peer
// connection to n1 from n2 stalls (an open one carries nothing, a new one
// gets the challenge and then nothing), while n1's own connection to n2
// and n3's to n2 carry on; heal resumes the stalled ones.
func TestFaultNetIsolateInbound(t *testing.T) {
	a1, a2 := startFakeAcceptor(t), startFakeAcceptor(t)
	f := newFaultNet(t)
	to1 := f.proxy(t, "n1", a1.ln.Addr().String())
	to2 := f.proxy(t, "n2", a2.ln.Addr().String())

	in := mustPeerDial(t, to1, "n2")  // n2 → n1: cut
	out := mustPeerDial(t, to2, "n1") // n1 → n2: passes
	side := mustPeerDial(t, to2, "n3")
	echoOK(t, in, "before")

	f.isolateInbound("n1")
	if _, err := in.Write([]byte("held")); err != nil {
		t.Fatal(err)
	}
	expectSilent(t, in, 300*time.Millisecond)
	echoOK(t, out, "n1 still reaches n2")
	echoOK(t, side, "n3 still reaches n2")
	echoOK(t, mustPeerDial(t, to2, "n1"), "a new connection from n1 works")

	nc, err := net.DialTimeout("tcp", to1, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(5 * time.Second))
	nc.Write([]byte{0x8F})
	var hello [36]byte
	if _, err := io.ReadFull(nc, hello[:]); err != nil {
		t.Fatalf("the challenge into an isolated node: %v", err)
	}
	nc.Write(append(append(randomBytes(32), 2, 'n', '3'), randomBytes(32)...))
	expectSilent(t, nc, 300*time.Millisecond)

	f.heal()
	_ = in.SetReadDeadline(time.Now().Add(5 * time.Second))
	got := make([]byte, 4)
	if _, err := io.ReadFull(in, got); err != nil || string(got) != "held" {
		t.Fatalf("after heal the held bytes: %q, %v", got, err)
	}
	echoOK(t, in, "after")
}
