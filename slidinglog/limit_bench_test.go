package slidinglog

import (
	"fmt"
	"testing"
)

// limitGrowthLimits are the limits of BenchmarkHit_LimitGrows: the time of
// a call must not grow with them.
var limitGrowthLimits = []int64{10, 1_000, 100_000}

// limitGrowth drives one key as the limit grows with the hits kept at the
// same instants: instants 1 ms apart, a 10 ms window (so at most 10
// instants are live), and limit/10 hits of COST 1 at each instant. Every
// hit is allowed (the instant leaving the window frees exactly the
// limit/10 entries the new one takes), every hit stores, and the log holds
// up to `limit` entries in at most 10 runs whatever the limit: a sorted set
// holds `limit` members, this log 10 runs. hit makes one call and returns
// its reply, the outcome and the log as it leaves it.
type limitGrowth struct {
	p       Params
	perInst int64
	st      State
	now     int64
	inInst  int64
	a, c    []byte
}

func newLimitGrowth(t testing.TB, limit int64) *limitGrowth {
	return &limitGrowth{
		p:       mustParams(t, limit, 10, 1, 0, false),
		perInst: limit / 10,
		now:     now0,
		a:       make([]byte, 0, 4<<10),
		c:       make([]byte, 0, 4<<10),
	}
}

func (g *limitGrowth) hit() (Reply, Outcome) {
	if g.inInst == g.perInst {
		g.inInst = 0
		g.now += nanosPerMilli
	}
	g.inInst++
	r, next, o := Hit(g.st, g.now, g.p, g.a[:0])
	if o == Store {
		g.a, g.c = g.c, next.Log
		g.st = next
	}
	return r, o
}

// TestHit_LimitGrowsRunsDoNot: under limitGrowth's traffic every call is
// allowed and stored, and the log stays at most 10 runs and the same few
// bytes for a limit of 10 and of 100,000 — the state a call reads and
// rewrites is O(runs), not O(limit). BenchmarkHit_LimitGrows measures the
// time.
func TestHit_LimitGrowsRunsDoNot(t *testing.T) {
	var sizes []int
	for _, limit := range limitGrowthLimits {
		g := newLimitGrowth(t, limit)
		maxBytes := 0
		for i := int64(0); i < 3*limit; i++ { // three windows' worth of calls
			r, o := g.hit()
			if o != Store || r.Limited != 0 {
				t.Fatalf("limit %d, call %d: %+v %v, want allowed and stored", limit, i, r, o)
			}
			maxBytes = max(maxBytes, len(g.st.Log))
		}
		runs, err := Decode(nil, g.st.Log)
		if err != nil {
			t.Fatal(err)
		}
		var entries int64
		for _, run := range runs {
			entries += run.Count
		}
		if len(runs) > 10 || entries != limit {
			t.Errorf("limit %d: %d runs holding %d entries, want ≤ 10 runs holding %d", limit, len(runs), entries, limit)
		}
		sizes = append(sizes, maxBytes)
	}
	// The encoded counts grow by a few varint bytes per run, nothing more.
	if sizes[len(sizes)-1] > sizes[0]+3*10 {
		t.Errorf("log bytes by limit %v: %v, want the largest within 30 bytes of the smallest", limitGrowthLimits, sizes)
	}
}

// BenchmarkHit_LimitGrows: SL.HIT's time per call with the limit at 10,
// 1,000 and 100,000 and the hits at the same instants (limitGrowth): flat,
// because a call reads and rewrites the log's runs (≤ 10 here), never its
// entries. The sorted-set script of bench/slidinglog.lua holds `limit`
// members per key for the same traffic.
func BenchmarkHit_LimitGrows(b *testing.B) {
	for _, limit := range limitGrowthLimits {
		b.Run(fmt.Sprintf("limit=%d", limit), func(b *testing.B) {
			g := newLimitGrowth(b, limit)
			for range 3 * limit { // three windows: the log is full and rotating
				g.hit()
			}
			b.ReportAllocs()
			for b.Loop() {
				sinkReply, sinkOut = g.hit()
			}
			runs, _ := Decode(nil, g.st.Log)
			b.ReportMetric(float64(len(runs)), "runs")
			b.ReportMetric(float64(len(g.st.Log)), "log-bytes")
		})
	}
}
