package fsm

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/redcell/redcell/gcra"
	"github.com/redcell/redcell/request"
)

// Version 1 entries are what Redcell wrote before package request: a data
// dir of an older node holds them, and its log must still replay. Nothing
// writes them any more, so the encoder lives here, copied from the last
// version that wrote the format (fsm/entry.go before version 2).

// encodeV1Entry writes ops in the version 1 layout. Only the three codes
// that version had are allowed.
func encodeV1Entry(stamp int64, ops []request.Request) []byte {
	b := []byte{entryVersion1}
	b = binary.LittleEndian.AppendUint64(b, uint64(stamp))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(ops)))
	for i := range ops {
		op := &ops[i]
		b = append(b, byte(op.Code))
		switch op.Code {
		case request.Throttle:
			b = appendBytes(b, op.Key)
			b = binary.AppendVarint(b, op.Args[0]) // Interval
			b = binary.AppendVarint(b, op.Args[1]) // Limit
			b = binary.AppendVarint(b, op.Args[2]) // Quantity
		case request.Del:
			b = binary.AppendUvarint(b, uint64(len(op.Keys)))
			for _, k := range op.Keys {
				b = appendBytes(b, k)
			}
		case request.FlushAll:
		default:
			panic(fmt.Sprintf("version 1 had no code %d", op.Code))
		}
	}
	return b
}

// v1op is a random request of a code version 1 had.
func (g *opGen) v1op() request.Request {
	for {
		switch r := g.op(); r.Code {
		case request.Throttle, request.Del, request.FlushAll:
			return r
		}
	}
}

// TestV1EntryByHand pins the version 1 layout with bytes written out by
// hand, not by the copied encoder: a CL.THROTTLE, a DEL of two keys and a
// FLUSHALL.
func TestV1EntryByHand(t *testing.T) {
	data := []byte{
		1,                               // version
		0, 0xca, 0x9a, 0x3b, 0, 0, 0, 0, // stamp 1e9 = 0x3b9aca00, little endian
		3, 0, 0, 0, // three ops
		1, 3, 'a', 'b', 'c', 0x80, 0xa8, 0xd6, 0xb9, 0x07, 0x20, 0x02, // THROTTLE "abc" T=1e9 (zig-zag 2e9) limit 16 quantity 1
		2, 2, 1, 'x', 0, // DEL "x" ""
		3, // FLUSHALL
	}
	if got := encodeV1Entry(1e9, []request.Request{
		throttleReq([]byte("abc"), gcra.Params{Interval: 1e9, Limit: 16, Quantity: 1}),
		{Code: request.Del, Keys: [][]byte{[]byte("x"), {}}},
		{Code: request.FlushAll},
	}); !bytes.Equal(got, data) {
		t.Fatalf("the copied version 1 encoder writes\n%x\nthe format is\n%x", got, data)
	}
	var d Decoder
	var got []string
	if err := decodeAll(&d, data, func(r *request.Request) { got = append(got, opString(r)) }); err != nil {
		t.Fatalf("decoding: %v", err)
	}
	want := fmt.Sprint([]string{`{1 "abc" [1000000000 16 1]}`, `{2 ["x" ""] []}`, `{3 "" []}`})
	if fmt.Sprint(got) != want || d.Stamp != 1e9 || d.Count != 3 || d.Version != 1 {
		t.Fatalf("decoded %v (stamp %d, count %d, version %d), want %v", got, d.Stamp, d.Count, d.Version, want)
	}
}

// TestV1EntriesDecodeAsTheirRequests: random version 1 entries decode to the
// requests they were written from, through the same reused Decoder that
// decodes version 2 entries in between.
func TestV1EntriesDecodeAsTheirRequests(t *testing.T) {
	g := newOpGen(11, 30)
	var d Decoder
	for n := 0; n < 300; n++ {
		ops := make([]request.Request, g.rng.IntN(30))
		for i := range ops {
			ops[i] = g.v1op()
		}
		stamp := g.rng.Int64() - 1<<62
		for _, data := range [][]byte{encodeV1Entry(stamp, ops), encodeEntry(stamp, ops)} {
			i := 0
			err := decodeAll(&d, data, func(r *request.Request) {
				if opString(r) != opString(&ops[i]) {
					t.Fatalf("entry %d (version %d) request %d: decoded %s, written %s", n, data[0], i, opString(r), opString(&ops[i]))
				}
				i++
			})
			if err != nil || i != len(ops) || d.Stamp != stamp {
				t.Fatalf("entry %d (version %d): %d of %d requests, stamp %d, err %v", n, data[0], i, len(ops), d.Stamp, err)
			}
		}
	}
	// A huge DEL, then a small one: the key list is not kept, and the
	// small one still decodes.
	keys := make([][]byte, keepKeys+1)
	for i := range keys {
		keys[i] = []byte{byte(i)}
	}
	for _, ops := range [][]request.Request{{{Code: request.Del, Keys: keys}}, {{Code: request.Del, Keys: keys[:2]}}} {
		if err := decodeAll(&d, encodeV1Entry(1, ops), nil); err != nil {
			t.Fatalf("DEL of %d keys: %v", len(ops[0].Keys), err)
		}
	}
}

// TestV1ErrorsStop: a version 1 entry with an op code version 1 did not have
// (reads included: they never entered a version 1 log) or truncated fields
// does not decode, and the state machine stops on it.
func TestV1ErrorsStop(t *testing.T) {
	good := encodeV1Entry(7, []request.Request{{Code: request.Del, Keys: [][]byte{[]byte("k")}}})
	withCount := func(n uint32) []byte { b := bytes.Clone(good); binary.LittleEndian.PutUint32(b[9:13], n); return b }
	for name, data := range map[string][]byte{
		"op code 0":                 append(withCount(2), 0),
		"op code 4":                 append(withCount(2), 4),
		"a read code":               append(withCount(2), byte(request.DBSize)),
		"key longer than the entry": append(withCount(2), 1, 200, 'a'),
		"missing integers":          append(withCount(2), 1, 1, 'a', 2),
		"key count beyond entry":    append(withCount(2), 2, 100, 0),
		"trailing byte":             append(bytes.Clone(good), 0),
		"truncated":                 good[:len(good)-1],
	} {
		var d Decoder
		if err := decodeAll(&d, data, nil); err == nil {
			t.Errorf("%s: decoded without error", name)
		}
		fatal := 0
		f := New(Config{Stripes: 1, Logger: discardLogger(), OnFatal: func(error) { fatal++ }})
		if _, ok := f.Apply(commandLog(1, data)).(error); !ok || fatal != 1 {
			t.Errorf("%s: apply did not stop the state machine (OnFatal %d times)", name, fatal)
		}
	}
}

// TestV1LogReplaysLikeV2: an old node's log of version 1 entries, replayed
// by this build, gives the results and the snapshot that the same requests
// give in version 2 entries, and a log that switches versions midway (an
// upgraded leader) gives them too.
func TestV1LogReplaysLikeV2(t *testing.T) {
	g := newOpGen(5, 20)
	v1, v2, mixed := quietFSM(2), quietFSM(8), quietFSM(4)
	stamp := t0
	for i := 1; i <= 400; i++ {
		ops := make([]request.Request, 1+g.rng.IntN(10))
		for j := range ops {
			ops[j] = g.v1op()
		}
		stamp += g.rng.Int64N(2e9)
		a, b := encodeV1Entry(stamp, ops), encodeEntry(stamp, ops)
		m := a
		if i > 200 {
			m = b
		}
		ra := applyOne(t, v1, commandLog(uint64(i), a))
		rb := applyOne(t, v2, commandLog(uint64(i), b))
		rm := applyOne(t, mixed, commandLog(uint64(i), m))
		if !equalResults(ra, rb) || !equalResults(ra, rm) {
			t.Fatalf("entry %d: version 1 answered %+v, version 2 %+v, mixed log %+v", i, ra, rb, rm)
		}
	}
	s1 := snapshotBytes(t, v1)
	if !bytes.Equal(s1, snapshotBytes(t, v2)) || !bytes.Equal(s1, snapshotBytes(t, mixed)) {
		t.Fatalf("the snapshots differ after the same requests in version 1 and 2 entries")
	}
	if out := v1.ApplyBatch([]*raft.Log{commandLog(401, encodeV1Entry(stamp, nil))}); out[0] == nil {
		t.Fatalf("an empty version 1 entry answered nil")
	}
}
