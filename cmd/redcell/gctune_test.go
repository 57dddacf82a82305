package main

import "testing"

// TestGCPercentFor: the headroom is scanHeadroomPercent of the scannable
// bytes and at least minGCHeadroom, whatever the keyspace adds to the live
// heap, within [1, maxGCPercent].
func TestGCPercentFor(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		live, scan uint64
		want       int
	}{
		{0, 0, maxGCPercent},
		{256 << 10, 100 << 10, maxGCPercent},
		{1 * mib, 1 * mib, 400},
		{2 * mib, 2 * mib, 200},
		{37 * mib, 2 * mib, 11},     // a million CL keys: 4 MiB of headroom, not 9 or 18
		{13 * mib, 10 * mib, 77},    // scripts: GOGC 100 on what the collector scans
		{400 * mib, 2 * mib, 1},     // ten million keys
		{1 << 40, 2 * mib, 1},       // a percent is the least Go takes
		{100 * mib, 100 * mib, 100}, // a heap that is all pointers: Go's default
		{64 * mib, 96 * mib, 150},   // stacks and globals count too
	} {
		got := gcPercentFor(c.live, c.scan)
		if got != c.want {
			t.Errorf("gcPercentFor(%d KiB, %d KiB) = %d, want %d", c.live>>10, c.scan>>10, got, c.want)
		}
		want := max(uint64(minGCHeadroom), c.scan*scanHeadroomPercent/100)
		if c.live > 0 && got < maxGCPercent && uint64(got)*c.live/100 < want {
			t.Errorf("gcPercentFor(%d KiB, %d KiB) = %d leaves less than %d KiB of headroom", c.live>>10, c.scan>>10, got, want>>10)
		}
	}
}

// TestRetune: more headroom at once, less only past an eighth.
func TestRetune(t *testing.T) {
	for _, c := range []struct {
		cur, p int
		want   bool
	}{
		{100, 100, false},
		{100, 101, true},
		{100, 90, false},
		{100, 88, false},
		{100, 87, true},
		{11, 10, false},
		{11, 9, true},
		{1, 1, false},
	} {
		if got := retune(c.cur, c.p); got != c.want {
			t.Errorf("retune(%d, %d) = %v, want %v", c.cur, c.p, got, c.want)
		}
	}
}
