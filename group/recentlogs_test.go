package group

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

func testEntry(index, term uint64, size int) *raft.Log {
	data := bytes.Repeat([]byte{byte(index), byte(term)}, size/2+1)[:size]
	return &raft.Log{Index: index, Term: term, Type: raft.LogCommand, Data: data}
}

// A cached entry of this node's own is a copy: the proposer reuses its
// encoder buffers without changing what raft reads back. Another node's
// entry (raft's bytes, never written again) is kept without a copy.
func TestRecentLogs_CopiesAndServes(t *testing.T) {
	c := newRecentLogs()
	c.setEnabled(true)
	orig := testEntry(7, 2, 100)
	orig.Extensions = []byte("ext")
	orig.AppendedAt = time.Now()
	want := *storedCopy(orig, true)
	c.add([]*raft.Log{orig}, []byte("ext"))
	for i := range orig.Data {
		orig.Data[i] = 0xff
	}
	orig.Extensions[0] = 'X'
	var got raft.Log
	if !c.get(7, &got) {
		t.Fatal("entry 7 not served")
	}
	if got.Index != 7 || got.Term != 2 || got.Type != raft.LogCommand || !bytes.Equal(got.Data, want.Data) || string(got.Extensions) != "ext" || !got.AppendedAt.Equal(orig.AppendedAt) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	if cap(got.Data) != len(got.Data) {
		t.Error("appending to Data could overwrite Extensions")
	}
	if c.get(6, &got) || c.get(8, &got) {
		t.Error("served an entry never added")
	}
	if h, m := c.hits.Load(), c.misses.Load(); h != 1 || m != 2 {
		t.Errorf("hits %d misses %d, want 1 and 2", h, m)
	}
	empty := &raft.Log{Index: 8, Term: 2, Data: []byte{}, Extensions: []byte{}}
	c.add([]*raft.Log{empty}, []byte("ext"))
	if !c.get(8, &got) || got.Data != nil || got.Extensions != nil {
		t.Errorf("empty Data must come back nil, as from the store: %+v", got)
	}
	theirs := testEntry(9, 2, 100)
	theirs.Extensions = []byte("other")
	c.add([]*raft.Log{theirs}, []byte("ext"))
	if !c.get(9, &got) || &got.Data[0] != &theirs.Data[0] {
		t.Error("another node's entry was copied or not served")
	}
	c.add([]*raft.Log{testEntry(10, 2, 0)}, []byte("ext"))
	if !c.get(10, &got) || got.Data != nil || got.Extensions != nil {
		t.Errorf("empty Data must come back nil, as from the store: %+v", got)
	}
}

// Off, the cache keeps nothing and serves nothing; turning it off empties it.
func TestRecentLogs_OffKeepsNothing(t *testing.T) {
	c := newRecentLogs()
	c.add([]*raft.Log{testEntry(1, 1, 10)}, nil)
	var l raft.Log
	if c.get(1, &l) {
		t.Fatal("served while off")
	}
	c.setEnabled(true)
	c.add([]*raft.Log{testEntry(2, 1, 10)}, nil)
	c.setEnabled(false)
	c.setEnabled(true)
	if c.get(2, &l) || c.bytes != 0 || c.count != 0 {
		t.Fatalf("turning off did not empty the cache: count %d bytes %d", c.count, c.bytes)
	}
}

// The cache holds at most recentLogsMax entries and maxBytes of them,
// dropping the oldest; an entry bigger than the whole budget is not kept.
func TestRecentLogs_Bounds(t *testing.T) {
	c := newRecentLogs()
	c.setEnabled(true)
	for i := uint64(1); i <= recentLogsMax+10; i++ {
		c.add([]*raft.Log{testEntry(i, 1, 8)}, nil)
	}
	var l raft.Log
	if c.count != recentLogsMax || c.get(10, &l) || !c.get(11, &l) || !c.get(recentLogsMax+10, &l) {
		t.Fatalf("count %d, first %d: want the newest %d entries", c.count, c.first, recentLogsMax)
	}
	c.maxBytes = 1000
	c.add([]*raft.Log{testEntry(recentLogsMax+11, 1, 600)}, nil)
	c.add([]*raft.Log{testEntry(recentLogsMax+12, 1, 600)}, nil)
	if c.count != 1 || c.bytes != 600 || !c.get(recentLogsMax+12, &l) {
		t.Fatalf("count %d bytes %d: the byte bound must leave only the newest", c.count, c.bytes)
	}
	c.add([]*raft.Log{testEntry(recentLogsMax+13, 1, 1001)}, nil)
	if c.count != 0 || c.bytes != 0 || c.get(recentLogsMax+13, &l) || c.get(recentLogsMax+12, &l) {
		t.Fatalf("count %d bytes %d after an entry over the budget", c.count, c.bytes)
	}
}

// The cache must never serve an entry that differs from what the log store
// holds at that index. A random history of appends (in runs, sometimes
// restarting at an index already used, as after a truncation or a snapshot
// install), prefix compactions, suffix truncations and other deletes, with
// a map standing for the store: after every step every index either misses
// or returns the store's entry, and the newest appended entries hit.
func TestRecentLogs_NeverServesWhatTheStoreDoesNotHold(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		rng := rand.New(rand.NewPCG(seed, 99))
		c := newRecentLogs()
		c.setEnabled(true)
		c.maxBytes = 4000
		store := map[uint64]*raft.Log{}
		next, term := uint64(1), uint64(1)
		for step := 0; step < 2000; step++ {
			switch op := rng.IntN(10); {
			case op < 6: // append a run at next
				var run []*raft.Log
				for k := 0; k < 1+rng.IntN(4); k++ {
					l := testEntry(next, term, rng.IntN(600))
					run = append(run, l)
					store[next] = storedCopy(l, true)
					next++
				}
				own := []byte("me")
				if rng.IntN(2) == 0 {
					for _, l := range run {
						l.Extensions = own
					}
				}
				c.add(run, own)
				for _, l := range run { // the proposer reuses its buffers
					if bytes.Equal(l.Extensions, own) {
						clear(l.Data)
					}
				}
				var got raft.Log
				if last := run[len(run)-1]; len(last.Data) <= c.maxBytes && !c.get(last.Index, &got) {
					t.Fatalf("seed %d step %d: the entry just appended (%d) is not cached", seed, step, last.Index)
				}
			case op < 8: // compact a prefix, as after a snapshot
				hi := uint64(rng.IntN(int(next)))
				c.drop(0, hi)
				for i := range store {
					if i <= hi {
						delete(store, i)
					}
				}
			case op < 9: // truncate a suffix and go on in a new term
				lo := uint64(1 + rng.IntN(int(next)))
				c.drop(lo, next)
				for i := range store {
					if i >= lo {
						delete(store, i)
					}
				}
				next, term = lo, term+1
			default: // any other range (raft deletes everything after a snapshot install)
				lo := uint64(rng.IntN(int(next) + 1))
				hi := lo + uint64(rng.IntN(8))
				c.drop(lo, hi)
				for i := range store {
					if i >= lo && i <= hi {
						delete(store, i)
					}
				}
				if rng.IntN(2) == 0 { // a snapshot install restarts the log past it
					next = max(next, hi+1) + uint64(rng.IntN(3))
				}
			}
			for i := uint64(0); i <= next; i++ {
				var got raft.Log
				if !c.get(i, &got) {
					continue
				}
				want, ok := store[i]
				if !ok {
					t.Fatalf("seed %d step %d: index %d served but not in the store", seed, step, i)
				}
				if got.Term != want.Term || !bytes.Equal(got.Data, want.Data) {
					t.Fatalf("seed %d step %d: index %d served term %d (%d bytes), store has term %d (%d bytes)",
						seed, step, i, got.Term, len(got.Data), want.Term, len(want.Data))
				}
			}
			if c.bytes < 0 || c.bytes > c.maxBytes || c.count > len(c.ring) {
				t.Fatalf("seed %d step %d: count %d bytes %d", seed, step, c.count, c.bytes)
			}
		}
	}
}

// BenchmarkRecentLogsGet is raft's read of a cached 20 KB entry (what
// replication and a follower's apply do per entry) against the Pebble
// read it replaces, BenchmarkGetLog in raftstore.
func BenchmarkRecentLogsGet(b *testing.B) {
	c := newRecentLogs()
	c.setEnabled(true)
	for i := uint64(1); i <= 32; i++ {
		c.add([]*raft.Log{testEntry(i, 1, 20<<10)}, nil)
	}
	var l raft.Log
	b.ReportAllocs()
	i := uint64(0)
	for b.Loop() {
		if !c.get(1+i%32, &l) {
			b.Fatal(fmt.Sprint("miss at ", 1+i%32))
		}
		i++
	}
}
