package group

import (
	"sync"
	"time"
)

// Clock is the time a leader stamps log entries with: the wall clock, or an
// instant frozen by tests through DEBUG CLOCK. It is node-local and never read
// by the state machine (which only sees stamps inside entries). Safe for
// concurrent use.
type Clock struct {
	mu     sync.Mutex
	frozen bool
	at     int64
}

// Now returns the frozen instant, or the wall clock in Unix ns.
func (c *Clock) Now() int64 {
	c.mu.Lock()
	frozen, at := c.frozen, c.at
	c.mu.Unlock()
	if frozen {
		return at
	}
	return time.Now().UnixNano()
}

// Set freezes the clock at unixNS.
func (c *Clock) Set(unixNS int64) {
	c.mu.Lock()
	c.frozen, c.at = true, unixNS
	c.mu.Unlock()
}

// Advance moves the clock forward by ns and leaves it frozen there (from the
// wall clock if it was running).
func (c *Clock) Advance(ns int64) {
	c.mu.Lock()
	if !c.frozen {
		c.frozen, c.at = true, time.Now().UnixNano()
	}
	c.at += ns
	c.mu.Unlock()
}

// Real lets the clock follow the wall clock again.
func (c *Clock) Real() {
	c.mu.Lock()
	c.frozen = false
	c.mu.Unlock()
}
