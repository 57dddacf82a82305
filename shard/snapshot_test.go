package shard

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

func Test_Snapshot_RangeOrdersByKeyBytes(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	randomKeys := func(n, maxLen int, alphabet string) [][]byte {
		seen := map[string]bool{}
		var keys [][]byte
		for len(keys) < n {
			k := make([]byte, rng.IntN(maxLen+1))
			for i := range k {
				k[i] = alphabet[rng.IntN(len(alphabet))]
			}
			if !seen[string(k)] {
				seen[string(k)] = true
				keys = append(keys, k)
			}
		}
		return keys
	}
	withPrefix := func(prefix string, keys [][]byte) [][]byte {
		out := make([][]byte, len(keys))
		for i, k := range keys {
			out[i] = append([]byte(prefix), k...)
		}
		return out
	}
	tests := []struct {
		name string
		keys [][]byte
	}{
		{"empty store", nil},
		{"single empty key", [][]byte{{}}},
		{"zero bytes and prefixes", [][]byte{
			{}, {0}, {0, 0}, {0, 1}, {1}, []byte("a"), []byte("a\x00"), []byte("a\x00\x00"),
			[]byte("ab"), {0xff}, {0xff, 0xff}, []byte("aaaaaaaa"), []byte("aaaaaaaa\x00"),
			[]byte("aaaaaaaab"), []byte("aaaaaaaaa"),
		}},
		// Keys that differ only after the 8-byte window: every prefix ties.
		{"ties beyond the window", withPrefix("", randomKeys(300, 14, "\x00ab"))},
		{"ties in the window, order decided after it", append(
			withPrefix("aaaaaaaa", randomKeys(200, 6, "\x00ab")),
			withPrefix("aaaaaaab", randomKeys(200, 6, "\x00ab"))...)},
		{"long common prefix", withPrefix("tenant:0042:user:", randomKeys(500, 12, "0123456789"))},
		{"user keys", func() [][]byte {
			var k [][]byte
			for _, i := range rng.Perm(2000) {
				k = append(k, appendUserKey(nil, i*37))
			}
			return k
		}()},
		{"random binary", randomKeys(3000, 20, string(func() []byte {
			b := make([]byte, 256)
			for i := range b {
				b[i] = byte(i)
			}
			return b
		}()))},
	}
	for _, tt := range tests {
		want := slices.Clone(tt.keys)
		slices.SortFunc(want, bytes.Compare)
		for _, stripes := range []int{1, 16} {
			s := New(stripes)
			for i, k := range tt.keys {
				s.Put(k, State{Kind: kindC, Expire: 10, A: int64(i)})
			}
			s.Put([]byte("expired-"+tt.name), State{Expire: 5 - Linger}) // droppable at now=5: excluded
			sn := s.Snapshot(5)
			if sn.Len() != len(want) || sn.Now() != 5 {
				t.Fatalf("%s/%d: Len %d Now %d, want %d 5", tt.name, stripes, sn.Len(), sn.Now(), len(want))
			}
			var got [][]byte
			sn.Range(func(key []byte, st State) bool {
				got = append(got, bytes.Clone(key))
				return true
			})
			if len(got) != len(want) {
				t.Fatalf("%s/%d: ranged %d keys, want %d", tt.name, stripes, len(got), len(want))
			}
			for i := range want {
				if !bytes.Equal(got[i], want[i]) {
					t.Fatalf("%s/%d: key %d = %q, want %q", tt.name, stripes, i, got[i], want[i])
				}
			}
		}
	}
}

func Test_Snapshot_RangeStopsWhenFnReturnsFalse(t *testing.T) {
	s := New(4)
	for i := range 100 {
		s.Put(fmt.Appendf(nil, "k%03d", i), State{Expire: 10, A: int64(i)})
	}
	sn := s.Snapshot(0)
	for _, stop := range []int{1, 7, 100} {
		n := 0
		sn.Range(func(key []byte, st State) bool {
			if want := fmt.Sprintf("k%03d", n); string(key) != want || st.A != int64(n) {
				t.Fatalf("entry %d = %q %+v, want %s", n, key, st, want)
			}
			n++
			return n < stop
		})
		if n != stop {
			t.Fatalf("stop at %d: fn called %d times", stop, n)
		}
	}
}

func Test_Snapshot_RadixSortIsStableAndOrdered(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	a := make([]sortEntry, 5000)
	for i := range a {
		// Few distinct prefixes, so stability (off order within equal
		// prefixes) is visible.
		a[i] = sortEntry{prefix: uint64(rng.IntN(50)) << uint(8*rng.IntN(8)), off: i}
	}
	got := radixSortByPrefix(slices.Clone(a), make([]sortEntry, len(a)))
	want := slices.Clone(a)
	slices.SortStableFunc(want, func(x, y sortEntry) int {
		switch {
		case x.prefix < y.prefix:
			return -1
		case x.prefix > y.prefix:
			return 1
		}
		return 0
	})
	if !slices.Equal(got, want) {
		t.Fatal("radix sort differs from a stable sort by prefix")
	}
}
