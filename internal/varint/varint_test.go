package varint

import (
	"encoding/binary"
	"math"
	"testing"
)

// edges are the values where the encoded length changes, and their
// neighbours, in both signs.
func edges() []int64 {
	vs := []int64{0, 1, -1, math.MaxInt64, math.MinInt64, math.MaxInt64 - 1, math.MinInt64 + 1}
	for shift := 1; shift < 64; shift++ {
		p := int64(1) << shift
		vs = append(vs, p-1, p, p+1, -p+1, -p, -p-1)
	}
	return vs
}

func TestUvarintLenMatchesEncoding(t *testing.T) {
	for _, s := range edges() {
		v := uint64(s)
		if got, want := UvarintLen(v), len(binary.AppendUvarint(nil, v)); got != want {
			t.Errorf("UvarintLen(%d) = %d, binary.AppendUvarint writes %d bytes", v, got, want)
		}
	}
}

func TestVarintLenMatchesEncoding(t *testing.T) {
	for _, v := range edges() {
		if got, want := VarintLen(v), len(binary.AppendVarint(nil, v)); got != want {
			t.Errorf("VarintLen(%d) = %d, binary.AppendVarint writes %d bytes", v, got, want)
		}
	}
}
