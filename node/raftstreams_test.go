package node

import (
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/redcell/redcell/mux"
	"github.com/redcell/redcell/slots"
)

// Two groups' raft streams through one port: group 0 on the unnamed header
// (as every build before groups), group 7 named; each connection reaches
// its own group's listener with its first bytes intact, and a connection
// naming a group the node does not run is closed.
func TestRaftStreamsReachTheirGroup(t *testing.T) {
	secret := []byte("a cluster secret of enough bytes")
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m, err := mux.New(ln, mux.Config{Secret: secret, NodeID: "n1", Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	unnamed, err := m.Listen(mux.HeaderRaft)
	if err != nil {
		t.Fatal(err)
	}
	named, err := m.Listen(mux.HeaderRaftGroup)
	if err != nil {
		t.Fatal(err)
	}
	go m.Run()
	rs := newRaftStreams(m, named, log)
	l0, l7 := rs.listener(0, unnamed), rs.listener(7, unnamed)
	if l0 != unnamed {
		t.Fatal("group 0's listener is not the unnamed one")
	}
	t.Cleanup(func() { l7.Close() })

	addr := ln.Addr().String()
	for _, c := range []struct {
		id   uint32
		ln   net.Listener
		sent string
	}{{0, l0, "raft bytes of group 0"}, {7, l7, "raft bytes of group 7"}} {
		conn, err := rs.dial(slots.GroupID(c.id), addr, 5*time.Second)
		if err != nil {
			t.Fatalf("dial group %d: %v", c.id, err)
		}
		if _, err := conn.Write([]byte(c.sent)); err != nil {
			t.Fatal(err)
		}
		got := make(chan string, 1)
		go func() {
			in, err := c.ln.Accept()
			if err != nil {
				got <- err.Error()
				return
			}
			b := make([]byte, len(c.sent))
			_, err = io.ReadFull(in, b)
			in.Close()
			if err != nil {
				got <- err.Error()
				return
			}
			got <- string(b)
		}()
		select {
		case g := <-got:
			if g != c.sent {
				t.Fatalf("group %d's listener read %q, want %q", c.id, g, c.sent)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("group %d's connection never reached its listener", c.id)
		}
		conn.Close()
	}

	// Group 9 runs nowhere here: its connection is closed unread.
	conn, err := rs.dial(9, addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := conn.Read(make([]byte, 1)); err == nil {
		t.Fatal("a connection to a group the node does not run was answered")
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("a connection to a group the node does not run stayed open")
	}
}
