//go:build linux

package server

import (
	"runtime"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// Busy polling for a client's next request (--busy-poll-usec; 0, the
// default: never). See DESIGN.md, "Busy polling for the next request", for
// what it gains, what it risks and the measurements behind the default.
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
// itself, on a small host) may need. TLS connections are not polled (their
// input is records, not requests).

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
}

// newBusyPoll makes the epoll instance; nil (no busy polling) when budget
// is zero or quiet nil, or the instance cannot be made.
func newBusyPoll(budget time.Duration, quiet func() bool, closing *atomic.Bool) (*busyPoll, error) {
	if budget <= 0 || quiet == nil {
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
					return true
				}
			}
			return false // another client's input: park, so the poller hands it out
		}
		if errno != 0 && errno != syscall.EINTR {
			return false
		}
		if b.closing.Load() || b.active.Load() != 0 || !b.quiet() || !time.Now().Before(deadline) {
			return false
		}
		runtime.Gosched()
	}
}
