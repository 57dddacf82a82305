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
// With -fsync a decision also costs what a durable one does: one write and
// fdatasync of a zero-filled file per decision pass, through RawSyscall
// (direct, as raftstore's direct WAL syncs) or Go's ordinary blocking call
// (handoff). Model epoll then syncs in the loop before it writes the
// replies, as Redis does with appendfsync always; epoll-overlap hands the
// sync to a thread of its own and reads on meanwhile; epoll-overlap-first
// does too, and when a sync ends it hands the next batch to that thread
// before it writes the replies of the one just synced, so that the replies'
// writes run while the next sync does (which needs -procs 2: the syncer
// holds a processor in its sync); goroutine's decider
// syncs what queued, and with -yield first lets every runnable connection
// queue (group.yieldToRunnable). The runs print the requests per sync.
//
//	go run ./bench/iomodel -c 50 -P 1 -n 300000
//	go run ./bench/iomodel -fsync direct -models goroutine,epoll -yield
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
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// yieldFirst is the -yield flag.
var yieldFirst bool

// reply is CL.THROTTLE's answer shape: five integers.
var reply = []byte("*5\r\n:0\r\n:16\r\n:15\r\n:-1\r\n:2\r\n")

func main() {
	clients := flag.Int("c", 50, "redis-benchmark clients")
	pipeline := flag.Int("P", 1, "redis-benchmark pipeline depth")
	requests := flag.Int("n", 300000, "requests per run")
	procs := flag.Int("procs", 1, "GOMAXPROCS of the server (Redcell's default on 2 CPUs is 1)")
	models := flag.String("models", "goroutine,epoll", "comma-separated models to run, each twice, alternating: goroutine, epoll, epoll-overlap, epoll-overlap-first (the last two need -fsync)")
	syncMode := flag.String("fsync", "none", "what a decision costs on disk: none, direct (one fdatasync per decision through RawSyscall, the thread keeps its P) or handoff (through Syscall, Go's ordinary blocking call)")
	dir := flag.String("dir", os.TempDir(), "directory of the file synced with -fsync")
	flag.BoolVar(&yieldFirst, "yield", false, "model goroutine with -fsync: the decider yields the processor once before it takes the queue (group.yieldToRunnable yields until the queue stops growing)")
	flag.Parse()
	runtime.GOMAXPROCS(*procs)
	fmt.Printf("iomodel: -c %d -P %d -n %d, GOMAXPROCS %d, %d CPUs, fsync %s\n", *clients, *pipeline, *requests, *procs, runtime.NumCPU(), *syncMode)
	list := strings.Split(*models, ",")
	for _, model := range append(list, list...) {
		rps, cpu, err := run(model, *clients, *pipeline, *requests, *syncMode, *dir)
		if err != nil {
			fmt.Fprintln(os.Stderr, "iomodel:", err)
			os.Exit(1)
		}
		fmt.Printf("%-14s %9.0f rps  server CPU %5.2f µs/request\n", model, rps, cpu)
	}
}

// run serves one model on a fresh port, drives it and returns the rate and
// the process's CPU per request during the run.
func run(model string, clients, pipeline, requests int, syncMode, dir string) (rps, cpuPerReq float64, err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, 0, err
	}
	defer ln.Close()
	var k *disk
	if syncMode != "none" {
		if k, err = openDisk(dir, syncMode); err != nil {
			return 0, 0, err
		}
		defer k.close()
	}
	switch model {
	case "goroutine":
		d := newDecider(k)
		defer d.close()
		go serveGoroutines(ln, d)
	case "epoll", "epoll-overlap", "epoll-overlap-first":
		overlap, syncFirst := model != "epoll", model == "epoll-overlap-first"
		if overlap && k == nil {
			return 0, 0, fmt.Errorf("%s needs -fsync direct or handoff", model)
		}
		go func() {
			if err := serveEpoll(ln.(*net.TCPListener), k, overlap, syncFirst); err != nil {
				fmt.Fprintln(os.Stderr, "epoll:", err)
			}
		}()
	default:
		return 0, 0, fmt.Errorf("unknown model %q", model)
	}
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	syncs.Store(0)
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
	if n := syncs.Load(); n > 0 {
		fmt.Printf("  %d syncs, %.1f requests per sync\n", n, float64(requests)/float64(n))
	}
	return float64(requests) / elapsed.Seconds(), float64(cpu.Microseconds()) / float64(requests), nil
}

// decider stands for the Raft group: batches go in, each waits for its
// decision. One goroutine decides whatever queued since its last pass.
type decider struct {
	mu    sync.Mutex
	queue []*batch
	wake  chan struct{}
	stop  chan struct{}
	disk  *disk // nil: decisions cost nothing on disk
}

type batch struct {
	n    int
	done chan struct{}
}

func newDecider(k *disk) *decider {
	d := &decider{wake: make(chan struct{}, 1), stop: make(chan struct{}), disk: k}
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
		if d.disk != nil && yieldFirst {
			runtime.Gosched() // let every runnable connection queue first
		}
		d.mu.Lock()
		q, d.queue = d.queue, q[:0]
		d.mu.Unlock()
		if d.disk != nil && len(q) > 0 {
			d.disk.sync()
		}
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
	fd     int
	in     []byte
	out    []byte
	n      int // commands read and not yet decided
	queued bool
	flight int // commands whose decision is being synced (epoll-overlap)
	// next holds flight's successor while the replies of a finished sync
	// are written after the next sync started (epoll-overlap-first).
	next int
}

// serveEpoll is the event-loop model: one goroutine, locked to its thread,
// waits for ready connections with epoll, reads each, decides every
// command of the pass in one batch, then writes every reply. With no disk
// the decision is a handoff to the decider (the Raft group's place); with a
// disk the loop syncs it itself before writing the replies, as Redis does
// with appendfsync always, or, with overlap, hands the sync to a syncer
// thread and goes on reading while it runs (one sync in flight; what is read
// meanwhile is the next sync's batch). With syncFirst, a finished sync's
// replies are written after the next batch went to the syncer.
func serveEpoll(ln *net.TCPListener, k *disk, overlap, syncFirst bool) error {
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

	var d *decider
	if k == nil {
		d = newDecider(nil)
		defer d.close()
	}
	// The syncer of the overlapped loop: it syncs when asked and signals
	// the loop through an eventfd in the loop's epoll set.
	efd := -1
	var syncReq chan struct{}
	if overlap {
		r, _, e := syscall.RawSyscall(syscall.SYS_EVENTFD2, 0, syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
		if e != 0 {
			return e
		}
		efd = int(r)
		defer syscall.Close(efd)
		ev := syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(efd)}
		if err := syscall.EpollCtl(ep, syscall.EPOLL_CTL_ADD, efd, &ev); err != nil {
			return err
		}
		syncReq = make(chan struct{})
		defer close(syncReq)
		go func() {
			runtime.LockOSThread()
			one := []byte{1, 0, 0, 0, 0, 0, 0, 0}
			for range syncReq {
				k.sync()
				_, _, _ = syscall.RawSyscall(syscall.SYS_WRITE, uintptr(efd), uintptr(unsafe.Pointer(&one[0])), 8)
			}
		}()
	}
	reply := func(c *epollConn, n int) {
		c.out = c.out[:0]
		for range n {
			c.out = append(c.out, reply...)
		}
		_, _ = syscall.Write(c.fd, c.out)
	}

	events := make([]syscall.EpollEvent, 256)
	var pending, inflight []*epollConn
	syncing := false
	counter := make([]byte, 8)
	b := &batch{done: make(chan struct{}, 1)}
	for {
		n, err := syscall.EpollWait(ep, events, 100)
		if err != nil {
			if errors.Is(err, syscall.EINTR) {
				continue
			}
			return err
		}
		synced := false
		mu.Lock()
		for _, ev := range events[:n] {
			if int(ev.Fd) == efd {
				_, _ = syscall.Read(efd, counter)
				synced = true
				continue
			}
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
				c.n += cnt
				if !c.queued {
					c.queued = true
					pending = append(pending, c)
				}
			}
		}
		mu.Unlock()
		if synced { // the batch in flight is durable: answer it
			done := inflight
			inflight, syncing = nil, false
			if syncFirst && len(pending) > 0 { // start the next sync, then answer
				for _, c := range pending {
					c.next, c.n, c.queued = c.n, 0, false
				}
				inflight, pending = pending, nil
				syncing = true
				syncReq <- struct{}{}
			}
			for _, c := range done {
				reply(c, c.flight)
				c.flight = 0
			}
			for _, c := range inflight {
				c.flight, c.next = c.next, 0
			}
		}
		if len(pending) == 0 || syncing {
			continue
		}
		total := 0
		for _, c := range pending {
			total += c.n
		}
		switch {
		case overlap: // the next batch goes to the syncer; the loop reads on
			for _, c := range pending {
				c.flight, c.n, c.queued = c.n, 0, false
			}
			inflight, pending = append(inflight, pending...), nil
			syncing = true
			syncReq <- struct{}{}
			continue
		case k != nil: // sync in the loop, then answer
			k.sync()
		default:
			b.n = total
			d.decide(b) // one decision for every connection of the pass
		}
		for _, c := range pending {
			reply(c, c.n)
			c.n, c.queued = 0, false
		}
		pending = pending[:0]
	}
}

// disk is the file a durable decision syncs: written full of zeros and
// synced before use, as Redcell's WAL is (raftstore/walprefill.go), so that
// each sync overwrites blocks that exist.
type disk struct {
	f    *os.File
	raw  bool
	off  int64
	page []byte
}

const diskSize = 4 << 20

// syncs counts the syncs of a run, for its requests per sync.
var syncs atomic.Int64

func openDisk(dir, mode string) (*disk, error) {
	if mode != "direct" && mode != "handoff" {
		return nil, fmt.Errorf("unknown -fsync %q", mode)
	}
	f, err := os.CreateTemp(dir, "iomodel-*.log")
	if err != nil {
		return nil, err
	}
	_ = os.Remove(f.Name())
	if _, err := f.Write(make([]byte, diskSize)); err != nil {
		f.Close()
		return nil, err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return nil, err
	}
	return &disk{f: f, raw: mode == "direct", page: bytes.Repeat([]byte{0xAB}, 512)}, nil
}

// sync writes the next 512 bytes of the log (a batch of ~17 decisions is
// about that much in Redcell's log) and fdatasyncs the file. A failed write
// or sync ends the program: a figure measured past it would not be one of
// durable decisions.
func (k *disk) sync() {
	syncs.Add(1)
	if _, err := k.f.WriteAt(k.page, k.off); err != nil {
		fmt.Fprintln(os.Stderr, "iomodel: write:", err)
		os.Exit(1)
	}
	k.off = (k.off + int64(len(k.page))) % diskSize
	fd := k.f.Fd()
	var err error
	if k.raw {
		if _, _, e := syscall.RawSyscall(syscall.SYS_FDATASYNC, fd, 0, 0); e != 0 {
			err = e
		}
	} else {
		err = syscall.Fdatasync(int(fd))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "iomodel: fdatasync:", err)
		os.Exit(1)
	}
}

func (k *disk) close() { k.f.Close() }
