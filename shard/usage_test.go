package shard

import "testing"

// TestUsage: a live key's footprint is its record (value region and slack
// included) and its index slot; a missing or expired key has none.
func TestUsage(t *testing.T) {
	s := New(4)
	cl := State{Kind: 1, Expire: 2_000_000, A: 1_500_000} // a CL key's shape: 14 bytes before the key
	sl := State{Kind: 4, Expire: 100, Val: make([]byte, 300)}
	s.Put([]byte("cl"), cl)
	s.Put([]byte("sl"), sl)
	if n, ok := s.Usage([]byte("cl"), 50); !ok || n != recordSize(2, cl)+indexSlotBytes || n != 14+1+2+indexSlotBytes {
		t.Errorf("Usage(cl) = %d, %v; want %d", n, ok, recordSize(2, cl)+indexSlotBytes)
	}
	if n, ok := s.Usage([]byte("sl"), 50); !ok || n != recordSize(2, sl)+indexSlotBytes || n < 300 {
		t.Errorf("Usage(sl) = %d, %v; want %d", n, ok, recordSize(2, sl)+indexSlotBytes)
	}
	if _, ok := s.Usage([]byte("sl"), 100); ok {
		t.Errorf("Usage of an expired key reports it")
	}
	if _, ok := s.Usage([]byte("cl"), 2_000_000); ok {
		t.Errorf("Usage of an expired key reports it")
	}
	if _, ok := s.Usage([]byte("none"), 50); ok {
		t.Errorf("Usage of a missing key reports it")
	}
}
