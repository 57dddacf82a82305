package raftstore

import (
	"encoding/binary"
	"errors"
)

// errTruncated reports a stored value that ends before its fields do.
var errTruncated = errors.New("raftstore: truncated value")

// byteReader reads varints and length-prefixed byte strings, remembering the
// first error so that decoding reads as a straight line.
type byteReader struct {
	buf []byte
	err error
}

func (r *byteReader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.buf)
	r.advance(n) // v is 0 when decoding failed
	return v
}

func (r *byteReader) varint() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.buf)
	r.advance(n)
	return v
}

// advance consumes the n bytes a varint decoder reported, or records its
// failure (n == 0: truncated, n < 0: overflow).
func (r *byteReader) advance(n int) {
	switch {
	case n == 0:
		r.err = errTruncated
	case n < 0:
		r.err = errors.New("raftstore: varint overflows 64 bits")
	default:
		r.buf = r.buf[n:]
	}
}

// bytes returns a length-prefixed byte string aliasing the input.
func (r *byteReader) bytes() []byte {
	n := r.uvarint()
	if r.err != nil {
		return nil
	}
	if n > uint64(len(r.buf)) {
		r.err = errTruncated
		return nil
	}
	b := r.buf[:n:n]
	r.buf = r.buf[n:]
	return b
}
