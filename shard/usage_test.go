package shard

import "testing"

// TestUsage: a live key's footprint is its record (value region and slack
// included) and its index slot; a missing or expired key has none.
func TestUsage(t *testing.T) {
	s := New(4)
	s.Put([]byte("cl"), State{Kind: 1, Expire: 100})
	s.Put([]byte("sl"), State{Kind: 4, Expire: 100, Val: make([]byte, 300)})
	if n, ok := s.Usage([]byte("cl"), 50); !ok || n != recordSize(2, 0)+indexSlotBytes {
		t.Errorf("Usage(cl) = %d, %v; want %d", n, ok, recordSize(2, 0)+indexSlotBytes)
	}
	if n, ok := s.Usage([]byte("sl"), 50); !ok || n != recordSize(2, 300)+indexSlotBytes || n < 300 {
		t.Errorf("Usage(sl) = %d, %v; want %d", n, ok, recordSize(2, 300)+indexSlotBytes)
	}
	if _, ok := s.Usage([]byte("sl"), 100); ok {
		t.Errorf("Usage of an expired key reports it")
	}
	if _, ok := s.Usage([]byte("none"), 50); ok {
		t.Errorf("Usage of a missing key reports it")
	}
}
