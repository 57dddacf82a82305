package raftstore

import (
	"testing"
	"time"
)

// A repeating Pebble event is logged once per interval, with the count of
// those left out.
func TestLogLimiterLetsOnePerInterval(t *testing.T) {
	l := newLogLimiter(time.Hour)
	if n, ok := l.allow(); !ok || n != 0 {
		t.Fatalf("first event: %d %v", n, ok)
	}
	for range 5 {
		if _, ok := l.allow(); ok {
			t.Fatal("a second event within the interval was let through")
		}
	}
	l.last = l.last.Add(-time.Hour) // the interval is over
	if n, ok := l.allow(); !ok || n != 5 {
		t.Fatalf("after the interval: suppressed %d, ok %v; want 5, true", n, ok)
	}
}
