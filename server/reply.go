package server

import (
	"strconv"

	"github.com/tidwall/redcon"
)

// replyWriter appends RESP replies to a connection's output buffer in the
// connection's protocol (2 or 3). The plain types come from redcon's
// Append* functions; RESP3's extra types (map, set, null, verbatim) are here
// with their RESP2 fallbacks, as Redis 7 encodes them.
type replyWriter struct {
	b     []byte
	proto int
}

func (w *replyWriter) ok()                 { w.b = redcon.AppendOK(w.b) }
func (w *replyWriter) simple(s string)     { w.b = redcon.AppendString(w.b, s) }
func (w *replyWriter) err(s string)        { w.b = redcon.AppendError(w.b, s) }
func (w *replyWriter) int(n int64)         { w.b = redcon.AppendInt(w.b, n) }
func (w *replyWriter) bulk(b []byte)       { w.b = redcon.AppendBulk(w.b, b) }
func (w *replyWriter) bulkString(s string) { w.b = redcon.AppendBulkString(w.b, s) }
func (w *replyWriter) array(n int)         { w.b = redcon.AppendArray(w.b, n) }
func (w *replyWriter) bulkInt(n int64)     { w.b = w.bulkIntTo(w.b, n) }

func (w *replyWriter) bulkIntTo(b []byte, n int64) []byte {
	var tmp [20]byte
	return redcon.AppendBulk(b, strconv.AppendInt(tmp[:0], n, 10))
}

// null is RESP3's null, or RESP2's null bulk string.
func (w *replyWriter) null() {
	if w.proto == 3 {
		w.b = append(w.b, '_', '\r', '\n')
		return
	}
	w.b = redcon.AppendNull(w.b)
}

// nullArray is RESP3's null, or RESP2's null array.
func (w *replyWriter) nullArray() {
	if w.proto == 3 {
		w.b = append(w.b, '_', '\r', '\n')
		return
	}
	w.b = append(w.b, '*', '-', '1', '\r', '\n')
}

// double writes a double given as its text (Redis's %.17g, "inf", "-inf"):
// RESP3 a double, RESP2 a bulk string, as Redis 7.0's addReplyDouble.
func (w *replyWriter) double(text []byte) {
	if w.proto == 3 {
		w.b = append(w.b, ',')
		w.b = append(w.b, text...)
		w.b = append(w.b, '\r', '\n')
		return
	}
	w.bulk(text)
}

// mapHeader starts a map of n pairs (RESP2: an array of 2n).
func (w *replyWriter) mapHeader(n int) {
	if w.proto == 3 {
		w.b = append(w.b, '%')
		w.b = strconv.AppendInt(w.b, int64(n), 10)
		w.b = append(w.b, '\r', '\n')
		return
	}
	w.array(2 * n)
}

// setHeader starts a set of n elements (RESP2: an array).
func (w *replyWriter) setHeader(n int) {
	if w.proto == 3 {
		w.b = append(w.b, '~')
		w.b = strconv.AppendInt(w.b, int64(n), 10)
		w.b = append(w.b, '\r', '\n')
		return
	}
	w.array(n)
}

// verbatim writes text as a RESP3 verbatim string of format "txt" (RESP2: a
// bulk string), as Redis does for INFO and CLIENT LIST.
func (w *replyWriter) verbatim(s string) {
	if w.proto == 3 {
		w.b = append(w.b, '=')
		w.b = strconv.AppendInt(w.b, int64(len(s)+4), 10)
		w.b = append(w.b, "\r\ntxt:"...)
		w.b = append(w.b, s...)
		w.b = append(w.b, '\r', '\n')
		return
	}
	w.bulkString(s)
}

// five writes a limiter reply: an array of five integers in both protocols.
func (w *replyWriter) five(v *[5]int64) {
	w.b = append(w.b, '*', '5', '\r', '\n')
	for _, n := range v {
		w.b = redcon.AppendInt(w.b, n)
	}
}
