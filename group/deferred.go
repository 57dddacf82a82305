package group

import "github.com/redcell/redcell/request"

// Deferred scripts (fsm/deferred.go): a script that ran past the apply
// slice comes back from the state machine as request.ErrScriptDeferred,
// undone. The leader that proposed it runs it beside the state machine and
// proposes its effects; that is done here, before the caller's Propose (or
// a follower's forwarded call) is answered, so no client ever sees the
// deferral: it sees the script's reply, later by the time the script ran.

// maxBesideRuns bounds how often a deferred script is run beside the state
// machine when its effects keep finding its keys changed (another client
// writing them meanwhile); then it runs in the log with its whole budget.
const maxBesideRuns = 3

// maxEffectsBytes bounds the effects proposed in a script's place; larger
// ones (a script that wrote megabytes) run in the log instead. Below
// commands.MaxRequestLogBytes.
const maxEffectsBytes = 8 << 20

// markUndeferrable marks with request.MarkWholeBudget every script of a
// call but the last: the requests after a script in the same call are
// applied in the same entry, so a script deferred past them would take
// effect after requests its client sent after it. The last one may be
// deferred.
func markUndeferrable(reqs []request.Request) {
	for i := 0; i < len(reqs)-1; i++ {
		if c := reqs[i].Code; c == request.Eval || c == request.EvalSha {
			reqs[i].Mark(request.MarkWholeBudget)
		}
	}
}

// resolveDeferred answers, in res, each script of reqs that the state
// machine deferred. It blocks while the scripts run and their effects are
// committed.
func (g *Group) resolveDeferred(reqs []request.Request, res []request.Result) {
	for i := range reqs {
		if res[i].Kind == request.KindError && res[i].Err == request.ErrScriptDeferred {
			g.runDeferred(&reqs[i], &res[i])
		}
	}
}

// runDeferred runs r beside the state machine and commits its effects,
// again while they conflict, then in the log with its whole budget; res is
// the answer. A failure of the call that commits them answers as the
// failure of a client's call would, in a result: ErrScriptOutcomeUnknown
// when they may have been applied, else ErrScriptDeferred, whose text says
// to retry (nothing happened: the script's run in the log was undone).
func (g *Group) runDeferred(r *request.Request, res *request.Result) {
	one := make([]request.Request, 1)
	out := make([]request.Result, 1)
	for range maxBesideRuns {
		now := max(g.cfg.Clock.Now(), g.fsm.Clock())
		effects, whole := g.fsm.RunBeside(r, now)
		if whole || request.EncodedLen(&effects) > maxEffectsBytes {
			break
		}
		one[0] = effects
		if err := g.proposeCall(one, out); err != nil {
			res.SetErr(failedDeferred(err))
			return
		}
		if out[0].Kind != request.KindError || out[0].Err != request.ErrScriptConflict {
			*res = out[0]
			return
		}
	}
	one[0] = *r
	one[0].Mark(request.MarkWholeBudget)
	if err := g.proposeCall(one, out); err != nil {
		res.SetErr(failedDeferred(err))
		return
	}
	*res = out[0]
}

// proposeCall commits one call of requests and fills res.
func (g *Group) proposeCall(reqs []request.Request, res []request.Result) error {
	b := NewBatch()
	b.Ops, b.Results = reqs, res
	return g.Propose(b)
}

// hasDeferred reports whether any result is ErrScriptDeferred.
func hasDeferred(res []request.Result) bool {
	for i := range res {
		if res[i].Kind == request.KindError && res[i].Err == request.ErrScriptDeferred {
			return true
		}
	}
	return false
}

// failedDeferred is the result of a deferred script whose commit failed.
func failedDeferred(err error) request.ErrCode {
	if request.AsFailure(err).Code == request.FailOutcomeUnknown {
		return request.ErrScriptOutcomeUnknown
	}
	return request.ErrScriptDeferred
}
