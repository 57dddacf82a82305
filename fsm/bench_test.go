package fsm

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/redcell/redcell/gcra"
	"github.com/redcell/redcell/request"
)

// BenchmarkEncodeEntry encodes one entry of 128 CL.THROTTLE ops (a busy
// proposer batch) into a reused Encoder.
func BenchmarkEncodeEntry(b *testing.B) {
	g := newOpGen(1, 100000)
	ops := make([]request.Request, 128)
	for i := range ops {
		ops[i] = throttleReq(g.key(), g.params())
	}
	var e Encoder
	b.ReportAllocs()
	for b.Loop() {
		e.Reset(1)
		for i := range ops {
			e.Add(&ops[i])
		}
		_ = e.Finish()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(ops)), "ns/op-encoded")
}

// BenchmarkApplyEntry applies one entry of 1000 limiter calls on random
// keys out of 100k (all present in the table), each entry stamped 1 ms after
// the last, and releases the results as the proposer does: CL.THROTTLE
// 15 30 60, TB.TAKE 10 10 1000 (greedy and INTERVAL), SL.HIT 10 1000 (each
// key's log holding up to 10 runs, which grows and moves its record).
func BenchmarkApplyEntry(b *testing.B) {
	p, err := gcra.NewParams(15, 30, 60, 1)
	if err != nil {
		b.Fatal(err)
	}
	tb := func(interval int64) func([]byte) request.Request {
		return func(k []byte) request.Request {
			r := request.Request{Code: request.TBTake, Key: k}
			r.SetArgs(10, 10, 1000, 1, interval)
			return r
		}
	}
	for _, c := range []struct {
		name string
		req  func(key []byte) request.Request
	}{
		{"cl", func(k []byte) request.Request { return throttleReq(k, p) }},
		{"tb", tb(0)},
		{"ti", tb(1)},
		{"sl", func(k []byte) request.Request {
			r := request.Request{Code: request.SLHit, Key: k}
			r.SetArgs(10, 1000, 1, 0, 0)
			return r
		}},
	} {
		b.Run(c.name, func(b *testing.B) { benchApply(b, c.req, false) })
	}
}

// BenchmarkApplyEntryCold is BenchmarkApplyEntry/cl with the caches flushed
// (64 MiB written, a system call made) before every entry, untimed, as a
// node's network work and log syncs do between entries: what the prefetching
// of shard/prefetch.go is for.
func BenchmarkApplyEntryCold(b *testing.B) {
	p, err := gcra.NewParams(15, 30, 60, 1)
	if err != nil {
		b.Fatal(err)
	}
	benchApply(b, func(k []byte) request.Request { return throttleReq(k, p) }, true)
}

// evictBuf is bigger than any last-level cache of the machines measured.
var evictBuf []byte

// evictCaches writes a byte of every line of evictBuf and makes a system
// call (which, with page table isolation and no PCID, flushes the TLB).
func evictCaches() {
	if evictBuf == nil {
		evictBuf = make([]byte, 64<<20)
	}
	for i := 0; i < len(evictBuf); i += 64 {
		evictBuf[i]++
	}
	syscall.Getpid()
}

func benchApply(b *testing.B, req func(key []byte) request.Request, cold bool) {
	const keys, perEntry, entries = 100_000, 1000, 64
	rng := rand.New(rand.NewPCG(7, 7))
	keyOf := func(i int) []byte { return []byte(fmt.Sprintf("user:%08d", i)) }
	f := quietFSM(64)
	stamp := int64(1_700_000_000_000_000_000)
	index := uint64(0)
	apply := func(data []byte) {
		index++
		binary.LittleEndian.PutUint64(data[1:9], uint64(stamp))
		stamp += 1e6
		out := f.ApplyBatch([]*raft.Log{{Type: raft.LogCommand, Index: index, Data: data}})
		res, ok := out[0].(*Results)
		if !ok {
			b.Fatalf("apply: %v", out[0])
		}
		f.Release(res)
	}
	// Fill the table with every key.
	for start := 0; start < keys; start += perEntry {
		ops := make([]request.Request, perEntry)
		for i := range ops {
			ops[i] = req(keyOf(start + i))
		}
		apply(encodeEntry(0, ops))
	}
	data := make([][]byte, entries)
	for j := range data {
		ops := make([]request.Request, perEntry)
		for i := range ops {
			ops[i] = req(keyOf(rng.IntN(keys)))
		}
		data[j] = encodeEntry(0, ops)
	}
	b.ReportAllocs()
	j := 0
	for b.Loop() {
		if cold {
			b.StopTimer()
			evictCaches()
			b.StartTimer()
		}
		apply(data[j%entries])
		j++
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*perEntry), "ns/decision")
}

// BenchmarkApplySlidingLogSteady: 10k sliding logs (limit 100, 1 s window)
// kept full by irregular traffic — entries of 1000 hits on random keys, 0.1
// to 5 ms apart, so a log's deltas change their encoded length now and
// then: the steady state after the logs have grown, where a record that
// cannot absorb a byte or two in place would move on most hits.
func BenchmarkApplySlidingLogSteady(b *testing.B) {
	const keys, perEntry, entries = 10_000, 1000, 256
	rng := rand.New(rand.NewPCG(3, 3))
	f := quietFSM(64)
	stamp := int64(1_700_000_000_000_000_000)
	index := uint64(0)
	data := make([][]byte, entries)
	for j := range data {
		ops := make([]request.Request, perEntry)
		for i := range ops {
			ops[i] = request.Request{Code: request.SLHit, Key: []byte(fmt.Sprintf("log:%05d", rng.IntN(keys)))}
			ops[i].SetArgs(100, 1000, 1, 0, 0)
		}
		data[j] = encodeEntry(0, ops)
	}
	apply := func(d []byte) {
		index++
		binary.LittleEndian.PutUint64(d[1:9], uint64(stamp))
		stamp += 100_000 + rng.Int64N(4_900_000)
		out := f.ApplyBatch([]*raft.Log{{Type: raft.LogCommand, Index: index, Data: d}})
		res, ok := out[0].(*Results)
		if !ok {
			b.Fatalf("apply: %v", out[0])
		}
		f.Release(res)
	}
	for j := 0; j < 2000; j++ { // ~5 s of traffic: every log full and rotating
		apply(data[j%entries])
	}
	moves := f.store.Stats().ValueMoves
	b.ReportAllocs()
	j := 0
	for b.Loop() {
		apply(data[j%entries])
		j++
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*perEntry), "ns/decision")
	b.ReportMetric(float64(f.store.Stats().ValueMoves-moves)/float64(b.N*perEntry), "moves/decision")
}
