package lograte

import (
	"testing"
	"time"
)

// One line per key per interval; the next one logged carries the count
// held back; keys are independent.
func TestAllowOncePerIntervalWithCount(t *testing.T) {
	now := time.Unix(1000, 0)
	l := NewWithClock(10*time.Second, func() time.Time { return now })
	step := func(key string, wantN int, wantOK bool) {
		t.Helper()
		if n, ok := l.Allow(key); n != wantN || ok != wantOK {
			t.Fatalf("Allow(%q) at %v = %d, %v; want %d, %v", key, now.Unix(), n, ok, wantN, wantOK)
		}
	}
	step("a", 0, true)
	step("a", 0, false)
	step("b", 0, true)
	now = now.Add(9 * time.Second)
	step("a", 0, false)
	now = now.Add(time.Second)
	step("a", 2, true) // the two held back since
	step("a", 0, false)
	step("b", 0, true) // 10 s after its first: through, nothing held
	now = now.Add(time.Hour)
	step("a", 1, true)
}

// The memory of keys is bounded.
func TestKeysAreBounded(t *testing.T) {
	l := NewWithClock(time.Minute, time.Now)
	for i := 0; i < 3*maxKeys; i++ {
		l.Allow(string(rune(i)))
	}
	if len(l.last) > maxKeys {
		t.Fatalf("%d keys remembered", len(l.last))
	}
}
