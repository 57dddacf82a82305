package fsm

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"io"
	"math"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/redcell/redcell/request"
)

// limiterState is a state with keys of every family (long sliding logs
// included), for fuzz seeds.
func limiterState(t testing.TB) *FSM {
	f := quietFSM(4)
	g := newOpGen(3, 12)
	stamp := int64(1_700_000_000_000_000_000)
	for i := uint64(1); i <= 60; i++ {
		ops := make([]request.Request, 8)
		for j := range ops {
			ops[j] = g.op()
		}
		stamp += 40e6
		applyOne(t, f, commandLog(i, encodeEntry(stamp, ops)))
	}
	return f
}

// FuzzRestore feeds Restore arbitrary records behind a valid header and
// checksum (so the record decoder, values included, is what gets
// exercised). It must never panic; a stream it accepts must give a state
// that snapshots and restores again to the same bytes, and answers reads.
func FuzzRestore(f *testing.F) {
	seed := snapshotBytes(f, limiterState(f))
	// The current version: the term leads the "records".
	f.Add(byte(snapshotVersion), uint16(binary.LittleEndian.Uint64(seed[13:])), seed[21:len(seed)-4])
	f.Add(byte(1), uint16(1), []byte{1, 1, 'k', 2, 2, 2})
	f.Add(byte(2), uint16(1), []byte{4 | 0x80, 1, 'k', 2, 0, 0, 3, 0x02, 0x01, 0x01})
	// A CL key whose expiry lies past 2262 (version 3: expire saturated, b in ms).
	wide := binary.AppendVarint([]byte{1, 1, 'k'}, math.MaxInt64)
	wide = binary.AppendVarint(binary.AppendVarint(wide, -9146744073586094827), 9300000000123)
	f.Add(byte(3), uint16(1), wide)
	f.Fuzz(func(t *testing.T, version byte, count uint16, records []byte) {
		var b []byte
		b = append(b, snapshotMagic...)
		b = append(b, version)
		b = binary.LittleEndian.AppendUint64(b, 1_700_000_000_000_000_000)
		b = binary.LittleEndian.AppendUint64(b, uint64(count))
		b = append(b, records...)
		b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, crcTable))
		fsm := quietFSM(2)
		if err := fsm.Restore(io.NopCloser(bytes.NewReader(b))); err != nil {
			return
		}
		snap := snapshotBytes(t, fsm)
		again := quietFSM(3)
		if err := again.Restore(io.NopCloser(bytes.NewReader(snap))); err != nil {
			t.Fatalf("a restored state's own snapshot does not restore: %v", err)
		}
		if !bytes.Equal(snapshotBytes(t, again), snap) {
			t.Fatalf("snapshot, restore, snapshot changed the bytes")
		}
		var res request.Result
		for _, code := range []request.Code{request.TBPeek, request.SLPeek, request.Peek} {
			r := request.Request{Code: code, Key: []byte("k")}
			r.SetArgs(5, 1000, 1, 0, 0)
			if code == request.Peek {
				r.SetArgs(1e9, 5, 1)
			}
			fsm.Read(&r, 1_700_000_000_000_000_000, &res)
		}
	})
}

// FuzzLimiterRequests applies TB and SL requests with arbitrary arguments,
// keys and stamps, as a faulty or foreign leader could write them: apply
// and Read never panic and never stop the state machine (every such entry
// decodes), and a request the parser would not produce is refused as
// ErrInvalidOp without changing anything.
func FuzzLimiterRequests(f *testing.F) {
	f.Add(uint8(0), []byte("k"), int64(1_700_000_000_000_000_000), int64(10), int64(1), int64(1000), int64(1), int64(0))
	f.Add(uint8(1), []byte("k"), int64(1_700_000_000_000_000_000), int64(10), int64(1000), int64(1), int64(0), int64(1))
	f.Add(uint8(2), []byte(""), int64(math.MaxInt64), int64(math.MaxInt64), int64(1), int64(9223372036854), int64(math.MinInt64), int64(1))
	f.Add(uint8(3), []byte("x"), int64(0), int64(1), int64(9223372036854), int64(1), int64(1), int64(2))
	codes := []request.Code{request.TBTake, request.SLHit, request.TBPeek, request.SLPeek}
	f.Fuzz(func(t *testing.T, which uint8, key []byte, stamp, a0, a1, a2, a3, a4 int64) {
		fatal := false
		fsm := New(Config{Stripes: 2, Logger: discardLogger(), OnFatal: func(error) { fatal = true }})
		r := request.Request{Code: codes[int(which)%len(codes)], Key: key}
		r.SetArgs(a0, a1, a2, a3, a4)
		// The same request twice (a second call sees the first's state),
		// then the other families on the same key.
		ops := []request.Request{r, r}
		for _, c := range codes {
			o := r
			o.Code = c
			ops = append(ops, o)
		}
		if validRequest(&r) != "" {
			// Refused alone: an error, and not a byte of the keyspace changed.
			before := snapshotBytes(t, fsm)
			out := fsm.ApplyBatch([]*raft.Log{commandLog(1, encodeEntry(stamp, ops[:1]))})
			res := takeResults(t, fsm, out[0])
			if res[0].Kind != request.KindError || res[0].Err != request.ErrInvalidOp {
				t.Fatalf("an invalid request answered %+v", res[0])
			}
			if after := snapshotBytes(t, fsm); !bytes.Equal(after[29:len(after)-4], before[29:len(before)-4]) {
				t.Fatalf("an invalid request changed the keyspace")
			}
		}
		out := fsm.ApplyBatch([]*raft.Log{commandLog(2, encodeEntry(stamp, ops))})
		if fatal {
			t.Fatalf("the state machine stopped on a decodable entry")
		}
		if res := takeResults(t, fsm, out[0]); len(res) != len(ops) {
			t.Fatalf("%d results for %d requests", len(res), len(ops))
		}
		for _, c := range codes {
			q := r
			q.Code = c
			if c.IsWrite() {
				continue
			}
			var rr request.Result
			fsm.Read(&q, stamp, &rr)
		}
		snap := snapshotBytes(t, fsm)
		if err := quietFSM(1).Restore(io.NopCloser(bytes.NewReader(snap))); err != nil {
			t.Fatalf("the state after these requests does not restore: %v", err)
		}
	})
}
