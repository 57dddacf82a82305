package raftstore

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"io"
	"reflect"
	"runtime"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/hashicorp/raft"
)

// metaFromFuzz builds a snapshot metadata record from fuzz values; servers
// is split into up to 8 servers (suffrage, ID, address from its bytes).
func metaFromFuzz(index, term, cfgIndex, size uint64, chunks uint32, peers, servers []byte) *storedSnapshotMeta {
	m := &storedSnapshotMeta{Chunks: chunks}
	m.Version = 1
	m.Index, m.Term, m.ConfigurationIndex = index, term, cfgIndex
	m.Size = int64(size >> 2) // the codec allows sizes up to 2^62
	if len(peers) > 0 {
		m.Peers = peers
	}
	for len(servers) > 0 && len(m.Configuration.Servers) < 8 {
		n := min(int(servers[0]%16), len(servers)-1)
		part := servers[1 : 1+n]
		m.Configuration.Servers = append(m.Configuration.Servers, raft.Server{
			Suffrage: raft.ServerSuffrage(servers[0] % 3),
			ID:       raft.ServerID(part[:len(part)/2]),
			Address:  raft.ServerAddress(part[len(part)/2:]),
		})
		servers = servers[1+n:]
	}
	return m
}

// FuzzSnapshotMetaRoundTrip: any metadata the sink can write decodes to the
// same metadata under its own ID, and to an error under any other ID or
// with any one byte changed.
func FuzzSnapshotMetaRoundTrip(f *testing.F) {
	f.Add(uint64(10), uint64(2), uint64(3), uint64(4096), uint32(1), []byte(nil), []byte("\x01abcd\x02xy"), uint32(0), byte(1))
	f.Add(^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0), ^uint32(0), []byte("peers"), []byte{}, uint32(7), byte(0x80))
	f.Fuzz(func(t *testing.T, index, term, cfgIndex, size uint64, chunks uint32, peers, servers []byte, pos uint32, flip byte) {
		m := metaFromFuzz(index, term, cfgIndex, size, chunks, peers, servers)
		id := snapshotID{Term: term, Index: index, MS: 1}
		m.ID = id.String()
		val := encodeSnapshotMeta(m)
		got, err := decodeSnapshotMeta(id, val)
		if err != nil {
			t.Fatalf("encoded metadata does not decode: %v", err)
		}
		if !reflect.DeepEqual(got, m) {
			t.Fatalf("round trip changed the metadata:\n%+v\n%+v", m, got)
		}
		other := id
		other.Index++
		if _, err := decodeSnapshotMeta(other, val); err == nil {
			t.Fatalf("metadata of %s decoded under %s", id, other)
		}
		bad := bytes.Clone(val)
		bad[int(pos%uint32(len(bad)))] ^= flip | 1
		if _, err := decodeSnapshotMeta(id, bad); err == nil {
			t.Fatalf("metadata with byte %d changed decoded", pos%uint32(len(bad)))
		}
	})
}

// FuzzDecodeSnapshotMeta: arbitrary metadata values (with the checksum made
// right when fixCRC is set, so the fields behind it are explored) never
// panic the decoder or make it allocate beyond a small multiple of their
// size; what it accepts re-encodes to exactly the same bytes.
func FuzzDecodeSnapshotMeta(f *testing.F) {
	m := metaFromFuzz(10, 2, 3, 4096, 1, nil, []byte("\x01abcd\x02xy"))
	val := encodeSnapshotMeta(m)
	f.Add(val[:len(val)-4], true, uint64(2), uint64(10))
	f.Add(val, false, uint64(2), uint64(10))
	f.Add([]byte{snapMetaV1, 1, 10, 2, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f}, true, uint64(2), uint64(10))
	f.Fuzz(func(t *testing.T, body []byte, fixCRC bool, term, index uint64) {
		in := body
		if fixCRC {
			in = binary.BigEndian.AppendUint32(bytes.Clone(body), crc32.Checksum(body, castagnoli))
		}
		id := snapshotID{Term: term, Index: index, MS: 5}
		var got *storedSnapshotMeta
		var err error
		n := allocated(func() { got, err = decodeSnapshotMeta(id, in) })
		if limit := uint64(64<<10 + 128*len(in)); n > limit { // slack: the fuzz engine allocates too
			t.Fatalf("decoding %d bytes allocated %d", len(in), n)
		}
		if err != nil {
			return
		}
		if got.Index != index || got.Term != term || got.ID != id.String() {
			t.Fatalf("metadata under %s decoded as %s %d/%d", id, got.ID, got.Term, got.Index)
		}
		// Varints are decoded leniently (redundant high bytes), so only
		// minimal encodings must come back byte for byte; all must come
		// back to the same metadata.
		again, err := decodeSnapshotMeta(id, encodeSnapshotMeta(got))
		if err != nil || !reflect.DeepEqual(again, got) {
			t.Fatalf("accepted metadata does not re-encode to itself: %v", err)
		}
	})
}

// FuzzChunk: a chunk decodes to its data under its own key and to an error
// under another key of the same length that differs in up to four
// consecutive bytes, with any one byte changed, cut short or with an
// unknown version; arbitrary values never panic the decoder.
//
// Why only such keys: the checksum is a CRC-32C, which detects every error
// within 32 consecutive bits and others with probability 1 - 2^-32, not all.
// What the checksum covers of a chunk key (its part within its group,
// keyInGroup) is always snapChunkKeyLen-groupPrefixLen bytes, and the
// chunks of one snapshot differ only in their 4-byte sequence number, which
// the CRC always tells apart. Keys of other lengths can collide by construction: a key that
// leaves the CRC register at zero (such as ff ff ff ff) checksums the same
// with zero bytes appended (testdata seed bb68534526067b10, which an
// earlier version of this target, appending a byte to the key, failed on).
func FuzzChunk(f *testing.F) {
	id := snapshotID{Term: 1, Index: 2, MS: 3}
	ks := newKeyspace(0)
	f.Add(keyInGroup(ks.snapChunkKey(id, 0)), []byte("data"), uint32(0), byte(1), []byte{1, 0, 0, 0, 0})
	f.Add(keyInGroup(ks.snapChunkKey(id, 7)), bytes.Repeat([]byte{0xab}, 300), uint32(299), byte(0x80), []byte{})
	f.Fuzz(func(t *testing.T, key, data []byte, pos uint32, flip byte, arbitrary []byte) {
		if _, err := decodeChunk(key, arbitrary); err == nil && len(arbitrary) <= snapChunkHeaderLen {
			t.Fatalf("a %d-byte chunk decoded", len(arbitrary))
		}
		if len(data) == 0 {
			return // the sink never writes an empty chunk
		}
		val := make([]byte, snapChunkHeaderLen+len(data))
		encodeChunk(val, key, data)
		got, err := decodeChunk(key, val)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("chunk round trip: %v", err)
		}
		i := int(pos % uint32(len(val)))
		bad := bytes.Clone(val)
		bad[i] ^= flip | 1
		if _, err := decodeChunk(key, bad); err == nil {
			t.Fatalf("a chunk with byte %d changed decoded", i)
		}
		if i > 0 {
			if _, err := decodeChunk(key, val[:i]); err == nil && i <= snapChunkHeaderLen {
				t.Fatalf("a chunk cut to %d bytes decoded", i)
			}
		}
		if len(key) > 0 {
			// Up to four consecutive bytes from j on changed, at least one.
			otherKey := bytes.Clone(key)
			j := i % len(key)
			for k, b := range binary.BigEndian.AppendUint32(nil, pos|1) {
				if j+k < len(otherKey) {
					otherKey[j+k] ^= b
				}
			}
			if bytes.Equal(otherKey, key) {
				otherKey[j] ^= 1
			}
			if _, err := decodeChunk(otherKey, val); err == nil {
				t.Fatalf("a chunk decoded under another key of the same length")
			}
		}
	})
}

// FuzzSnapshotStore writes arbitrary data through a real sink (Pebble on an
// in-memory file system), then damages the stored snapshot in one of
// several ways: what Open's reader returns is then either all of the data
// exactly or an error — never other bytes, never a short read without one.
func FuzzSnapshotStore(f *testing.F) {
	f.Add([]byte("a snapshot"), uint8(0), uint32(0), byte(1))
	f.Add(bytes.Repeat([]byte("x"), 5000), uint8(1), uint32(4999), byte(0x40))
	f.Add([]byte("abc"), uint8(2), uint32(1), byte(1))
	f.Add([]byte("abc"), uint8(3), uint32(2), byte(1))
	f.Add([]byte("abc"), uint8(4), uint32(0), byte(1))
	f.Add([]byte("abcdef"), uint8(5), uint32(3), byte(1))
	s, err := Open("/db", Options{Logger: quietLogger, fs: vfs.NewMem()})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = s.Close() })
	ss := s.SnapshotStore(2)
	cfg := raft.Configuration{Servers: []raft.Server{{ID: "n1", Address: "127.0.0.1:1"}}}
	var index uint64
	f.Fuzz(func(t *testing.T, data []byte, damage uint8, pos uint32, flip byte) {
		index++
		sink, err := ss.Create(1, index, 1, cfg, 1, nil)
		if err != nil {
			t.Fatal(err)
		}
		for rest, piece := data, 1+int(flip)%97; len(rest) > 0; rest = rest[min(piece, len(rest)):] {
			if _, err := sink.Write(rest[:min(piece, len(rest))]); err != nil {
				t.Fatal(err)
			}
		}
		if err := sink.Close(); err != nil {
			t.Fatal(err)
		}
		id, _ := parseSnapshotID(sink.ID())
		chunk := s.snapChunkKey(id, 0)
		// damaged: the reader must fail. A chunk the metadata does not
		// count (case 5) may be ignored instead: the data is still exact.
		damaged := len(data) > 0 && damage%6 != 0 && damage%6 != 5
		switch damage % 6 {
		case 1: // one byte of the chunk value changed
			if len(data) > 0 {
				damaged = setValue(t, s, chunk, func(v []byte) []byte { v[int(pos%uint32(len(v)))] ^= flip | 1; return v })
			}
		case 2: // the chunk value cut short
			if len(data) > 0 {
				damaged = setValue(t, s, chunk, func(v []byte) []byte { return v[:int(pos%uint32(len(v)))] })
			}
		case 3: // the chunk moved to another sequence number
			if len(data) > 0 {
				v := getValue(t, s, chunk)
				must(t, s.db.Delete(chunk, pebble.Sync))
				must(t, s.db.Set(s.snapChunkKey(id, 1+pos%3), v, pebble.Sync))
			}
		case 4: // the chunk deleted
			if len(data) > 0 {
				must(t, s.db.Delete(chunk, pebble.Sync))
			}
		case 5: // a chunk the metadata does not count
			must(t, s.db.Set(s.snapChunkKey(id, 1), make([]byte, 9), pebble.Sync))
		}
		meta, rc, err := ss.Open(sink.ID())
		if err != nil {
			if damage%6 == 0 {
				t.Fatalf("Open: %v", err)
			}
			return
		}
		got, rerr := io.ReadAll(rc)
		_ = rc.Close()
		if rerr == nil && !bytes.Equal(got, data) {
			t.Fatalf("the reader returned %d other bytes without an error (damage %d)", len(got), damage%6)
		}
		if damage%6 == 0 && (rerr != nil || meta.Size != int64(len(data))) {
			t.Fatalf("an intact snapshot: size %d, read %d bytes, %v", meta.Size, len(got), rerr)
		}
		if damaged && rerr == nil {
			t.Fatalf("a damaged snapshot (damage %d) read without an error", damage%6)
		}
	})
}

func getValue(t *testing.T, s *Store, key []byte) []byte {
	v, closer, err := s.db.Get(key)
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	return bytes.Clone(v)
}

// setValue rewrites key's value with change(value) and reports whether the
// value is now different.
func setValue(t *testing.T, s *Store, key []byte, change func([]byte) []byte) bool {
	old := getValue(t, s, key)
	v := change(bytes.Clone(old))
	must(t, s.db.Set(key, v, pebble.Sync))
	return !bytes.Equal(v, old)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// allocated is the heap allocated while fn runs.
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}
