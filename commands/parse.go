package commands

import (
	"github.com/redcell/redcell/gcra"
	"github.com/redcell/redcell/internal/arg"
	"github.com/redcell/redcell/request"
)

// ParseInt parses an integer argument with the spec's syntax (see arg.Int).
func ParseInt(b []byte) (int64, bool) { return arg.Int(b) }

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
func ParseThrottle(args [][]byte) (request.Request, string) {
	return parseGCRARequest(request.Throttle, "cl.throttle", args)
}

// ParsePeek builds the request for CL.PEEK, with CL.THROTTLE's Args.
func ParsePeek(args [][]byte) (request.Request, string) {
	return parseGCRARequest(request.Peek, "cl.peek", args)
}

func parseGCRARequest(code request.Code, name string, args [][]byte) (request.Request, string) {
	key, p, e := ParseGCRA(name, args)
	if e != "" {
		return request.Request{}, e
	}
	r := request.Request{Code: code, Key: key}
	r.SetArgs(p.Interval, p.Limit, p.Quantity)
	return r, ""
}

// EqualFold reports whether b equals the lower-case ASCII word w (see
// arg.EqualFold).
func EqualFold(b []byte, w string) bool { return arg.EqualFold(b, w) }

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
