// Package pending tracks the connections a listener has accepted but not
// yet handed over (still in a handshake, or being classified), so that
// closing the listener also cuts them short and waits for the goroutines
// that own them. package mux (the shared client and Raft port) and package
// node's TLS listener both accept this way.
//
// Goroutines: the accept loop calls Start for each connection and then
// starts the goroutine that owns it; that goroutine calls Forget when it
// hands the connection over or gives up on it, and Finish when it ends.
// Close may be called from any goroutine, any number of times.
package pending

import (
	"net"
	"sync"
)

// Conns is the set of connections in their handshake.
type Conns struct {
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	done   chan struct{}
	wg     sync.WaitGroup
}

// New returns an empty set.
func New() *Conns {
	return &Conns{conns: make(map[net.Conn]struct{}), done: make(chan struct{})}
}

// Start records c and counts the goroutine that will own it. It returns
// false, recording nothing, once Close has begun: the caller closes c.
func (p *Conns) Start(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.conns[c] = struct{}{}
	p.wg.Add(1)
	return true
}

// Forget drops c from the set: it was handed over, or its owner closed it.
func (p *Conns) Forget(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

// Finish is called by a started connection's goroutine as it ends.
func (p *Conns) Finish() { p.wg.Done() }

// Done is closed when Close begins.
func (p *Conns) Done() <-chan struct{} { return p.done }

// Close closes every connection still in the set and then ln, and waits
// for the goroutines of started connections. Only the first call does
// anything; the others return nil.
func (p *Conns) Close(ln net.Listener) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	close(p.done)
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	err := ln.Close()
	p.wg.Wait()
	return err
}
