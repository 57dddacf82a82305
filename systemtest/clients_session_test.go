package systemtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// The session every real client runs against the shared node (frozen clock,
// its own key prefix), whatever its language: limiter calls whose replies
// must be arrays of RESP integers, a MULTI/EXEC of them, an invalid call
// whose error must reach the caller as the client's own error type, and
// more calls on the same connection after it.
type clientSession struct {
	Plain [][]string `json:"plain"`
	Tx    [][]string `json:"tx"`
	Bad   []string   `json:"bad"`
	After [][]string `json:"after"`
	// CacheKey asks a script to check its client's client-side cache on
	// this key too (node-redis: an option, RESP3).
	CacheKey string `json:"cacheKey,omitempty"`

	// What the replies must be.
	wantPlain, wantTx, wantAfter [][]int64
	wantErr                      string
}

func newClientSession(prefix string) clientSession {
	k, tx, tb, sl := prefix+":k", prefix+":tx", prefix+":tb", prefix+":sl"
	return clientSession{
		Plain:     [][]string{{"CL.THROTTLE", k, "15", "30", "60"}, {"TB.TAKE", tb, "10", "1", "1000"}, {"SL.HIT", sl, "5", "60000"}},
		wantPlain: [][]int64{{0, 16, 15, -1, 2}, {0, 10, 9, -1, 1000}, {0, 5, 4, -1, 60000}},
		Tx: [][]string{{"CL.THROTTLE", tx, "4", "1", "60"}, {"CL.THROTTLE", tx, "4", "1", "60"},
			{"TB.TAKE", tb, "10", "1", "1000"}, {"SL.HIT", sl, "5", "60000"}},
		wantTx:    [][]int64{{0, 5, 4, -1, 60}, {0, 5, 3, -1, 120}, {0, 10, 8, -1, 2000}, {0, 5, 3, -1, 60000}},
		Bad:       []string{"CL.THROTTLE", k, "x", "1", "1"},
		wantErr:   "Cell error: Store error: Couldn't parse as integer: x",
		After:     [][]string{{"CL.THROTTLE", k, "15", "30", "60"}, {"TB.TAKE", tb, "10", "1", "1000"}, {"SL.HIT", sl, "5", "60000"}},
		wantAfter: [][]int64{{0, 16, 14, -1, 4}, {0, 10, 7, -1, 3000}, {0, 5, 2, -1, 60000}},
	}
}

func (s clientSession) json() string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// args converts a command for clients that take interface{} arguments.
func args(cmd []string) []interface{} {
	out := make([]interface{}, len(cmd))
	for i, a := range cmd {
		out[i] = a
	}
	return out
}

// sessionReport is what a client in another language reports
// (clients/node/session.js, clients/python/session.py).
type sessionReport struct {
	Lib     string            `json:"lib"`
	Version string            `json:"version"`
	Proto   int               `json:"proto"`
	Plain   []json.RawMessage `json:"plain"`
	Tx      []json.RawMessage `json:"tx"`
	After   []json.RawMessage `json:"after"`
	// CLIENT ID just before and just after the error: the same connection.
	IDBefore int64 `json:"idBefore"`
	IDAfter  int64 `json:"idAfter"`
	// Cache: with CacheKey, each cached TYPE as "<value> <hit|miss>".
	Cache []string `json:"cache"`
	Error struct {
		Class   string `json:"class"`
		OwnType bool   `json:"ownType"`
		Message string `json:"message"`
	} `json:"error"`
}

// check compares a report with the session's expectations: each reply must
// decode as a JSON array of integers (a client that turned them into strings
// or floats-with-fractions fails), in order.
func (s clientSession) check(r sessionReport) []string {
	var problems []string
	cmp := func(what string, got []json.RawMessage, want [][]int64) {
		if len(got) != len(want) {
			problems = append(problems, fmt.Sprintf("%s: %d replies, want %d", what, len(got), len(want)))
			return
		}
		for i := range want {
			var ints []json.Number
			dec := json.NewDecoder(bytes.NewReader(got[i]))
			dec.UseNumber()
			ok := dec.Decode(&ints) == nil && len(ints) == len(want[i])
			for j := 0; ok && j < len(ints); j++ {
				v, err := strconv.ParseInt(string(ints[j]), 10, 64)
				ok = err == nil && v == want[i][j]
			}
			if !ok {
				problems = append(problems, fmt.Sprintf("%s reply %d = %s, want the integers %v", what, i, got[i], want[i]))
			}
		}
	}
	cmp("plain", r.Plain, s.wantPlain)
	cmp("MULTI/EXEC", r.Tx, s.wantTx)
	cmp("after the error", r.After, s.wantAfter)
	if !r.Error.OwnType || r.Error.Message != s.wantErr {
		problems = append(problems, fmt.Sprintf("error: %s %q (the client's own error type: %v), want %q as its own type",
			r.Error.Class, r.Error.Message, r.Error.OwnType, s.wantErr))
	}
	if r.IDBefore == 0 || r.IDAfter != r.IDBefore {
		problems = append(problems, fmt.Sprintf("the connection changed after the error: CLIENT ID %d, then %d", r.IDBefore, r.IDAfter))
	}
	return problems
}
