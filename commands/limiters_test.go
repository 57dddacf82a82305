package commands

import (
	"strings"
	"testing"

	"github.com/redcell/redcell/request"
)

// parseLine parses a command line the way the server does: table lookup,
// the table's arity, then the spec's class.
func parseLine(line string) (request.Request, string) {
	args := argv(strings.Fields(line)...)
	var scratch []byte
	s := Lookup(args[0], &scratch)
	if s == nil {
		return request.Request{}, "no such command"
	}
	if !s.OwnArity && !s.CheckArity(len(args)) {
		return request.Request{}, WrongArgs(s.Name)
	}
	var r request.Request
	if s.Class == Write {
		return r, ParseWrite(s, args, &r)
	}
	return r, ParseRead(s, args, &r)
}

// TestLimiterParseErrors: limiters.md rule 5's order and texts, through the
// table (arity) and the families' parsers, for all four commands.
func TestLimiterParseErrors(t *testing.T) {
	const (
		integer = "ERR value is not an integer or out of range"
		syntax  = "ERR syntax error"
	)
	for _, tt := range []struct{ line, want string }{
		{"TB.TAKE k 1 1", "ERR wrong number of arguments for 'tb.take' command"},
		{"tb.peek k", "ERR wrong number of arguments for 'tb.peek' command"},
		{"SL.HIT k 1", "ERR wrong number of arguments for 'sl.hit' command"},
		{"sl.peek", "ERR wrong number of arguments for 'sl.peek' command"},
		{"TB.TAKE k x 0 0", integer},            // integers before ranges
		{"TB.TAKE k 0 1 COST", integer},         // a keyword in a positional slot
		{"TB.TAKE k 0 1 1 FOO", syntax},         // options before ranges
		{"TB.TAKE k 1 1 1 COST x FOO", integer}, // left to right
		{"TB.TAKE k 1 1 1 FOO COST x", syntax},  // left to right
		{"TB.TAKE k 1 1 1 COST", syntax},        // missing value
		{"TB.TAKE k 1 1 1 coſt 1", syntax},      // ASCII folding only
		{"TB.TAKE k 0 0 0", "ERR capacity must be positive"},
		{"TB.TAKE k 1 0 0", "ERR refill_tokens must be positive"},
		{"TB.PEEK k 1 1 0 INTERVAL", "ERR refill_period_ms must be positive"},
		{"TB.TAKE k 1 1 9223372036855", integer}, // P past int64
		{"TB.TAKE k 1 2000001 1", integer},       // greedy T = 0
		{"SL.HIT k 0 0 COST 0 MINGAP -1", "ERR limit must be positive"},
		{"SL.HIT k 1 0", "ERR window_ms must be positive"},
		{"SL.HIT k 1 1 COST 0", "ERR COST must be positive"},
		{"SL.HIT k 1 1 MINGAP 2", "ERR MINGAP must be between 0 and window_ms"},
		{"SL.HIT k 1 1 DENIED MAYBE", syntax},
		{"SL.PEEK k 1 1 DENIED FREE", syntax}, // DENIED is SL.HIT's only
		{"SL.HIT k 1 1 INTERVAL", syntax},     // another family's option
		{"TB.TAKE k 1 1 1 MINGAP 1", syntax},
		{"SL.HIT k 1 9223372036855", integer},
	} {
		if _, got := parseLine(tt.line); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.line, got, tt.want)
		}
	}
}

// TestLimiterRequests: what the parsers put in the request, which the
// state machine rebuilds its parameters from.
func TestLimiterRequests(t *testing.T) {
	for _, tt := range []struct {
		line string
		code request.Code
		args []int64
	}{
		{"TB.TAKE k 10 2 1000", request.TBTake, []int64{10, 2, 1000, 1, 0}},
		{"tb.take k 10 2 1000 interval COST -3 cost +7 INTERVAL", request.TBTake, []int64{10, 2, 1000, 7, 1}},
		{"TB.PEEK k 10 2 1000 COST 0", request.TBPeek, []int64{10, 2, 1000, 0, 0}},
		{"SL.HIT k 5 60000", request.SLHit, []int64{5, 60000, 1, 0, 0}},
		{"SL.HIT k 5 60000 DENIED count MINGAP 007 COST 2 DENIED COUNT", request.SLHit, []int64{5, 60000, 2, 7, 1}},
		{"SL.HIT k 5 60000 DENIED COUNT DENIED FREE", request.SLHit, []int64{5, 60000, 1, 0, 0}},
		{"SL.PEEK k 5 60000 MINGAP 10", request.SLPeek, []int64{5, 60000, 1, 10, 0}},
	} {
		r, e := parseLine(tt.line)
		if e != "" {
			t.Errorf("%s: %s", tt.line, e)
			continue
		}
		if r.Code != tt.code || string(r.Key) != "k" || int(r.NArgs) != len(tt.args) {
			t.Errorf("%s: %+v", tt.line, r)
			continue
		}
		for i, a := range tt.args {
			if r.Args[i] != a {
				t.Errorf("%s: Args %v, want %v", tt.line, r.Args[:r.NArgs], tt.args)
				break
			}
		}
	}
}

// TestResultErrText: every error code the state machine answers has its
// own text.
func TestResultErrText(t *testing.T) {
	seen := map[string]request.ErrCode{}
	for c := request.ErrWrongType; c <= request.ErrCorruptLog; c++ {
		text := ResultErrText(c)
		if text == ErrInternal {
			t.Errorf("code %d has no text of its own", c)
		}
		if prev, dup := seen[text]; dup {
			t.Errorf("codes %d and %d share %q", prev, c, text)
		}
		seen[text] = c
	}
}

// TestScanParse: SCAN's cursor and options as Redis 7.0 parses them (the
// texts and outcomes were checked against redis-server 7.0.15).
func TestScanParse(t *testing.T) {
	for _, tt := range []struct {
		line, err string
		cursor    uint64
		count     int64
		typ       int64
		match     string
	}{
		{line: "SCAN 0", count: 10},
		{line: "scan 18446744073709551615", cursor: 1<<64 - 1, count: 10},
		{line: "SCAN -1", cursor: 1<<64 - 1, count: 10},
		{line: "SCAN +5 count 3", cursor: 5, count: 3},
		{line: "SCAN 007 MATCH a* COUNT 5 MATCH b TYPE STRING", cursor: 7, count: 5, typ: request.ScanTypeString, match: "b"},
		{line: "SCAN 0 TYPE tokenBucket", count: 10, typ: request.ScanTypeTokenBucket},
		{line: "SCAN 0 TYPE slidinglog", count: 10, typ: request.ScanTypeSlidingLog},
		{line: "SCAN 0 TYPE list", count: 10, typ: request.ScanTypeList},
		{line: "SCAN 0 TYPE stream", count: 10, typ: request.ScanTypeNone},
		{line: "SCAN abc", err: ErrInvalidCursor},
		{line: "SCAN 18446744073709551616", err: ErrInvalidCursor},
		{line: "SCAN -", err: ErrInvalidCursor},
		{line: "SCAN 1x", err: ErrInvalidCursor},
		{line: "SCAN 0 COUNT 0", err: ErrSyntax},
		{line: "SCAN 0 COUNT -1", err: ErrSyntax},
		{line: "SCAN 0 COUNT x", err: ErrNotInteger},
		{line: "SCAN 0 FOO", err: ErrSyntax},
		{line: "SCAN 0 MATCH", err: ErrSyntax},
		{line: "SCAN 0 COUNT 1 TYPE", err: ErrSyntax},
		{line: "SCAN", err: "ERR wrong number of arguments for 'scan' command"},
		{line: "KEYS", err: "ERR wrong number of arguments for 'keys' command"},
		{line: "KEYS a b", err: "ERR wrong number of arguments for 'keys' command"},
	} {
		r, e := parseLine(tt.line)
		if e != tt.err {
			t.Errorf("%s: error %q, want %q", tt.line, e, tt.err)
			continue
		}
		if e != "" {
			continue
		}
		if r.Code != request.Scan || uint64(r.Args[0]) != tt.cursor || r.Args[1] != tt.count || r.Args[2] != tt.typ ||
			string(r.Key) != tt.match || (r.Args[3] == 1) != (tt.match != "") {
			t.Errorf("%s: %+v", tt.line, r)
		}
	}
	r, e := parseLine("KEYS user:*")
	if e != "" || r.Code != request.Keys || string(r.Key) != "user:*" {
		t.Errorf("KEYS user:*: %+v %q", r, e)
	}
}
