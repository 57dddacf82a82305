package shard

import (
	"math/rand/v2"
	"testing"
)

// The index is tested with synthetic hashes (which maphash cannot produce on
// demand) and offsets standing in for records: findOffset needs no arena.

// checkIndex verifies slot distances and Robin Hood order against the hash
// each offset was inserted with.
func checkIndex(t *testing.T, x *index, hashes map[int]uint64) {
	t.Helper()
	seen := 0
	prev := uint64(0)
	for p := uint64(0); p < x.nslots(); p++ {
		s := x.load(p)
		if s == 0 {
			prev = 0
			continue
		}
		seen++
		h, ok := hashes[int(s>>offShift)]
		if !ok {
			t.Fatalf("slot %d holds unknown offset %d", p, s>>offShift)
		}
		home := x.home(h)
		if p < home || p-home+1 != s&distMask || p-home > x.maxDist {
			t.Fatalf("slot %d: distance field %d, home %d, maxDist %d", p, s&distMask, home, x.maxDist)
		}
		if s&distMask > prev+1 {
			t.Fatalf("slot %d breaks Robin Hood order", p)
		}
		prev = s & distMask
	}
	if seen != len(hashes) || x.count != len(hashes) {
		t.Fatalf("index holds %d slots (count %d), want %d", seen, x.count, len(hashes))
	}
	for off, h := range hashes {
		if _, ok := x.findOffset(h, off); !ok {
			t.Fatalf("offset %d not found", off)
		}
	}
}

func Test_Index_CollidingHomesStopAtMaxDist(t *testing.T) {
	for _, homes := range []uint64{8, 64, 1000} {
		var x index
		x.reset(homes)
		const h = 0xdead_beef_0000_0000 | 0xffff_ffff // home = homes-1: the worst place
		hashes := map[int]uint64{}
		for off := 1; ; off++ {
			p, want := x.freePosition(h)
			if !x.insertAt(p, want, off) {
				break
			}
			hashes[off] = h
		}
		if got, want := uint64(len(hashes)), x.maxDist+1; got != want {
			t.Fatalf("homes %d: %d colliding entries fit, want maxDist+1 = %d", homes, got, want)
		}
		checkIndex(t, &x, hashes) // the refused insert changed nothing
		// Remove from the middle: the cluster shifts back.
		for off := 1; off <= len(hashes)+1; off += 2 {
			if p, ok := x.findOffset(h, off); ok {
				x.removeAt(p)
				delete(hashes, off)
			}
		}
		checkIndex(t, &x, hashes)
	}
}

func Test_Index_ShiftRefusedWhenNeighbourWouldPassMaxDist(t *testing.T) {
	var x index
	x.reset(8) // maxDist 8
	// One entry at home 2, home 3's cluster filled to maxDist, then a second
	// entry of home 2: it belongs before home 3's entries, which would all
	// move one further, so the insert must be refused.
	h3 := uint64(3<<32/8 + 1)
	h2 := uint64(2<<32/8 + 1)
	if x.home(h3) != 3 || x.home(h2) != 2 {
		t.Fatalf("synthetic homes %d %d", x.home(h3), x.home(h2))
	}
	hashes := map[int]uint64{}
	p, want := x.freePosition(h2)
	if !x.insertAt(p, want, 1000) {
		t.Fatal("first insert refused")
	}
	hashes[1000] = h2
	off := 1
	for ; ; off++ {
		p, want := x.freePosition(h3)
		if !x.insertAt(p, want, off) {
			break
		}
		hashes[off] = h3
	}
	if x.maxDist != 8 || len(hashes) != 10 {
		t.Fatalf("maxDist %d, %d entries", x.maxDist, len(hashes))
	}
	p, want = x.freePosition(h2)
	if x.insertAt(p, want, off) {
		t.Fatal("insert that pushes a neighbour past maxDist was accepted")
	}
	checkIndex(t, &x, hashes)
}

func Test_Index_RandomInsertRemove(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var x index
	x.reset(4096)
	hashes := map[int]uint64{}
	var offs []int
	for step := 1; step <= 50_000; step++ {
		if len(offs) < 3500 && (len(offs) < 100 || rng.IntN(2) == 0) {
			h := rng.Uint64()
			p, want := x.freePosition(h)
			if !x.insertAt(p, want, step) {
				t.Fatalf("step %d: insert refused at load %.2f", step, float64(x.count)/float64(x.homes))
			}
			hashes[step] = h
			offs = append(offs, step)
		} else {
			i := rng.IntN(len(offs))
			off := offs[i]
			p, ok := x.findOffset(hashes[off], off)
			if !ok {
				t.Fatalf("step %d: offset %d lost", step, off)
			}
			x.removeAt(p)
			delete(hashes, off)
			offs[i] = offs[len(offs)-1]
			offs = offs[:len(offs)-1]
		}
		if step%5000 == 0 {
			checkIndex(t, &x, hashes)
		}
	}
}

func Test_Index_SizingPolicy(t *testing.T) {
	tests := []struct {
		n      int
		homes  uint64
		full   bool // one more entry exceeds 7/8
		sparse bool
	}{
		{n: 0, homes: 8, full: false, sparse: false},
		{n: 6, homes: 8, full: false},
		{n: 7, homes: 8, full: true},
		{n: 700, homes: 1000, full: false},
		{n: 875, homes: 1000, full: true},
		{n: 249, homes: 1000, sparse: true},
		{n: 250, homes: 1000, sparse: false},
		{n: 7, homes: 32, sparse: false}, // small tables never shrink
	}
	for _, tt := range tests {
		x := index{homes: tt.homes, count: tt.n}
		if x.full() != tt.full || x.sparse() != tt.sparse {
			t.Errorf("n=%d homes=%d: full=%v sparse=%v, want %v %v", tt.n, tt.homes, x.full(), x.sparse(), tt.full, tt.sparse)
		}
	}
	for _, n := range []int{0, 1, 10, 1000, 1 << 20} {
		h := homesFor(n)
		x := index{homes: h, count: n}
		if x.full() || (n > 100 && float64(n)/float64(h) < 0.69) {
			t.Errorf("homesFor(%d) = %d: load %.3f", n, h, float64(n)/float64(h))
		}
	}
}
