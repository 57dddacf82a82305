package slidinglog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/redcell/redcell/internal/varint"
)

// Run is count entries recorded at one instant.
type Run struct {
	Time  int64 // Unix ns
	Count int64 // ≥ 1
}

// The encoding of a log (DESIGN.md has the reasoning):
//
//	newest   8 bytes, int64 little-endian   time of the newest run
//	total    uvarint, 1 ≤ total ≤ 2^63−1    entries in all runs
//	last     uvarint, 1 ≤ last ≤ total      entries in the newest run
//	— only when total > last, i.e. there are older runs:
//	gap      uvarint ≥ 1                    newest − prev, prev = the next older run's time
//	t0       8 bytes, int64 little-endian   time of the oldest run
//	c0       uvarint ≥ 1                    its entries
//	(dt uvarint ≥ 1, c uvarint ≥ 1)…        each newer older run: time = previous + dt
//
// where the older runs' times end exactly at prev and their counts sum to
// total − last. The empty log is zero bytes. Every integer has one encoding
// (uvarints are minimal), so a log has exactly one encoding and Decode
// accepts nothing else.
//
// The newest run sits in the header and the older runs follow oldest first:
// the header answers "how many entries, and when was the last one" without
// reading the rest; the entries that leave the window are the first runs of
// the body, so a call reads only those; and a new instant is appended at the
// end without reading the runs in between (gap gives the delta the old
// newest run needs when it joins the body).
const (
	timeLen = 8
	// minHeader is the smallest non-empty log: newest, total and last of
	// one byte each.
	minHeader = timeLen + 2
	// MaxGrowth bounds how much longer Hit's output can be than its input
	// log: a rewritten header (newest, total, last, gap), the first kept run
	// written with an absolute time, and the old newest run appended to the
	// body. A dst with capacity len(log)+MaxGrowth never grows.
	MaxGrowth = 2*timeLen + 6*binary.MaxVarintLen64
)

// errMalformed is wrapped by every Decode error.
var errMalformed = errors.New("slidinglog: malformed log")

// Encode appends the encoding of runs to dst and returns the extended
// slice. runs must be oldest first with strictly increasing times, every
// Count ≥ 1 and the counts' sum ≤ 2^63−1 (Valid checks this); Encode panics
// otherwise, since only a programming error can produce such runs. An empty
// runs appends nothing.
func Encode(dst []byte, runs []Run) []byte {
	if err := Valid(runs); err != nil {
		panic(err)
	}
	if len(runs) == 0 {
		return dst
	}
	var total int64
	for _, r := range runs {
		total += r.Count
	}
	newest := runs[len(runs)-1]
	var gap uint64
	if len(runs) > 1 {
		gap = uint64(newest.Time) - uint64(runs[len(runs)-2].Time)
	}
	dst = appendHeader(dst, newest.Time, total, newest.Count, gap)
	for i, r := range runs[:len(runs)-1] {
		if i == 0 {
			dst = appendFirstRun(dst, r.Time, r.Count)
			continue
		}
		dst = appendRun(dst, uint64(r.Time)-uint64(runs[i-1].Time), r.Count)
	}
	return dst
}

// Valid reports whether runs can be encoded: oldest first, strictly
// increasing times, every Count ≥ 1, the sum of counts ≤ 2^63−1.
func Valid(runs []Run) error {
	var total int64
	for i, r := range runs {
		if r.Count < 1 {
			return fmt.Errorf("slidinglog: run %d has count %d", i, r.Count)
		}
		if r.Count > math.MaxInt64-total {
			return fmt.Errorf("slidinglog: more than 2^63-1 entries")
		}
		total += r.Count
		if i > 0 && r.Time <= runs[i-1].Time {
			return fmt.Errorf("slidinglog: run %d at %d is not after run %d at %d", i, r.Time, i-1, runs[i-1].Time)
		}
	}
	return nil
}

// Decode appends the runs encoded in b to dst, oldest first, and returns the
// extended slice. It accepts exactly what Encode produces: any other input
// (truncated, trailing bytes, non-minimal uvarints, counts of 0, times out
// of order or beyond int64, totals that do not add up) is an error, and dst
// is then returned unchanged. With a dst of sufficient capacity Decode
// does not allocate.
func Decode(dst []Run, b []byte) ([]Run, error) {
	if len(b) == 0 {
		return dst, nil
	}
	start := len(dst)
	fail := func(format string, args ...any) ([]Run, error) {
		return dst[:start], fmt.Errorf("%w: "+format, append([]any{errMalformed}, args...)...)
	}
	h, ok := readHeader(b)
	if !ok {
		return fail("bad header")
	}
	if !canonicalHeader(b, h) {
		return fail("non-minimal uvarint in the header")
	}
	if h.gap == 0 {
		if h.body != len(b) {
			return fail("%d trailing bytes after a single run", len(b)-h.body)
		}
		return append(dst, Run{h.newest, h.total}), nil
	}
	// prev = newest − gap must not pass below MinInt64.
	if h.gap > uint64(h.newest)-(1<<63) { // (1<<63 is uint64(MinInt64))
		return fail("gap %d before newest %d leaves int64", h.gap, h.newest)
	}
	prev := int64(uint64(h.newest) - h.gap)
	want := h.total - h.last // entries in the older runs, ≥ 1
	var sum int64
	it := bodyIter{b: b, off: h.body, first: true}
	for it.off < len(b) {
		t, c, ok := it.nextStrict()
		if !ok {
			return fail("bad run at byte %d", it.off)
		}
		if c > want-sum {
			return fail("older runs hold more than total − last = %d entries", want)
		}
		sum += c
		if t > prev {
			return fail("older run at %d is not before prev %d", t, prev)
		}
		dst = append(dst, Run{t, c})
		if sum == want {
			if it.off != len(b) {
				return fail("%d trailing bytes", len(b)-it.off)
			}
			if t != prev {
				return fail("the newest older run is at %d, not at prev %d", t, prev)
			}
			return append(dst, Run{h.newest, h.last}), nil
		}
	}
	return fail("older runs hold %d entries, want total − last = %d", sum, want)
}

// header is a decoded log header.
type header struct {
	newest int64  // time of the newest run
	total  int64  // entries in the log
	last   int64  // entries in the newest run
	gap    uint64 // newest − prev; 0 when the newest run is the only one
	body   int    // offset of the older runs
}

// readHeader decodes the header of a non-empty log, checking the ranges of
// its fields (not minimality, not the body).
func readHeader(b []byte) (h header, ok bool) {
	if len(b) < minHeader {
		return h, false
	}
	h.newest = int64(binary.LittleEndian.Uint64(b))
	off := timeLen
	total, n := binary.Uvarint(b[off:])
	if n <= 0 || total < 1 || total > math.MaxInt64 {
		return h, false
	}
	off += n
	last, n := binary.Uvarint(b[off:])
	if n <= 0 || last < 1 || last > total {
		return h, false
	}
	off += n
	h.total, h.last = int64(total), int64(last)
	if last < total {
		gap, n := binary.Uvarint(b[off:])
		if n <= 0 || gap < 1 {
			return h, false
		}
		off += n
		h.gap = gap
	}
	h.body = off
	return h, true
}

// canonicalHeader reports whether h's uvarints in b are minimal.
func canonicalHeader(b []byte, h header) bool {
	n := timeLen + varint.UvarintLen(uint64(h.total)) + varint.UvarintLen(uint64(h.last))
	if h.gap != 0 {
		n += varint.UvarintLen(h.gap)
	}
	return n == h.body
}

// appendHeader writes a header; gap = 0 says there are no older runs.
func appendHeader(dst []byte, newest, total, last int64, gap uint64) []byte {
	dst = binary.LittleEndian.AppendUint64(dst, uint64(newest))
	dst = binary.AppendUvarint(dst, uint64(total))
	dst = binary.AppendUvarint(dst, uint64(last))
	if gap != 0 {
		dst = binary.AppendUvarint(dst, gap)
	}
	return dst
}

// appendFirstRun writes the oldest older run, with its absolute time.
func appendFirstRun(dst []byte, t, c int64) []byte {
	dst = binary.LittleEndian.AppendUint64(dst, uint64(t))
	return binary.AppendUvarint(dst, uint64(c))
}

// appendRun writes an older run dt after the previous one.
func appendRun(dst []byte, dt uint64, c int64) []byte {
	dst = binary.AppendUvarint(dst, dt)
	return binary.AppendUvarint(dst, uint64(c))
}

// bodyIter walks the older runs of a log, oldest first.
type bodyIter struct {
	b     []byte
	off   int   // where the next run starts
	t     int64 // time of the run last read
	first bool  // the next run is the first (absolute time)
}

// next reads the run at it.off. It checks bounds and ranges (so it never
// panics and never yields a count < 1 or a time that wrapped) but not
// minimality; ok is false on malformed input.
func (it *bodyIter) next() (t, c int64, ok bool) {
	b, off := it.b, it.off
	if it.first {
		if len(b)-off < timeLen {
			return 0, 0, false
		}
		t = int64(binary.LittleEndian.Uint64(b[off:]))
		off += timeLen
	} else {
		dt, n := binary.Uvarint(b[off:])
		if n <= 0 || dt < 1 || dt > uint64(math.MaxInt64)-uint64(it.t) {
			return 0, 0, false
		}
		off += n
		t = int64(uint64(it.t) + dt)
	}
	u, n := binary.Uvarint(b[off:])
	if n <= 0 || u < 1 || u > math.MaxInt64 {
		return 0, 0, false
	}
	it.off, it.t, it.first = off+n, t, false
	return t, int64(u), true
}

// nextStrict is next plus minimality of the uvarints.
func (it *bodyIter) nextStrict() (t, c int64, ok bool) {
	start, first, prevT := it.off, it.first, it.t
	t, c, ok = it.next()
	if !ok {
		return 0, 0, false
	}
	n := varint.UvarintLen(uint64(c))
	if first {
		n += timeLen
	} else {
		n += varint.UvarintLen(uint64(t) - uint64(prevT))
	}
	return t, c, it.off-start == n
}
