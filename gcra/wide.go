package gcra

import (
	"math"
	"math/bits"
)

// wide is a signed 128-bit integer, hi·2^64 + lo, for the spec's exact sums
// and differences ("Width"): a stored TAT is an unsigned 64-bit instant (up
// to 2^64−1 ns, year 2554), an increment or tau any int64, so new_tat,
// allow_at, ttl and next need up to 67 bits with the sign. redis-cell does
// them in its date-time type, whose ±9999 years the 128 bits cover with
// room to spare; int64 nanoseconds (±292 years) do not.
//
// Every magnitude Throttle builds stays below 2^68, so no operation here
// can overflow the 128 bits; the helpers do not check. A wide is a plain
// value: no allocation, safe to copy.
type wide struct {
	hi int64
	lo uint64
}

func wideInt(x int64) wide   { return wide{hi: x >> 63, lo: uint64(x)} }
func wideUint(x uint64) wide { return wide{lo: x} }

func (a wide) add(b wide) wide {
	lo, carry := bits.Add64(a.lo, b.lo, 0)
	return wide{hi: a.hi + b.hi + int64(carry), lo: lo}
}

func (a wide) sub(b wide) wide {
	lo, borrow := bits.Sub64(a.lo, b.lo, 0)
	return wide{hi: a.hi - b.hi - int64(borrow), lo: lo}
}

func (a wide) neg() wide { return wide{}.sub(a) }

func (a wide) less(b wide) bool {
	return a.hi < b.hi || (a.hi == b.hi && a.lo < b.lo)
}

func (a wide) negative() bool { return a.hi < 0 }

func (a wide) positive() bool { return a.hi > 0 || (a.hi == 0 && a.lo != 0) }

// magnitude returns |a| as an unsigned 128-bit pair.
func (a wide) magnitude() (hi, lo uint64) {
	if a.negative() {
		a = a.neg()
	}
	return uint64(a.hi), a.lo
}

// quo divides by d > 0, truncating toward zero like Go's int64 division:
// the quotient and a remainder with a's sign. The callers' quotients fit
// an int64 (|a| < 2^68 and d ≥ 1000).
func (a wide) quo(d int64) (q, r int64) {
	if x := int64(a.lo); a.hi == x>>63 {
		return x / d, x % d // fits an int64: the common case, and a cheap one
	}
	return a.quoWide(uint64(d))
}

func (a wide) quoWide(d uint64) (q, r int64) {
	hi, lo := a.magnitude()
	qhi, rhi := hi/d, hi%d
	qlo, rem := bits.Div64(rhi, lo, d)
	q, r = int64(qlo), int64(rem)
	if qhi != 0 || qlo > math.MaxInt64 {
		q = math.MaxInt64 // unreachable for Decide's operands; saturate, never wrap
	}
	if a.negative() {
		q, r = -q, -r
	}
	return q, r
}
