// Package resp3 reads a reply held as RESP3 bytes (a script's result,
// request.KindReply): one value at a time, every length checked against the
// bytes actually there, nothing allocated from a declared length. Package
// request validates such a reply with it when it decodes a result, package
// resp writes it to a RESP2 client.
package resp3

import "bytes"

// MaxDepth is the deepest nesting Valid accepts; a script's reply is
// converted from a Lua value whose depth the converter caps below this.
const MaxDepth = 1000

// Item is one value read from the start of a reply: Type is its RESP3 type
// byte; Line the text of its header line (the integer, double, simple
// string, error, boolean or big number, or the decimal length or count);
// Blob the payload of a blob string, blob error or verbatim string; and N
// the count of elements that follow it, for an aggregate (array, set: N
// values; map: 2N).
type Item struct {
	Type byte
	Line []byte
	Blob []byte
	N    int
}

// Read reads one item at the start of b and returns it and the bytes after
// it (for an aggregate, its elements come next). ok is false when b does
// not start with a complete, well-formed item of a type Read knows.
func Read(b []byte) (it Item, rest []byte, ok bool) {
	if len(b) < 3 {
		return Item{}, nil, false
	}
	i := bytes.Index(b, []byte("\r\n"))
	if i < 1 {
		return Item{}, nil, false
	}
	it.Type, it.Line, rest = b[0], b[1:i], b[i+2:]
	switch it.Type {
	case '+', '-', ':', ',', '(':
		return it, rest, true
	case '_':
		return it, rest, len(it.Line) == 0
	case '#':
		return it, rest, len(it.Line) == 1 && (it.Line[0] == 't' || it.Line[0] == 'f')
	case '$', '!', '=':
		n, ok := count(it.Line)
		if !ok || n > len(rest)-2 || rest[n] != '\r' || rest[n+1] != '\n' {
			return Item{}, nil, false
		}
		if it.Type == '=' && (n < 4 || rest[3] != ':') {
			return Item{}, nil, false
		}
		it.Blob = rest[:n]
		return it, rest[n+2:], true
	case '*', '~', '%':
		n, ok := count(it.Line)
		// Every element takes at least 3 bytes, so a count the rest cannot
		// hold is refused before anyone sizes anything by it.
		per := 3
		if it.Type == '%' {
			per = 6
		}
		if !ok || n > len(rest)/per {
			return Item{}, nil, false
		}
		it.N = n
		return it, rest, true
	}
	return Item{}, nil, false
}

// count parses a non-negative decimal length.
func count(b []byte) (int, bool) {
	if len(b) == 0 || len(b) > 10 {
		return 0, false
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// Valid reports whether b is exactly one complete value, nested at most
// MaxDepth deep.
func Valid(b []byte) bool {
	rest, ok := skip(b, 0)
	return ok && len(rest) == 0
}

// Skip returns the bytes after the value at the start of b, its elements
// included.
func Skip(b []byte) (rest []byte, ok bool) { return skip(b, 0) }

func skip(b []byte, depth int) ([]byte, bool) {
	if depth > MaxDepth {
		return nil, false
	}
	it, rest, ok := Read(b)
	if !ok {
		return nil, false
	}
	n := it.N
	if it.Type == '%' {
		n *= 2
	}
	for range n {
		if rest, ok = skip(rest, depth+1); !ok {
			return nil, false
		}
	}
	return rest, true
}
