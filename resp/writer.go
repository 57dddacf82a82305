// Package resp writes replies in the Redis protocol, RESP2 or RESP3: the
// plain types, RESP3's extra types with their RESP2 fallbacks as Redis 7.0
// writes them, and a request.Result of any kind (result.go). The server
// writes every client's replies with it, and a script's redis.call reads
// the same bytes a client would get (package scripting), so a reply has one
// encoding.
package resp

import (
	"strconv"

	"github.com/tidwall/redcon"
)

// Writer appends RESP replies to B in protocol Proto (2 or 3). The plain types come from redcon's
// Append* functions; RESP3's extra types (map, set, null, verbatim) are here
// with their RESP2 fallbacks, as Redis 7 encodes them.
type Writer struct {
	B     []byte
	Proto int
}

func (w *Writer) OK()                 { w.B = redcon.AppendOK(w.B) }
func (w *Writer) Simple(s string)     { w.B = redcon.AppendString(w.B, s) }
func (w *Writer) Err(s string)        { w.B = redcon.AppendError(w.B, s) }
func (w *Writer) Int(n int64)         { w.B = redcon.AppendInt(w.B, n) }
func (w *Writer) Bulk(b []byte)       { w.B = redcon.AppendBulk(w.B, b) }
func (w *Writer) BulkString(s string) { w.B = redcon.AppendBulkString(w.B, s) }
func (w *Writer) Array(n int)         { w.B = redcon.AppendArray(w.B, n) }
func (w *Writer) BulkInt(n int64)     { w.B = w.BulkIntTo(w.B, n) }

func (w *Writer) BulkIntTo(b []byte, n int64) []byte {
	var tmp [20]byte
	return redcon.AppendBulk(b, strconv.AppendInt(tmp[:0], n, 10))
}

// Null is RESP3's null, or RESP2's null bulk string.
func (w *Writer) Null() {
	if w.Proto == 3 {
		w.B = append(w.B, '_', '\r', '\n')
		return
	}
	w.B = redcon.AppendNull(w.B)
}

// NullArray is RESP3's null, or RESP2's null array.
func (w *Writer) NullArray() {
	if w.Proto == 3 {
		w.B = append(w.B, '_', '\r', '\n')
		return
	}
	w.B = append(w.B, '*', '-', '1', '\r', '\n')
}

// Double writes a double given as its text (Redis's %.17g, "inf", "-inf"):
// RESP3 a double, RESP2 a bulk string, as Redis 7.0's addReplyDouble.
func (w *Writer) Double(text []byte) {
	if w.Proto == 3 {
		w.B = append(w.B, ',')
		w.B = append(w.B, text...)
		w.B = append(w.B, '\r', '\n')
		return
	}
	w.Bulk(text)
}

// MapHeader starts a map of n pairs (RESP2: an array of 2n).
func (w *Writer) MapHeader(n int) {
	if w.Proto == 3 {
		w.B = append(w.B, '%')
		w.B = strconv.AppendInt(w.B, int64(n), 10)
		w.B = append(w.B, '\r', '\n')
		return
	}
	w.Array(2 * n)
}

// SetHeader starts a set of n elements (RESP2: an array).
func (w *Writer) SetHeader(n int) {
	if w.Proto == 3 {
		w.B = append(w.B, '~')
		w.B = strconv.AppendInt(w.B, int64(n), 10)
		w.B = append(w.B, '\r', '\n')
		return
	}
	w.Array(n)
}

// Verbatim writes text as a RESP3 verbatim string of format "txt" (RESP2: a
// Bulk string), as Redis does for INFO and CLIENT LIST.
func (w *Writer) Verbatim(s string) {
	if w.Proto == 3 {
		w.B = append(w.B, '=')
		w.B = strconv.AppendInt(w.B, int64(len(s)+4), 10)
		w.B = append(w.B, "\r\ntxt:"...)
		w.B = append(w.B, s...)
		w.B = append(w.B, '\r', '\n')
		return
	}
	w.BulkString(s)
}

// Five writes a limiter reply: an array of five integers in both protocols.
func (w *Writer) Five(v *[5]int64) {
	w.B = append(w.B, '*', '5', '\r', '\n')
	for _, n := range v {
		w.B = redcon.AppendInt(w.B, n)
	}
}
