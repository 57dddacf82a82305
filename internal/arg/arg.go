// Package arg holds the two primitives every command parser needs, in one
// place: integers with exactly the syntax the spec fixes for every integer
// argument, and Redis's ASCII-only case folding for keywords. It is a leaf
// so that the command table (commands) and the limiter packages
// (tokenbucket, slidinglog), which commands imports, share one copy.
package arg

import "math"

// Int parses b exactly as strconv.ParseInt(string(b), 10, 64) would:
// optional '+' or '-', then one or more ASCII digits, within int64. It does
// not allocate.
func Int(b []byte) (int64, bool) {
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

// EqualFold reports whether b equals the lower-case ASCII word w, folding
// only A-Z as Redis's strcasecmp does: a non-ASCII look-alike never matches.
func EqualFold(b []byte, w string) bool {
	if len(b) != len(w) {
		return false
	}
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != w[i] {
			return false
		}
	}
	return true
}

// Error is a validation failure whose text is the reply a client sees
// (without the leading '-'). Errors are constants: comparing them with ==
// and returning them never allocates. The limiter packages share this type
// and the texts below, which every family answers alike.
type Error string

func (e Error) Error() string { return string(e) }

// The texts every limiter family's parser shares (Redis's own).
const (
	// ErrArity is the stem of Redis's arity error; the command layer
	// answers the full "ERR wrong number of arguments for '<cmd>' command".
	ErrArity      Error = "ERR wrong number of arguments"
	ErrNotInteger Error = "ERR value is not an integer or out of range"
	ErrSyntax     Error = "ERR syntax error"
)
