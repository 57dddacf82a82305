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
	"github.com/redcell/redcell/request"
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

func (g *limitGen) op() request.Request {
	switch g.rng.IntN(4) {
	case 0:
		return throttleReq(g.key(), gcra.Params{Interval: g.int64(), Limit: g.int64(), Quantity: g.int64()})
	case 1:
		keys := make([][]byte, g.rng.IntN(20))
		for i := range keys {
			keys[i] = g.key()
		}
		code := request.Del
		if g.rng.IntN(2) == 0 {
			code = request.Exists
		}
		return request.Request{Code: code, Keys: keys}
	case 2:
		// Reads travel in entries too (MULTI): every single-key code, with
		// the arguments a future parser might give them.
		r := request.Request{Code: []request.Code{request.Peek, request.PTTL, request.TTL, request.Type}[g.rng.IntN(4)], Key: g.key()}
		r.NArgs = uint8(g.rng.IntN(request.MaxArgs + 1))
		for i := range r.Args[:r.NArgs] {
			r.Args[i] = g.int64()
		}
		return r
	}
	return request.Request{Code: []request.Code{request.FlushAll, request.DBSize}[g.rng.IntN(2)]}
}

// hugeDel is a DEL of n single-byte keys.
func (g *limitGen) hugeDel(n int) request.Request {
	return request.Request{Code: request.Del, Keys: g.small[:n:n]}
}

// sameOp compares the fields a's code uses (nil and empty keys are equal:
// both encode as length 0).
func sameOp(a, b *request.Request) bool {
	if a.Code != b.Code || a.NArgs != b.NArgs || a.Args != b.Args || !bytes.Equal(a.Key, b.Key) || len(a.Keys) != len(b.Keys) {
		return false
	}
	for i := range a.Keys {
		if !bytes.Equal(a.Keys[i], b.Keys[i]) {
			return false
		}
	}
	return true
}

func describe(r *request.Request) string {
	if r.Code.MultiKey() {
		return fmt.Sprintf("{code %d, %d keys, args %v}", r.Code, len(r.Keys), r.Args[:r.NArgs])
	}
	return fmt.Sprintf("{code %d, key of %d bytes, args %v}", r.Code, len(r.Key), r.Args[:r.NArgs])
}

// roundTrip encodes ops into enc (checking request.EncodedLen, which the
// parser limits requests by, against what Add wrote for every request),
// decodes the entry and requires the same requests back.
func roundTrip(t *testing.T, enc *Encoder, dec *Decoder, stamp int64, ops []request.Request) {
	t.Helper()
	enc.Reset(stamp)
	for i := range ops {
		before := enc.Len()
		enc.Add(&ops[i])
		if got, want := request.EncodedLen(&ops[i]), enc.Len()-before; got != want {
			t.Fatalf("request %d %s: EncodedLen = %d, Add wrote %d bytes", i, describe(&ops[i]), got, want)
		}
	}
	data := enc.Finish()
	if err := dec.Reset(data); err != nil {
		t.Fatalf("an entry of %d ops (%d bytes) from the Encoder: header refused: %v", len(ops), len(data), err)
	}
	if dec.Stamp != stamp || dec.Count != len(ops) {
		t.Fatalf("header: stamp %d count %d, want %d %d", dec.Stamp, dec.Count, stamp, len(ops))
	}
	var op request.Request
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
			roundTrip(t, &enc, &dec, int64(n), []request.Request{g.hugeDel(n)})
		}
		// Around other ops, and two in one entry.
		roundTrip(t, &enc, &dec, math.MinInt64, []request.Request{g.op(), g.hugeDel(hugeDelKeys), {Code: request.FlushAll}, g.hugeDel(1 << 20), g.op()})
	})
	t.Run("random ops", func(t *testing.T) {
		for n := 0; n < 300; n++ {
			ops := make([]request.Request, 1+g.rng.IntN(8))
			for i := range ops {
				ops[i] = g.op()
			}
			roundTrip(t, &enc, &dec, g.int64(), ops)
		}
	})
	t.Run("many ops", func(t *testing.T) {
		for _, n := range []int{1 << 10, 1 << 16, 1<<20 + 3} {
			ops := make([]request.Request, n)
			for i := range ops {
				switch i % 3 {
				case 0:
					ops[i] = request.Request{Code: request.FlushAll} // the smallest request: 3 bytes
				case 1:
					ops[i] = request.Request{Code: request.Del}
				default:
					ops[i] = throttleReq(g.small[i%len(g.small)], gcra.Params{Interval: g.int64(), Limit: 1, Quantity: -1})
				}
			}
			roundTrip(t, &enc, &dec, 1, ops)
		}
	})
}

// TestDecodeBoundsCountsByTheBytesLeft: a count larger than the bytes that
// remain is refused before anything is allocated for it; exactly as many
// (the smallest requests and keys, one byte each) passes that check.
func TestDecodeBoundsCountsByTheBytesLeft(t *testing.T) {
	flushes := encodeEntry(1, []request.Request{{Code: request.FlushAll}, {Code: request.FlushAll}, {Code: request.FlushAll}})
	var d Decoder
	if err := decodeAll(&d, flushes, nil); err != nil {
		t.Fatalf("3 FLUSHALLs: %v", err)
	}
	left := uint32(len(flushes) - entryHeaderLen)
	asMany := bytes.Clone(flushes)
	binary.LittleEndian.PutUint32(asMany[9:13], left)
	if err := d.Reset(asMany); err != nil {
		t.Errorf("a request count of the bytes left was refused by the header check: %v", err)
	}
	tooMany := bytes.Clone(flushes)
	binary.LittleEndian.PutUint32(tooMany[9:13], left+1)
	if err := d.Reset(tooMany); err == nil {
		t.Errorf("a request count beyond the bytes left passed the header check")
	}
	for _, data := range [][]byte{asMany, tooMany} {
		if err := decodeAll(&d, data, nil); err == nil {
			t.Errorf("an entry of 3 requests claiming %d decoded", binary.LittleEndian.Uint32(data[9:13]))
		}
	}
	empties := encodeEntry(1, []request.Request{{Code: request.Del, Keys: make([][]byte, 5)}})
	if err := decodeAll(&d, empties, func(op *request.Request) {
		if len(op.Keys) != 5 {
			t.Errorf("decoded %d empty keys, want 5", len(op.Keys))
		}
	}); err != nil {
		t.Fatalf("5 empty keys: %v", err)
	}
	oneMore := bytes.Clone(empties)
	oneMore[entryHeaderLen+1] = 7 // the key count: one more than the 6 bytes left (5 keys, the argument count)
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
	var setup []request.Request
	for _, i := range live {
		setup = append(setup, throttleReq(keys[i], p))
	}
	setup = append(setup, throttleReq([]byte("other"), p))
	applyOne(t, f, commandLog(1, encodeEntry(t0, setup)))

	res := applyOne(t, f, commandLog(2, encodeEntry(t0, []request.Request{{Code: request.Del, Keys: keys}})))
	if want := (request.Result{Kind: request.KindInt, Ints: [5]int64{int64(len(live))}}); len(res) != 1 || !res[0].Equal(want) {
		t.Fatalf("DEL of %d keys: %+v, want %+v", len(keys), res, want)
	}
	after := applyOne(t, f, commandLog(3, encodeEntry(t0, []request.Request{
		throttleReq(keys[hugeDelKeys-1], p), // fresh again
		throttleReq([]byte("other"), p),     // untouched by the DEL
	})))
	want := []request.Result{
		{Kind: request.KindThrottle, Ints: [5]int64{0, 6, 5, -1, 1}},
		{Kind: request.KindThrottle, Ints: [5]int64{0, 6, 4, -1, 2}},
	}
	if !equalResults(after, want) {
		t.Fatalf("after the DEL: %+v, want %+v", after, want)
	}
	if fatal != 0 {
		t.Fatalf("OnFatal called %d times", fatal)
	}
}

// TestInvalidOpIsRefusedNotFatal: an op that decodes but that apply cannot
// honour answers request.ErrInvalidOp and changes nothing — the entry's other ops
// apply, the state is exactly as if it had not been there, OnFatal is never
// called, and later entries apply.
func TestInvalidOpIsRefusedNotFatal(t *testing.T) {
	fatal := 0
	f := New(Config{Stripes: 2, Logger: discardLogger(), OnFatal: func(error) { fatal++ }})
	ref := quietFSM(2) // the same log without the invalid ops
	p := mustParams(t, 5, 1, 1, 1)
	zeroT := gcra.Params{Interval: 0, Limit: 6, Quantity: 1}
	a, b := []byte("a"), []byte("b")

	withInvalid := []request.Request{
		throttleReq(a, p),
		throttleReq(a, zeroT), // on a live key
		throttleReq(b, zeroT), // on a missing key
		throttleReq(a, p),
	}
	res := applyOne(t, f, commandLog(1, encodeEntry(t0, withInvalid)))
	refRes := applyOne(t, ref, commandLog(1, encodeEntry(t0, []request.Request{withInvalid[0], withInvalid[3]})))
	invalid := request.Result{Kind: request.KindError, Err: request.ErrInvalidOp}
	want := []request.Result{refRes[0], invalid, invalid, refRes[1]}
	if !equalResults(res, want) {
		t.Fatalf("results %+v, want %+v", res, want)
	}
	if !bytes.Equal(snapshotBytes(t, f), snapshotBytes(t, ref)) {
		t.Fatalf("the refused ops changed the state")
	}
	later := encodeEntry(t0+1e9, []request.Request{throttleReq(a, p), {Code: request.Del, Keys: [][]byte{a, b}}})
	got, wantLater := applyOne(t, f, commandLog(2, later)), applyOne(t, ref, commandLog(2, later))
	if !equalResults(got, wantLater) || !got[1].Equal(request.Result{Kind: request.KindInt, Ints: [5]int64{1}}) {
		t.Fatalf("the next entry: %+v, want %+v", got, wantLater)
	}
	if fatal != 0 {
		t.Fatalf("OnFatal called %d times for an invalid op", fatal)
	}
	if _, err := f.Snapshot(); err != nil {
		t.Fatalf("Snapshot after an invalid op: %v", err)
	}
}

// TestValidRequest: only what the parser never produces is refused. Negative
// intervals and limits, limit 0 and refunds are CL.THROTTLE requests the
// spec answers; T = 0 is not, nor a key no snapshot can hold, nor arguments
// in a number the code does not take.
func TestValidRequest(t *testing.T) {
	for _, in := range [][4]int64{{-1, 1, 1, 1}, {-2, 1, 1, 1}, {5, -3, 1, 1}, {5, 1, -1, 1}, {5, 1, 1, -10}, {5, 1, 1, 0},
		{math.MaxInt64, 1, 1, math.MinInt64}, {5, 1, math.MaxInt64, math.MaxInt64}} {
		p, err := gcra.NewParams(in[0], in[1], in[2], in[3])
		if err != nil {
			t.Fatalf("NewParams%v: %v", in, err)
		}
		for _, r := range []request.Request{throttleReq([]byte("k"), p), peekReq([]byte("k"), p)} {
			if why := validRequest(&r); why != "" {
				t.Errorf("code %d with NewParams%v = %+v refused: %s", r.Code, in, p, why)
			}
		}
	}
	for _, op := range []request.Request{
		{Code: request.Del}, {Code: request.FlushAll}, {Code: request.Exists}, {Code: request.DBSize}, {Code: request.Type, Key: []byte("k")},
		throttleReq(make([]byte, maxSnapshotKey), gcra.Params{Interval: 1}),
		peekReq(make([]byte, maxSnapshotKey+1), gcra.Params{Interval: 1}), // a peek stores nothing
	} {
		if why := validRequest(&op); why != "" {
			t.Errorf("%s refused: %s", describe(&op), why)
		}
	}
	twoArgs := throttleReq(nil, gcra.Params{Interval: 1})
	twoArgs.NArgs = 2
	delWithArg := request.Request{Code: request.Del}
	delWithArg.SetArgs(1)
	for _, op := range []request.Request{
		throttleReq(nil, gcra.Params{Interval: 0, Limit: 1, Quantity: 1}),
		peekReq(nil, gcra.Params{Interval: 0, Limit: 1, Quantity: 1}),
		throttleReq(make([]byte, maxSnapshotKey+1), gcra.Params{Interval: 1}),
		twoArgs,
		delWithArg,
	} {
		if validRequest(&op) == "" {
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
	data := encodeEntry(t0, []request.Request{throttleReq([]byte("a"), mustParams(t, 5, 1, 1, 1)), {Code: request.FlushAll}})
	data[len(data)-3] = 42 // the FLUSHALL becomes request code 42
	out := f.ApplyBatch([]*raft.Log{commandLog(1, data)})
	if _, ok := out[0].(error); !ok || len(fatal) != 1 {
		t.Fatalf("an unknown op code: apply answered %v, OnFatal called %d times", out[0], len(fatal))
	}
	if _, err := f.Snapshot(); !errors.Is(err, errStopped) {
		t.Fatalf("Snapshot after a fatal entry: %v, want errStopped", err)
	}
}
