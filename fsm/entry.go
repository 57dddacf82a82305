package fsm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/redcell/redcell/request"
)

// Log entry format, version 2. One entry carries a whole proposer batch:
//
//	byte    version (2)
//	int64   stamp: the leader's clock when it built the entry, Unix ns, little endian
//	uint32  number of requests, little endian (fixed width so the encoder patches it in place)
//	requests, each encoded by request.Append (code, keys, integer arguments)
//
// Integers that the state machine needs are carried already derived (the GCRA
// emission interval is computed once, on the leader, at parse time), so apply
// does integer arithmetic only. The format is never changed in place: a new
// layout gets a new version byte, and a node that meets a version it does not
// know stops instead of guessing.
//
// Version 1 (written by Redcell before package request existed) is still
// decoded, so a data dir written by an older node replays: the same header,
// then ops, each a byte op code and then
//
//	1 CL.THROTTLE: uvarint key length, key, varint Interval, varint Limit, varint Quantity
//	2 DEL:         uvarint key count, then per key: uvarint length, key
//	3 FLUSHALL:    nothing
//
// which decode to the requests with the same codes (request.Throttle's three
// arguments are Interval, Limit, Quantity in that order). Nothing writes
// version 1 any more.
//
// The decoder accepts every entry the Encoder can produce: it has no caps of
// its own (a cap the encoder does not share turns one accepted request into an
// entry that no replica can apply, on every restart). Declared counts and
// lengths are bounded only by the bytes that remain: every request and every
// key takes at least one byte, so a corrupt count is detected without
// allocating from it. How large a request may be is decided where it is
// parsed (commands.MaxRequestLogBytes, with request.EncodedLen), never here.
const EntryVersion = 2

// entryVersion1 is the format before package request; decoded, never written.
const entryVersion1 = 1

const entryHeaderLen = 1 + 8 + 4

// maxEntryOps is what the header's request count can say.
const maxEntryOps = math.MaxUint32

// ErrUnknownVersion is returned for an entry written by a newer Redcell.
var ErrUnknownVersion = errors.New("fsm: unknown log entry version")

// Encoder builds one log entry. The proposer owns one and reuses its buffer
// after the entry has been applied.
type Encoder struct {
	buf   []byte
	count int
}

// Reset starts a new entry stamped with the leader's clock.
func (e *Encoder) Reset(stamp int64) {
	e.buf = e.buf[:0]
	e.buf = append(e.buf, EntryVersion)
	e.buf = binary.LittleEndian.AppendUint64(e.buf, uint64(stamp))
	e.buf = append(e.buf, 0, 0, 0, 0)
	e.count = 0
}

// Len is the number of bytes written so far.
func (e *Encoder) Len() int { return len(e.buf) }

// Count is the number of requests added since Reset.
func (e *Encoder) Count() int { return e.count }

// Mark is a position in an entry being built.
type Mark struct{ len, count int }

// Mark returns the current position, for Rewind.
func (e *Encoder) Mark() Mark { return Mark{len(e.buf), e.count} }

// Rewind drops every request added since m (the proposer uses it to keep a
// batch that would overflow an entry for the next one).
func (e *Encoder) Rewind(m Mark) { e.buf, e.count = e.buf[:m.len], m.count }

// Add appends one request: exactly request.EncodedLen(r) bytes. Keys are
// copied into the entry. A read code is allowed (apply answers it as a read
// at the entry's time); a code this build does not know is a programming
// error.
func (e *Encoder) Add(r *request.Request) {
	if !r.Code.Known() {
		panic(fmt.Sprintf("fsm: encoding unknown request code %d", r.Code)) // never client input
	}
	e.count++
	e.buf = request.Append(e.buf, r)
}

// Finish patches the request count into the header and returns the entry.
// The slice aliases the encoder's buffer: it stays valid until the next Reset.
func (e *Encoder) Finish() []byte {
	if e.count > maxEntryOps {
		// A truncated count would make an entry that every replica refuses
		// on every restart; stopping the leader here keeps the log clean.
		// Unreachable in practice: it takes a batch of 4 billion requests.
		panic(fmt.Sprintf("fsm: %d requests do not fit one entry (at most %d)", e.count, maxEntryOps))
	}
	binary.LittleEndian.PutUint32(e.buf[9:13], uint32(e.count))
	return e.buf
}

// Decoder walks the requests of one entry (version 2 or 1) without
// allocating per request. Keys alias the entry's data and are valid until the
// entry has been applied; a decoded request is valid until the next Next.
type Decoder struct {
	data    []byte
	Version byte
	Stamp   int64
	Count   int
	left    int

	req     request.Decoder // version 2
	keys    [][]byte        // version 1 DEL key lists
	keysCap int             // largest key list handed out since Reset
}

// Reset parses the header of data.
func (d *Decoder) Reset(data []byte) error {
	if len(data) < entryHeaderLen {
		return fmt.Errorf("fsm: entry of %d bytes is shorter than its header", len(data))
	}
	if data[0] != EntryVersion && data[0] != entryVersion1 {
		return fmt.Errorf("%w %d (this node understands %d and %d)", ErrUnknownVersion, data[0], entryVersion1, EntryVersion)
	}
	d.Version = data[0]
	d.Stamp = int64(binary.LittleEndian.Uint64(data[1:9]))
	n := binary.LittleEndian.Uint32(data[9:13])
	if uint64(n) > uint64(len(data)-entryHeaderLen) { // every request takes at least one byte
		return fmt.Errorf("fsm: corrupt request count %d: the entry has %d bytes of requests", n, len(data)-entryHeaderLen)
	}
	d.Count, d.left = int(n), int(n)
	d.data = data[entryHeaderLen:]
	if d.keysCap > keepKeys {
		// The list of a huge DEL is not kept for the next entry: it would
		// hold memory, and the old entry's bytes its keys alias.
		d.req, d.keys = request.Decoder{}, nil
	}
	d.keysCap = 0
	return nil
}

// keepKeys is the largest DEL key list the decoder keeps between entries.
const keepKeys = 4096

// Next decodes the next request into r; false when the entry is exhausted.
// An unknown code is an error: skipping a request that a newer leader wrote
// would let replicas diverge.
func (d *Decoder) Next(r *request.Request) (bool, error) {
	if d.left == 0 {
		if len(d.data) != 0 {
			return false, fmt.Errorf("fsm: %d trailing bytes after the last request", len(d.data))
		}
		return false, nil
	}
	d.left--
	if len(d.data) == 0 {
		return false, errors.New("fsm: entry ends before its last request")
	}
	var err error
	if d.Version == entryVersion1 {
		err = d.nextV1(r)
	} else {
		d.data, err = d.req.Decode(d.data, r)
	}
	if err != nil {
		return false, err
	}
	d.keysCap = max(d.keysCap, cap(r.Keys))
	return true, nil
}

// Version 1 op codes; the same numbers as the request codes they become.
const (
	v1Throttle = 1
	v1Del      = 2
	v1FlushAll = 3
)

// nextV1 decodes one version 1 op into r.
func (d *Decoder) nextV1(r *request.Request) error {
	code := d.data[0]
	d.data = d.data[1:]
	*r = request.Request{} // no field of the previous request survives
	var err error
	switch code {
	case v1Throttle:
		r.Code = request.Throttle
		if r.Key, err = d.bytes(); err != nil {
			return err
		}
		var p [3]int64
		for i := range p {
			if p[i], err = d.varint(); err != nil {
				return err
			}
		}
		r.SetArgs(p[0], p[1], p[2])
	case v1Del:
		r.Code = request.Del
		n, w := binary.Uvarint(d.data)
		if w <= 0 || n > uint64(len(d.data)-w) { // every key takes at least one byte
			return errors.New("fsm: corrupt key count")
		}
		d.data = d.data[w:]
		if uint64(cap(d.keys)) < n {
			// n is at most the bytes left in the entry, so this is bounded
			// by the entry's size, never by a declared length alone.
			d.keys = make([][]byte, 0, n)
		}
		d.keys = d.keys[:0]
		for i := uint64(0); i < n; i++ {
			k, err := d.bytes()
			if err != nil {
				return err
			}
			d.keys = append(d.keys, k)
		}
		r.Keys = d.keys
	case v1FlushAll:
		r.Code = request.FlushAll
	default:
		return fmt.Errorf("fsm: unknown version 1 op code %d", code)
	}
	return nil
}

func (d *Decoder) bytes() ([]byte, error) {
	n, w := binary.Uvarint(d.data)
	if w <= 0 || n > uint64(len(d.data)-w) {
		return nil, errors.New("fsm: corrupt key")
	}
	b := d.data[w : w+int(n) : w+int(n)]
	d.data = d.data[w+int(n):]
	return b, nil
}

func (d *Decoder) varint() (int64, error) {
	v, w := binary.Varint(d.data)
	if w <= 0 {
		return 0, errors.New("fsm: corrupt integer")
	}
	d.data = d.data[w:]
	return v, nil
}
