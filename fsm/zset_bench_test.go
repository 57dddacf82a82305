package fsm

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/redcell/redcell/commands"
	"github.com/redcell/redcell/request"
)

// BenchmarkApplyZsetSlidingLog applies the sorted-set sliding log as a rate
// limiter pipelines it, one decision being ZADD key now member,
// ZREMRANGEBYSCORE key -inf now-window, ZCARD key and EXPIRE key 60, on
// 10,000 keys holding about ten members each (a window of 1 s, a request
// every ~100 ms per key): the state machine's cost per decision, the reads
// riding in the entry included.
func BenchmarkApplyZsetSlidingLog(b *testing.B) {
	const keys, perEntry = 10_000, 250 // decisions per entry: 1,000 ops
	rng := rand.New(rand.NewPCG(4, 4))
	f := quietFSM(64)
	nowMs := int64(1_700_000_000_000)
	index, seq := uint64(0), 0
	parse := func(words ...string) request.Request {
		args := make([][]byte, len(words))
		for i, w := range words {
			args[i] = []byte(w)
		}
		var scratch []byte
		r, text := commands.Lookup(args[0], &scratch).Parse(args)
		if text != "" {
			b.Fatalf("%q: %s", words, text)
		}
		return r
	}
	entry := func() []byte {
		ops := make([]request.Request, 0, 4*perEntry)
		for i := 0; i < perEntry; i++ {
			k := fmt.Sprintf("rl:%05d", rng.IntN(keys))
			seq++
			ms := strconv.FormatInt(nowMs, 10)
			ops = append(ops, parse("ZADD", k, ms, ms+"-"+strconv.Itoa(seq)),
				parse("ZREMRANGEBYSCORE", k, "-inf", strconv.FormatInt(nowMs-1000, 10)),
				parse("ZCARD", k), parse("EXPIRE", k, "60"))
		}
		nowMs += 25 // 10,000 decisions a second over 10,000 keys
		return encodeEntry(0, ops)
	}
	apply := func(d []byte) {
		index++
		binary.LittleEndian.PutUint64(d[1:9], uint64(nowMs*1e6))
		out := f.ApplyBatch([]*raft.Log{{Type: raft.LogCommand, Index: index, Data: d}})
		res, ok := out[0].(*Results)
		if !ok {
			b.Fatalf("apply: %v", out[0])
		}
		f.Release(res)
	}
	for j := 0; j < 400; j++ { // 10 s of traffic: every log full and sliding
		apply(entry())
	}
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer() // each entry new: its members are added, the window slides
		d := entry()
		b.StartTimer()
		apply(d)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*perEntry), "ns/decision")
}
