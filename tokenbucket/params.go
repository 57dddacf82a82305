package tokenbucket

import (
	"math"
	"math/bits"

	"github.com/redcell/redcell/internal/arg"
)

// Error is a validation failure. Its text is the reply a client sees
// (without the leading '-'), verbatim from the contract, except ErrArity
// (whose wire text names the command) and ErrCorrupt (Redcell's own).
// Errors are constants: comparing with == and returning them never
// allocates.
type Error = arg.Error

// The error vocabulary of TB.TAKE and TB.PEEK, in the order the contract
// checks them (limiters.md rule 5).
const (
	// ErrArity: fewer than `key capacity refill_tokens refill_period_ms`.
	// The reply names the command in lower case, so the command layer
	// answers "ERR wrong number of arguments for 'tb.take' command" (its
	// WrongArgs(name)) instead of this text.
	ErrArity = arg.ErrArity
	// ErrNotInteger: a positional parameter or COST's value does not parse
	// as strconv.ParseInt(s, 10, 64), or the nanosecond arithmetic of the
	// parameters does not fit in int64 (rules 8–11).
	ErrNotInteger = arg.ErrNotInteger
	// ErrSyntax: an unknown option (a stray number, an SL option, a
	// non-ASCII look-alike) or COST without a value.
	ErrSyntax             = arg.ErrSyntax
	ErrCapacity     Error = "ERR capacity must be positive"
	ErrRefillTokens Error = "ERR refill_tokens must be positive"
	ErrRefillPeriod Error = "ERR refill_period_ms must be positive"

	// ErrCorrupt is Redcell's own: Take was handed a State it never
	// writes (an INTERVAL anchor after now, negative tokens). Nothing
	// changed. Only a bug or a damaged snapshot can produce one.
	ErrCorrupt Error = "ERR internal error: corrupt token bucket state"
)

const (
	nanosPerMilli = 1_000_000
	// MaxPeriodMs is the largest refill_period_ms whose nanoseconds fit in
	// int64 (rule 8).
	MaxPeriodMs = math.MaxInt64 / nanosPerMilli // 9223372036854
)

// Params is one TB.TAKE/TB.PEEK call's parameters, validated. Build it with
// Parse or NewParams: the unexported fields are derived there, and Take
// rejects a Params that did not come from them. A Params is a plain value,
// safe to copy and share.
//
// The five exported fields are everything a request needs to carry (the
// command layer can put them in request.Args and the state machine rebuild
// the same Params with NewParams: the derivation is integer arithmetic, so
// every replica derives the same values).
type Params struct {
	Capacity     int64 // ≥ 1
	RefillTokens int64 // ≥ 1
	PeriodMs     int64 // refill_period_ms, 1 ≤ PeriodMs ≤ MaxPeriodMs
	Cost         int64 // COST n (default 1): > 0 take, 0 look, < 0 refund
	Interval     bool  // INTERVAL: refill_tokens at once every period (else greedy)

	period   int64 // P = PeriodMs·10^6 ns; 0 only in a Params not built by NewParams
	emission int64 // greedy: T = ⌊P / RefillTokens⌋ ≥ 1; INTERVAL: 0
	// span is the longest time from empty to full: greedy Capacity·T,
	// INTERVAL ⌈Capacity/RefillTokens⌉·P. Both fit in int64; CheckAt
	// requires now + span to fit too (rules 10 and 11).
	span int64
}

// NewParams validates parsed integers in the contract's order — range
// checks (capacity, refill_tokens, refill_period_ms), then the overflow
// checks that do not depend on the clock (rules 8–11) — and derives P, T
// and the span. The one clock-dependent check, now + span ≤ 2^63−1, is
// CheckAt's.
//
// NewParams is pure and does not allocate.
func NewParams(capacity, refillTokens, refillPeriodMs, cost int64, interval bool) (Params, error) {
	switch {
	case capacity < 1:
		return Params{}, ErrCapacity
	case refillTokens < 1:
		return Params{}, ErrRefillTokens
	case refillPeriodMs < 1:
		return Params{}, ErrRefillPeriod
	case refillPeriodMs > MaxPeriodMs: // rule 8
		return Params{}, ErrNotInteger
	}
	p := Params{
		Capacity:     capacity,
		RefillTokens: refillTokens,
		PeriodMs:     refillPeriodMs,
		Cost:         cost,
		Interval:     interval,
		period:       refillPeriodMs * nanosPerMilli,
	}
	if interval {
		// Rule 11: the time to refill an empty bucket must be
		// representable. INTERVAL never computes T, so it accepts more
		// than one token per ns, and a refund uses no nanoseconds.
		k := (capacity-1)/refillTokens + 1 // ⌈capacity/refill_tokens⌉
		span, ok := mulFits(uint64(k), uint64(p.period))
		if !ok {
			return Params{}, ErrNotInteger
		}
		p.span = span
		return p, nil
	}
	p.emission = p.period / refillTokens
	if p.emission == 0 { // rule 9: more than one token per ns
		return Params{}, ErrNotInteger
	}
	span, ok := mulFits(uint64(capacity), uint64(p.emission)) // rule 10
	if !ok {
		return Params{}, ErrNotInteger
	}
	p.span = span
	if cost < 0 { // rule 10: a refund's |n|·T must fit (so COST −2^63 never does)
		if _, ok := mulFits(magnitude(cost), uint64(p.emission)); !ok {
			return Params{}, ErrNotInteger
		}
	}
	return p, nil
}

// CheckAt is the contract's clock-dependent overflow check (rules 10 and
// 11): now + span must fit in int64, where span is the time to refill an
// empty bucket (greedy capacity·T, INTERVAL ⌈capacity/refill_tokens⌉·P).
// It returns ErrNotInteger when it does not, or when p did not come from
// NewParams, or when now < 0 (the replicated clock starts at 0 and never
// goes back, so that never happens in Redcell).
//
// Validation step 5 comes before WRONGTYPE (step 6), so the state machine
// calls CheckAt with the entry's now before it looks at the key's family;
// Take and Peek check again and refuse to decide when it fails.
func (p Params) CheckAt(now int64) error {
	if p.period <= 0 || now < 0 || now > math.MaxInt64-p.span {
		return ErrNotInteger
	}
	return nil
}

// mulFits returns a·b when the exact product is at most 2^63−1.
func mulFits(a, b uint64) (int64, bool) {
	hi, lo := bits.Mul64(a, b)
	if hi != 0 || lo > math.MaxInt64 {
		return 0, false
	}
	return int64(lo), true
}

// magnitude is |n| as a uint64; exact for every int64, including −2^63.
func magnitude(n int64) uint64 {
	if n < 0 {
		return -uint64(n)
	}
	return uint64(n)
}

// Parse parses a TB.TAKE or TB.PEEK command, args[0] being the command name
// (the two take the same arguments):
//
//	TB.TAKE key capacity refill_tokens refill_period_ms [COST n] [INTERVAL]
//
// It checks, in the contract's order (rule 5): arity (at least four words
// after the name, no upper bound), the positional integers left to right,
// the options left to right (a COST value that does not parse is
// ErrNotInteger, an unknown word or COST without a value ErrSyntax,
// whichever comes first), the ranges, and the clock-independent overflow
// checks; CheckAt does the rest. Options may repeat (the last COST wins,
// INTERVAL twice is INTERVAL) and keywords fold ASCII case only.
//
// key aliases args[1]. Parse does not allocate.
func Parse(args [][]byte) (key []byte, p Params, err error) {
	if len(args) < 5 {
		return nil, Params{}, ErrArity
	}
	var v [3]int64
	for i := range v {
		n, ok := arg.Int(args[2+i])
		if !ok {
			return nil, Params{}, ErrNotInteger
		}
		v[i] = n
	}
	cost, interval := int64(1), false
	for i := 5; i < len(args); i++ {
		switch {
		case arg.EqualFold(args[i], "cost"):
			if i+1 == len(args) {
				return nil, Params{}, ErrSyntax
			}
			i++
			n, ok := arg.Int(args[i])
			if !ok {
				return nil, Params{}, ErrNotInteger
			}
			cost = n
		case arg.EqualFold(args[i], "interval"):
			interval = true
		default:
			return nil, Params{}, ErrSyntax
		}
	}
	p, err = NewParams(v[0], v[1], v[2], cost, interval)
	if err != nil {
		return nil, Params{}, err
	}
	return args[1], p, nil
}
