package raftstore

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/hashicorp/raft"

	"github.com/redcell/redcell/internal/varint"
)

// The value of a log key is raft.Log in our own compact binary form rather
// than msgpack (raft-boltdb) or gob: it is written once per entry on the
// append path, so it should cost no reflection and no allocation, and its
// layout is ours to version.
//
// Version 1, in order:
//
//	version          1 byte   = logCodecV1
//	type             1 byte   raft.LogType
//	flags            1 byte   bit 0: AppendedAt present; other bits must be 0
//	index            uvarint  must equal the index in the key
//	term             uvarint
//	appendedAt       varint Unix seconds, uvarint nanoseconds (< 1e9); only if flag bit 0
//	data             uvarint length, bytes
//	extensions       uvarint length, bytes
//
// Nothing may follow. A zero AppendedAt (raft's own tests and old entries) is
// not encoded at all, so it decodes back to the zero time.Time; nil and empty
// Data/Extensions both decode to nil.
//
// There is no checksum per entry: Pebble checksums every WAL record and every
// sstable block, which covers the bytes at rest; the decoder still bounds
// every length so corrupt input yields an error, never a panic or a huge
// allocation.
const logCodecV1 byte = 1

const flagAppendedAt byte = 1 << 0

// encodedLogLen is the exact number of bytes encodeLog writes for l, so the
// append path can reserve the value in Pebble's batch before encoding into it.
func encodedLogLen(l *raft.Log) int {
	n := 3 + varint.UvarintLen(l.Index) + varint.UvarintLen(l.Term)
	if !l.AppendedAt.IsZero() {
		n += varint.VarintLen(l.AppendedAt.Unix()) + varint.UvarintLen(uint64(l.AppendedAt.Nanosecond()))
	}
	n += varint.UvarintLen(uint64(len(l.Data))) + len(l.Data)
	n += varint.UvarintLen(uint64(len(l.Extensions))) + len(l.Extensions)
	return n
}

// encodeLog writes l into dst, which must be exactly encodedLogLen(l) bytes.
// It does not allocate.
func encodeLog(dst []byte, l *raft.Log) {
	dst[0] = logCodecV1
	dst[1] = byte(l.Type)
	var flags byte
	if !l.AppendedAt.IsZero() {
		flags |= flagAppendedAt
	}
	dst[2] = flags
	n := 3
	n += binary.PutUvarint(dst[n:], l.Index)
	n += binary.PutUvarint(dst[n:], l.Term)
	if flags&flagAppendedAt != 0 {
		n += binary.PutVarint(dst[n:], l.AppendedAt.Unix())
		n += binary.PutUvarint(dst[n:], uint64(l.AppendedAt.Nanosecond()))
	}
	n += binary.PutUvarint(dst[n:], uint64(len(l.Data)))
	n += copy(dst[n:], l.Data)
	n += binary.PutUvarint(dst[n:], uint64(len(l.Extensions)))
	copy(dst[n:], l.Extensions)
}

// decodeLog decodes src into out. src may be Pebble-owned memory that is
// reused after the call returns, so Data and Extensions are copied out (into
// one allocation shared by both). On error out is left unchanged.
func decodeLog(src []byte, out *raft.Log) error {
	if len(src) < 3 {
		return errTruncated
	}
	if src[0] != logCodecV1 {
		return fmt.Errorf("raftstore: unknown log entry encoding version %d", src[0])
	}
	typ := raft.LogType(src[1])
	flags := src[2]
	if flags&^flagAppendedAt != 0 {
		return fmt.Errorf("raftstore: unknown log entry flags %#x", flags)
	}
	r := byteReader{buf: src[3:]}
	index := r.uvarint()
	term := r.uvarint()
	var appendedAt time.Time
	if flags&flagAppendedAt != 0 {
		sec := r.varint()
		nsec := r.uvarint()
		if r.err == nil && nsec >= uint64(time.Second) {
			return fmt.Errorf("raftstore: log entry timestamp has %d nanoseconds", nsec)
		}
		appendedAt = time.Unix(sec, int64(nsec))
	}
	data := r.bytes()
	ext := r.bytes()
	if r.err != nil {
		return r.err
	}
	if len(r.buf) != 0 {
		return fmt.Errorf("raftstore: %d trailing bytes after log entry", len(r.buf))
	}

	var buf []byte
	if n := len(data) + len(ext); n > 0 {
		buf = make([]byte, n)
	}
	out.Index = index
	out.Term = term
	out.Type = typ
	out.AppendedAt = appendedAt
	out.Data = nil
	out.Extensions = nil
	if len(data) > 0 {
		// Full slice expressions so that a caller appending to Data cannot
		// overwrite Extensions.
		out.Data = buf[:len(data):len(data)]
		copy(out.Data, data)
	}
	if len(ext) > 0 {
		out.Extensions = buf[len(data):]
		copy(out.Extensions, ext)
	}
	return nil
}
