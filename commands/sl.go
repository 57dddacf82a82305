package commands

import (
	"github.com/redcell/redcell/request"
	"github.com/redcell/redcell/slidinglog"
)

// The sliding-log family's place in the command layer: its table entries
// (slHit, slPeek, below) with their parse functions. The algorithm, its
// argument syntax and its validation order are package slidinglog's; the
// state machine's half is fsm/sl.go.

var (
	slHit = &Spec{Name: "sl.hit", Arity: -4, Flags: []string{"fast"}, Code: request.SLHit,
		Group: "module", Since: "1.0.0", Complexity: "O(runs leaving the window); at most O(limit)", ACL: []string{"@write", "@fast"},
		Summary: "Records COST hits (default 1) in an exact sliding-window log if allowed (DENIED COUNT: also when denied): answers [limited, limit, remaining, retry_after_ms, reset_after_ms].",
		Args: []Arg{{Name: "key", Type: "key"}, {Name: "limit", Type: "integer"}, {Name: "window_ms", Type: "integer"},
			{Name: "cost", Type: "integer", Token: "COST", Optional: true}, {Name: "mingap", Type: "integer", Token: "MINGAP", Optional: true},
			{Name: "denied", Type: "oneof", Token: "DENIED", Optional: true, Args: []Arg{
				{Name: "free", Type: "pure-token", Token: "FREE"}, {Name: "count", Type: "pure-token", Token: "COUNT"}}}},
		Parse: parseSLHit}
	slPeek = &Spec{Name: "sl.peek", Arity: -4, Flags: []string{"fast"}, Code: request.SLPeek,
		Group: "module", Since: "1.0.0", Complexity: "O(runs leaving the window); at most O(limit)", ACL: []string{"@read", "@fast"},
		Summary: "Answers what SL.HIT with the same arguments (DENIED FREE) would at this instant, with no effect.",
		Args: []Arg{{Name: "key", Type: "key"}, {Name: "limit", Type: "integer"}, {Name: "window_ms", Type: "integer"},
			{Name: "cost", Type: "integer", Token: "COST", Optional: true}, {Name: "mingap", Type: "integer", Token: "MINGAP", Optional: true}},
		Parse: parseSLPeek}
)

func parseSLHit(args [][]byte) (request.Request, string) {
	key, p, err := slidinglog.ParseHit(args)
	return slRequest(request.SLHit, "sl.hit", key, p, err)
}

func parseSLPeek(args [][]byte) (request.Request, string) {
	key, p, err := slidinglog.ParsePeek(args)
	return slRequest(request.SLPeek, "sl.peek", key, p, err)
}

// slRequest builds an SL request: Args limit, window_ms, COST, MINGAP,
// DENIED COUNT (1) or FREE (0). The state machine rebuilds the same
// slidinglog.Params from them (fsm/sl.go).
func slRequest(code request.Code, name string, key []byte, p slidinglog.Params, err error) (request.Request, string) {
	if err != nil {
		return request.Request{}, familyErr(name, err)
	}
	r := request.Request{Code: code, Key: key}
	r.SetArgs(p.Limit, p.WindowMs, p.Cost, p.MinGapMs, boolArg(p.DeniedCount))
	return r, ""
}
