package request

import (
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/redcell/redcell/internal/resp3"

	"github.com/redcell/redcell/internal/varint"
)

// Encoding of one Request (used inside log entries and forwarding frames,
// which carry their own versions):
//
//	byte     Code
//	uvarint  key count (0 or 1 for single-key codes, any for MultiKey codes)
//	         per key: uvarint length, bytes
//	byte     argument count (at most MaxArgs)
//	         per argument: varint
//
// The layout is the same for every code, so a new command family adds codes,
// not encoding cases. The decoder accepts everything Append writes and has no
// caps of its own: counts and lengths are bounded only by the bytes that
// remain (every key takes at least one byte), so nothing is allocated from a
// declared length. How big a request may be is the parser's decision.
//
// Result encoding (forwarding frames):
//
//	byte Kind, byte ErrCode, then per Kind: KindThrottle 5 varints;
//	KindInt, KindType 1 varint; KindScan 1 varint, then uvarint length and
//	Data; KindKeys, KindBulk, KindBulks and the collections' kinds uvarint
//	length and Data; others nothing.

// ErrUnknownCode is returned for a code this build does not know: a newer
// Redcell wrote it, or the bytes are corrupt.
var ErrUnknownCode = errors.New("request: unknown code")

// keyShape is how many keys a code takes: -1 for a list (its descriptor's
// KeyShape; a pattern is encoded as one key).
func keyShape(c Code) int {
	switch Describe(c).Keys {
	case KeyList, KeyValue, KeyPairs, KeyScript, KeyEffects:
		return -1
	case NoKey:
		return 0
	}
	return 1
}

// Append appends r's encoding to b.
func Append(b []byte, r *Request) []byte {
	b = append(b, byte(r.Code))
	switch keyShape(r.Code) {
	case -1:
		if Describe(r.Code).Keys == KeyValue {
			b = binary.AppendUvarint(b, uint64(1+len(r.Keys)))
			b = appendBytes(b, r.Key)
		} else {
			b = binary.AppendUvarint(b, uint64(len(r.Keys)))
		}
		for _, k := range r.Keys {
			b = appendBytes(b, k)
		}
	case 0:
		b = append(b, 0)
	default:
		b = append(b, 1)
		b = appendBytes(b, r.Key)
	}
	b = append(b, r.NArgs)
	for _, a := range r.Args[:r.NArgs] {
		b = binary.AppendVarint(b, a)
	}
	return b
}

// EncodedLen is exactly len(Append(nil, r)), computed without allocating:
// what the request takes in the log. The parser refuses requests by it.
func EncodedLen(r *Request) int {
	n := 1
	switch keyShape(r.Code) {
	case -1:
		if Describe(r.Code).Keys == KeyValue {
			n += varint.UvarintLen(uint64(1+len(r.Keys))) + bytesLen(r.Key)
		} else {
			n += varint.UvarintLen(uint64(len(r.Keys)))
		}
		for _, k := range r.Keys {
			n += bytesLen(k)
		}
	case 0:
		n++
	default:
		n += 1 + bytesLen(r.Key)
	}
	n++
	for _, a := range r.Args[:r.NArgs] {
		n += varint.VarintLen(a)
	}
	return n
}

// Decoder decodes requests without allocating per request: Keys of a
// MultiKey request reuse the decoder's slice, and every key aliases the
// input. A request is valid until the next call to Decode.
type Decoder struct {
	keys [][]byte
}

// Decode decodes one request from data into r and returns the bytes after
// it.
func (d *Decoder) Decode(data []byte, r *Request) ([]byte, error) {
	if len(data) == 0 {
		return nil, errors.New("request: truncated before its code")
	}
	*r = Request{Code: Code(data[0])} // nothing of the previous request survives
	if !r.Code.Known() {
		return nil, fmt.Errorf("%w %d", ErrUnknownCode, data[0])
	}
	data = data[1:]
	n, w := binary.Uvarint(data)
	if w <= 0 || n > uint64(len(data)-w) {
		return nil, errors.New("request: corrupt key count")
	}
	data = data[w:]
	switch shape := keyShape(r.Code); {
	case shape == -1:
		d.keys = d.keys[:0]
		for i := uint64(0); i < n; i++ {
			k, rest, err := readBytes(data)
			if err != nil {
				return nil, err
			}
			d.keys, data = append(d.keys, k), rest
		}
		r.Keys = d.keys
		if Describe(r.Code).Keys == KeyValue {
			if len(d.keys) == 0 {
				return nil, fmt.Errorf("request: code %d takes a key, none given", r.Code)
			}
			r.Key, r.Keys = d.keys[0], d.keys[1:]
		}
	case n != uint64(shape):
		return nil, fmt.Errorf("request: code %d takes %d keys, not %d", r.Code, shape, n)
	case n == 1:
		var err error
		if r.Key, data, err = readBytes(data); err != nil {
			return nil, err
		}
	}
	if len(data) == 0 || data[0] > MaxArgs {
		return nil, errors.New("request: corrupt argument count")
	}
	r.NArgs, data = data[0], data[1:]
	for i := 0; i < int(r.NArgs); i++ {
		v, w := binary.Varint(data)
		if w <= 0 {
			return nil, errors.New("request: corrupt argument")
		}
		r.Args[i], data = v, data[w:]
	}
	return data, nil
}

// AppendResult appends r's encoding to b.
func AppendResult(b []byte, r *Result) []byte {
	b = append(b, byte(r.Kind), byte(r.Err))
	for _, v := range r.Ints[:resultInts(r.Kind, r.Err)] {
		b = binary.AppendVarint(b, v)
	}
	if resultHasData(r.Kind) {
		b = appendBytes(b, r.Data)
	}
	return b
}

// DecodeResult decodes one result from data and returns the bytes after it.
func DecodeResult(data []byte, r *Result) ([]byte, error) {
	if len(data) < 2 {
		return nil, errors.New("request: truncated result")
	}
	*r = Result{Kind: Kind(data[0]), Err: ErrCode(data[1])}
	if r.Kind < KindThrottle || r.Kind > kindLast {
		return nil, fmt.Errorf("request: unknown result kind %d", data[0])
	}
	data = data[2:]
	for i := 0; i < resultInts(r.Kind, r.Err); i++ {
		v, w := binary.Varint(data)
		if w <= 0 {
			return nil, errors.New("request: corrupt result")
		}
		r.Ints[i], data = v, data[w:]
	}
	if resultHasData(r.Kind) {
		list, rest, err := readBytes(data)
		if err != nil || !validData(r.Kind, list) {
			return nil, errors.New("request: corrupt result list")
		}
		// Copied: a result outlives the frame it came in.
		r.Data, data = append([]byte(nil), list...), rest
	}
	return data, nil
}

// resultHasData: the kinds whose Data travels (a list of items, KindInts'
// varints, or KindBulk's and KindDouble's bytes).
func resultHasData(k Kind) bool {
	switch k {
	case KindKeys, KindScan, KindBulk, KindBulks, KindArray, KindMap, KindSet,
		KindDouble, KindScored, KindInts, KindDoubles, KindReply:
		return true
	}
	return false
}

// validData reports whether data is a well-formed Data of kind k: what the
// reply writers may range over without checking again.
func validData(k Kind, data []byte) bool {
	switch k {
	case KindBulk, KindDouble:
		return true
	case KindInts:
		return validInts(data)
	case KindMap, KindScored:
		return validItems(data) && Items(data, nil)%2 == 0
	case KindReply:
		return resp3.Valid(data)
	}
	return validItems(data)
}

// resultInts is how many of a result's Ints travel. An error carries none,
// except ErrFeatureLevel, which carries the code and levels its text names
// (only a build that knows feature levels ever answers it, and only to a
// code above the base level, which only such a build sends).
func resultInts(k Kind, e ErrCode) int {
	switch k {
	case KindError:
		if e == ErrFeatureLevel {
			return 3
		}
		return 0
	case KindThrottle:
		return 5
	case KindInt, KindType, KindScan:
		return 1
	}
	return 0
}

func appendBytes(b, s []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func readBytes(data []byte) (b, rest []byte, err error) {
	n, w := binary.Uvarint(data)
	if w <= 0 || n > uint64(len(data)-w) {
		return nil, nil, errors.New("request: corrupt key")
	}
	end := w + int(n)
	return data[w:end:end], data[end:], nil
}

func bytesLen(s []byte) int { return varint.UvarintLen(uint64(len(s))) + len(s) }
