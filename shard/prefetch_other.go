//go:build !amd64 && !arm64

package shard

import "unsafe"

// prefetch does nothing on architectures without an assembly version.
func prefetch(addr unsafe.Pointer) {}
