package pending

import (
	"errors"
	"io"
	"net"
	"testing"
)

func TestClose_ClosesPendingWaitsAndRefusesNew(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := New()

	// One connection is handed over (forgotten), one is still in its
	// handshake when Close comes: only that one is closed by Close.
	handed, handedPeer := net.Pipe()
	defer handedPeer.Close()
	stuck, stuckPeer := net.Pipe()
	defer stuckPeer.Close()
	for _, c := range []net.Conn{handed, stuck} {
		if !p.Start(c) {
			t.Fatal("Start before Close refused")
		}
	}
	p.Forget(handed)
	p.Finish()

	ended := make(chan error, 1)
	go func() { // the stuck handshake's owner: blocked until Close closes it
		defer p.Finish()
		_, err := stuck.Read(make([]byte, 1))
		ended <- err
	}()

	if err := p.Close(ln); err != nil {
		t.Fatalf("Close: %v", err)
	}
	// Close waited for the owner, so its result is already there.
	select {
	case err := <-ended:
		if !errors.Is(err, io.ErrClosedPipe) {
			t.Fatalf("stuck connection's read ended with %v, want closed pipe", err)
		}
	default:
		t.Fatal("Close returned before the pending connection's goroutine finished")
	}
	select {
	case <-p.Done():
	default:
		t.Fatal("Done is not closed after Close")
	}
	if _, err := ln.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("listener after Close: Accept = %v, want net.ErrClosed", err)
	}
	// The handed-over connection was left alone.
	go func() { _, _ = handedPeer.Write([]byte("x")) }()
	if _, err := handed.Read(make([]byte, 1)); err != nil {
		t.Fatalf("handed-over connection was closed: %v", err)
	}

	late, latePeer := net.Pipe()
	defer late.Close()
	defer latePeer.Close()
	if p.Start(late) {
		t.Fatal("Start after Close accepted a connection")
	}
	if err := p.Close(ln); err != nil {
		t.Fatalf("second Close = %v, want nil", err)
	}
}
