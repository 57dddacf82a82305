package raftstore

import (
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// BenchmarkStoreLogs measures one append call: with sync it is dominated by
// the fsync (compare with design.md's ~150 µs), with NoSync it is the CPU
// cost of encoding and committing. The proposer sends one entry per batch of
// requests, up to about 16 KiB.
//
//	go test -run '^$' -bench StoreLogs -benchmem ./raftstore/
func BenchmarkStoreLogs(b *testing.B) {
	shapes := []struct {
		name    string
		entries int
		size    int
	}{
		{"1x64B", 1, 64},
		{"1x16KiB", 1, 16 << 10},
		{"64x256B", 64, 256},
	}
	for _, sync := range []bool{true, false} {
		for _, sh := range shapes {
			mode := "sync"
			if !sync {
				mode = "nosync"
			}
			b.Run(fmt.Sprintf("%s/%s", mode, sh.name), func(b *testing.B) {
				s := openStore(b, b.TempDir(), Options{NoSync: !sync})
				batch := make([]*raft.Log, sh.entries)
				for i := range batch {
					batch[i] = &raft.Log{Term: 1, Type: raft.LogCommand, Data: make([]byte, sh.size), AppendedAt: time.Now()}
				}
				b.SetBytes(int64(sh.entries * sh.size))
				b.ReportAllocs()
				next := uint64(1)
				b.ResetTimer()
				for b.Loop() {
					for _, l := range batch {
						l.Index = next
						next++
					}
					if err := s.StoreLogs(batch); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				st := s.Stats()
				b.ReportMetric(float64(s.WALStats().Syncs)/float64(st.Appends), "fsyncs/append")
			})
		}
	}
}

// BenchmarkGetLog reads entries back, as followers' replication and apply do.
func BenchmarkGetLog(b *testing.B) {
	for _, size := range []int{64, 16 << 10} {
		b.Run(fmt.Sprintf("%dB", size), func(b *testing.B) {
			s := openStore(b, b.TempDir(), Options{NoSync: true})
			const n = 1000
			var batch []*raft.Log
			for i := uint64(1); i <= n; i++ {
				batch = append(batch, &raft.Log{Index: i, Term: 1, Data: make([]byte, size), AppendedAt: time.Now()})
			}
			if err := s.StoreLogs(batch); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(size))
			b.ReportAllocs()
			var l raft.Log
			i := uint64(0)
			for b.Loop() {
				if err := s.GetLog(i%n+1, &l); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}
