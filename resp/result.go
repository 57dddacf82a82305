package resp

import (
	"strconv"

	"github.com/redcell/redcell/request"
)

// Result appends the reply to r in w's protocol and reports true, or
// reports false, writing nothing, for an error result (KindError), whose
// text the caller writes where it counts errors (commands.ResultErrText),
// and for a kind this build does not know.
func (w *Writer) Result(r *request.Result) bool {
	switch r.Kind {
	case request.KindThrottle:
		w.Five(&r.Ints)
	case request.KindInt:
		w.Int(r.Ints[0])
	case request.KindType:
		w.Simple(request.TypeName(r.Ints[0]))
	case request.KindOK:
		w.OK()
	case request.KindKeys, request.KindArray:
		w.items(r.Data)
	case request.KindScan:
		w.Array(2)
		w.BulkString(strconv.FormatUint(uint64(r.Ints[0]), 10))
		w.items(r.Data)
	case request.KindBulk:
		w.Bulk(r.Data)
	case request.KindNil:
		w.Null()
	case request.KindBulks:
		w.Array(request.Items(r.Data, nil))
		request.Items(r.Data, func(item []byte) {
			if b, ok := request.BulkItem(item); ok {
				w.Bulk(b)
			} else {
				w.Null()
			}
		})
	case request.KindMap:
		w.MapHeader(request.Items(r.Data, nil) / 2)
		request.Items(r.Data, w.Bulk)
	case request.KindSet:
		w.SetHeader(request.Items(r.Data, nil))
		request.Items(r.Data, w.Bulk)
	case request.KindDouble:
		w.Double(r.Data)
	case request.KindScored:
		w.scored(r.Data)
	case request.KindInts:
		w.Array(request.IntItems(r.Data, nil))
		request.IntItems(r.Data, w.Int)
	case request.KindNilArray:
		w.NullArray()
	case request.KindDoubles:
		w.Array(request.Items(r.Data, nil))
		request.Items(r.Data, w.Double)
	case request.KindReply:
		if w.Proto == 3 {
			w.B = append(w.B, r.Data...)
		} else {
			w.B = AppendRESP2(w.B, r.Data)
		}
	default:
		return false
	}
	return true
}

// items writes a list in Data's encoding as an array of bulk strings.
func (w *Writer) items(data []byte) {
	w.Array(request.Items(data, nil))
	request.Items(data, w.Bulk)
}

// scored writes member/score pairs (ZRANGE … WITHSCORES) as Redis 7.0
// does: RESP2 one flat array of bulk strings, RESP3 an array of [member,
// score] pairs with the score a double.
func (w *Writer) scored(data []byte) {
	n := request.Items(data, nil)
	if w.Proto != 3 {
		w.Array(n)
		request.Items(data, w.Bulk)
		return
	}
	w.Array(n / 2)
	member := true
	request.Items(data, func(item []byte) {
		if member {
			w.Array(2)
			w.Bulk(item)
		} else {
			w.Double(item)
		}
		member = !member
	})
}
