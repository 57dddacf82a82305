//go:build linux

package server

import (
	"runtime"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// Busy polling for a client's next request (--busy-poll-usec; 50 µs by
// default, 0: never). See DESIGN.md, "Busy polling for the next request",
// for what it gains, what it risks and the measurements behind the default.
//
// A client that waits for each answer before it sends its next request
// leaves the node idle between the two: the connection's goroutine parks on
// Go's poller, the thread sleeps in epoll_wait and, with nothing else to
// run, the vCPU may halt; on a VM whose guest never polls before halting,
// waking it when the request arrives is a sizeable part of a lone client's
// round trip.
//
// So after it has written its replies, a connection may spin for a while
// before it parks, asking the kernel without sleeping whether any client
// has sent something: one epoll instance holds every client socket of the
// node (level-triggered, EPOLLIN), and epoll_pwait with a zero timeout,
// through RawSyscall, is the question. It spins only while spinning costs
// the node nothing:
//
//   - only while the node is quiet (Config.Quiet: alone, nothing of its own
//     in the log's pipeline) and no other connection is between reading a
//     request and writing its reply, so never under load, where the
//     question would cost a system call per flush;
//   - one connection at a time;
//   - it yields to every runnable goroutine between two questions
//     (runtime.Gosched: timers, the proposer, other connections that have
//     something to do run first), so the spin itself stays preemptible;
//   - it stops as soon as any other client's socket has input: that
//     connection's goroutine is woken by Go's poller, which the scheduler
//     only consults once this goroutine parks;
//   - and after the budget, then parks as usual.
//
// What it risks is the host's CPU: the spin burns up to the budget per
// answered request of CPU that other processes on the machine (the client
// itself, on a small host) may need. So it never runs on a machine with one
// CPU (the spinner holds the core the client needs to send), and it judges
// itself while it runs (judge): a spin pays when the client's next request
// comes within the budget; when fewer than half of a window's spins did,
// spinning stops for a while, longer each time it still does not pay. TLS
// connections are not polled (their input is records, not requests).

// The judge's constants: a verdict per judgeWindow spins that ended either
// with the connection's own input or with the budget spent (a spin that
// another client's input or the node's work cut short says nothing about
// the client's round trip); spinning pays when at least half of them ended
// with the input. After a window that did not pay, the next pauseMin awaits
// that could have spun park at once, doubling up to pauseMax while the
// windows between pauses still do not pay; a paying window resets it.
const (
	judgeWindow = 256
	pauseMin    = 1024
	pauseMax    = 64 * 1024
)

// busyPoll is the node's one epoll instance of client sockets and the
// spinning switch. Connection goroutines call watch, unwatch and await;
// INFO reads the counters.
type busyPoll struct {
	epfd    int
	budget  time.Duration
	quiet   func() bool
	closing *atomic.Bool

	active  atomic.Int64  // connections between reading a request and writing its reply
	spinner atomic.Bool   // a connection is spinning
	spins   atomic.Uint64 // awaits that spun
	hits    atomic.Uint64 // spins that ended with the connection's own input
	paused  atomic.Bool   // the judge found that spinning does not pay: awaits park at once
	pauses  atomic.Uint64 // windows that did not pay

	// The judge's state, touched only by the connection that holds
	// spinner.
	windowSpins, windowHits int // spins that ended with input or the budget, and the first
	skip                    int // awaits left to park at once
	pause                   int // the last pause's length
}

// newBusyPoll makes the epoll instance; nil (no busy polling) when budget
// is zero, quiet nil or the machine has a single CPU, or the instance
// cannot be made.
func newBusyPoll(budget time.Duration, quiet func() bool, closing *atomic.Bool) (*busyPoll, error) {
	if budget <= 0 || quiet == nil || runtime.NumCPU() < 2 {
		return nil, nil
	}
	fd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil, err
	}
	return &busyPoll{epfd: fd, budget: budget, quiet: quiet, closing: closing}, nil
}

// close releases the epoll instance; after Serve's connections are gone.
func (b *busyPoll) close() {
	if b != nil {
		_ = syscall.Close(b.epfd)
	}
}

// watch adds the connection's socket, tagged with its id, to the instance;
// false when the connection has no socket of its own to poll (TLS, a
// connection already closed). rc.Control holds the descriptor open while
// it runs, so the number registered is the connection's.
func (b *busyPoll) watch(rc syscall.RawConn, id int64) bool {
	ok := false
	err := rc.Control(func(fd uintptr) {
		ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP, Fd: int32(id), Pad: int32(id >> 32)}
		ok = syscall.EpollCtl(b.epfd, syscall.EPOLL_CTL_ADD, int(fd), &ev) == nil
	})
	return err == nil && ok
}

// unwatch takes the socket out again, before the connection closes it. If
// another goroutine closed it first (CLIENT KILL), the kernel has dropped
// the registration with the socket, and Control fails instead of removing
// whatever socket reuses the number now.
func (b *busyPoll) unwatch(rc syscall.RawConn) {
	_ = rc.Control(func(fd uintptr) {
		_ = syscall.EpollCtl(b.epfd, syscall.EPOLL_CTL_DEL, int(fd), nil)
	})
}

// await spins until the connection id has input (true) or it should park
// (false): the node is not quiet, another connection is spinning or has
// input, the server is closing, or the budget is spent.
func (b *busyPoll) await(id int64) bool {
	if b.active.Load() != 0 || !b.quiet() || !b.spinner.CompareAndSwap(false, true) {
		return false
	}
	defer b.spinner.Store(false)
	if b.skip > 0 {
		b.skip--
		if b.skip == 0 {
			b.paused.Store(false)
		}
		return false
	}
	b.spins.Add(1)
	var evs [8]syscall.EpollEvent
	deadline := time.Now().Add(b.budget)
	for {
		// epoll_pwait with a zero timeout never sleeps: a raw call, which
		// neither hands the thread's P away nor wakes sysmon.
		n, _, errno := syscall.RawSyscall6(syscall.SYS_EPOLL_PWAIT, uintptr(b.epfd),
			uintptr(unsafe.Pointer(&evs[0])), uintptr(len(evs)), 0, 0, 0)
		if errno == 0 && n > 0 {
			for i := range int(n) {
				if int64(uint32(evs[i].Fd))|int64(evs[i].Pad)<<32 == id {
					b.hits.Add(1)
					b.judge(true)
					return true
				}
			}
			return false // another client's input: park, so the poller hands it out
		}
		if errno != 0 && errno != syscall.EINTR {
			return false
		}
		if b.closing.Load() || b.active.Load() != 0 || !b.quiet() {
			return false
		}
		if !time.Now().Before(deadline) {
			b.judge(false)
			return false
		}
		runtime.Gosched()
	}
}

// judge counts a spin that ended with the connection's own input (hit) or
// with its budget spent, and at the end of a window decides whether
// spinning paid: if fewer than half of the window's spins ended with the
// input, the next awaits park at once for a pause, twice the last one's
// length (pauseMin to pauseMax); a window that paid forgets the pauses.
// Called by the connection that holds spinner.
func (b *busyPoll) judge(hit bool) {
	b.windowSpins++
	if hit {
		b.windowHits++
	}
	if b.windowSpins < judgeWindow {
		return
	}
	if 2*b.windowHits < b.windowSpins {
		b.pause = min(max(2*b.pause, pauseMin), pauseMax)
		b.skip = b.pause
		b.paused.Store(true)
		b.pauses.Add(1)
	} else {
		b.pause = 0
	}
	b.windowSpins, b.windowHits = 0, 0
}
