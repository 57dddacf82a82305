package commands

import (
	"bytes"
	"strings"
	"testing"

	"github.com/redcell/redcell/request"
)

// parsedCommands are every command the table parses into a request (its
// Read and Write classes), the ones FuzzParse drives.
func parsedCommands() []*Spec {
	var out []*Spec
	for _, s := range All() {
		if s.Class == Read || s.Class == Write {
			out = append(out, s)
		}
	}
	return out
}

// splitFuzzArgs turns fuzz input into arguments: the first byte is the
// separator, so arguments may hold any byte, NUL, CR and LF included.
func splitFuzzArgs(data []byte) [][]byte {
	if len(data) == 0 {
		return nil
	}
	return bytes.Split(data[1:], data[:1])
}

// FuzzParse feeds arbitrary arguments to every command the table parses,
// as the server calls it (the table's arity check, then ParseWrite or
// ParseRead). Parsing never panics. A request it accepts has a code of the
// command's class, fits the log (MaxRequestLogBytes), and what the log
// would carry decodes back to exactly that request; a refusal is one error
// line (no CR or LF, which would break the RESP reply) with a prefix a
// client recognises.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"\x00k\x001\x001\x001", "\x00k\x0015\x0030\x0060\x001", "\x00k\x00-1\x001\x001", "\x00k\x000\x000\x000",
		"\x00k\x009223372036854775807\x001\x001\x00-9223372036854775808",
		"\x00k\x0010\x001\x001000\x00COST\x00-3\x00INTERVAL", "\x00k\x0010\x001000\x00MINGAP\x0010\x00DENIED\x00COUNT",
		"\x00k\x005\x00100\x00COST\x000", "\x00k\x005\x00100\x00DENIED\x00FREE\x00COST", "\x00k\x00\r\nx\x001\x001",
		"\x00k\x00NX\x00GT\x00CH\x000x1p3\x00m\x00-0\x00n", "\x00k\x00(1\x00+inf\x00BYSCORE\x00REV\x00LIMIT\x000\x001\x00WITHSCORES",
		"\x00k\x00[a\x00-\x00BYLEX\x00REV", "\x00k\x00INCR\x00inf\x00m",
		"\x00a\x00b\x00c", "\x00ASYNC", "\x00sync\x00async", "\x00", "", ",k,1,+1,01", "\nk\n1\n1\n1",
	} {
		f.Add([]byte(s))
	}
	specs := parsedCommands()
	f.Fuzz(func(t *testing.T, data []byte) {
		args := splitFuzzArgs(data)
		for _, s := range specs {
			argv := append([][]byte{[]byte(strings.ToUpper(s.Name))}, args...)
			if !s.OwnArity && !s.CheckArity(len(argv)) {
				continue
			}
			var r request.Request
			var e string
			if s.Class == Write {
				e = ParseWrite(s, argv, &r)
			} else {
				e = ParseRead(s, argv, &r)
			}
			if e != "" {
				checkErrorText(t, s, argv, e)
				continue
			}
			// EVAL of a script whose shebang says no-writes is a read
			// (NoWritesShebang), the one parse that changes class.
			if s.Code == request.Eval && r.Code == request.EvalRO {
				continue
			}
			if r.Code != s.Code || r.Code.IsWrite() != (s.Class == Write) || !r.Code.Known() {
				t.Fatalf("%s %q: request code %d, its table entry says %d (class %d)", s.Name, argv, r.Code, s.Code, s.Class)
			}
			enc := request.Append(nil, &r)
			if len(enc) != request.EncodedLen(&r) || len(enc) > MaxRequestLogBytes {
				t.Fatalf("%s %q: encodes to %d bytes, EncodedLen %d", s.Name, argv, len(enc), request.EncodedLen(&r))
			}
			var dec request.Decoder
			var got request.Request
			rest, err := dec.Decode(enc, &got)
			if err != nil || len(rest) != 0 || !sameRequest(&r, &got) {
				t.Fatalf("%s %q: the logged request does not decode to itself: %v, %d bytes left", s.Name, argv, err, len(rest))
			}
		}
	})
}

// checkErrorText: a parse error is one RESP error line with a known prefix.
func checkErrorText(t *testing.T, s *Spec, argv [][]byte, e string) {
	t.Helper()
	if strings.ContainsAny(e, "\r\n") {
		t.Fatalf("%s %q: the error %q holds CR or LF", s.Name, argv, e)
	}
	for _, p := range []string{"ERR ", "WRONGTYPE ", "Cell error: ", "NOSCRIPT "} {
		if strings.HasPrefix(e, p) {
			return
		}
	}
	t.Fatalf("%s %q: the error %q has no prefix a client recognises", s.Name, argv, e)
}

func sameRequest(a, b *request.Request) bool {
	if a.Code != b.Code || a.NArgs != b.NArgs || a.Args != b.Args || !bytes.Equal(a.Key, b.Key) || len(a.Keys) != len(b.Keys) {
		return false
	}
	for i := range a.Keys {
		if !bytes.Equal(a.Keys[i], b.Keys[i]) {
			return false
		}
	}
	return true
}
