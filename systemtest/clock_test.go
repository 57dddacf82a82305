package systemtest

import (
	"strconv"
	"testing"
)

// Time enters the server only through its testing hook: DEBUG CLOCK SET
// freezes the instant the leader stamps entries with (and reads are judged
// at), and the replicated clock (bare DEBUG CLOCK) never goes backwards. So a
// test reads the replicated clock, picks instants after it, and sets each one
// before the commands that should happen then.

const second = int64(1_000_000_000)

// replicatedClock answers DEBUG CLOCK: the now of the last applied entry.
func replicatedClock(t testing.TB, c *respConn) int64 {
	t.Helper()
	r := mustDo(t, c, "DEBUG", "CLOCK")
	if r.kind != ':' {
		t.Fatalf("DEBUG CLOCK: got %v, want an integer", r)
	}
	return r.num
}

// setClock freezes the node's clock at unixNS.
func setClock(t testing.TB, c *respConn, unixNS int64) {
	t.Helper()
	expectReply(t, c, wantStatus("OK"), "DEBUG", "CLOCK", "SET", strconv.FormatInt(unixNS, 10))
}

// ceilSecond rounds ns up to a whole second.
func ceilSecond(ns int64) int64 {
	if r := ns % second; r != 0 {
		ns += second - r
	}
	return ns
}

// realisticOrigin is the earliest origin tests use (November 2023), so that
// a fresh node (replicated clock 0) still works with present-day instants.
const realisticOrigin = int64(1_700_000_000) * second

// freshBase returns a whole second at least one second after the replicated
// clock (and no earlier than realisticOrigin) and freezes the clock there: a
// test's own time origin.
func freshBase(t testing.TB, c *respConn) int64 {
	t.Helper()
	base := ceilSecond(max(replicatedClock(t, c)+second, realisticOrigin))
	setClock(t, c, base)
	return base
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }
