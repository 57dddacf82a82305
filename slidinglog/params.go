package slidinglog

import (
	"math"

	"github.com/redcell/redcell/internal/arg"
)

// Error is a validation failure. Its text is the reply a client sees
// (without the leading '-'), verbatim from the contract, except ErrArity
// (whose wire text names the command) and ErrCorrupt (Redcell's own).
// Errors are constants: comparing with == and returning them never
// allocates.
type Error = arg.Error

// The error vocabulary of SL.HIT and SL.PEEK, in the order the contract
// checks them (limiters.md rule 5).
const (
	// ErrArity: fewer than `key limit window_ms`. The reply names the
	// command in lower case, so the command layer answers "ERR wrong number
	// of arguments for 'sl.hit' command" (its WrongArgs(name)) instead of
	// this text.
	ErrArity = arg.ErrArity
	// ErrNotInteger: a positional parameter, COST's or MINGAP's value does
	// not parse as strconv.ParseInt(s, 10, 64), or the window's nanoseconds
	// do not fit in int64 (rules 8 and 12).
	ErrNotInteger = arg.ErrNotInteger
	// ErrSyntax: an unknown option, an option missing its value, a DENIED
	// value other than FREE/COUNT, or DENIED on SL.PEEK.
	ErrSyntax       = arg.ErrSyntax
	ErrLimit  Error = "ERR limit must be positive"
	ErrWindow Error = "ERR window_ms must be positive"
	ErrCost   Error = "ERR COST must be positive"
	ErrMinGap Error = "ERR MINGAP must be between 0 and window_ms"

	// ErrCorrupt is Redcell's own: Hit was handed a log it never writes
	// (an undecodable value, an entry after now). Nothing changed. Only a
	// bug or a damaged snapshot can produce one.
	ErrCorrupt Error = "ERR internal error: corrupt sliding log state"
)

const (
	nanosPerMilli = 1_000_000
	// MaxWindowMs is the largest window_ms whose nanoseconds fit in int64
	// (rule 8).
	MaxWindowMs = math.MaxInt64 / nanosPerMilli // 9223372036854
)

// Params is one SL.HIT/SL.PEEK call's parameters, validated. Build it with
// ParseHit, ParsePeek or NewParams: the unexported fields are derived
// there, and Hit rejects a Params that did not come from them. A Params is
// a plain value, safe to copy and share.
//
// The five exported fields are everything a request needs to carry; the
// state machine can rebuild the same Params with NewParams.
type Params struct {
	Limit       int64 // ≥ 1
	WindowMs    int64 // 1 ≤ WindowMs ≤ MaxWindowMs
	Cost        int64 // COST n ≥ 1 (default 1)
	MinGapMs    int64 // MINGAP, 0 ≤ MinGapMs ≤ WindowMs (default 0: off)
	DeniedCount bool  // DENIED COUNT (else FREE, the default); Peek ignores it

	window int64 // W = WindowMs·10^6 ns; 0 only in a Params not built by NewParams
	gap    int64 // G = MinGapMs·10^6 ns ≤ W
}

// NewParams validates parsed integers in the contract's order — limit,
// window_ms, COST, MINGAP (rule 5.4), then window_ms·10^6 ≤ 2^63−1
// (rule 8) — and derives W and G. The clock-dependent check, now + W ≤
// 2^63−1 (rule 12), is CheckAt's.
//
// NewParams is pure and does not allocate.
func NewParams(limit, windowMs, cost, minGapMs int64, deniedCount bool) (Params, error) {
	switch {
	case limit < 1:
		return Params{}, ErrLimit
	case windowMs < 1:
		return Params{}, ErrWindow
	case cost < 1:
		return Params{}, ErrCost
	case minGapMs < 0 || minGapMs > windowMs:
		return Params{}, ErrMinGap
	case windowMs > MaxWindowMs:
		return Params{}, ErrNotInteger
	}
	return Params{
		Limit:       limit,
		WindowMs:    windowMs,
		Cost:        cost,
		MinGapMs:    minGapMs,
		DeniedCount: deniedCount,
		window:      windowMs * nanosPerMilli,
		gap:         minGapMs * nanosPerMilli,
	}, nil
}

// CheckAt is rule 12: now + W must fit in int64. It returns ErrNotInteger
// when it does not, when p did not come from NewParams, or when now < 0
// (the replicated clock starts at 0 and never goes back, so that never
// happens in Redcell).
//
// Validation step 5 comes before WRONGTYPE (step 6), so the state machine
// calls CheckAt with the entry's now before it looks at the key's family;
// Hit and Peek check again and refuse to decide when it fails.
func (p Params) CheckAt(now int64) error {
	if p.window <= 0 || now < 0 || now > math.MaxInt64-p.window {
		return ErrNotInteger
	}
	return nil
}

// ParseHit parses an SL.HIT command, args[0] being the command name:
//
//	SL.HIT key limit window_ms [COST n] [MINGAP ms] [DENIED FREE|COUNT]
//
// It checks, in the contract's order (rule 5): arity (at least three words
// after the name, no upper bound), the positional integers left to right,
// the options left to right (a COST or MINGAP value that does not parse is
// ErrNotInteger; an unknown word, an option without its value or a DENIED
// value other than FREE/COUNT is ErrSyntax; whichever comes first), the
// ranges, and rule 8; CheckAt does rule 12. A repeated option keeps its last
// value; keywords fold ASCII case only.
//
// key aliases args[1]. ParseHit does not allocate.
func ParseHit(args [][]byte) (key []byte, p Params, err error) {
	return parse(args, true)
}

// ParsePeek parses an SL.PEEK command: as ParseHit, but DENIED is a syntax
// error (rule 6).
func ParsePeek(args [][]byte) (key []byte, p Params, err error) {
	return parse(args, false)
}

func parse(args [][]byte, hit bool) ([]byte, Params, error) {
	if len(args) < 4 {
		return nil, Params{}, ErrArity
	}
	limit, ok := arg.Int(args[2])
	if !ok {
		return nil, Params{}, ErrNotInteger
	}
	windowMs, ok := arg.Int(args[3])
	if !ok {
		return nil, Params{}, ErrNotInteger
	}
	cost, minGap, deniedCount := int64(1), int64(0), false
	for i := 4; i < len(args); i++ {
		word := args[i]
		isCost, isGap := arg.EqualFold(word, "cost"), arg.EqualFold(word, "mingap")
		switch {
		case isCost || isGap:
			if i+1 == len(args) {
				return nil, Params{}, ErrSyntax
			}
			i++
			n, ok := arg.Int(args[i])
			if !ok {
				return nil, Params{}, ErrNotInteger
			}
			if isCost {
				cost = n
			} else {
				minGap = n
			}
		case hit && arg.EqualFold(word, "denied"):
			if i+1 == len(args) {
				return nil, Params{}, ErrSyntax
			}
			i++
			switch {
			case arg.EqualFold(args[i], "free"):
				deniedCount = false
			case arg.EqualFold(args[i], "count"):
				deniedCount = true
			default:
				return nil, Params{}, ErrSyntax
			}
		default:
			return nil, Params{}, ErrSyntax
		}
	}
	p, err := NewParams(limit, windowMs, cost, minGap, deniedCount)
	if err != nil {
		return nil, Params{}, err
	}
	return args[1], p, nil
}
