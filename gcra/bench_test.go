package gcra

import "testing"

// Sinks keep the compiler from discarding the measured calls.
var (
	sinkReply  Reply
	sinkTAT    int64
	sinkOut    Outcome
	sinkParams Params
	sinkErr    error
)

// TestThrottle_NoAllocations: the apply loop runs Throttle once per decision
// and must not create garbage; the same holds for Peek and NewParams
// (including NewParams' exact-product path for huge periods).
func TestThrottle_NoAllocations(t *testing.T) {
	p, err := NewParams(15, 30, 60, 1)
	if err != nil {
		t.Fatal(err)
	}
	huge := int64(1<<62 + 12345)
	cases := map[string]func(){
		"Throttle absent":  func() { sinkReply, sinkTAT, sinkOut = Throttle(0, false, now0, p) },
		"Throttle present": func() { sinkReply, sinkTAT, sinkOut = Throttle(now0+3e9, true, now0, p) },
		"Peek":             func() { sinkReply, sinkErr = Peek(now0+3e9, true, now0, p) },
		"NewParams":        func() { sinkParams, sinkErr = NewParams(15, 30, 60, 1) },
		"NewParams huge":   func() { sinkParams, sinkErr = NewParams(15, 30, huge, 1) },
		"NewParams zero":   func() { sinkParams, sinkErr = NewParams(15, 0, 60, 1) },
	}
	for name, fn := range cases {
		if allocs := testing.AllocsPerRun(1000, fn); allocs != 0 {
			t.Errorf("%s: %v allocations per call, want 0", name, allocs)
		}
	}
}

func BenchmarkThrottle(b *testing.B) {
	p, err := NewParams(15, 30, 60, 1)
	if err != nil {
		b.Fatal(err)
	}
	tat, now := int64(0), now0
	b.ReportAllocs()
	for b.Loop() {
		// A steady stream on one key, a request every 100 ms, mixing
		// allowed and limited decisions.
		r, newTAT, o := Throttle(tat, tat > now, now, p)
		if o == Store {
			tat = newTAT
		}
		sinkReply = r
		now += 100_000_000
	}
}

func BenchmarkPeek(b *testing.B) {
	p, err := NewParams(15, 30, 60, 0)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		sinkReply, sinkErr = Peek(now0+5e9, true, now0, p)
	}
}

func BenchmarkNewParams(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		sinkParams, sinkErr = NewParams(15, 30, 60, 1)
	}
}
