// Package expiry is the one definition of a limiter key's lifetime as
// clients see it: a key whose state expires at instant expire (Unix ns)
// exists while now < expire, and PTTL rounds the time left up to whole
// milliseconds, as every limiter family and the state machine answer it.
package expiry

// MsUp is ⌈x / 1 ms⌉ for x > 0 and 0 for x ≤ 0; it never overflows.
func MsUp(x int64) int64 {
	if x <= 0 {
		return 0
	}
	return (x-1)/1_000_000 + 1
}

// Live reports whether a key whose state expires at expire exists at now.
func Live(expire, now int64) bool { return now < expire }

// PTTL is the key's PTTL at now: MsUp(expire − now) while it exists (so
// ≥ 1), −2 once it is gone.
func PTTL(expire, now int64) int64 {
	if now >= expire {
		return -2
	}
	return MsUp(expire - now)
}
