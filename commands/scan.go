package commands

import (
	"github.com/redcell/redcell/internal/arg"
	"github.com/redcell/redcell/request"
)

// SCAN and KEYS: the keyspace as lists of keys. The state machine walks the
// keyspace (fsm/scan.go); the cursor's meaning is shard's (shard/scan.go).

// ErrInvalidCursor is Redis's reply to a SCAN cursor that is not an
// unsigned 64-bit integer.
const ErrInvalidCursor = "ERR invalid cursor"

// defaultScanCount is Redis's COUNT when none is given.
const defaultScanCount = 10

var (
	scanSpec = &Spec{Name: "scan", Arity: -2, Code: request.Scan,
		Group: "generic", Since: "2.8.0", Complexity: "O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of keys.",
		ACL:     []string{"@keyspace", "@read", "@slow"},
		Summary: "Iterates over the live keys: returns a cursor (0 when done) and a page of keys. A key present for the whole iteration is returned exactly once.",
		Args: []Arg{{Name: "cursor", Type: "integer"}, {Name: "pattern", Type: "pattern", Token: "MATCH", Optional: true},
			{Name: "count", Type: "integer", Token: "COUNT", Optional: true}, {Name: "type", Type: "string", Token: "TYPE", Optional: true}},
		Parse: parseScan}
	keysSpec = &Spec{Name: "keys", Arity: 2, Code: request.Keys,
		Group: "generic", Since: "1.0.0", Complexity: "O(N) with N being the number of keys in the database",
		ACL:     []string{"@keyspace", "@read", "@slow", "@dangerous"},
		Summary: "Returns every live key matching the pattern.",
		Args:    []Arg{{Name: "pattern", Type: "pattern"}},
		Parse:   parseKeys}
)

// parseScan parses SCAN cursor [MATCH pattern] [COUNT count] [TYPE type]
// as Redis 7.0 does: the cursor as C's strtoul (an optional sign, a
// negative one wrapping, nothing else; "ERR invalid cursor"), then the
// options left to right, a repeated one keeping its last value: COUNT must
// parse (integer error) and be ≥ 1 (syntax error); an unknown word or a
// missing value is a syntax error. TYPE is looked up among the families'
// type names (request.ScanTypeByName); one that names no Redcell key type
// (list, hash, or anything else) matches nothing, as in Redis 7.0.
func parseScan(args [][]byte) (request.Request, string) {
	cursor, ok := parseCursor(args[1])
	if !ok {
		return request.Request{}, ErrInvalidCursor
	}
	count, typ, match := int64(defaultScanCount), request.ScanTypeAny, false
	var pattern []byte
	for i := 2; i < len(args); i += 2 {
		if i+1 >= len(args) {
			return request.Request{}, ErrSyntax
		}
		v := args[i+1]
		switch {
		case EqualFold(args[i], "count"):
			n, ok := arg.Int(v)
			if !ok {
				return request.Request{}, ErrNotInteger
			}
			if n < 1 {
				return request.Request{}, ErrSyntax
			}
			count = n
		case EqualFold(args[i], "match"):
			pattern, match = v, true
		case EqualFold(args[i], "type"):
			typ = request.ScanTypeByName(v)
		default:
			return request.Request{}, ErrSyntax
		}
	}
	r := request.Request{Code: request.Scan, Key: pattern}
	r.SetArgs(int64(cursor), count, typ, boolArg(match))
	return r, ""
}

// parseCursor is C's strtoul(s, &end, 10) with Redis's checks (no leading
// blank, nothing after the digits, no overflow): an empty string is 0, a
// leading '-' negates modulo 2^64.
func parseCursor(s []byte) (uint64, bool) {
	neg := false
	if len(s) > 0 && (s[0] == '+' || s[0] == '-') {
		neg = s[0] == '-'
		s = s[1:]
		if len(s) == 0 {
			return 0, false // a sign alone: strtoul reads nothing
		}
	}
	var v uint64
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if v > (1<<64-1-d)/10 {
			return 0, false // ERANGE
		}
		v = v*10 + d
	}
	if neg {
		v = -v
	}
	return v, true
}

func parseKeys(args [][]byte) (request.Request, string) {
	return request.Request{Code: request.Keys, Key: args[1]}, ""
}
