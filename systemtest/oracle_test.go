package systemtest

import (
	"strings"
	"testing"
)

// runOracleCases is the data types' oracle test: it runs cases on a Redcell
// node (rc) and a redis-server (rd), in RESP2 and then RESP3, each case on
// an empty keyspace with Redcell's clock frozen at a whole second at or
// after Redis's now (so that absolute instants mean the same on both), and
// compares every reply as its line says (oracleSame). A line's {s+N} and
// {ms+N} are that server's now plus N, {empty} an empty argument.
func runOracleCases(t *testing.T, rc, rd *respConn, cases []oracleCase) {
	t.Helper()
	for _, proto := range []string{"2", "3"} {
		mustDo(t, rc, "HELLO", proto)
		mustDo(t, rd, "HELLO", proto)
		for _, tc := range cases {
			base := ceilSecond(max(replicatedClock(t, rc)+second, redisNowMs(t, rd)*1e6))
			setClock(t, rc, base)
			for _, c := range []*respConn{rc, rd} {
				mustDo(t, c, "FLUSHALL")
			}
			rcMs, rdMs := base/1e6, redisNowMs(t, rd)
			for _, l := range tc.lines {
				gotRC := mustDo(t, rc, oracleArgs(l.line, rcMs)...)
				gotRD := mustDo(t, rd, oracleArgs(l.line, rdMs)...)
				if !oracleSame(l, gotRC, gotRD, rcMs, rdMs) {
					line := l.line
					if len(line) > 80 {
						line = line[:80] + "…"
					}
					t.Errorf("RESP%s %s: %s: Redcell %.300s, Redis %.300s", proto, tc.name, line, wire(gotRC), wire(gotRD))
				}
			}
		}
	}
}

// oracleArgs fills an oracle line (fill) and makes each {empty} an empty
// argument; «…» is one argument, blanks and all (a script's body).
func oracleArgs(line string, nowMs int64) []string {
	if i := strings.Index(line, "«"); i >= 0 {
		j := strings.Index(line[i:], "»")
		if j < 0 {
			panic("oracle line with « and no »: " + line)
		}
		j += i
		args := oracleArgs(line[:i], nowMs)
		args = append(args, line[i+len("«"):j])
		return append(args, oracleArgs(line[j+len("»"):], nowMs)...)
	}
	args := fill(line, nowMs)
	for i, a := range args {
		if a == "{empty}" {
			args[i] = ""
		}
	}
	return args
}

// oracleSame compares Redcell's reply to an oracle line with Redis's:
// byte for byte (exact, with the RESP type bytes), with the elements
// sorted where Redis leaves their order unspecified (unordered: a hash's
// fields, HGETALL's pairs; setUnordered: the members of every set and bulk
// array), or as a time within a tolerance (sameReply).
func oracleSame(l oracleLine, rc, rd reply, rcMs, rdMs int64) bool {
	switch l.cmp {
	case exact:
		return wire(rc) == wire(rd)
	case unordered:
		pairs := strings.HasPrefix(strings.ToUpper(l.line), "HGETALL")
		return sortedWire(rc, pairs) == sortedWire(rd, pairs)
	case setUnordered:
		return wireSetSorted(rc) == wireSetSorted(rd)
	}
	return sameReply(l.cmp, rc, rd, rcMs, rdMs)
}
