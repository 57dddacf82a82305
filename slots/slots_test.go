package slots

import (
	"testing"
)

// The vectors are Redis's (src/crc16.c's check value, tests/unit/cluster's
// keyslot cases) and what redis-server 7.0 answers CLUSTER KEYSLOT.
func TestKeySlot(t *testing.T) {
	for _, c := range []struct {
		key  string
		slot Slot
	}{
		{"123456789", 12739},
		{"", 0},
		{"a", 15495},
		{"foo", 12182},
		{"{user42}:a", KeySlotString("user42")},
		{"{user42}:b", KeySlotString("user42")},
		{"foo{}bar", KeySlotString("foo{}bar")},
		{"foo{{bar}}zap", KeySlotString("{bar")},
		{"foo{bar}{zap}", KeySlotString("bar")},
		{"{}x", KeySlotString("{}x")},
		{"x{", KeySlotString("x{")},
	} {
		if got := KeySlotString(c.key); got != c.slot {
			t.Errorf("KeySlotString(%q) = %d, want %d", c.key, got, c.slot)
		}
		if got := KeySlot([]byte(c.key)); got != c.slot {
			t.Errorf("KeySlot(%q) = %d, want %d", c.key, got, c.slot)
		}
	}
	if got := crc16([]byte("123456789")); got != 0x31C3 {
		t.Errorf("crc16(123456789) = %#x, want 0x31c3 (CRC-16/XMODEM's check value)", got)
	}
}

func FuzzKeySlot(f *testing.F) {
	f.Add([]byte("{user42}:a"))
	f.Add([]byte("foo{}bar{x}"))
	f.Fuzz(func(t *testing.T, key []byte) {
		s := KeySlot(key)
		if s >= Count {
			t.Fatalf("slot %d out of range", s)
		}
		if KeySlotString(string(key)) != s {
			t.Fatalf("KeySlot and KeySlotString disagree on %q", key)
		}
	})
}

func BenchmarkKeySlot(b *testing.B) {
	key := []byte("{user:1234567}:rate:window")
	for b.Loop() {
		_ = KeySlot(key)
	}
}
