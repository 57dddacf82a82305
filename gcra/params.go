package gcra

import (
	"errors"
	"math"
	"math/bits"
)

// ErrZeroRate is redis-cell's answer when the emission interval truncates to
// zero nanoseconds: count or period is 0, or count > period·1e9. The text is
// part of the wire contract ("-Cell error: Store error: " + this), so callers
// must not wrap it before formatting the reply.
var ErrZeroRate = errors.New("Zero rates are not supported")

// nanosPerSecond is the factor from CL.THROTTLE's period (whole seconds) to
// the emission interval's unit (nanoseconds).
const nanosPerSecond = 1_000_000_000

// Params is one request's parameters, parsed and derived once (at parse time,
// on the leader). The state machine uses only its integer fields, so replicas
// never redo the float division that derives Interval: the leader does it once
// and the log carries the result.
//
// A Params is a plain value: safe to copy and to share between goroutines.
type Params struct {
	Interval int64 // T, emission interval in ns (never 0 for valid Params)
	Limit    int64 // max_burst + 1 (int64, wraps)
	Quantity int64 // Q
}

// NewParams derives Params from CL.THROTTLE's four parsed integers, in the
// command's order. It returns ErrZeroRate when the emission interval
//
//	T = trunc_sat( float64(period·1e9) / float64(count) )
//
// is 0, where period·1e9 is the exact product rounded once to float64. No
// other input is an error: negative values and products that overflow are
// accepted and behave as the spec's wrapping arithmetic says.
//
// NewParams is pure and does not allocate; any goroutine may call it. The
// command parser calls it on the leader so that only integers enter the log.
func NewParams(maxBurst, count, period, quantity int64) (Params, error) {
	if count == 0 || period == 0 {
		// Spec: T is 0 by definition here. Dividing would give ±Inf (or NaN
		// for period 0 too), and ±Inf would saturate to a non-zero T.
		return Params{}, ErrZeroRate
	}
	interval := truncSat(secondsToNanosFloat(period) / float64(count))
	if interval == 0 {
		return Params{}, ErrZeroRate
	}
	return Params{
		Interval: interval,
		Limit:    maxBurst + 1, // wraps for maxBurst == MaxInt64, as the spec says
		Quantity: quantity,
	}, nil
}

// secondsToNanosFloat returns period·1e9, computed exactly in 128 bits and
// rounded once to the nearest float64 (ties to even).
//
// The obvious float64(period)*1e9 is the same single rounding while
// |period| ≤ 2^53, where float64(period) is exact. Beyond 2^53 it would round
// period first and the product again, which changes T for some inputs
// (see TestNewParams_ExactProductChangesT); the spec fixes the single
// rounding. One code path for all inputs keeps the two ranges from
// disagreeing at the 2^53 boundary.
func secondsToNanosFloat(period int64) float64 {
	magnitude := uint64(period)
	if period < 0 {
		magnitude = -magnitude // two's complement: also right for MinInt64 (2^63)
	}
	hi, lo := bits.Mul64(magnitude, nanosPerSecond)
	f := uint128ToFloat(hi, lo)
	if period < 0 {
		return -f
	}
	return f
}

// uint128ToFloat converts hi·2^64 + lo to the nearest float64, ties to even.
//
// It keeps the top 64 significant bits and ORs every discarded bit into the
// lowest kept bit (a "sticky" bit). The conversion of those 64 bits to the
// 53-bit mantissa then sees whether the discarded tail was zero, exactly
// half, or more than half of the last place, which is all correct rounding
// needs; Go's uint64 → float64 conversion is itself correctly rounded. The
// final scaling by a power of two is exact.
func uint128ToFloat(hi, lo uint64) float64 {
	if hi == 0 {
		return float64(lo)
	}
	shift := uint(64 - bits.LeadingZeros64(hi)) // 1..64: bits of hi
	top := hi<<(64-shift) | lo>>shift
	if lo<<(64-shift) != 0 {
		top |= 1
	}
	return math.Ldexp(float64(top), int(shift))
}

// truncSat converts f to int64 the way Rust's `as i64` does and the spec's
// trunc_sat names: truncate toward zero, saturate at the int64 bounds, NaN
// to 0. Go's own conversion is implementation-defined outside the int64
// range (amd64 yields MinInt64 even for +Inf), so the bounds are explicit.
func truncSat(f float64) int64 {
	switch {
	case f != f: // NaN
		return 0
	case f >= 0x1p63:
		return math.MaxInt64
	case f <= -0x1p63:
		return math.MinInt64
	}
	return int64(f)
}
