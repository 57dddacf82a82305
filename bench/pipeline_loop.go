package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"runtime"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"
)

// The load generator's event loop: every connection of a run is a raw
// non-blocking socket in one epoll set, served by one goroutine locked to
// its OS thread, as redis-benchmark serves its clients from one thread
// with epoll (ae). Go's scheduler and network poller take no part in a
// run: a reply wakes this thread directly, with no goroutine to hand over
// to another thread, which on a busy two-core machine would add wake-ups
// that redis-benchmark does not pay.

// loadClient is one connection of a run. It is owned by the event loop.
type loadClient struct {
	id     int
	fd     int
	buf    []byte // the pipeline being written
	woff   int    // how much of buf is written
	rbuf   []byte // replies read and not yet parsed: rbuf[:rlen]
	rlen   int
	key    []byte
	member []byte
	rng    *rand.Rand
	seq    uint64
	sentAt time.Time
	// replies parsed of the pipeline in flight, and each completed
	// decision's latency (from its pipeline's write to its last reply).
	replies int
	lats    []time.Duration
	outSet  bool // EPOLLOUT is in the interest set: buf is not all written
}

// Run phases, read by the loop after every wake-up.
const (
	phaseWarmup int32 = iota
	phaseMeasure
	phaseStop
)

// loadRun is what one run measured at the client.
type loadRun struct {
	decisions int64            // completed while measuring
	window    time.Duration    // the measuring window
	latencies latencyHistogram // one per decision
	clientCPU time.Duration    // this process's CPU over the window
}

// stallLimit fails a run whose server answers nothing for this long.
const stallLimit = 30 * time.Second

// runPipelineLoad connects spec.clients connections to addr, runs them for
// warmup unmeasured, then for measure, and stops them. onMeasure is
// called (from the calling goroutine) right before the measuring window
// opens and onEnd right after it closes: the caller samples the server's
// CPU and counters there, so both windows are the same.
//
// Goroutines: the event loop (eventLoop.run), started and waited for here;
// the caller's goroutine flips the phase. The runtime is held to
// GOMAXPROCS 1 for the run and given back after.
func runPipelineLoad(ctx context.Context, addr string, spec loadSpec, warmup, measure time.Duration, onMeasure, onEnd func() error) (loadRun, error) {
	if spec.clients < 1 || spec.pipeline < 1 || spec.keyspace < 1 {
		return loadRun{}, fmt.Errorf("load %+v: clients, pipeline and keyspace must be positive", spec)
	}
	prev := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(prev)

	l, err := newEventLoop(addr, spec)
	if err != nil {
		return loadRun{}, err
	}
	defer l.close()
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	loopErr := make(chan error, 1)
	go func() {
		err := l.run(runCtx)
		if err != nil {
			cancel()
		}
		loopErr <- err
	}()
	wait := func(d time.Duration) error {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			return nil
		case <-runCtx.Done():
			return runCtx.Err()
		}
	}
	stop := func() error {
		l.phase.Store(phaseStop)
		return <-loopErr
	}
	if err := wait(warmup); err != nil {
		return loadRun{}, errors.Join(stop(), err)
	}
	if err := onMeasure(); err != nil {
		return loadRun{}, errors.Join(stop(), err)
	}
	cpu0 := selfCPU()
	start := time.Now()
	l.phase.Store(phaseMeasure)
	if err := wait(measure); err != nil {
		return loadRun{}, errors.Join(stop(), err)
	}
	l.phase.Store(phaseStop)
	window := time.Since(start)
	cpu := selfCPU() - cpu0
	endErr := onEnd()
	if err := stop(); err != nil {
		return loadRun{}, err
	}
	if endErr != nil {
		return loadRun{}, endErr
	}
	if l.done.Load() == 0 {
		return loadRun{}, errors.New("no decision completed while measuring")
	}
	return loadRun{decisions: l.done.Load(), window: window, latencies: l.lat, clientCPU: cpu}, nil
}

// eventLoop is one run's connections and what they measured. Only run
// touches it while it runs; phase is the coordinator's way in.
type eventLoop struct {
	spec    loadSpec
	epfd    int
	clients []*loadClient
	phase   atomic.Int32
	// Counted while the phase is phaseMeasure, by completion: a pipeline
	// sent before the window and answered inside it counts, one answered
	// after it does not, so the two ends of the window balance.
	done atomic.Int64 // atomic: tests watch it while the loop runs
	lat  latencyHistogram
	// outWaits counts the times a pipeline did not fit the socket and
	// waited for EPOLLOUT (tests check that path runs).
	outWaits int
}

// newEventLoop connects spec.clients non-blocking sockets to addr (an
// IPv4 host:port) and puts them in a new epoll set.
func newEventLoop(addr string, spec loadSpec) (*eventLoop, error) {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	ip := net.ParseIP(host).To4()
	port, err := strconv.Atoi(portStr)
	if ip == nil || err != nil {
		return nil, fmt.Errorf("load generator: %q is not an IPv4 host:port", addr)
	}
	sa := &syscall.SockaddrInet4{Port: port}
	copy(sa.Addr[:], ip)
	l := &eventLoop{spec: spec, epfd: -1}
	if l.epfd, err = syscall.EpollCreate1(syscall.EPOLL_CLOEXEC); err != nil {
		return nil, fmt.Errorf("epoll_create1: %w", err)
	}
	for i := range spec.clients {
		fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
		if err != nil {
			l.close()
			return nil, fmt.Errorf("socket: %w", err)
		}
		c := &loadClient{id: i, fd: fd, rbuf: make([]byte, 64<<10), lats: make([]time.Duration, 0, spec.pipeline),
			rng: rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(i)))}
		l.clients = append(l.clients, c)
		// A blocking connect on loopback, then non-blocking I/O. No
		// Nagle delay, as hiredis (redis-benchmark's client) sets.
		if err := syscall.Connect(fd, sa); err != nil {
			l.close()
			return nil, fmt.Errorf("connect %s: %w", addr, err)
		}
		if err := syscall.SetsockoptInt(fd, syscall.IPPROTO_TCP, syscall.TCP_NODELAY, 1); err != nil {
			l.close()
			return nil, fmt.Errorf("TCP_NODELAY: %w", err)
		}
		if err := syscall.SetNonblock(fd, true); err != nil {
			l.close()
			return nil, fmt.Errorf("set non-blocking: %w", err)
		}
		ev := syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(i)} // Fd carries the client's index
		if err := syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_ADD, fd, &ev); err != nil {
			l.close()
			return nil, fmt.Errorf("epoll_ctl: %w", err)
		}
	}
	return l, nil
}

// close closes every socket and the epoll set; it is called once the loop
// has returned.
func (l *eventLoop) close() {
	for _, c := range l.clients {
		syscall.Close(c.fd)
	}
	l.clients = nil
	if l.epfd >= 0 {
		syscall.Close(l.epfd)
		l.epfd = -1
	}
}

// run sends every client's first pipeline, then waits for replies and
// sends each client its next pipeline once its last one is answered, until
// the phase is phaseStop (or ctx ends, or a reply is wrong, or the server
// stalls). It runs on its own locked OS thread.
func (l *eventLoop) run(ctx context.Context) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for _, c := range l.clients {
		if err := l.send(c); err != nil {
			return err
		}
	}
	events := make([]syscall.EpollEvent, len(l.clients))
	progress := time.Now()
	for {
		if l.phase.Load() == phaseStop {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		n, err := syscall.EpollWait(l.epfd, events, 100)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return fmt.Errorf("epoll_wait: %w", err)
		}
		if n == 0 {
			if time.Since(progress) > stallLimit {
				return fmt.Errorf("no reply for %v", stallLimit)
			}
			continue
		}
		progress = time.Now()
		for _, ev := range events[:n] {
			c := l.clients[ev.Fd]
			if ev.Events&syscall.EPOLLOUT != 0 {
				if err := l.flush(c); err != nil {
					return err
				}
			}
			if ev.Events&(syscall.EPOLLIN|syscall.EPOLLERR|syscall.EPOLLHUP) != 0 {
				if err := l.receive(c); err != nil {
					return fmt.Errorf("client %d: %w", c.id, err)
				}
			}
		}
	}
}

// send builds c's next pipeline and writes what the socket takes.
func (l *eventLoop) send(c *loadClient) error {
	now := time.Now()
	c.buf = c.buildPipeline(c.buf[:0], l.spec, now.UnixMilli())
	c.woff, c.replies, c.lats, c.sentAt = 0, 0, c.lats[:0], now
	return l.flush(c)
}

// flush writes the rest of c's pipeline; what the socket does not take
// waits for EPOLLOUT.
func (l *eventLoop) flush(c *loadClient) error {
	for c.woff < len(c.buf) {
		n, err := syscall.Write(c.fd, c.buf[c.woff:])
		if errors.Is(err, syscall.EAGAIN) {
			break
		}
		if err != nil {
			return fmt.Errorf("client %d: write: %w", c.id, err)
		}
		c.woff += n
	}
	wantOut := c.woff < len(c.buf)
	if wantOut == c.outSet {
		return nil
	}
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(c.id)}
	if wantOut {
		ev.Events |= syscall.EPOLLOUT
		l.outWaits++
	}
	if err := syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_MOD, c.fd, &ev); err != nil {
		return fmt.Errorf("client %d: epoll_ctl: %w", c.id, err)
	}
	c.outSet = wantOut
	return nil
}

// receive reads what c's socket holds and parses every whole reply in it;
// a pipeline answered whole is counted and the next one sent.
func (l *eventLoop) receive(c *loadClient) error {
	n, err := syscall.Read(c.fd, c.rbuf[c.rlen:])
	if errors.Is(err, syscall.EAGAIN) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read: %w", err)
	}
	if n == 0 {
		return errors.New("read: the server closed the connection")
	}
	c.rlen += n
	sp := l.spec.shape.spec()
	perDecision := len(sp.commands)
	want := perDecision * l.spec.pipeline
	off := 0
	for {
		nl := bytes.IndexByte(c.rbuf[off:c.rlen], '\n')
		if nl < 0 {
			break
		}
		line := c.rbuf[off : off+nl+1]
		off += nl + 1
		j := c.replies % perDecision
		v, err := parseIntReply(line)
		if err != nil {
			return fmt.Errorf("%s: %w", sp.commands[j], err)
		}
		if v < sp.minReply[j] {
			return fmt.Errorf("%s answered %d, want at least %d", sp.commands[j], v, sp.minReply[j])
		}
		if c.replies++; c.replies%perDecision == 0 {
			c.lats = append(c.lats, time.Since(c.sentAt))
		}
		if c.replies < want {
			continue
		}
		if off < c.rlen {
			return fmt.Errorf("%d bytes after the last reply of a pipeline", c.rlen-off)
		}
		ph := l.phase.Load()
		if ph == phaseMeasure {
			l.done.Add(int64(l.spec.pipeline))
			for _, d := range c.lats {
				l.lat.record(d)
			}
		}
		if ph != phaseStop {
			if err := l.send(c); err != nil {
				return err
			}
		}
	}
	if off == 0 && c.rlen == len(c.rbuf) {
		return fmt.Errorf("a reply longer than %d bytes", len(c.rbuf))
	}
	c.rlen = copy(c.rbuf, c.rbuf[off:c.rlen])
	return nil
}
