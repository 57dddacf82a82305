package group

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redcell/redcell/gcra"
	"github.com/redcell/redcell/request"
)

// BenchmarkProposeParallel measures the write path of one node with real
// fsync: 50 connections (b.SetParallelism over GOMAXPROCS) each proposing
// pipelines of 16 CL.THROTTLEs on 100k keys, with the wall clock. One
// benchmark op is one pipeline; ops/s counts decisions, ops/entry shows how
// much the proposer packs into one fsync.
func BenchmarkProposeParallel(b *testing.B) { benchProposeParallel(b, false) }

// BenchmarkLocalProposeParallel is the same load through Local.Propose, the
// server's Backend: each connection reuses its requests and results, and
// Local lends it a pooled Batch per call.
func BenchmarkLocalProposeParallel(b *testing.B) { benchProposeParallel(b, true) }

func benchProposeParallel(b *testing.B, viaLocal bool) {
	const pipeline, connections, nkeys = 16, 50, 100_000
	keys := make([][]byte, nkeys)
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("user:%d", i))
	}
	p, err := gcra.NewParams(15, 30, 60, 1)
	if err != nil {
		b.Fatal(err)
	}
	n := newTestNode(b, "node1")
	n.open(b, nil)
	waitFor(b, 10*time.Second, "a ready leader", n.g.Ready)

	local := NewLocal(n.g, n.store)
	var seeds atomic.Uint64
	b.SetParallelism(max(1, connections/runtime.GOMAXPROCS(0)))
	before := n.g.Counters()
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		rng := rand.New(rand.NewPCG(seeds.Add(1), 0))
		batch := NewBatch()
		res := make([]request.Result, pipeline)
		for pb.Next() {
			batch.Reset()
			for i := 0; i < pipeline; i++ {
				batch.Ops = append(batch.Ops, throttleReq(keys[rng.IntN(nkeys)], p))
			}
			var err error
			if viaLocal {
				err = local.Propose(batch.Ops, res)
			} else {
				err = n.g.Propose(batch)
			}
			if err != nil {
				b.Error(err)
				return
			}
		}
	})
	elapsed := time.Since(start)
	b.StopTimer()
	after := n.g.Counters()
	b.ReportMetric(float64(b.N*pipeline)/elapsed.Seconds(), "ops/s")
	if entries := after.Entries - before.Entries; entries > 0 {
		b.ReportMetric(float64(after.Ops-before.Ops)/float64(entries), "ops/entry")
	}
}

// BenchmarkProposeSerial is one client without pipelining: one CL.THROTTLE
// per Propose, each waiting for the previous. ns/op is the group's share of
// a lone client's latency (the fsync plus every handoff on the way).
func BenchmarkProposeSerial(b *testing.B) {
	p, err := gcra.NewParams(15, 30, 60, 1)
	if err != nil {
		b.Fatal(err)
	}
	n := newTestNode(b, "node1")
	n.open(b, nil)
	waitFor(b, 10*time.Second, "a ready leader", n.g.Ready)
	batch := NewBatch()
	key := []byte("user:1")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		batch.Reset()
		batch.Ops = append(batch.Ops, throttleReq(key, p))
		if err := n.g.Propose(batch); err != nil {
			b.Fatal(err)
		}
	}
}
