// Package lograte lets a repeated log line through once per interval and
// counts the ones it holds back, so that an event that repeats (a client
// speaking HTTP to the Redis port on every health probe, a peer that stays
// down) costs the log one line per interval, with how many were dropped,
// instead of one line per occurrence.
package lograte

import (
	"sync"
	"time"
)

// maxKeys bounds the keys remembered; past it the memory is cleared (keys
// are message texts, few unless a caller puts variable text in one).
const maxKeys = 1024

// Limiter decides, per key, whether a line is logged now. Any goroutine may
// call Allow; it takes a mutex for a map lookup and never blocks otherwise.
type Limiter struct {
	every time.Duration
	now   func() time.Time

	mu   sync.Mutex
	last map[string]held
}

// held is a key's last logged line and what was dropped since.
type held struct {
	at         time.Time
	suppressed int
}

// New returns a Limiter that lets each key through once per every.
func New(every time.Duration) *Limiter {
	return NewWithClock(every, time.Now)
}

// NewWithClock is New with an injected clock (tests).
func NewWithClock(every time.Duration, now func() time.Time) *Limiter {
	return &Limiter{every: every, now: now, last: map[string]held{}}
}

// Allow reports whether a line with this key is logged now and, when it
// is, how many with the same key were held back since the last one logged.
func (l *Limiter) Allow(key string) (suppressed int, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	h, seen := l.last[key]
	if seen && now.Sub(h.at) < l.every {
		h.suppressed++
		l.last[key] = h
		return 0, false
	}
	if !seen && len(l.last) >= maxKeys {
		clear(l.last)
	}
	l.last[key] = held{at: now}
	return h.suppressed, true
}
