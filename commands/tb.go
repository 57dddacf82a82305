package commands

import (
	"errors"

	"github.com/redcell/redcell/internal/arg"
	"github.com/redcell/redcell/request"
	"github.com/redcell/redcell/tokenbucket"
)

// The token-bucket family's place in the command layer: its table entries
// (tbTake, tbPeek, below) with their parse functions. The algorithm, its
// argument syntax and its validation order are package tokenbucket's; the
// state machine's half is fsm/tb.go.

var tbArgs = []Arg{{Name: "key", Type: "key"}, {Name: "capacity", Type: "integer"}, {Name: "refill_tokens", Type: "integer"},
	{Name: "refill_period_ms", Type: "integer"}, {Name: "cost", Type: "integer", Token: "COST", Optional: true},
	{Name: "interval", Type: "pure-token", Token: "INTERVAL", Optional: true}}

var (
	tbTake = &Spec{Name: "tb.take", Arity: -5, Flags: []string{"fast"}, Code: request.TBTake,
		Group: "module", Since: "1.0.0", Complexity: "O(1)", ACL: []string{"@write", "@fast"},
		Summary: "Takes COST tokens (default 1; 0 looks, negative refunds) from a token bucket, refilled continuously (greedy) or refill_tokens at once every refill_period_ms (INTERVAL): answers [limited, capacity, remaining, retry_after_ms, reset_after_ms].",
		Args:    tbArgs, Parse: parseTBTake}
	tbPeek = &Spec{Name: "tb.peek", Arity: -5, Flags: []string{"fast"}, Code: request.TBPeek,
		Group: "module", Since: "1.0.0", Complexity: "O(1)", ACL: []string{"@read", "@fast"},
		Summary: "Answers what TB.TAKE with the same arguments would at this instant, with no effect.",
		Args:    tbArgs, Parse: parseTBPeek}
)

func parseTBTake(args [][]byte) (request.Request, string) {
	return parseTB(request.TBTake, "tb.take", args)
}

func parseTBPeek(args [][]byte) (request.Request, string) {
	return parseTB(request.TBPeek, "tb.peek", args)
}

// parseTB builds a TB request: Args capacity, refill_tokens,
// refill_period_ms, COST, INTERVAL (1) or greedy (0). The state machine
// rebuilds the same tokenbucket.Params from them (fsm/tb.go).
func parseTB(code request.Code, name string, args [][]byte) (request.Request, string) {
	key, p, err := tokenbucket.Parse(args)
	if err != nil {
		return request.Request{}, familyErr(name, err)
	}
	r := request.Request{Code: code, Key: key}
	r.SetArgs(p.Capacity, p.RefillTokens, p.PeriodMs, p.Cost, boolArg(p.Interval))
	return r, ""
}

// familyErr is the reply to a limiter package's validation error: its own
// text, except arity, whose Redis text names the command.
func familyErr(name string, err error) string {
	var e arg.Error
	if !errors.As(err, &e) {
		return ErrInternal
	}
	if e == arg.ErrArity {
		return WrongArgs(name)
	}
	return string(e)
}

func boolArg(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
