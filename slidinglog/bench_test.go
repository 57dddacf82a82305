package slidinglog

import (
	"testing"
)

var (
	sinkReply Reply
	sinkState State
	sinkOut   Outcome
	sinkErr   error
	sinkKey   []byte
	sinkP     Params
	sinkRuns  []Run
)

// TestNoAllocations: with a lent output buffer of len(log)+MaxGrowth, Hit
// allocates nothing; Peek and the parsers never do.
func TestNoAllocations(t *testing.T) {
	spread := State{Expire: now0 + 1e9, Log: spreadLog(1000, 1e6)}
	now := int64(now0 + 999e6 + 1e6) // the oldest run has just left
	p := mustParams(t, 1000, 1000, 1, 0, false)
	count := mustParams(t, 1000, 1000, 2, 0, true)
	dst := make([]byte, 0, len(spread.Log)+MaxGrowth)
	args := words("SL.HIT|user:1|1000|1000|COST|2|MINGAP|5|DENIED|COUNT")
	for name, fn := range map[string]func(){
		"Hit allowed":      func() { sinkReply, sinkState, sinkOut = Hit(spread, now, p, dst[:0]) },
		"Hit denied count": func() { sinkReply, sinkState, sinkOut = Hit(spread, now0+999e6, count, dst[:0]) },
		"Peek":             func() { sinkReply, sinkErr = Peek(spread, now0+999e6, p) },
		"ParseHit":         func() { sinkKey, sinkP, sinkErr = ParseHit(args) },
		"ParsePeek error":  func() { sinkKey, sinkP, sinkErr = ParsePeek(args) },
	} {
		if n := testing.AllocsPerRun(200, fn); n != 0 {
			t.Errorf("%s: %v allocations per call", name, n)
		}
	}
}

// benchHits drives one key: every call is SL.HIT at now += step, and the
// new log replaces the old, alternating two buffers as a keyspace copying
// the value into its own storage would.
func benchHits(b *testing.B, p Params, step int64, warm int) {
	var st State
	now := int64(now0)
	a, c := make([]byte, 0, 64<<10), make([]byte, 0, 64<<10)
	hit := func() {
		r, next, o := Hit(st, now, p, a[:0])
		if o == Store {
			a, c = c, next.Log
			st = next
		}
		sinkReply = r
		now += step
	}
	for range warm {
		hit()
	}
	b.ReportAllocs()
	for b.Loop() {
		hit()
	}
	runs, _ := Decode(nil, st.Log)
	b.ReportMetric(float64(len(runs)), "runs")
	b.ReportMetric(float64(len(st.Log)), "log-bytes")
}

// BenchmarkHit: the steady state of one key. "spread" hits arrive at
// exactly the limit's rate at distinct instants, so the log holds limit
// runs and every call drops one that left the window and appends one;
// "one-instant" hits all land at one instant (DENIED COUNT keeps recording),
// so the log is one run whatever the limit. The time per call depends on
// the runs a call reads, not on the limit: both one-instant cases cost the
// same, and limit=1000/spread costs little more than limit=10/spread (the
// difference is copying the 4 KB log, not reading it).
func BenchmarkHit(b *testing.B) {
	b.Run("limit=10/spread", func(b *testing.B) {
		benchHits(b, mustParams(b, 10, 1000, 1, 0, false), 100e6, 100)
	})
	b.Run("limit=1000/spread", func(b *testing.B) {
		benchHits(b, mustParams(b, 1000, 1000, 1, 0, false), 1e6, 5000)
	})
	b.Run("limit=10/one-instant", func(b *testing.B) {
		benchHits(b, mustParams(b, 10, 1000, 1, 0, true), 0, 100)
	})
	b.Run("limit=1000/one-instant", func(b *testing.B) {
		benchHits(b, mustParams(b, 1000, 1000, 1, 0, true), 0, 5000)
	})
	b.Run("limit=1000/hammer-denied-count", func(b *testing.B) {
		// 4 attempts per allowed slot, all recorded: limited, retry from the
		// oldest kept run.
		benchHits(b, mustParams(b, 1000, 1000, 1, 0, true), 250e3, 20000)
	})
}

// BenchmarkPeek on a full log of 1000 runs: a count denial finds its entry
// among the first runs; a call whose window is much shorter than the
// writer's reads every run that left it — the worst case, O(runs).
func BenchmarkPeek(b *testing.B) {
	st := State{Expire: now0 + 2e9, Log: spreadLog(1000, 1e6)}
	now := int64(now0 + 999e6)
	for _, tc := range []struct {
		name string
		p    Params
	}{
		{"limit=1000/denied", mustParams(b, 1000, 1000, 1, 0, false)},
		{"limit=1000/allowed", mustParams(b, 2000, 1000, 1, 0, false)},
		{"limit=1000/short-window-reads-all-runs", mustParams(b, 1000, 1, 1, 0, false)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				sinkReply, sinkErr = Peek(st, now, tc.p)
			}
		})
	}
}

func BenchmarkDecode(b *testing.B) {
	for _, n := range []int{10, 1000} {
		log := spreadLog(n, 1e6)
		dst := make([]Run, 0, n)
		b.Run(map[int]string{10: "runs=10", 1000: "runs=1000"}[n], func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				sinkRuns, sinkErr = Decode(dst[:0], log)
			}
		})
	}
}

func BenchmarkParseHit(b *testing.B) {
	args := words("SL.HIT|user:12345|100|60000|COST|2|MINGAP|5|DENIED|COUNT")
	b.ReportAllocs()
	for b.Loop() {
		sinkKey, sinkP, sinkErr = ParseHit(args)
	}
}
