package expiry

import (
	"math"
	"testing"
)

func TestMsUpLiveAndPTTL(t *testing.T) {
	for _, tt := range []struct{ x, want int64 }{
		{math.MinInt64, 0}, {-1, 0}, {0, 0}, {1, 1}, {999_999, 1}, {1_000_000, 1}, {1_000_001, 2},
		{math.MaxInt64, math.MaxInt64/1_000_000 + 1},
	} {
		if got := MsUp(tt.x); got != tt.want {
			t.Errorf("MsUp(%d) = %d, want %d", tt.x, got, tt.want)
		}
	}
	if Live(10, 10) || !Live(11, 10) {
		t.Error("a key lives while now < expire")
	}
	if PTTL(10, 10) != -2 || PTTL(10, 9) != 1 || PTTL(2_000_001, 0) != 3 {
		t.Errorf("PTTL: %d %d %d", PTTL(10, 10), PTTL(10, 9), PTTL(2_000_001, 0))
	}
}
