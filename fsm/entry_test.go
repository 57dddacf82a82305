package fsm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/redcell/redcell/gcra"
	"github.com/redcell/redcell/request"
)

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// opString shows the fields that r's code uses: its key or keys (nil and
// empty print alike: both encode as length 0) and its arguments.
func opString(r *request.Request) string {
	if r.Code.MultiKey() {
		return fmt.Sprintf("{%d %q %v}", r.Code, r.Keys, r.Args[:r.NArgs])
	}
	return fmt.Sprintf("{%d %q %v}", r.Code, r.Key, r.Args[:r.NArgs])
}

// decodeAll decodes every request of data, calling fn with each (the
// request is reused).
func decodeAll(d *Decoder, data []byte, fn func(*request.Request)) error {
	if err := d.Reset(data); err != nil {
		return err
	}
	var op request.Request
	for {
		ok, err := d.Next(&op)
		if err != nil {
			return err
		}
		if !ok {
			return nil
		}
		if fn != nil {
			fn(&op)
		}
	}
}

func TestEntryRoundTrip(t *testing.T) {
	g := newOpGen(1, 30)
	var enc Encoder
	var dec Decoder
	for n := 0; n < 500; n++ {
		ops := make([]request.Request, g.rng.IntN(40))
		for i := range ops {
			ops[i] = g.op()
			if i%13 == 5 { // extremes of the integer fields
				ops[i] = throttleReq(nil, gcra.Params{Interval: -1 << 63, Limit: 1<<63 - 1, Quantity: -1})
			}
		}
		stamp := g.rng.Int64() - 1<<62
		enc.Reset(stamp) // the encoder is reused, as the proposer does
		for i := range ops {
			enc.Add(&ops[i])
		}
		if enc.Count() != len(ops) {
			t.Fatalf("Count = %d, want %d", enc.Count(), len(ops))
		}
		data := enc.Finish()
		if enc.Len() != len(data) {
			t.Fatalf("Len = %d, entry has %d bytes", enc.Len(), len(data))
		}
		i := 0
		err := decodeAll(&dec, data, func(op *request.Request) {
			want := ops[i]
			if opString(op) != opString(&want) {
				t.Fatalf("entry %d op %d: decoded %s, encoded %s", n, i, opString(op), opString(&want))
			}
			i++
		})
		if err != nil || i != len(ops) || dec.Stamp != stamp || dec.Count != len(ops) {
			t.Fatalf("entry %d: decoded %d of %d ops, stamp %d (want %d), count %d, err %v", n, i, len(ops), dec.Stamp, stamp, dec.Count, err)
		}
	}
}

// TestDecodeDoesNotAllocate: keys alias the entry (which the FSM holds
// until apply ends) and the DEL key list is reused, so a warm decoder
// allocates nothing.
func TestDecodeDoesNotAllocate(t *testing.T) {
	data := encodeEntry(1, []request.Request{throttleReq([]byte("abc"), gcra.Params{Interval: 1, Limit: 1, Quantity: 1}),
		{Code: request.Del, Keys: [][]byte{[]byte("x"), []byte("y")}}})
	var d Decoder
	_ = decodeAll(&d, data, nil) // warm the key list
	var op request.Request
	decode := func() {
		if err := d.Reset(data); err != nil {
			t.Fatal(err)
		}
		for {
			if ok, err := d.Next(&op); !ok || err != nil {
				return
			}
		}
	}
	if allocs := testing.AllocsPerRun(50, decode); allocs != 0 {
		t.Errorf("decoding allocates %v times per entry", allocs)
	}
	_ = decodeAll(&d, data, func(op *request.Request) {
		// code, key count, key length, key
		if op.Code == request.Throttle && &op.Key[0] != &data[entryHeaderLen+3] {
			t.Errorf("the key is a copy, not a slice of the entry")
		}
	})
}

func TestDecodeErrors(t *testing.T) {
	good := encodeEntry(7, []request.Request{{Code: request.Del, Keys: [][]byte{[]byte("k")}}})
	withVersion := func(v byte) []byte { b := bytes.Clone(good); b[0] = v; return b }
	withCount := func(n uint32) []byte { b := bytes.Clone(good); binary.LittleEndian.PutUint32(b[9:13], n); return b }
	tests := []struct {
		name       string
		data       []byte
		unknownVer bool
	}{
		{"empty", nil, false},
		{"short header", good[:12], false},
		{"version 0", withVersion(0), true},
		{"version 3", withVersion(3), true},
		{"version 255", withVersion(255), true},
		{"count too large", withCount(1 << 31), false},
		{"count one more", withCount(2), false},
		{"count zero with ops", withCount(0), false},
		{"trailing byte", append(bytes.Clone(good), 0), false},
		{"truncated op", good[:len(good)-1], false},
		{"unknown request code", append(withCount(2), 9, 0, 0), false},
		{"request code 0", append(withCount(2), 0, 0, 0), false},
		{"key longer than the entry", append(withCount(2), byte(request.Throttle), 1, 200, 'a'), false},
		{"missing integers", append(withCount(2), byte(request.Throttle), 1, 1, 'a', 3, 2), false},
		{"varint overflow", append(withCount(2), byte(request.Throttle), 1, 0, 3, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0, 0), false},
		{"key count beyond the entry", append(withCount(2), byte(request.Del), 100, 0), false},
		{"two keys for a single-key code", append(withCount(2), byte(request.Throttle), 2, 1, 'a', 1, 'b', 0), false},
		{"more arguments than a request holds", append(withCount(2), byte(request.DBSize), 0, request.MaxArgs+1), false},
	}
	for _, tt := range tests {
		var d Decoder
		err := decodeAll(&d, tt.data, nil)
		if err == nil {
			t.Errorf("%s: decoded without error", tt.name)
			continue
		}
		if errors.Is(err, ErrUnknownVersion) != tt.unknownVer {
			t.Errorf("%s: errors.Is(%v, ErrUnknownVersion) = %v, want %v", tt.name, err, !tt.unknownVer, tt.unknownVer)
		}
	}
	var d Decoder
	if err := decodeAll(&d, encodeEntry(0, nil), nil); err != nil {
		t.Errorf("an entry with no ops: %v", err)
	}
}

// FuzzDecode: arbitrary bytes never panic the decoder or the state machine,
// never make the decoder allocate more than a small multiple of their size,
// and whatever decodes (version 1 or 2) re-encodes to a version 2 entry
// that decodes the same.
func FuzzDecode(f *testing.F) {
	g := newOpGen(3, 5)
	for i := 0; i < 8; i++ {
		ops := make([]request.Request, i)
		for j := range ops {
			ops[j] = g.op()
		}
		f.Add(encodeEntry(int64(i)*1e9, ops))
	}
	f.Add([]byte{2, 0, 0, 0, 0, 0, 0, 0, 0, 255, 255, 255, 255})
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 0, 0, 255, 255, 255, 255})
	f.Add([]byte{2})
	// Version 1 entries, as older nodes wrote them.
	for i := 0; i < 4; i++ {
		ops := make([]request.Request, i+1)
		for j := range ops {
			ops[j] = g.v1op()
		}
		f.Add(encodeV1Entry(int64(i)*1e9, ops))
	}
	// At the limits: a DEL whose key count takes two varint bytes (small:
	// big seeds slow the fuzzer down; TestEncoderOutputAlwaysDecodes has the
	// million-key DELs), empty keys, int64 extremes, and an op that apply
	// refuses (T = 0) without stopping.
	many := make([][]byte, 200)
	for i := range many {
		many[i] = []byte{byte(i)}
	}
	f.Add(encodeEntry(-1, []request.Request{{Code: request.Del, Keys: many}, {Code: request.Del, Keys: make([][]byte, 3)}, {Code: request.FlushAll}}))
	f.Add(encodeEntry(1<<63-1, []request.Request{
		throttleReq([]byte{}, gcra.Params{Interval: 0, Limit: 1, Quantity: 1}),
		throttleReq([]byte("k"), gcra.Params{Interval: -1 << 63, Limit: -1 << 63, Quantity: 1<<63 - 1}),
	}))
	f.Fuzz(func(t *testing.T, data []byte) {
		var d Decoder
		var err error
		n := allocatedBytes(func() { err = decodeAll(&d, data, nil) })
		if limit := uint64(64<<10 + 64*len(data)); n > limit { // slack: the fuzz engine allocates too
			t.Fatalf("decoding %d bytes allocated %d (limit %d)", len(data), n, limit)
		}
		if err == nil {
			var ops []string
			var enc Encoder
			enc.Reset(d.Stamp)
			_ = decodeAll(&d, data, func(op *request.Request) {
				ops = append(ops, opString(op))
				cp := *op
				cp.Keys = append([][]byte(nil), op.Keys...)
				enc.Add(&cp)
			})
			var again []string
			if err := decodeAll(&d, enc.Finish(), func(op *request.Request) { again = append(again, opString(op)) }); err != nil {
				t.Fatalf("re-encoded entry does not decode: %v", err)
			}
			if fmt.Sprint(ops) != fmt.Sprint(again) {
				t.Fatalf("re-encoded entry decodes to %v, first %v", again, ops)
			}
		}
		// Apply never panics, whatever the entry holds.
		fatal := 0
		fsm := New(Config{Stripes: 1, Logger: discardLogger(), OnFatal: func(error) { fatal++ }})
		out := fsm.ApplyBatch([]*raft.Log{commandLog(1, data)})
		if _, isErr := out[0].(error); isErr != (err != nil) || fatal != boolInt(err != nil) {
			t.Fatalf("decode error %v, apply returned %v, OnFatal called %d times", err, out[0], fatal)
		}
	})
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
