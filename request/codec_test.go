package request

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"
)

var allCodes = []Code{Throttle, Del, FlushAll, TBTake, SLHit, Peek, Exists, PTTL, TTL, Type, DBSize, TBPeek, SLPeek,
	Set, StrAppend, MSet, Get, MGet}

var edgeInts = []int64{0, 1, -1, 127, 128, -129, math.MaxInt64, math.MinInt64, math.MaxInt32, math.MinInt32}

func randomRequest(rng *rand.Rand) Request {
	r := Request{Code: allCodes[rng.IntN(len(allCodes))]}
	key := func(big bool) []byte {
		n := []int{0, 1, 2, 127, 128, 300, 70_000}[rng.IntN(7)]
		if !big {
			n %= 200
		}
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		return b
	}
	switch keyShape(r.Code) {
	case -1:
		n := []int{0, 1, 2, 100, 5000}[rng.IntN(5)]
		r.Keys = make([][]byte, n)
		for i := range r.Keys {
			r.Keys[i] = key(false)
		}
		if Describe(r.Code).Keys == KeyValue {
			r.Key = key(true) // the key, then the values
		}
	case 1:
		r.Key = key(true)
	}
	r.NArgs = uint8(rng.IntN(MaxArgs + 1))
	for i := 0; i < int(r.NArgs); i++ {
		if rng.IntN(2) == 0 {
			r.Args[i] = edgeInts[rng.IntN(len(edgeInts))]
		} else {
			r.Args[i] = int64(rng.Uint64())
		}
	}
	return r
}

func sameRequest(a, b *Request) bool {
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

// Whatever Append writes, Decode reads back unchanged, and EncodedLen
// predicts its size exactly; several requests in a row decode in order.
func TestEveryEncodingDecodes(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var dec Decoder
	for round := 0; round < 300; round++ {
		reqs := make([]Request, 1+rng.IntN(8))
		var buf []byte
		for i := range reqs {
			reqs[i] = randomRequest(rng)
			before := len(buf)
			buf = Append(buf, &reqs[i])
			if got, want := len(buf)-before, EncodedLen(&reqs[i]); got != want {
				t.Fatalf("EncodedLen %d, Append wrote %d (code %d)", want, got, reqs[i].Code)
			}
		}
		rest := buf
		for i := range reqs {
			var got Request
			var err error
			if rest, err = dec.Decode(rest, &got); err != nil {
				t.Fatalf("round %d request %d (code %d): %v", round, i, reqs[i].Code, err)
			}
			if !sameRequest(&got, &reqs[i]) {
				t.Fatalf("round %d request %d: decoded %+v, want %+v", round, i, got.Code, reqs[i].Code)
			}
		}
		if len(rest) != 0 {
			t.Fatalf("round %d: %d bytes left", round, len(rest))
		}
	}
}

// A DEL of 1,048,577 one-byte keys (the request that once poisoned the log)
// round-trips like any other.
func TestHugeKeyListDecodes(t *testing.T) {
	keys := make([][]byte, 1<<20+1)
	for i := range keys {
		keys[i] = []byte{byte(i)}
	}
	r := Request{Code: Del, Keys: keys}
	buf := Append(nil, &r)
	var got Request
	var dec Decoder
	if rest, err := dec.Decode(buf, &got); err != nil || len(rest) != 0 || len(got.Keys) != len(keys) {
		t.Fatalf("decoded %d keys, %d bytes left, err %v", len(got.Keys), len(rest), err)
	}
}

func TestCorruptionIsAnErrorNotAPanic(t *testing.T) {
	r := Request{Code: Throttle, Key: []byte("user:1")}
	r.SetArgs(1e9, 16, 1)
	good := Append(nil, &r)
	var dec Decoder
	var got Request
	for cut := 0; cut < len(good); cut++ {
		if _, err := dec.Decode(good[:cut], &got); err == nil {
			t.Errorf("a request cut to %d of %d bytes decoded", cut, len(good))
		}
	}
	bad := append([]byte(nil), good...)
	bad[0] = 200
	if _, err := dec.Decode(bad, &got); err == nil {
		t.Error("an unknown code decoded")
	}
	bad = append([]byte{byte(Throttle)}, 2, 1, 'a', 1, 'b', 0) // two keys for a one-key code
	if _, err := dec.Decode(bad, &got); err == nil {
		t.Error("a one-key code with two keys decoded")
	}
	bad = []byte{byte(FlushAll), 0, MaxArgs + 1}
	if _, err := dec.Decode(bad, &got); err == nil {
		t.Error("too many arguments decoded")
	}
	bad = []byte{byte(Del), 0xff, 0xff, 0xff, 0xff, 0x0f} // a huge declared key count
	if _, err := dec.Decode(bad, &got); err == nil {
		t.Error("a key count beyond the bytes decoded")
	}
}

func TestResultsRoundTrip(t *testing.T) {
	cases := []Result{
		{Kind: KindThrottle, Ints: [5]int64{0, 16, 15, -1, 2}},
		{Kind: KindThrottle, Ints: [5]int64{1, math.MaxInt64, math.MinInt64, 7, 8}},
		{Kind: KindInt, Ints: [5]int64{-2}},
		{Kind: KindType, Ints: [5]int64{3}},
		{Kind: KindOK},
		{Kind: KindError, Err: ErrWrongType},
		{Kind: KindKeys},
		{Kind: KindKeys, Data: AppendItem(AppendItem(nil, []byte("a")), []byte{})},
		{Kind: KindScan, Ints: [5]int64{-1}, Data: AppendItem(nil, bytes.Repeat([]byte{0, '\r', '\n'}, 100))},
		{Kind: KindScan, Ints: [5]int64{12345}},
		{Kind: KindBulk, Data: []byte("value\r\n")},
		{Kind: KindBulk},
		{Kind: KindNil},
		{Kind: KindBulks, Data: AppendBulkItem(AppendBulkItem(AppendBulkItem(nil, []byte("a"), false), nil, true), []byte{}, false)},
		{Kind: KindArray, Data: AppendItem(AppendItem(nil, []byte("x")), []byte{})},
		{Kind: KindMap, Data: AppendItem(AppendItem(nil, []byte("f")), []byte("v"))},
		{Kind: KindSet},
		{Kind: KindDouble, Data: []byte("0.10000000000000001")},
		{Kind: KindScored, Data: AppendItem(AppendItem(nil, []byte("m")), []byte("-inf"))},
		{Kind: KindInts, Data: AppendIntItem(AppendIntItem(nil, math.MinInt64), 0)},
		{Kind: KindNilArray},
		{Kind: KindDoubles, Data: AppendItem(AppendItem(nil, []byte("1.5")), []byte("0"))},
		{Kind: KindReply, Data: []byte("*3\r\n:1\r\n%1\r\n+a\r\n,1.5\r\n_\r\n")},
	}
	var buf []byte
	for i := range cases {
		buf = AppendResult(buf, &cases[i])
	}
	for i := range cases {
		var got Result
		var err error
		if buf, err = DecodeResult(buf, &got); err != nil || !sameResult(got, cases[i]) {
			t.Fatalf("result %d: %+v, %v; want %+v", i, got, err, cases[i])
		}
	}
	if _, err := DecodeResult([]byte{99, 0}, new(Result)); err == nil {
		t.Error("an unknown result kind decoded")
	}
	// A map or scored list of an odd number of items is corrupt, and so is
	// a KindInts array ending inside a varint.
	if _, err := DecodeResult(AppendResult(nil, &Result{Kind: KindMap, Data: AppendItem(nil, []byte("f"))}), new(Result)); err == nil {
		t.Error("a map of one item decoded")
	}
	if _, err := DecodeResult(AppendResult(nil, &Result{Kind: KindInts, Data: []byte{0x80}}), new(Result)); err == nil {
		t.Error("a truncated KindInts array decoded")
	}
	// A list whose items overrun it is corrupt.
	if _, err := DecodeResult([]byte{byte(KindKeys), 0, 2, 5, 'a'}, new(Result)); err == nil {
		t.Error("a corrupt key list decoded")
	}
}

// TestBulkItems: an MGET array keeps nils apart from empty strings.
func TestBulkItems(t *testing.T) {
	data := AppendBulkItem(AppendBulkItem(AppendBulkItem(nil, []byte("a"), false), nil, true), []byte{}, false)
	var got []string
	Items(data, func(item []byte) {
		if b, ok := BulkItem(item); ok {
			got = append(got, "'"+string(b)+"'")
		} else {
			got = append(got, "nil")
		}
	})
	if len(got) != 3 || got[0] != "'a'" || got[1] != "nil" || got[2] != "''" {
		t.Errorf("bulk items: %v", got)
	}
}

func sameResult(a, b Result) bool {
	return a.Kind == b.Kind && a.Err == b.Err && a.Ints == b.Ints && bytes.Equal(a.Data, b.Data)
}

// TestItems: AppendItem and Items round-trip any items, empty ones too.
func TestItems(t *testing.T) {
	want := []string{"", "a", string(bytes.Repeat([]byte("x"), 300)), "\x00\xff"}
	var data []byte
	for _, w := range want {
		data = AppendItem(data, []byte(w))
	}
	var got []string
	if n := Items(data, func(b []byte) { got = append(got, string(b)) }); n != len(want) || len(got) != len(want) {
		t.Fatalf("%d items, want %d", n, len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("item %d: %q, want %q", i, got[i], want[i])
		}
	}
}

func FuzzDecode(f *testing.F) {
	r := Request{Code: Throttle, Key: []byte("k")}
	r.SetArgs(1, 2, 3)
	f.Add(Append(nil, &r))
	f.Add(Append(nil, &Request{Code: Del, Keys: [][]byte{[]byte("a"), nil}}))
	f.Add([]byte{byte(DBSize), 0, 0})
	tb := Request{Code: TBTake, Key: []byte("bucket")}
	tb.SetArgs(10, 1, 1000, -3, 1)
	f.Add(Append(nil, &tb))
	sl := Request{Code: SLPeek, Key: []byte("log")}
	sl.SetArgs(math.MaxInt64, 1, 1, 0, 0)
	f.Add(Append(nil, &sl))
	f.Fuzz(func(t *testing.T, data []byte) {
		var dec, dec2 Decoder
		var got Request
		_, err := dec.Decode(data, &got)
		if err != nil {
			return
		}
		// What decoded re-encodes to something that decodes the same
		// (byte equality would be too strict: Go's varint decoder also
		// accepts redundant high bytes, which the encoder never writes).
		var again Request
		if _, err := dec2.Decode(Append(nil, &got), &again); err != nil || !sameRequest(&got, &again) {
			t.Fatalf("re-encoding %x did not round-trip: %v", data, err)
		}
	})
}

// FuzzDecodeResult: arbitrary bytes never panic the result decoder; what it
// accepts is a prefix of the input (the rest is returned untouched) that
// re-encodes to a result decoding the same, and a result of an unknown kind
// is refused.
func FuzzDecodeResult(f *testing.F) {
	var r Result
	r.Kind = KindThrottle
	r.Ints = [5]int64{0, 10, 9, -1, math.MaxInt64}
	f.Add(AppendResult(nil, &r))
	r = Result{}
	r.SetInt(math.MinInt64)
	f.Add(AppendResult([]byte{}, &r))
	r = Result{}
	r.SetErr(ErrInvalidOp)
	f.Add(AppendResult(AppendResult(nil, &r), &r))
	r = Result{Kind: KindNil}
	f.Add(AppendResult(nil, &r))
	r = Result{Kind: KindBulks, Data: AppendBulkItem(AppendBulkItem(nil, []byte("v"), true), nil, false)}
	f.Add(AppendResult(nil, &r))
	r = Result{Kind: KindScored, Data: AppendItem(AppendItem(nil, []byte("m")), []byte("1.5"))}
	f.Add(AppendResult(nil, &r))
	r = Result{Kind: KindInts, Data: AppendIntItem(AppendIntItem(nil, -1), math.MaxInt64)}
	f.Add(AppendResult(nil, &r))
	r = Result{Kind: KindDouble, Data: []byte("inf")}
	f.Add(AppendResult(nil, &r))
	f.Add([]byte{byte(kindLast) + 1, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		var got Result
		rest, err := DecodeResult(data, &got)
		if err != nil {
			return
		}
		if got.Kind < KindThrottle || got.Kind > kindLast {
			t.Fatalf("kind %d accepted", got.Kind)
		}
		if len(rest) > len(data)-2 || !bytes.Equal(rest, data[len(data)-len(rest):]) {
			t.Fatalf("the rest is not the input's tail")
		}
		var again Result
		if left, err := DecodeResult(AppendResult(nil, &got), &again); err != nil || len(left) != 0 || !again.Equal(got) {
			t.Fatalf("result %+v re-encodes to %+v (%v, %d left)", got, again, err, len(left))
		}
	})
}
