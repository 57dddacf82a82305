package tokenbucket

import "testing"

var (
	sinkReply Reply
	sinkState State
	sinkOut   Outcome
	sinkErr   error
	sinkKey   []byte
	sinkP     Params
)

// TestNoAllocations: the apply loop runs Take once per decision and must
// not create garbage; nor may Peek, Parse or NewParams.
func TestNoAllocations(t *testing.T) {
	g := mustParams(t, 10, 10, 1000, 1, false)
	iv := mustParams(t, 10, 3, 1000, 1, true)
	st := State{Expire: now0 + 5e8}
	ist := State{Expire: now0 + 4e9, Tokens: 2, Anchor: now0 - 3e8}
	args := words("TB.TAKE|key|10|10|1000|COST|2|INTERVAL")
	bad := words("TB.TAKE|key|10|10|1000|FOO")
	for name, fn := range map[string]func(){
		"Take greedy":   func() { sinkReply, sinkState, sinkOut = Take(st, now0, g) },
		"Take interval": func() { sinkReply, sinkState, sinkOut = Take(ist, now0, iv) },
		"Peek":          func() { sinkReply, sinkErr = Peek(ist, now0, iv) },
		"Parse":         func() { sinkKey, sinkP, sinkErr = Parse(args) },
		"Parse error":   func() { sinkKey, sinkP, sinkErr = Parse(bad) },
		"NewParams":     func() { sinkP, sinkErr = NewParams(10, 10, 1000, -3, false) },
	} {
		if n := testing.AllocsPerRun(1000, fn); n != 0 {
			t.Errorf("%s: %v allocations per call", name, n)
		}
	}
}

// benchTake is a steady stream on one key: a request every 37 ms against
// 10 per second, mixing allowed and limited decisions.
func benchTake(b *testing.B, p Params) {
	var st State
	now := int64(now0)
	b.ReportAllocs()
	for b.Loop() {
		r, next, o := Take(st, now, p)
		switch o {
		case Store:
			st = next
		case Delete:
			st = State{}
		}
		sinkReply = r
		now += 37_000_000
	}
}

func BenchmarkTake(b *testing.B) {
	b.Run("greedy", func(b *testing.B) { benchTake(b, mustParams(b, 10, 10, 1000, 1, false)) })
	b.Run("interval", func(b *testing.B) { benchTake(b, mustParams(b, 10, 10, 1000, 1, true)) })
}

func BenchmarkPeek(b *testing.B) {
	p := mustParams(b, 10, 3, 1000, 2, true)
	st := State{Expire: now0 + 4e9, Tokens: 2, Anchor: now0 - 3e8}
	b.ReportAllocs()
	for b.Loop() {
		sinkReply, sinkErr = Peek(st, now0, p)
	}
}

func BenchmarkParse(b *testing.B) {
	args := words("TB.TAKE|user:12345|10|10|1000|COST|2|INTERVAL")
	b.ReportAllocs()
	for b.Loop() {
		sinkKey, sinkP, sinkErr = Parse(args)
	}
}
