package fsm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"math"
	"testing"

	"github.com/redcell/redcell/request"
	"github.com/redcell/redcell/shard"
)

// streamRecord is one record of a snapshot stream as the test oracle reads it:
// in version 4 a gone record has Kind 0 and Expire <= the clock.
type streamRecord struct {
	key []byte
	st  shard.State
}

// streamHeader is a snapshot stream's header as the test oracle reads it
// (term is 0 before version 4).
type streamHeader struct {
	version byte
	clock   int64
	term    uint64
	scripts [][]byte // version 5: the script cache's bodies, in SHA-1 order
}

// parseStream is an independent reading of the snapshot format (from a byte
// slice, where readSnapshot reads a stream): it returns the header and the
// records, or an error for anything that is not exactly one well-formed
// stream. It checks framing only, not what apply could write.
func parseStream(b []byte) (h streamHeader, recs []streamRecord, err error) {
	if len(b) < 21+4 || string(b[:4]) != snapshotMagic {
		return h, nil, errors.New("no header")
	}
	body, sum := b[:len(b)-4], binary.LittleEndian.Uint32(b[len(b)-4:])
	if crc32.Checksum(body, crcTable) != sum {
		return h, nil, errors.New("checksum")
	}
	h.version = b[4]
	h.clock = int64(binary.LittleEndian.Uint64(b[5:]))
	count := binary.LittleEndian.Uint64(b[13:])
	rest := body[21:]
	v4 := h.version >= 4
	if v4 {
		if len(rest) < 8 {
			return h, nil, errors.New("no header")
		}
		h.term = binary.LittleEndian.Uint64(rest)
		rest = rest[8:]
	}
	uv := func() uint64 {
		v, n := binary.Uvarint(rest)
		if n <= 0 {
			err = errors.New("uvarint")
			return 0
		}
		rest = rest[n:]
		return v
	}
	sv := func() int64 {
		v, n := binary.Varint(rest)
		if n <= 0 {
			err = errors.New("varint")
			return 0
		}
		rest = rest[n:]
		return v
	}
	bs := func() []byte {
		n := uv()
		if err != nil || n > uint64(len(rest)) {
			err = errors.New("length")
			return nil
		}
		v := rest[:n]
		rest = rest[n:]
		return v
	}
	for i := uint64(0); i < count && err == nil; i++ {
		if len(rest) == 0 {
			return h, nil, errors.New("short")
		}
		kind := rest[0]
		rest = rest[1:]
		var r streamRecord
		r.st.Kind = shard.Kind(kind &^ recordHasValue)
		r.key = bs()
		if v4 && kind == 0 {
			r.st.Expire, r.st.Mark = sv(), uv()
			recs = append(recs, r)
			continue
		}
		r.st.Expire, r.st.A, r.st.B = sv(), sv(), sv()
		if v4 {
			r.st.Mark = uv()
		}
		if kind&recordHasValue != 0 {
			r.st.Val = bs()
		}
		recs = append(recs, r)
	}
	if err == nil && h.version >= 5 {
		n := uv()
		for i := uint64(0); i < n && err == nil; i++ {
			h.scripts = append(h.scripts, bs())
		}
	}
	if err == nil && len(rest) != 0 {
		err = errors.New("trailing")
	}
	return h, recs, err
}

// encodeStream writes records as a stream of the current version at clock,
// term 0 (the oracle's writer).
func encodeStream(clock int64, recs []streamRecord) []byte {
	return encodeStreamAs(streamHeader{version: snapshotVersion, clock: clock}, recs)
}

// encodeStreamAs writes records as a stream of h.version: version 4 with
// markers and gone records, or the older layout (what a version 1 to 3
// stream holds: no markers, no gone records).
func encodeStreamAs(h streamHeader, recs []streamRecord) []byte {
	v4 := h.version >= 4
	b := append([]byte(snapshotMagic), h.version)
	b = binary.LittleEndian.AppendUint64(b, uint64(h.clock))
	b = binary.LittleEndian.AppendUint64(b, uint64(len(recs)))
	if v4 {
		b = binary.LittleEndian.AppendUint64(b, h.term)
	}
	for _, r := range recs {
		if v4 && r.st.Expire <= h.clock {
			b = append(b, 0)
			b = appendBytes(b, r.key)
			b = binary.AppendVarint(b, r.st.Expire)
			b = binary.AppendUvarint(b, r.st.Mark)
			continue
		}
		kind := byte(r.st.Kind)
		if len(r.st.Val) > 0 {
			kind |= recordHasValue
		}
		b = append(b, kind)
		b = appendBytes(b, r.key)
		b = binary.AppendVarint(b, r.st.Expire)
		b = binary.AppendVarint(b, r.st.A)
		b = binary.AppendVarint(b, r.st.B)
		if v4 {
			b = binary.AppendUvarint(b, r.st.Mark)
		}
		if len(r.st.Val) > 0 {
			b = appendBytes(b, r.st.Val)
		}
	}
	if h.version >= 5 {
		b = binary.AppendUvarint(b, uint64(len(h.scripts)))
		for _, body := range h.scripts {
			b = appendBytes(b, body)
		}
	}
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, crcTable))
}

// asOldVersion re-encodes a current snapshot as version v (1 to 3) of the
// same live keys: no markers, no gone records, no term.
func asOldVersion(b []byte, v byte) []byte {
	h, recs, err := parseStream(b)
	if err != nil {
		panic(err)
	}
	var live []streamRecord
	for _, r := range recs {
		if r.st.Expire > h.clock {
			live = append(live, r)
		}
	}
	return encodeStreamAs(streamHeader{version: v, clock: h.clock}, live)
}

// restoredFromOld is what a state restored from an old version of snapshot
// b snapshots to: the live keys of b with marker 0 and term 0.
func restoredFromOld(b []byte) []byte {
	h, recs, err := parseStream(b)
	if err != nil {
		panic(err)
	}
	var live []streamRecord
	for _, r := range recs {
		if r.st.Expire > h.clock {
			r.st.Mark = 0
			live = append(live, r)
		}
	}
	return encodeStreamAs(streamHeader{version: snapshotVersion, clock: h.clock}, live)
}

// FuzzSnapshotStream hands Restore arbitrary whole streams (header, records,
// checksum, trailing bytes: everything a corrupt or foreign snapshot could
// hold). It must never panic and never allocate far beyond the stream's
// size; a refused stream must leave the state machine exactly as it was;
// and an accepted one must be a stream the oracle reads too, with keys in
// strictly ascending order, whose state snapshots back to the same records
// (for an older version: minus those already expired at its clock, which
// are equivalent to absent, and with marker 0).
func FuzzSnapshotStream(f *testing.F) {
	for _, seed := range []uint64{1, 2} {
		fsm := quietFSM(2)
		g := newOpGen(seed, 6)
		for i := uint64(1); i <= 6; i++ {
			ops := []request.Request{g.op(), g.op(), g.op()}
			applyOne(f, fsm, commandLog(i, encodeEntry(1_700_000_000_000_000_000+int64(i)*50e6, ops)))
		}
		f.Add(snapshotBytes(f, fsm), false)
	}
	f.Add(snapshotBytes(f, quietFSM(1)), false)
	f.Add(encodeStream(5, []streamRecord{{key: []byte("b"), st: shard.State{Kind: clKind, Expire: 9}}, {key: []byte("a"), st: shard.State{Kind: clKind, Expire: 9}}}), false)
	f.Add(encodeStream(5, []streamRecord{{key: []byte("a"), st: shard.State{Kind: clKind, Expire: 1}}}), false)
	f.Add(encodeStream(5, []streamRecord{{key: []byte("s"), st: shard.State{Kind: setKind, Expire: 9, A: 2, Val: []byte{1, 1, 'a', 'b'}}}}), false)
	v4 := streamHeader{version: snapshotVersion, clock: 5, term: 3}
	f.Add(encodeStreamAs(v4, []streamRecord{{key: []byte("a"), st: shard.State{Expire: 1, Mark: 7}}, {key: []byte("b"), st: shard.State{Kind: clKind, Expire: 9, Mark: 4}}}), false)
	f.Add(encodeStreamAs(streamHeader{version: 3, clock: 5}, []streamRecord{{key: []byte("a"), st: shard.State{Kind: clKind, Expire: 1}}, {key: []byte("b"), st: shard.State{Kind: clKind, Expire: 9}}}), false)
	f.Add([]byte("RCSN\x02"), true)
	zval := zAppend(zAppend(nil, 1, []byte("a")), math.Inf(1), []byte("b"))
	f.Add(encodeStream(5, []streamRecord{{key: []byte("z"), st: shard.State{Kind: zsetKind, Expire: noExpiry, A: 2, Val: zval}}}), false)
	f.Add(encodeStream(5, []streamRecord{{key: []byte("z"), st: shard.State{Kind: zsetKind, Expire: noExpiry, A: 2, Val: zAppend(zAppend(nil, 2, []byte("a")), 1, []byte("b"))}}}), false)
	f.Fuzz(func(t *testing.T, data []byte, fixCRC bool) {
		if fixCRC && len(data) >= 4 {
			// Make the checksum right, so that what lies behind it (count,
			// records, order, trailing bytes) is what gets explored.
			data = bytes.Clone(data)
			binary.LittleEndian.PutUint32(data[len(data)-4:], crc32.Checksum(data[:len(data)-4], crcTable))
		}
		fsm := limiterStateSmall(t)
		before := snapshotBytes(t, fsm)
		var err error
		n := allocatedBytes(func() { err = fsm.Restore(io.NopCloser(bytes.NewReader(data))) })
		// shard.New and bufio's buffer are fixed costs; after that restore
		// grows with the records it reads, never with declared lengths.
		if limit := uint64(2<<20 + 64*len(data)); n > limit {
			t.Fatalf("restoring %d bytes allocated %d (limit %d)", len(data), n, limit)
		}
		h, recs, perr := parseStream(data)
		if err != nil {
			if after := snapshotBytes(t, fsm); !bytes.Equal(after, before) {
				t.Fatalf("a refused snapshot (%v) changed the state", err)
			}
			return
		}
		if perr != nil {
			t.Fatalf("restore accepted a stream the format does not allow (%v)", perr)
		}
		if h.version < snapshotV1 || h.version > snapshotVersion {
			t.Fatalf("restore accepted version %d", h.version)
		}
		// A current stream snapshots back to itself; an older one to its
		// live keys, with marker 0 and no term.
		var kept []streamRecord
		for i, r := range recs {
			if i > 0 && bytes.Compare(recs[i-1].key, r.key) >= 0 {
				t.Fatalf("restore accepted key %q after %q", r.key, recs[i-1].key)
			}
			if h.version == snapshotVersion || r.st.Expire > h.clock {
				kept = append(kept, r)
			}
		}
		h.version = snapshotVersion
		if got, want := snapshotBytes(t, fsm), encodeStreamAs(h, kept); !bytes.Equal(got, want) {
			t.Fatalf("the restored state snapshots to\n%x\nthe stream's live records are\n%x", got, want)
		}
	})
}

// limiterStateSmall is a state machine holding a few keys of every family,
// cheap enough to build once per fuzz input.
func limiterStateSmall(t testing.TB) *FSM {
	f := quietFSM(2)
	g := newOpGen(7, 4)
	ops := make([]request.Request, 12)
	for i := range ops {
		ops[i] = g.op()
	}
	applyOne(t, f, commandLog(1, encodeEntry(1_700_000_000_000_000_000, ops)))
	return f
}

// FuzzSnapshotRoundTrip builds a state from a random log (the fuzzer picks
// the seed, the log's length and both stripe counts), and checks the
// snapshot round trip on it: restoring into a state machine with another
// stripe count gives byte-identical snapshots and the same answer to every
// read of every key; and the snapshot with any one byte changed, or cut at
// any point, is refused without touching the state it was restored into.
func FuzzSnapshotRoundTrip(f *testing.F) {
	f.Add(uint64(1), uint8(10), uint8(1), uint8(4), uint32(0), byte(1))
	f.Add(uint64(2), uint8(40), uint8(3), uint8(1), uint32(13), byte(0x80))
	f.Add(uint64(3), uint8(0), uint8(2), uint8(2), uint32(20), byte(0xff))
	f.Add(uint64(4), uint8(25), uint8(8), uint8(5), uint32(1<<31), byte(2))
	f.Fuzz(func(t *testing.T, seed uint64, entries, stripesA, stripesB uint8, pos uint32, flip byte) {
		a := quietFSM(1 + int(stripesA%8))
		g := newOpGen(seed, 10)
		stamp := int64(1_700_000_000_000_000_000)
		for i := uint64(1); i <= uint64(entries%64); i++ {
			ops := make([]request.Request, 1+g.rng.IntN(6))
			for j := range ops {
				ops[j] = g.op()
			}
			stamp += g.rng.Int64N(400e6)
			applyOne(t, a, commandLog(i, encodeEntry(stamp, ops)))
		}
		snap := persist(t, a)
		b := quietFSM(1 + int(stripesB%8))
		if err := b.Restore(io.NopCloser(bytes.NewReader(snap))); err != nil {
			t.Fatalf("a snapshot does not restore: %v", err)
		}
		if again := persist(t, b); !bytes.Equal(again, snap) {
			t.Fatalf("snapshot, restore, snapshot changed the bytes")
		}
		for _, k := range g.keys {
			for _, q := range readsOf(k) {
				var ra, rb request.Result
				a.Read(&q, stamp, &ra)
				b.Read(&q, stamp, &rb)
				if !ra.Equal(rb) {
					t.Fatalf("%v on %q: original %+v, restored %+v", q.Code, k, ra, rb)
				}
			}
		}
		// One byte changed: CRC-32C detects every error within 32 bits.
		bad := bytes.Clone(snap)
		i := int(pos % uint32(len(bad)))
		bad[i] ^= flip | 1
		if err := b.Restore(io.NopCloser(bytes.NewReader(bad))); err == nil {
			t.Fatalf("a snapshot with byte %d of %d changed was restored", i, len(bad))
		}
		if err := b.Restore(io.NopCloser(bytes.NewReader(snap[:i]))); err == nil {
			t.Fatalf("a snapshot cut to %d of %d bytes was restored", i, len(snap))
		}
		if again := persist(t, b); !bytes.Equal(again, snap) {
			t.Fatalf("a refused snapshot changed the state")
		}
		// Applying the same further entry to both keeps them identical.
		more := []request.Request{g.op(), g.op(), g.op()}
		l := commandLog(1000, encodeEntry(stamp+1e9, more))
		resA, resB := applyOne(t, a, l), applyOne(t, b, l)
		for i := range resA {
			if !resA[i].Equal(resB[i]) {
				t.Fatalf("request %d after the round trip: original %+v, restored %+v", i, resA[i], resB[i])
			}
		}
	})
}

// readsOf is every read a client can make of key, with fixed parameters.
func readsOf(key []byte) []request.Request {
	cl := request.Request{Code: request.Peek, Key: key}
	cl.SetArgs(1e9, 5, 1)
	tb := request.Request{Code: request.TBPeek, Key: key}
	tb.SetArgs(5, 1, 1000, 1, 0)
	sl := request.Request{Code: request.SLPeek, Key: key}
	sl.SetArgs(5, 1000, 1, 0, 0)
	return []request.Request{cl, tb, sl,
		{Code: request.PTTL, Key: key}, {Code: request.Type, Key: key},
		{Code: request.Exists, Keys: [][]byte{key}}, {Code: request.DBSize}}
}
