package group

import "github.com/redcell/redcell/request"

// The guard of the log format (request/featurelevel.go): a request whose
// code needs a cluster feature level above the active one (the state
// machine's, replicated) is refused before it is proposed, answering
// request.ErrFeatureLevel, while the other requests of its batch go on. A
// build that knows a code the other members do not thus never writes it
// into the log before every member runs a build that knows it (package node
// raises the level once they do). The leader's group guards every batch it
// proposes (Propose, ProposeAsync); a follower's router guards a batch
// before forwarding it (AtLevel), with its own view of the level, so
// a leader that runs an older build, which cannot even decode such a
// request, never receives one. The state machine refuses such a request at
// apply too, deterministically, in case one got past both.

// FeatureLevel is the cluster's active feature level, as of this node's
// last applied entry. Safe from any goroutine.
func (g *Group) FeatureLevel() request.FeatureLevel { return g.fsm.FeatureLevel() }

// AboveLevel reports whether one of reqs needs a feature level above
// active. When active is this build's supported level (every build without
// new codes, and any build once the cluster caught up) it is one compare.
func AboveLevel(active request.FeatureLevel, reqs []request.Request) bool {
	if active >= request.SupportedFeatureLevel {
		return false
	}
	for i := range reqs {
		if reqs[i].Code.AboveLevel(active) {
			return true
		}
	}
	return false
}

// AtLevel runs propose (a write's or a read's path) on the requests of reqs that the feature
// level active allows, in one call and in their order, and answers the
// others request.ErrFeatureLevel in res. A transaction's WatchGuard is
// adjusted to guard the requests that remain. An error of propose is the
// call's.
func AtLevel(active request.FeatureLevel, reqs []request.Request, res []request.Result,
	propose func([]request.Request, []request.Result) error) error {
	refused := make([]bool, len(reqs))
	for i := range reqs {
		refused[i] = reqs[i].Code.AboveLevel(active)
	}
	return proposeExcept(reqs, res, refused, propose, func(i int, r *request.Result) {
		r.SetFeatureLevelErr(reqs[i].Code, active)
	})
}

// aboveLevel reports whether one of b's requests needs a feature level
// above the active one.
func (g *Group) aboveLevel(b *Batch) bool { return AboveLevel(g.fsm.FeatureLevel(), b.Ops) }

// proposeAtLevel is Propose of a batch with a request above the active
// feature level: the others are proposed (through Propose, with its other
// guards), those are answered ErrFeatureLevel.
func (g *Group) proposeAtLevel(b *Batch) error {
	b.Results = readyResults(b.Results, len(b.Ops))
	return AtLevel(g.fsm.FeatureLevel(), b.Ops, b.Results, g.proposeBatch(g.Propose))
}

// proposeBatch adapts a Batch proposer to the slices proposeExcept takes.
func (g *Group) proposeBatch(propose func(*Batch) error) func([]request.Request, []request.Result) error {
	return func(reqs []request.Request, res []request.Result) error {
		rest := NewBatch()
		rest.Ops = reqs
		if err := propose(rest); err != nil {
			return err
		}
		copy(res, rest.Results)
		return nil
	}
}

// proposeExcept proposes reqs but the refused ones with propose, in one
// call, and answers each refused one with refuse; res must hold len(reqs)
// results. A WatchGuard kept is a copy whose count of the transaction's
// requests leaves the refused ones out (guardKeeps). Used by the maxmemory
// guard (memoryguard.go) and the feature level guard.
func proposeExcept(reqs []request.Request, res []request.Result, refused []bool,
	propose func([]request.Request, []request.Result) error, refuse func(i int, r *request.Result)) error {
	var rest []request.Request
	for i := range reqs {
		if !refused[i] {
			rest = append(rest, reqs[i])
			if op := &rest[len(rest)-1]; op.Code == request.WatchGuard {
				guardKeeps(op, refused[i+1:])
			}
		}
	}
	restRes := make([]request.Result, len(rest))
	if len(rest) > 0 {
		if err := propose(rest, restRes); err != nil {
			return err
		}
	}
	j := 0
	for i := range reqs {
		if refused[i] {
			res[i] = request.Result{}
			refuse(i, &res[i])
			continue
		}
		res[i] = restRes[j]
		j++
	}
	return nil
}

// readyResults is results with room for n.
func readyResults(results []request.Result, n int) []request.Result {
	if cap(results) < n {
		return make([]request.Result, n)
	}
	return results[:n]
}
