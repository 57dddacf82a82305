// Package varint sizes encoding/binary's variable-length integers without
// encoding them. The request codec, the Raft log codec, the shard's records
// and the sliding log's encoding each size a buffer before they fill it, so
// that one append never grows it twice; they share these two functions
// instead of keeping a copy each.
package varint

import "math/bits"

// UvarintLen is len(binary.AppendUvarint(nil, v)): one byte per started group
// of 7 significant bits, and one byte for 0.
func UvarintLen(v uint64) int {
	// bits.Len64(v|1) is the count of significant bits (1 for 0 and 1);
	// rounding it up to whole groups of 7 needs no loop and no branch.
	return (bits.Len64(v|1) + 6) / 7
}

// VarintLen is len(binary.AppendVarint(nil, v)): the zig-zag mapping that
// binary.AppendVarint uses (0, -1, 1, -2, … to 0, 1, 2, 3, …), then
// UvarintLen.
func VarintLen(v int64) int {
	u := uint64(v) << 1
	if v < 0 {
		u = ^u
	}
	return UvarintLen(u)
}
