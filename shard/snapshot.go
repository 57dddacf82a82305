package shard

import (
	"bytes"
	"encoding/binary"
	"slices"
	"sync"
)

// Snapshot is an immutable copy of the entries kept at one instant: the live
// ones, and the gone ones (tombstones, expired keys) not yet droppable, whose
// change markers WATCH needs (Range gives them with Expire <= Now). It may be
// read from any goroutine (several at once) while the Store keeps changing.
type Snapshot struct {
	now  int64
	data []byte // live records back to back, in the arena record format
	n    int

	sortOnce sync.Once
	order    []sortEntry // records in key order, built by the first Range
}

// sortEntry locates one record of Snapshot.data for sorting. prefix holds 8
// key bytes following the prefix common to all keys, big-endian and zero
// padded, so most comparisons are one integer compare instead of a
// bytes.Compare through two indirections.
type sortEntry struct {
	prefix uint64
	off    int
}

// Snapshot copies every entry kept at now (live, or gone for less than
// Linger) into a new Snapshot. Which records it holds depends only on the
// entries and now, never on the sweeper. It is a
// sequential copy of each stripe's arena skipping dead and expired records
// (runs of live records are copied with one copy call), into one
// allocation; no per-key work beyond reading each record's header, no
// sorting (Range sorts lazily).
//
// Writer goroutine only, so that the copy is one consistent cut: no Update
// runs during it. It takes each stripe's read lock in turn, so readers are
// never blocked.
func (s *Store) Snapshot(now int64) *Snapshot {
	size := 0
	for i := range s.stripes {
		st := &s.stripes[i]
		st.mu.RLock()
		size += len(st.arena) - st.garbage
		st.mu.RUnlock()
	}
	sn := &Snapshot{now: now, data: make([]byte, 0, size)}
	for i := range s.stripes {
		st := &s.stripes[i]
		st.mu.RLock()
		sn.data, sn.n = appendKeptRecords(sn.data, sn.n, st.arena, now)
		st.mu.RUnlock()
	}
	return sn
}

// appendKeptRecords appends the records of arena a that are kept at now
// (not droppable) to dst and returns it with the updated record count n.
func appendKeptRecords(dst []byte, n int, a []byte, now int64) ([]byte, int) {
	run := 0 // start of the current run of kept records
	for off := 0; off < len(a); {
		end, dead, drop := scanRecord(a, off, now)
		if dead || drop {
			dst = append(dst, a[run:off]...)
			run = end
		} else {
			n++
		}
		off = end
	}
	return append(dst, a[run:]...), n
}

// Now is the instant the snapshot was taken at.
func (sn *Snapshot) Now() int64 { return sn.now }

// Len is the number of entries in the snapshot.
func (sn *Snapshot) Len() int { return sn.n }

// Bytes is the memory held by the snapshot's records (and sort order, once
// built), for metrics.
func (sn *Snapshot) Bytes() int {
	return cap(sn.data) + cap(sn.order)*16
}

// Range calls fn for each entry in ascending bytes.Compare order of keys,
// until fn returns false. The first call sorts (16 bytes per entry for the
// order plus as much scratch, two allocations in all, none per key); later
// calls reuse the order. key and st.Val alias the snapshot: they are valid
// only during the call and must not be modified.
// Any goroutine; concurrent Ranges are safe.
func (sn *Snapshot) Range(fn func(key []byte, st State) bool) {
	sn.sortOnce.Do(sn.sort)
	for _, e := range sn.order {
		key, _, _ := recordKey(sn.data, e.off)
		if !fn(key, readFullState(sn.data, e.off)) {
			return
		}
	}
}

// sort builds sn.order: a radix sort on the 8-byte prefixes (linear time,
// passes whose byte is the same for every key are skipped), then a
// comparison sort of each run of equal prefixes by full key. It allocates
// the order and one scratch array of the same size, never per key.
func (sn *Snapshot) sort() {
	order := make([]sortEntry, 0, sn.n)
	a := sn.data
	// The prefix common to all keys carries no order: skip it.
	var first []byte
	common := -1
	for off := 0; off < len(a); {
		key, end, _ := recordKey(a, off)
		if common < 0 {
			first, common = key, len(key)
		} else {
			common = commonPrefix(first[:common], key)
		}
		order = append(order, sortEntry{off: off})
		off = end
	}
	for i := range order {
		key, _, _ := recordKey(a, order[i].off)
		order[i].prefix = keyPrefix(key, common)
	}
	order = radixSortByPrefix(order, make([]sortEntry, len(order)))
	for i := 0; i < len(order); {
		j := i + 1
		for j < len(order) && order[j].prefix == order[i].prefix {
			j++
		}
		if j-i > 1 {
			slices.SortFunc(order[i:j], func(x, y sortEntry) int {
				kx, _, _ := recordKey(a, x.off)
				ky, _, _ := recordKey(a, y.off)
				return bytes.Compare(kx, ky)
			})
		}
		i = j
	}
	sn.order = order
}

// radixSortByPrefix sorts a by prefix (LSD, one byte per pass) using tmp,
// of the same length, as scratch; it returns whichever of the two holds the
// result.
func radixSortByPrefix(a, tmp []sortEntry) []sortEntry {
	var counts [8][256]int
	for _, e := range a {
		for d := range 8 {
			counts[d][byte(e.prefix>>(8*d))]++
		}
	}
	for d := range 8 {
		c := &counts[d]
		if len(a) == 0 || c[byte(a[0].prefix>>(8*d))] == len(a) {
			continue // every key has the same byte here: nothing to do
		}
		sum := 0
		for i, n := range c {
			c[i] = sum
			sum += n
		}
		for _, e := range a {
			b := byte(e.prefix >> (8 * d))
			tmp[c[b]] = e
			c[b]++
		}
		a, tmp = tmp, a
	}
	return a
}

// commonPrefix is the length of the longest common prefix of a and b.
func commonPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// keyPrefix is key[skip:skip+8] as a big-endian integer, zero padded. For
// keys sharing their first skip bytes, x < y as integers implies x < y in
// bytes.Compare order (a zero pad sorts a shorter key before its extensions);
// equal integers need the full comparison.
func keyPrefix(key []byte, skip int) uint64 {
	var buf [8]byte
	if skip < len(key) {
		copy(buf[:], key[skip:])
	}
	return binary.BigEndian.Uint64(buf[:])
}
