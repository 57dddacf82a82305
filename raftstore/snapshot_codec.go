package raftstore

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"github.com/hashicorp/raft"
)

// Snapshot values, like log values, are our own versioned binary forms.
//
// A chunk value (version 1):
//
//	version   1 byte  = snapChunkV1
//	crc       4 bytes CRC-32C (Castagnoli), big-endian, over the chunk's
//	                  key followed by its data
//	data      the rest (1..snapshotChunkSize bytes)
//
// Covering the key means a chunk that ends up under another snapshot's or
// sequence number's key fails its check just like a flipped bit does.
//
// A metadata value (version 1):
//
//	version              1 byte = snapMetaV1
//	raft version         uvarint (raft.SnapshotVersion)
//	index, term          uvarint, uvarint
//	configuration index  uvarint
//	size                 uvarint, total bytes written to the sink
//	chunks               uvarint, number of chunks (0..2^32-1)
//	peers                uvarint length, bytes (raft's deprecated field)
//	servers              uvarint count, then per server:
//	                       suffrage uvarint, ID (uvarint length, bytes),
//	                       address (uvarint length, bytes)
//	crc                  4 bytes CRC-32C, big-endian, over everything above
//
// The ID is not stored: it is the key.
const (
	snapChunkV1 byte = 1
	snapMetaV1  byte = 1

	snapChunkHeaderLen = 1 + 4
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// chunkChecksum is the CRC-32C of a chunk's key followed by its data.
func chunkChecksum(key, data []byte) uint32 {
	return crc32.Update(crc32.Checksum(key, castagnoli), castagnoli, data)
}

// encodeChunk writes a chunk value for data stored under key into dst, which
// must be snapChunkHeaderLen+len(data) bytes.
func encodeChunk(dst, key, data []byte) {
	dst[0] = snapChunkV1
	binary.BigEndian.PutUint32(dst[1:], chunkChecksum(key, data))
	copy(dst[snapChunkHeaderLen:], data)
}

// decodeChunk verifies a chunk value read under key and returns its data,
// aliasing val.
func decodeChunk(key, val []byte) ([]byte, error) {
	if len(val) <= snapChunkHeaderLen {
		return nil, fmt.Errorf("raftstore: snapshot chunk of %d bytes is too short", len(val))
	}
	if val[0] != snapChunkV1 {
		return nil, fmt.Errorf("raftstore: unknown snapshot chunk encoding version %d", val[0])
	}
	data := val[snapChunkHeaderLen:]
	want := binary.BigEndian.Uint32(val[1:])
	if got := chunkChecksum(key, data); got != want {
		return nil, fmt.Errorf("raftstore: snapshot chunk checksum mismatch (stored %08x, computed %08x)", want, got)
	}
	return data, nil
}

// storedSnapshotMeta is raft's metadata plus what the reader needs to know
// that it has read the whole snapshot.
type storedSnapshotMeta struct {
	raft.SnapshotMeta
	Chunks uint32
}

// encodeSnapshotMeta returns the metadata value for m. Called once per
// snapshot, so it simply appends to a fresh slice.
func encodeSnapshotMeta(m *storedSnapshotMeta) []byte {
	b := make([]byte, 0, 64+len(m.Peers)+32*len(m.Configuration.Servers))
	b = append(b, snapMetaV1)
	b = binary.AppendUvarint(b, uint64(m.Version))
	b = binary.AppendUvarint(b, m.Index)
	b = binary.AppendUvarint(b, m.Term)
	b = binary.AppendUvarint(b, m.ConfigurationIndex)
	b = binary.AppendUvarint(b, uint64(m.Size))
	b = binary.AppendUvarint(b, uint64(m.Chunks))
	b = appendBytes(b, m.Peers)
	b = binary.AppendUvarint(b, uint64(len(m.Configuration.Servers)))
	for _, srv := range m.Configuration.Servers {
		b = binary.AppendUvarint(b, uint64(srv.Suffrage))
		b = appendBytes(b, []byte(srv.ID))
		b = appendBytes(b, []byte(srv.Address))
	}
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

func appendBytes(dst, p []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(p)))
	return append(dst, p...)
}

// decodeSnapshotMeta decodes a metadata value stored under the key of id. The
// result owns its memory (val may be Pebble's).
func decodeSnapshotMeta(id snapshotID, val []byte) (*storedSnapshotMeta, error) {
	if len(val) < 1+4 {
		return nil, errTruncated
	}
	if val[0] != snapMetaV1 {
		return nil, fmt.Errorf("raftstore: unknown snapshot metadata encoding version %d", val[0])
	}
	body, sum := val[:len(val)-4], binary.BigEndian.Uint32(val[len(val)-4:])
	if got := crc32.Checksum(body, castagnoli); got != sum {
		return nil, fmt.Errorf("raftstore: snapshot metadata checksum mismatch (stored %08x, computed %08x)", sum, got)
	}
	r := byteReader{buf: body[1:]}
	m := &storedSnapshotMeta{}
	m.ID = id.String()
	m.Version = raft.SnapshotVersion(r.uvarint())
	m.Index = r.uvarint()
	m.Term = r.uvarint()
	m.ConfigurationIndex = r.uvarint()
	size := r.uvarint()
	chunks := r.uvarint()
	if peers := r.bytes(); len(peers) > 0 {
		m.Peers = append([]byte(nil), peers...)
	}
	nServers := r.uvarint()
	// Each server takes at least 3 bytes, which bounds the allocation by the
	// input even if the count is corrupt (the CRC makes that unlikely).
	if r.err == nil && nServers > uint64(len(r.buf)/3) {
		return nil, fmt.Errorf("raftstore: snapshot metadata claims %d servers in %d bytes", nServers, len(r.buf))
	}
	if nServers > 0 {
		m.Configuration.Servers = make([]raft.Server, 0, nServers)
	}
	for i := uint64(0); i < nServers && r.err == nil; i++ {
		suffrage := r.uvarint()
		srvID := r.bytes()
		addr := r.bytes()
		m.Configuration.Servers = append(m.Configuration.Servers, raft.Server{
			Suffrage: raft.ServerSuffrage(suffrage),
			ID:       raft.ServerID(srvID),
			Address:  raft.ServerAddress(addr),
		})
	}
	if r.err != nil {
		return nil, r.err
	}
	if len(r.buf) != 0 {
		return nil, fmt.Errorf("raftstore: %d trailing bytes in snapshot metadata", len(r.buf))
	}
	if size > 1<<62 || chunks > 1<<32-1 {
		return nil, fmt.Errorf("raftstore: snapshot metadata has impossible size %d or chunk count %d", size, chunks)
	}
	if m.Index != id.Index || m.Term != id.Term {
		return nil, fmt.Errorf("raftstore: snapshot metadata for %d/%d stored under id %s", m.Term, m.Index, id)
	}
	m.Size = int64(size)
	m.Chunks = uint32(chunks)
	return m, nil
}
