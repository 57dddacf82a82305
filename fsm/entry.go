package fsm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// Log entry format, version 1. One entry carries a whole proposer batch:
//
//	byte    version (1)
//	int64   stamp: the leader's clock when it built the entry, Unix ns, little endian
//	uint32  number of ops, little endian (fixed width so the encoder patches it in place)
//	ops, each: byte OpCode, then
//	  OpThrottle: uvarint key length, key, varint Interval, varint Limit, varint Quantity
//	  OpDel:      uvarint key count, then per key: uvarint length, key
//	  OpFlushAll: nothing
//
// Integers that the state machine needs are carried already derived (the GCRA
// emission interval is computed once, on the leader, at parse time), so apply
// does integer arithmetic only. The format is never changed in place: a new
// layout gets a new version byte, and a node that meets a version it does not
// know stops instead of guessing.
//
// The decoder accepts every entry the Encoder can produce: it has no caps of
// its own (a cap the encoder does not share turns one accepted request into an
// entry that no replica can apply, on every restart). Declared counts and
// lengths are bounded only by the bytes that remain: every op and every key
// takes at least one byte, so a corrupt count is detected without allocating
// from it. How large a request may be is decided where it is parsed
// (commands.MaxRequestLogBytes, with EncodedOpLen), never here.
const EntryVersion = 1

const entryHeaderLen = 1 + 8 + 4

// maxEntryOps is what the header's op count can say.
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

// Count is the number of ops added since Reset.
func (e *Encoder) Count() int { return e.count }

// Mark is a position in an entry being built.
type Mark struct{ len, count int }

// Mark returns the current position, for Rewind.
func (e *Encoder) Mark() Mark { return Mark{len(e.buf), e.count} }

// Rewind drops every op added since m (the proposer uses it to keep a batch
// that would overflow an entry for the next one).
func (e *Encoder) Rewind(m Mark) { e.buf, e.count = e.buf[:m.len], m.count }

// EncodedOpLen is the exact number of bytes Add appends for op: what one
// request takes in the log. The parser uses it to refuse oversized requests
// before they are proposed; it costs one pass over the keys and allocates
// nothing. Keep it next to Add: the two must never disagree (the encoder's
// tests check every op they encode).
func EncodedOpLen(op *Op) int {
	n := 1 // op code
	switch op.Code {
	case OpThrottle:
		n += bytesLen(op.Key)
		n += varintLen(op.GCRA.Interval) + varintLen(op.GCRA.Limit) + varintLen(op.GCRA.Quantity)
	case OpDel:
		n += uvarintLen(uint64(len(op.Keys)))
		for _, k := range op.Keys {
			n += bytesLen(k)
		}
	case OpFlushAll:
	default:
		panic(fmt.Sprintf("fsm: sizing unknown op code %d", op.Code)) // a programming error, never client input
	}
	return n
}

func bytesLen(s []byte) int { return uvarintLen(uint64(len(s))) + len(s) }

// uvarintLen is len(binary.AppendUvarint(nil, v)).
func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

// varintLen is len(binary.AppendVarint(nil, v)): zig-zag, then uvarint.
func varintLen(v int64) int {
	u := uint64(v) << 1
	if v < 0 {
		u = ^u
	}
	return uvarintLen(u)
}

// Add appends one op. Keys are copied into the entry.
func (e *Encoder) Add(op *Op) {
	e.count++
	e.buf = append(e.buf, byte(op.Code))
	switch op.Code {
	case OpThrottle:
		e.buf = appendBytes(e.buf, op.Key)
		e.buf = binary.AppendVarint(e.buf, op.GCRA.Interval)
		e.buf = binary.AppendVarint(e.buf, op.GCRA.Limit)
		e.buf = binary.AppendVarint(e.buf, op.GCRA.Quantity)
	case OpDel:
		e.buf = binary.AppendUvarint(e.buf, uint64(len(op.Keys)))
		for _, k := range op.Keys {
			e.buf = appendBytes(e.buf, k)
		}
	case OpFlushAll:
	default:
		panic(fmt.Sprintf("fsm: encoding unknown op code %d", op.Code)) // a programming error, never client input
	}
}

// Finish patches the op count into the header and returns the entry. The
// slice aliases the encoder's buffer: it stays valid until the next Reset.
func (e *Encoder) Finish() []byte {
	if e.count > maxEntryOps {
		// A truncated count would make an entry that every replica refuses
		// on every restart; stopping the leader here keeps the log clean.
		// Unreachable in practice: it takes a batch of 4 billion requests.
		panic(fmt.Sprintf("fsm: %d ops do not fit one entry (at most %d)", e.count, maxEntryOps))
	}
	binary.LittleEndian.PutUint32(e.buf[9:13], uint32(e.count))
	return e.buf
}

func appendBytes(b, s []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// Decoder walks the ops of one entry without allocating per op. Keys alias
// the entry's data and are valid until the entry has been applied.
type Decoder struct {
	data  []byte
	Stamp int64
	Count int
	left  int
	keys  [][]byte
}

// Reset parses the header of data.
func (d *Decoder) Reset(data []byte) error {
	if len(data) < entryHeaderLen {
		return fmt.Errorf("fsm: entry of %d bytes is shorter than its header", len(data))
	}
	if data[0] != EntryVersion {
		return fmt.Errorf("%w %d (this node understands %d)", ErrUnknownVersion, data[0], EntryVersion)
	}
	d.Stamp = int64(binary.LittleEndian.Uint64(data[1:9]))
	n := binary.LittleEndian.Uint32(data[9:13])
	if uint64(n) > uint64(len(data)-entryHeaderLen) { // every op takes at least one byte
		return fmt.Errorf("fsm: corrupt op count %d: the entry has %d bytes of ops", n, len(data)-entryHeaderLen)
	}
	d.Count, d.left = int(n), int(n)
	d.data = data[entryHeaderLen:]
	if cap(d.keys) > keepKeys {
		// The list of a huge DEL is not kept for the next entry: it would
		// hold memory, and the old entry's bytes its keys alias.
		d.keys = nil
	}
	return nil
}

// keepKeys is the largest DEL key list the decoder keeps between entries.
const keepKeys = 4096

// Next decodes the next op into op; false when the entry is exhausted.
func (d *Decoder) Next(op *Op) (bool, error) {
	if d.left == 0 {
		if len(d.data) != 0 {
			return false, fmt.Errorf("fsm: %d trailing bytes after the last op", len(d.data))
		}
		return false, nil
	}
	d.left--
	if len(d.data) == 0 {
		return false, errors.New("fsm: entry ends before its last op")
	}
	*op = Op{Code: OpCode(d.data[0])} // no field of the previous op survives
	d.data = d.data[1:]
	var err error
	switch op.Code {
	case OpThrottle:
		if op.Key, err = d.bytes(); err != nil {
			return false, err
		}
		if op.GCRA.Interval, err = d.varint(); err != nil {
			return false, err
		}
		if op.GCRA.Limit, err = d.varint(); err != nil {
			return false, err
		}
		if op.GCRA.Quantity, err = d.varint(); err != nil {
			return false, err
		}
	case OpDel:
		n, w := binary.Uvarint(d.data)
		if w <= 0 || n > uint64(len(d.data)-w) { // every key takes at least one byte
			return false, errors.New("fsm: corrupt key count")
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
				return false, err
			}
			d.keys = append(d.keys, k)
		}
		op.Keys = d.keys
	case OpFlushAll:
	default:
		return false, fmt.Errorf("fsm: unknown op code %d", op.Code)
	}
	return true, nil
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
