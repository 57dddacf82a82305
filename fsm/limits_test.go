package fsm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/redcell/redcell/gcra"
)

// These tests pin the contract between the encoder, the decoder and apply:
// whatever the Encoder writes, the Decoder accepts, and whatever decodes,
// apply answers without stopping. A request that breaks either half is
// committed on every replica and replayed on every restart, so the node
// could never come back.

// hugeDelKeys is one more than the decoder's old cap (1<<20): the DEL that
// used to be committed and then stop every replica on every restart.
const hugeDelKeys = 1<<20 + 1

// edgeInt64s are integers where the varint encoding changes width, and the
// ends of int64.
func edgeInt64s() []int64 {
	vs := []int64{0, 1, -1, 63, 64, -64, -65, math.MaxInt64, math.MinInt64, math.MaxInt64 - 1, math.MinInt64 + 1}
	for s := 6; s < 63; s += 7 {
		vs = append(vs, 1<<s-1, 1<<s, -(1 << s), -(1<<s)-1)
	}
	return vs
}

// limitGen makes ops of every code with sizes at the edges: empty and large
// keys, DELs of up to hugeDelKeys keys, integers anywhere in int64 (the
// encoder must carry params the parser never produces, too).
type limitGen struct {
	rng   *rand.Rand
	bytes []byte   // keys are windows of this
	small [][]byte // single-byte keys, shared by the huge DELs
}

func newLimitGen(seed uint64) *limitGen {
	g := &limitGen{rng: rand.New(rand.NewPCG(seed, 0x11a175))}
	g.bytes = make([]byte, 3<<20)
	for i := range g.bytes {
		g.bytes[i] = byte(g.rng.Uint32())
	}
	g.small = make([][]byte, hugeDelKeys+2)
	for i := range g.small {
		g.small[i] = g.bytes[i%len(g.bytes) : i%len(g.bytes)+1]
	}
	return g
}

func (g *limitGen) key() []byte {
	var n int
	switch g.rng.IntN(10) {
	case 0:
		n = 0
	case 1:
		n = 127 + g.rng.IntN(3) // the key length's varint changes width at 128
	case 2:
		n = 1<<20 + g.rng.IntN(1<<20) // a key of megabytes
	default:
		n = 1 + g.rng.IntN(40)
	}
	off := g.rng.IntN(len(g.bytes) - n + 1)
	return g.bytes[off : off+n : off+n]
}

func (g *limitGen) int64() int64 {
	if g.rng.IntN(2) == 0 {
		e := edgeInt64s()
		return e[g.rng.IntN(len(e))]
	}
	return int64(g.rng.Uint64())
}

func (g *limitGen) op() Op {
	switch g.rng.IntN(3) {
	case 0:
		return Op{Code: OpThrottle, Key: g.key(), GCRA: gcra.Params{Interval: g.int64(), Limit: g.int64(), Quantity: g.int64()}}
	case 1:
		keys := make([][]byte, g.rng.IntN(20))
		for i := range keys {
			keys[i] = g.key()
		}
		return Op{Code: OpDel, Keys: keys}
	}
	return Op{Code: OpFlushAll}
}

// hugeDel is a DEL of n single-byte keys.
func (g *limitGen) hugeDel(n int) Op { return Op{Code: OpDel, Keys: g.small[:n:n]} }

// sameOp compares the fields op's code uses (nil and empty keys are equal:
// both encode as length 0).
func sameOp(a, b *Op) bool {
	if a.Code != b.Code {
		return false
	}
	switch a.Code {
	case OpThrottle:
		return bytes.Equal(a.Key, b.Key) && a.GCRA == b.GCRA
	case OpDel:
		if len(a.Keys) != len(b.Keys) {
			return false
		}
		for i := range a.Keys {
			if !bytes.Equal(a.Keys[i], b.Keys[i]) {
				return false
			}
		}
	}
	return true
}

func describe(op *Op) string {
	if op.Code == OpDel {
		return fmt.Sprintf("{del, %d keys}", len(op.Keys))
	}
	if op.Code == OpThrottle {
		return fmt.Sprintf("{throttle, key of %d bytes, %+v}", len(op.Key), op.GCRA)
	}
	return opString(op)
}

// roundTrip encodes ops into enc (checking EncodedOpLen against what Add
// wrote for every op), decodes the entry and requires the same ops back.
func roundTrip(t *testing.T, enc *Encoder, dec *Decoder, stamp int64, ops []Op) {
	t.Helper()
	enc.Reset(stamp)
	for i := range ops {
		before := enc.Len()
		enc.Add(&ops[i])
		if got, want := EncodedOpLen(&ops[i]), enc.Len()-before; got != want {
			t.Fatalf("op %d %s: EncodedOpLen = %d, Add wrote %d bytes", i, describe(&ops[i]), got, want)
		}
	}
	data := enc.Finish()
	if err := dec.Reset(data); err != nil {
		t.Fatalf("an entry of %d ops (%d bytes) from the Encoder: header refused: %v", len(ops), len(data), err)
	}
	if dec.Stamp != stamp || dec.Count != len(ops) {
		t.Fatalf("header: stamp %d count %d, want %d %d", dec.Stamp, dec.Count, stamp, len(ops))
	}
	var op Op
	for i := 0; ; i++ {
		ok, err := dec.Next(&op)
		if err != nil {
			t.Fatalf("an entry of %d ops (%d bytes) from the Encoder: op %d (%s) refused: %v", len(ops), len(data), i, describe(&ops[i]), err)
		}
		if !ok {
			if i != len(ops) {
				t.Fatalf("decoded %d ops, encoded %d", i, len(ops))
			}
			return
		}
		if !sameOp(&op, &ops[i]) {
			t.Fatalf("op %d: decoded %s, encoded %s", i, describe(&op), describe(&ops[i]))
		}
	}
}

// TestEncoderOutputAlwaysDecodes is the round-trip property at the limits:
// random ops of every code (empty and multi-megabyte keys, integers at the
// int64 ends), DELs of 1<<20-1 .. 1<<20+1 keys, and entries of many ops, all
// through one reused Encoder and Decoder as the proposer and FSM use them.
func TestEncoderOutputAlwaysDecodes(t *testing.T) {
	g := newLimitGen(1)
	var enc Encoder
	var dec Decoder
	t.Run("huge DELs", func(t *testing.T) {
		for _, n := range []int{1<<20 - 1, 1 << 20, hugeDelKeys, hugeDelKeys + 1} {
			roundTrip(t, &enc, &dec, int64(n), []Op{g.hugeDel(n)})
		}
		// Around other ops, and two in one entry.
		roundTrip(t, &enc, &dec, math.MinInt64, []Op{g.op(), g.hugeDel(hugeDelKeys), {Code: OpFlushAll}, g.hugeDel(1 << 20), g.op()})
	})
	t.Run("random ops", func(t *testing.T) {
		for n := 0; n < 300; n++ {
			ops := make([]Op, 1+g.rng.IntN(8))
			for i := range ops {
				ops[i] = g.op()
			}
			roundTrip(t, &enc, &dec, g.int64(), ops)
		}
	})
	t.Run("many ops", func(t *testing.T) {
		for _, n := range []int{1 << 10, 1 << 16, 1<<20 + 3} {
			ops := make([]Op, n)
			for i := range ops {
				switch i % 3 {
				case 0:
					ops[i] = Op{Code: OpFlushAll} // one byte each: as many ops as bytes
				case 1:
					ops[i] = Op{Code: OpDel}
				default:
					ops[i] = Op{Code: OpThrottle, Key: g.small[i%len(g.small)], GCRA: gcra.Params{Interval: g.int64(), Limit: 1, Quantity: -1}}
				}
			}
			roundTrip(t, &enc, &dec, 1, ops)
		}
	})
}

// TestVarintLens pins the size helpers to encoding/binary at every width.
func TestVarintLens(t *testing.T) {
	for _, v := range edgeInt64s() {
		if got, want := varintLen(v), len(binary.AppendVarint(nil, v)); got != want {
			t.Errorf("varintLen(%d) = %d, want %d", v, got, want)
		}
		if got, want := uvarintLen(uint64(v)), len(binary.AppendUvarint(nil, uint64(v))); got != want {
			t.Errorf("uvarintLen(%d) = %d, want %d", uint64(v), got, want)
		}
	}
}

// TestDecodeBoundsCountsByTheBytesLeft: a count one more than the bytes that
// remain is corruption; exactly as many (the smallest ops and keys) is not.
func TestDecodeBoundsCountsByTheBytesLeft(t *testing.T) {
	flushes := encodeEntry(1, []Op{{Code: OpFlushAll}, {Code: OpFlushAll}, {Code: OpFlushAll}})
	var d Decoder
	if err := decodeAll(&d, flushes, nil); err != nil {
		t.Fatalf("3 one-byte ops: %v", err)
	}
	tooMany := bytes.Clone(flushes)
	binary.LittleEndian.PutUint32(tooMany[9:13], 4)
	if err := d.Reset(tooMany); err == nil {
		t.Errorf("an op count beyond the bytes left passed the header check")
	}
	empties := encodeEntry(1, []Op{{Code: OpDel, Keys: make([][]byte, 5)}})
	if err := decodeAll(&d, empties, func(op *Op) {
		if len(op.Keys) != 5 {
			t.Errorf("decoded %d empty keys, want 5", len(op.Keys))
		}
	}); err != nil {
		t.Fatalf("5 empty keys: %v", err)
	}
	oneMore := bytes.Clone(empties)
	oneMore[entryHeaderLen+1] = 6 // the key count: one more than the 5 bytes left
	if err := decodeAll(&d, oneMore, nil); err == nil {
		t.Errorf("a key count beyond the bytes left decoded")
	}
}

// TestApplyHugeDel: the DEL that used to stop the state machine is applied
// and answers how many of its keys were live; later entries still apply.
func TestApplyHugeDel(t *testing.T) {
	fatal := 0
	f := New(Config{Stripes: 4, Logger: discardLogger(), OnFatal: func(error) { fatal++ }})
	p := mustParams(t, 5, 1, 1, 1)
	keys := make([][]byte, hugeDelKeys)
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("k%d", i))
	}
	live := []int{0, 1 << 19, hugeDelKeys - 1} // the last one is beyond the old cap
	var setup []Op
	for _, i := range live {
		setup = append(setup, Op{Code: OpThrottle, Key: keys[i], GCRA: p})
	}
	setup = append(setup, Op{Code: OpThrottle, Key: []byte("other"), GCRA: p})
	applyOne(t, f, commandLog(1, encodeEntry(t0, setup)))

	res := applyOne(t, f, commandLog(2, encodeEntry(t0, []Op{{Code: OpDel, Keys: keys}})))
	if want := (Result{Kind: ResultInt, Ints: [5]int64{int64(len(live))}}); len(res) != 1 || res[0] != want {
		t.Fatalf("DEL of %d keys: %+v, want %+v", len(keys), res, want)
	}
	after := applyOne(t, f, commandLog(3, encodeEntry(t0, []Op{
		{Code: OpThrottle, Key: keys[hugeDelKeys-1], GCRA: p}, // fresh again
		{Code: OpThrottle, Key: []byte("other"), GCRA: p},     // untouched by the DEL
	})))
	want := []Result{
		{Kind: ResultThrottle, Ints: [5]int64{0, 6, 5, -1, 1}},
		{Kind: ResultThrottle, Ints: [5]int64{0, 6, 4, -1, 2}},
	}
	if !equalResults(after, want) {
		t.Fatalf("after the DEL: %+v, want %+v", after, want)
	}
	if fatal != 0 {
		t.Fatalf("OnFatal called %d times", fatal)
	}
}

// TestInvalidOpIsRefusedNotFatal: an op that decodes but that apply cannot
// honour answers ErrInvalidOp and changes nothing — the entry's other ops
// apply, the state is exactly as if it had not been there, OnFatal is never
// called, and later entries apply.
func TestInvalidOpIsRefusedNotFatal(t *testing.T) {
	fatal := 0
	f := New(Config{Stripes: 2, Logger: discardLogger(), OnFatal: func(error) { fatal++ }})
	ref := quietFSM(2) // the same log without the invalid ops
	p := mustParams(t, 5, 1, 1, 1)
	zeroT := gcra.Params{Interval: 0, Limit: 6, Quantity: 1}
	a, b := []byte("a"), []byte("b")

	withInvalid := []Op{
		{Code: OpThrottle, Key: a, GCRA: p},
		{Code: OpThrottle, Key: a, GCRA: zeroT}, // on a live key
		{Code: OpThrottle, Key: b, GCRA: zeroT}, // on a missing key
		{Code: OpThrottle, Key: a, GCRA: p},
	}
	res := applyOne(t, f, commandLog(1, encodeEntry(t0, withInvalid)))
	refRes := applyOne(t, ref, commandLog(1, encodeEntry(t0, []Op{withInvalid[0], withInvalid[3]})))
	invalid := Result{Kind: ResultError, Err: ErrInvalidOp}
	want := []Result{refRes[0], invalid, invalid, refRes[1]}
	if !equalResults(res, want) {
		t.Fatalf("results %+v, want %+v", res, want)
	}
	if !bytes.Equal(snapshotBytes(t, f), snapshotBytes(t, ref)) {
		t.Fatalf("the refused ops changed the state")
	}
	later := encodeEntry(t0+1e9, []Op{{Code: OpThrottle, Key: a, GCRA: p}, {Code: OpDel, Keys: [][]byte{a, b}}})
	got, wantLater := applyOne(t, f, commandLog(2, later)), applyOne(t, ref, commandLog(2, later))
	if !equalResults(got, wantLater) || got[1] != (Result{Kind: ResultInt, Ints: [5]int64{1}}) {
		t.Fatalf("the next entry: %+v, want %+v", got, wantLater)
	}
	if fatal != 0 {
		t.Fatalf("OnFatal called %d times for an invalid op", fatal)
	}
	if _, err := f.Snapshot(); err != nil {
		t.Fatalf("Snapshot after an invalid op: %v", err)
	}
}

// TestValidOp: only what the parser never produces is refused. Negative
// intervals and limits, limit 0 and refunds are CL.THROTTLE requests the
// spec answers; T = 0 is not, nor a key no snapshot can hold.
func TestValidOp(t *testing.T) {
	for _, in := range [][4]int64{{-1, 1, 1, 1}, {-2, 1, 1, 1}, {5, -3, 1, 1}, {5, 1, -1, 1}, {5, 1, 1, -10}, {5, 1, 1, 0},
		{math.MaxInt64, 1, 1, math.MinInt64}, {5, 1, math.MaxInt64, math.MaxInt64}} {
		p, err := gcra.NewParams(in[0], in[1], in[2], in[3])
		if err != nil {
			t.Fatalf("NewParams%v: %v", in, err)
		}
		if why := validOp(&Op{Code: OpThrottle, Key: []byte("k"), GCRA: p}); why != "" {
			t.Errorf("NewParams%v = %+v refused: %s", in, p, why)
		}
	}
	for _, op := range []Op{{Code: OpDel}, {Code: OpFlushAll}, {Code: OpThrottle, Key: make([]byte, maxSnapshotKey), GCRA: gcra.Params{Interval: 1}}} {
		if why := validOp(&op); why != "" {
			t.Errorf("%s refused: %s", describe(&op), why)
		}
	}
	for _, op := range []Op{
		{Code: OpThrottle, GCRA: gcra.Params{Interval: 0, Limit: 1, Quantity: 1}},
		{Code: OpThrottle, Key: make([]byte, maxSnapshotKey+1), GCRA: gcra.Params{Interval: 1}},
	} {
		if validOp(&op) == "" {
			t.Errorf("%s accepted", describe(&op))
		}
	}
}

// TestDecodeErrorStillStops: corruption (here an unknown op code after a
// valid op) still stops the state machine, and no snapshot is taken of the
// half-applied entry.
func TestDecodeErrorStillStops(t *testing.T) {
	var fatal []error
	f := New(Config{Stripes: 1, Logger: discardLogger(), OnFatal: func(err error) { fatal = append(fatal, err) }})
	data := encodeEntry(t0, []Op{{Code: OpThrottle, Key: []byte("a"), GCRA: mustParams(t, 5, 1, 1, 1)}, {Code: OpFlushAll}})
	data[len(data)-1] = 42 // the FLUSHALL becomes op code 42
	out := f.ApplyBatch([]*raft.Log{commandLog(1, data)})
	if _, ok := out[0].(error); !ok || len(fatal) != 1 {
		t.Fatalf("an unknown op code: apply answered %v, OnFatal called %d times", out[0], len(fatal))
	}
	if _, err := f.Snapshot(); !errors.Is(err, errStopped) {
		t.Fatalf("Snapshot after a fatal entry: %v, want errStopped", err)
	}
}
