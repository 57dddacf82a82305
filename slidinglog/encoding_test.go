package slidinglog

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"math"
	"slices"
	"strings"
	"testing"
)

func le(t int64) string {
	return hex.EncodeToString(binary.LittleEndian.AppendUint64(nil, uint64(t)))
}

// TestEncode_Golden pins the format byte for byte: it is what the keyspace
// stores and snapshots carry.
func TestEncode_Golden(t *testing.T) {
	for _, tc := range []struct {
		runs []Run
		hex  string
	}{
		{nil, ""},
		{[]Run{{1, 1}}, le(1) + "01" + "01"},
		{[]Run{{now0, 10000}}, le(now0) + "904e" + "904e"},
		// newest 20 ×3, total 6, last 3, gap 5; older: 10 ×2, then +5 ×1.
		{[]Run{{10, 2}, {15, 1}, {20, 3}}, le(20) + "06" + "03" + "05" + le(10) + "02" + "05" + "01"},
		{[]Run{{math.MinInt64, 1}, {math.MaxInt64, math.MaxInt64 - 1}},
			le(math.MaxInt64) + "ffffffffffffffff7f" + "feffffffffffffff7f" + "ffffffffffffffffff01" + le(math.MinInt64) + "01"},
	} {
		got := Encode(nil, tc.runs)
		if hex.EncodeToString(got) != tc.hex {
			t.Errorf("Encode(%v) = %x, want %s", tc.runs, got, tc.hex)
		}
		back, err := Decode(nil, got)
		if err != nil || !slices.Equal(back, tc.runs) {
			t.Errorf("Decode(%x) = %v, %v", got, back, err)
		}
	}
}

func TestDecode_RejectsNonCanonical(t *testing.T) {
	good := Encode(nil, []Run{{10, 2}, {15, 1}, {20, 3}})
	for _, tc := range []struct {
		name string
		hex  string
	}{
		{"short header", le(1)[:14]},
		{"header only newest", le(1)},
		{"total 0", le(1) + "00" + "00"},
		{"last 0", le(1) + "01" + "00"},
		{"last > total", le(1) + "01" + "02"},
		{"total > 2^63−1", le(1) + "80808080808080808001" + "01"},
		{"non-minimal total", le(1) + "8100" + "01"},
		{"non-minimal last", le(1) + "01" + "8100"},
		{"trailing byte after one run", le(1) + "01" + "01" + "00"},
		{"gap 0", le(20) + "02" + "01" + "00" + le(10) + "01"},
		{"missing body", le(20) + "02" + "01" + "05"},
		{"body short of total", le(20) + "06" + "03" + "05" + le(10) + "02"},
		{"body beyond total", le(20) + "06" + "03" + "05" + le(10) + "02" + "05" + "02"},
		{"trailing after body", hex.EncodeToString(good) + "00"},
		{"last older run not at prev", le(20) + "06" + "03" + "04" + le(10) + "02" + "05" + "01"},
		{"older run after prev", le(20) + "06" + "03" + "05" + le(16) + "02" + "01" + "01"},
		{"count 0 in body", le(20) + "03" + "01" + "05" + le(10) + "00" + "05" + "02"},
		{"dt 0", le(20) + "06" + "03" + "05" + le(15) + "02" + "00" + "01"},
		{"non-minimal dt", le(20) + "06" + "03" + "05" + le(10) + "02" + "8500" + "01"},
		{"non-minimal count", le(20) + "06" + "03" + "05" + le(10) + "8200" + "05" + "01"},
		{"gap below MinInt64", le(math.MinInt64+1) + "02" + "01" + "02" + le(math.MinInt64) + "01"},
		{"time past MaxInt64", le(20) + "03" + "01" + "05" + le(math.MaxInt64) + "01" + "01" + "01"},
	} {
		b, err := hex.DecodeString(tc.hex)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		dst := []Run{{7, 7}}
		got, err := Decode(dst, b)
		if err == nil || len(got) != 1 || !strings.Contains(err.Error(), "malformed") {
			t.Errorf("%s: Decode(%x) = %v, %v; want an error and dst unchanged", tc.name, b, got, err)
		}
	}
}

func TestEncode_PanicsOnInvalidRuns(t *testing.T) {
	for _, runs := range [][]Run{
		{{1, 0}}, {{1, -1}}, {{2, 1}, {2, 1}}, {{3, 1}, {2, 1}}, {{1, math.MaxInt64}, {2, 1}},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Encode(%v) did not panic", runs)
				}
			}()
			Encode(nil, runs)
		}()
	}
}

// spreadLog encodes n runs of one entry, step ns apart.
func spreadLog(n int, step int64) []byte {
	runs := make([]Run, n)
	start := min(now0, math.MaxInt64-int64(n-1)*step)
	for i := range runs {
		runs[i] = Run{start + int64(i)*step, 1}
	}
	return Encode(nil, runs)
}

// TestMemoryPerKey pins the figures DESIGN.md quotes: bytes of the encoded
// log (the value the keyspace stores next to its fixed record).
func TestMemoryPerKey(t *testing.T) {
	for _, tc := range []struct {
		name string
		log  []byte
		want int
	}{
		{"one run (any number of hits at one instant, limit 10)", Encode(nil, []Run{{now0, 10}}), 10},
		{"one run of 1000", Encode(nil, []Run{{now0, 1000}}), 12},
		{"limit 10, 1 s window, 10 runs 100 ms apart", spreadLog(10, 100e6), 63},
		{"limit 10, 60 s window, 10 runs 6 s apart", spreadLog(10, 6e9), 72},
		{"limit 10, longest window: 10 runs 2^63/10 ns apart", Encode(nil, worstRuns(10)), 8 + 1 + 1 + 9 + 8 + 1 + 8*(9+1)},
		{"limit 1000, 1 s window, 1000 runs 1 ms apart", spreadLog(1000, 1e6), 4015},
		{"limit 1000, 60 s window, 1000 runs 60 ms apart", spreadLog(1000, 60e6), 5014},
		{"limit 1000, 1 h window, 1000 runs 3.6 s apart", spreadLog(1000, 36e8), 6013},
		{"limit 1000, longest window, 1000 runs 2^63/1000 ns apart", spreadLog(1000, math.MaxInt64/1000), 9010},
	} {
		if len(tc.log) != tc.want {
			t.Errorf("%s: %d bytes, want %d", tc.name, len(tc.log), tc.want)
		}
		t.Logf("%-60s %5d bytes", tc.name, len(tc.log))
	}
}

func worstRuns(n int) []Run {
	runs := make([]Run, n)
	t := int64(math.MinInt64)
	for i := range runs {
		runs[i] = Run{t, 1}
		t += math.MaxInt64 / int64(n) // gaps of about 2^63/n: 9-byte uvarints
	}
	return runs
}

func TestDecode_NoAllocations(t *testing.T) {
	b := spreadLog(1000, 1e6)
	dst := make([]Run, 0, 1000)
	var err error
	if n := testing.AllocsPerRun(100, func() { dst, err = Decode(dst[:0], b) }); n != 0 || err != nil {
		t.Errorf("Decode: %v allocations, %v", n, err)
	}
}

// FuzzDecode: any bytes either decode to valid runs that encode back to the
// same bytes (one encoding per log), or are refused; never a panic.
func FuzzDecode(f *testing.F) {
	f.Add([]byte{})
	f.Add(Encode(nil, []Run{{10, 2}, {15, 1}, {20, 3}}))
	f.Add(Encode(nil, []Run{{now0, 10000}}))
	f.Add(spreadLog(5, 1e6))
	f.Fuzz(func(t *testing.T, b []byte) {
		runs, err := Decode(nil, b)
		if err != nil {
			return
		}
		if err := Valid(runs); err != nil {
			t.Fatalf("Decode(%x) gave invalid runs %v: %v", b, runs, err)
		}
		if again := Encode(nil, runs); !bytes.Equal(again, b) {
			t.Fatalf("Decode(%x) = %v, which encodes as %x", b, runs, again)
		}
	})
}

// FuzzRoundTrip: runs built from arbitrary numbers survive Encode/Decode.
func FuzzRoundTrip(f *testing.F) {
	f.Add(int64(now0), []byte{1, 2, 3}, []byte{1, 200, 7})
	f.Add(int64(math.MinInt64), []byte{255, 255}, []byte{0, 255})
	f.Fuzz(func(t *testing.T, start int64, gaps, counts []byte) {
		var runs []Run
		tm, left := start, int64(math.MaxInt64)
		for i, c := range counts {
			count := int64(c) + 1
			if i%3 == 2 {
				count = left / 2
			}
			if count < 1 || count > left {
				break
			}
			runs = append(runs, Run{tm, count})
			left -= count
			gap := int64(1)
			if i < len(gaps) {
				gap = int64(gaps[i])<<(gaps[i]%56) + 1
			}
			if tm > math.MaxInt64-gap {
				break
			}
			tm += gap
		}
		b := Encode(nil, runs)
		back, err := Decode(nil, b)
		if err != nil || !slices.Equal(back, runs) {
			t.Fatalf("%v → %x → %v, %v", runs, b, back, err)
		}
	})
}
