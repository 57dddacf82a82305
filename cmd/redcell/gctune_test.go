package main

import "testing"

// TestGCPercentFor: the percentage keeps at least minGCHeadroom of garbage
// between collections on a small heap, in steps of 25 up to maxGCPercent,
// and is defaultGCPercent wherever a quarter of the live heap is more.
func TestGCPercentFor(t *testing.T) {
	for _, c := range []struct {
		live uint64
		want int
	}{
		{0, maxGCPercent},
		{1 << 20, maxGCPercent},
		{4 << 20, 400},
		{13 << 20, 125},
		{16 << 20, 100},
		{48 << 20, 50},
		{64 << 20, defaultGCPercent},
		{1 << 30, defaultGCPercent},
	} {
		got := gcPercentFor(c.live)
		if got != c.want {
			t.Errorf("gcPercentFor(%d MiB) = %d, want %d", c.live>>20, got, c.want)
		}
		if c.live > 0 && uint64(got)*c.live/100 < min(uint64(minGCHeadroom), c.live*maxGCPercent/100) {
			t.Errorf("gcPercentFor(%d MiB) = %d leaves less than %d MiB of headroom", c.live>>20, got, minGCHeadroom>>20)
		}
	}
}
