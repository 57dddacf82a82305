//go:build linux

// Command iomodel measures the cost of the connection model alone, for the
// server's choice between a goroutine per connection (what package server
// does) and an event loop (one goroutine reading every ready connection with
// epoll, deciding what they sent at once, writing every reply).
//
// Both models run the same minimal RESP server with no storage behind it:
// each command is answered with the five-integer reply of CL.THROTTLE, and
// the commands read from all connections since the last decision are handed
// to one "decider" as a batch, as the real server hands them to the Raft
// group (model goroutine: one handoff per connection's pipeline; model
// epoll: one decision per loop pass). redis-benchmark drives each in turn;
// the figure that matters is the server's CPU time per request, since the
// kernel's share (a read and a write per request on loopback) is the same
// for both.
//
//	go run ./bench/iomodel -c 50 -P 1 -n 300000
//
// Linux only (epoll). The results and what was concluded are in
// server/DESIGN.md.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// reply is CL.THROTTLE's answer shape: five integers.
var reply = []byte("*5\r\n:0\r\n:16\r\n:15\r\n:-1\r\n:2\r\n")

func main() {
	clients := flag.Int("c", 50, "redis-benchmark clients")
	pipeline := flag.Int("P", 1, "redis-benchmark pipeline depth")
	requests := flag.Int("n", 300000, "requests per run")
	procs := flag.Int("procs", 1, "GOMAXPROCS of the server (Redcell's default on 2 CPUs is 1)")
	flag.Parse()
	runtime.GOMAXPROCS(*procs)
	fmt.Printf("iomodel: -c %d -P %d -n %d, GOMAXPROCS %d, %d CPUs\n", *clients, *pipeline, *requests, *procs, runtime.NumCPU())
	for _, model := range []string{"goroutine", "epoll", "goroutine", "epoll"} {
		rps, cpu, err := run(model, *clients, *pipeline, *requests)
		if err != nil {
			fmt.Fprintln(os.Stderr, "iomodel:", err)
			os.Exit(1)
		}
		fmt.Printf("%-10s %9.0f rps  server CPU %5.2f µs/request\n", model, rps, cpu)
	}
}

// run serves one model on a fresh port, drives it and returns the rate and
// the process's CPU per request during the run.
func run(model string, clients, pipeline, requests int) (rps, cpuPerReq float64, err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, 0, err
	}
	defer ln.Close()
	d := newDecider()
	defer d.close()
	switch model {
	case "goroutine":
		go serveGoroutines(ln, d)
	case "epoll":
		go func() {
			if err := serveEpoll(ln.(*net.TCPListener), d); err != nil {
				fmt.Fprintln(os.Stderr, "epoll:", err)
			}
		}()
	}
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	var before, after syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	start := time.Now()
	out, err := exec.Command("redis-benchmark", "-p", port, "-q", "-c", strconv.Itoa(clients), "-P", strconv.Itoa(pipeline),
		"-n", strconv.Itoa(requests), "CL.THROTTLE", "k", "15", "30", "60").CombinedOutput()
	elapsed := time.Since(start)
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	if err != nil {
		return 0, 0, fmt.Errorf("redis-benchmark: %w: %s", err, out)
	}
	cpu := time.Duration(syscall.TimevalToNsec(after.Utime) - syscall.TimevalToNsec(before.Utime) +
		syscall.TimevalToNsec(after.Stime) - syscall.TimevalToNsec(before.Stime))
	return float64(requests) / elapsed.Seconds(), float64(cpu.Microseconds()) / float64(requests), nil
}

// decider stands for the Raft group: batches go in, each waits for its
// decision. One goroutine decides whatever queued since its last pass.
type decider struct {
	mu    sync.Mutex
	queue []*batch
	wake  chan struct{}
	stop  chan struct{}
}

type batch struct {
	n    int
	done chan struct{}
}

func newDecider() *decider {
	d := &decider{wake: make(chan struct{}, 1), stop: make(chan struct{})}
	go d.loop()
	return d
}

func (d *decider) close() { close(d.stop) }

// decide hands a batch of n commands to the decider and waits.
func (d *decider) decide(b *batch) {
	d.mu.Lock()
	d.queue = append(d.queue, b)
	d.mu.Unlock()
	select {
	case d.wake <- struct{}{}:
	default:
	}
	<-b.done
}

func (d *decider) loop() {
	var q []*batch
	for {
		select {
		case <-d.wake:
		case <-d.stop:
			return
		}
		d.mu.Lock()
		q, d.queue = d.queue, q[:0]
		d.mu.Unlock()
		for _, b := range q {
			b.done <- struct{}{}
		}
	}
}

// countCommands counts the complete RESP commands at the start of buf and
// returns how many bytes they take. Only arrays of bulk strings, which is
// what redis-benchmark sends.
func countCommands(buf []byte) (n, used int) {
	for {
		i := used
		if i >= len(buf) || buf[i] != '*' {
			return
		}
		eol := bytes.IndexByte(buf[i:], '\n')
		if eol < 0 {
			return
		}
		argc, err := strconv.Atoi(strings.TrimSpace(string(buf[i+1 : i+eol])))
		if err != nil {
			return
		}
		i += eol + 1
		for a := 0; a < argc; a++ {
			if i >= len(buf) {
				return
			}
			eol := bytes.IndexByte(buf[i:], '\n')
			if eol < 0 {
				return
			}
			l, err := strconv.Atoi(strings.TrimSpace(string(buf[i+1 : i+eol])))
			if err != nil {
				return
			}
			i += eol + 1 + l + 2
			if i > len(buf) {
				return
			}
		}
		n++
		used = i
	}
}

// serveGoroutines is package server's model: a goroutine per connection
// reads a pipeline, hands its commands to the decider as one batch, waits,
// writes the replies.
func serveGoroutines(ln net.Listener, d *decider) {
	for {
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer nc.Close()
			buf := make([]byte, 0, 16<<10)
			out := make([]byte, 0, 16<<10)
			b := &batch{done: make(chan struct{}, 1)}
			for {
				if len(buf) == cap(buf) {
					return
				}
				m, err := nc.Read(buf[len(buf):cap(buf)])
				if err != nil {
					return
				}
				buf = buf[:len(buf)+m]
				n, used := countCommands(buf)
				if n == 0 {
					continue
				}
				buf = buf[:copy(buf, buf[used:])]
				b.n = n
				d.decide(b)
				out = out[:0]
				for range n {
					out = append(out, reply...)
				}
				if _, err := nc.Write(out); err != nil {
					return
				}
			}
		}()
	}
}

// epollConn is one connection of the event loop.
type epollConn struct {
	fd  int
	in  []byte
	out []byte
	n   int // commands read in this pass
}

// serveEpoll is the event-loop model: one goroutine, locked to its thread,
// waits for ready connections with epoll, reads each, decides every
// command of the pass in one batch, then writes every reply.
func serveEpoll(ln *net.TCPListener, d *decider) error {
	runtime.LockOSThread()
	ep, err := syscall.EpollCreate1(0)
	if err != nil {
		return err
	}
	defer syscall.Close(ep)
	var mu sync.Mutex
	conns := make(map[int]*epollConn)
	go func() { // accepts on the Go poller; registers with our epoll
		for {
			nc, err := ln.AcceptTCP()
			if err != nil {
				return
			}
			f, err := nc.File() // a dup in blocking mode; make it non-blocking
			nc.Close()
			if err != nil {
				continue
			}
			fd := int(f.Fd())
			fd2, err := syscall.Dup(fd)
			f.Close()
			if err != nil {
				continue
			}
			_ = syscall.SetNonblock(fd2, true)
			mu.Lock()
			conns[fd2] = &epollConn{fd: fd2, in: make([]byte, 0, 16<<10)}
			mu.Unlock()
			ev := syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(fd2)}
			_ = syscall.EpollCtl(ep, syscall.EPOLL_CTL_ADD, fd2, &ev)
		}
	}()
	events := make([]syscall.EpollEvent, 256)
	ready := make([]*epollConn, 0, 256)
	b := &batch{done: make(chan struct{}, 1)}
	for {
		n, err := syscall.EpollWait(ep, events, 100)
		if err != nil {
			if errors.Is(err, syscall.EINTR) {
				continue
			}
			return err
		}
		ready = ready[:0]
		total := 0
		mu.Lock()
		for _, ev := range events[:n] {
			c := conns[int(ev.Fd)]
			if c == nil {
				continue
			}
			m, err := syscall.Read(c.fd, c.in[len(c.in):cap(c.in)])
			if m <= 0 || err != nil {
				if err == syscall.EAGAIN {
					continue
				}
				_ = syscall.EpollCtl(ep, syscall.EPOLL_CTL_DEL, c.fd, nil)
				syscall.Close(c.fd)
				delete(conns, c.fd)
				continue
			}
			c.in = c.in[:len(c.in)+m]
			cnt, used := countCommands(c.in)
			c.in = c.in[:copy(c.in, c.in[used:])]
			if cnt > 0 {
				c.n = cnt
				total += cnt
				ready = append(ready, c)
			}
		}
		mu.Unlock()
		if total == 0 {
			continue
		}
		b.n = total
		d.decide(b) // one decision for every connection of the pass
		for _, c := range ready {
			c.out = c.out[:0]
			for range c.n {
				c.out = append(c.out, reply...)
			}
			_, _ = syscall.Write(c.fd, c.out)
		}
	}
}
