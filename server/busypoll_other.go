//go:build !linux

package server

import (
	"sync/atomic"
	"syscall"
	"time"
)

// busyPoll is Linux's (busypoll_linux.go): elsewhere newBusyPoll makes
// none, and connections park as they would with --busy-poll-usec 0.
type busyPoll struct {
	active              atomic.Int64
	spins, hits, pauses atomic.Uint64
	paused              atomic.Bool
}

func newBusyPoll(time.Duration, func() bool, *atomic.Bool) (*busyPoll, error) { return nil, nil }

func (b *busyPoll) close()                            {}
func (b *busyPoll) watch(syscall.RawConn, int64) bool { return false }
func (b *busyPoll) unwatch(syscall.RawConn)           {}
func (b *busyPoll) await(int64) bool                  { return false }
