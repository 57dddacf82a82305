//go:build amd64 || arm64

package shard

import "unsafe"

// prefetch asks the CPU to bring the cache line at addr closer (PREFETCHT0,
// PRFM PLDL1KEEP): a hint that never faults, whatever addr is. Go has no
// intrinsic for it; a call costs ~2 ns.
//
//go:noescape
func prefetch(addr unsafe.Pointer)
