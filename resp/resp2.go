package resp

import (
	"strconv"

	"github.com/redcell/redcell/internal/resp3"
)

// AppendRESP2 appends the reply held as RESP3 bytes (request.KindReply, a
// script's result) as a RESP2 client gets it from Redis 7.0: a map becomes
// a flat array of its keys and values, a set an array, a double or a big
// number a bulk string of its text, a verbatim string a bulk string of its
// text without the format, true and false the integers 1 and 0, and null a
// null bulk string. reply is valid (request checks it when it decodes the
// result); were it not, what is left of it is dropped.
func AppendRESP2(dst, reply []byte) []byte {
	dst, _ = appendRESP2(dst, reply)
	return dst
}

func appendRESP2(dst, b []byte) ([]byte, []byte) {
	it, rest, ok := resp3.Read(b)
	if !ok {
		return dst, nil
	}
	switch it.Type {
	case '+', '-', ':':
		return append(dst, b[:len(b)-len(rest)]...), rest
	case '$':
		return append(dst, b[:len(b)-len(rest)]...), rest
	case ',', '(':
		return appendBulk(dst, it.Line), rest
	case '=':
		return appendBulk(dst, it.Blob[4:]), rest
	case '!':
		return appendBulk(dst, it.Blob), rest
	case '#':
		if it.Line[0] == 't' {
			return append(dst, ":1\r\n"...), rest
		}
		return append(dst, ":0\r\n"...), rest
	case '_':
		return append(dst, "$-1\r\n"...), rest
	case '*', '~', '%':
		n := it.N
		if it.Type == '%' {
			n *= 2
		}
		dst = append(dst, '*')
		dst = strconv.AppendInt(dst, int64(n), 10)
		dst = append(dst, '\r', '\n')
		for range n {
			if dst, rest = appendRESP2(dst, rest); rest == nil {
				return dst, nil
			}
		}
		return dst, rest
	}
	return dst, nil
}

func appendBulk(dst, b []byte) []byte {
	dst = append(dst, '$')
	dst = strconv.AppendInt(dst, int64(len(b)), 10)
	dst = append(dst, '\r', '\n')
	dst = append(dst, b...)
	return append(dst, '\r', '\n')
}
