package commands

import (
	"math"

	"github.com/redcell/redcell/gcra"
	"github.com/redcell/redcell/request"
)

// ParseInt parses b exactly as strconv.ParseInt(string(b), 10, 64) would —
// optional '+' or '-', then one or more ASCII digits, within int64 — without
// allocating. The spec fixes this syntax for every integer argument.
func ParseInt(b []byte) (int64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	neg := false
	switch b[0] {
	case '+', '-':
		neg = b[0] == '-'
		b = b[1:]
		if len(b) == 0 {
			return 0, false
		}
	}
	var u uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		if u > (math.MaxUint64-9)/10 { // cannot take another digit without overflow
			return 0, false
		}
		u = u*10 + uint64(c-'0')
		if u > 1<<63 {
			return 0, false
		}
	}
	if neg {
		return -int64(u), true // -(1<<63) wraps to MinInt64, which is in range
	}
	if u > math.MaxInt64 {
		return 0, false
	}
	return int64(u), true
}

// ParseGCRA parses the arguments of CL.THROTTLE and CL.PEEK:
//
//	<name> <key> <max_burst> <count per period> <period> [<quantity>]
//
// It returns the key, the derived parameters, or the exact redis-cell error
// text. name is the lower-case command name for the usage error.
func ParseGCRA(name string, args [][]byte) (key []byte, p gcra.Params, errText string) {
	if len(args) != 5 && len(args) != 6 {
		return nil, p, CellUsage(name)
	}
	var v [4]int64
	v[3] = 1 // quantity defaults to 1
	for i := 2; i < len(args); i++ {
		n, ok := ParseInt(args[i])
		if !ok {
			return nil, p, CellNotInteger(args[i])
		}
		v[i-2] = n
	}
	p, err := gcra.NewParams(v[0], v[1], v[2], v[3])
	if err != nil {
		return nil, p, ErrCellZero
	}
	return args[1], p, ""
}

// ParseThrottle builds the request for CL.THROTTLE: the key and the GCRA
// parameters as Args (Interval, Limit, Quantity).
func ParseThrottle(args [][]byte, r *request.Request) string {
	return parseGCRARequest(request.Throttle, "cl.throttle", args, r)
}

// ParsePeek builds the request for CL.PEEK, with CL.THROTTLE's Args.
func ParsePeek(args [][]byte, r *request.Request) string {
	return parseGCRARequest(request.Peek, "cl.peek", args, r)
}

func parseGCRARequest(code request.Code, name string, args [][]byte, r *request.Request) string {
	key, p, e := ParseGCRA(name, args)
	if e != "" {
		return e
	}
	*r = request.Request{Code: code, Key: key}
	r.SetArgs(p.Interval, p.Limit, p.Quantity)
	return ""
}

// EqualFold reports whether b equals the lower-case ASCII word w, folding only
// A–Z as Redis's strcasecmp does (a non-ASCII look-alike never matches).
func EqualFold(b []byte, w string) bool {
	if len(b) != len(w) {
		return false
	}
	for i := range b {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != w[i] {
			return false
		}
	}
	return true
}

// Lower writes the ASCII-lower-case form of b into dst (reused) and returns it.
func Lower(dst, b []byte) []byte {
	dst = append(dst[:0], b...)
	for i, c := range dst {
		if 'A' <= c && c <= 'Z' {
			dst[i] = c + 'a' - 'A'
		}
	}
	return dst
}
