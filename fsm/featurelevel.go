package fsm

import (
	"fmt"

	"github.com/redcell/redcell/request"
)

// The cluster's active feature level (request/featurelevel.go): replicated
// state, raised by a SetFeatureLevel entry, kept in snapshots (version 6
// above the base level, snapshot.go), never lowered. It is the second guard
// of the log format: a request whose code needs a higher level is answered
// request.ErrFeatureLevel at apply, on every replica alike, even if a
// leader let it into the log. The first guard is the leader's (package
// group refuses such a request before proposing it).

var featureLevelOps = []op{
	{code: request.SetFeatureLevel, valid: setFeatureLevelValid, run: (*FSM).setFeatureLevel},
}

func init() { register(featureLevelOps, nil) }

// FeatureLevel is the cluster's active feature level as of the last
// applied entry (request.BaseFeatureLevel until one raised it). Safe from
// any goroutine.
func (f *FSM) FeatureLevel() request.FeatureLevel {
	return request.FeatureLevel(f.level.Load())
}

func setFeatureLevelValid(r *request.Request) string {
	if r.NArgs != 1 || r.Args[0] < int64(request.BaseFeatureLevel) || r.Args[0] > 1<<32-1 {
		return "a feature level that is not one"
	}
	return ""
}

// setFeatureLevel raises the active level; a level at or below it changes
// nothing (two leaders' raises may both commit). A level above what this
// build supports never gets here: apply stops first (unsupportedLevel).
func (f *FSM) setFeatureLevel(r *request.Request, _ int64, res *request.Result) {
	if l := uint32(r.Args[0]); l > f.level.Load() {
		f.level.Store(l)
		f.log.Info("cluster feature level raised", "feature_level", l, "index", f.entryIndex)
	}
	res.Kind = request.KindOK
}

// unsupportedLevel is the error that stops apply at a valid SetFeatureLevel
// request this build cannot follow, or nil. Stopping is the only safe
// answer: the entries after it may hold codes this build does not know,
// and the other replicas apply them.
func unsupportedLevel(r *request.Request) error {
	if r.Code != request.SetFeatureLevel || r.Args[0] <= int64(request.SupportedFeatureLevel) {
		return nil
	}
	return request.UnsupportedLevelError(request.FeatureLevel(r.Args[0]))
}

// explainUnknownCode adds to an error of decoding an entry what a code this
// build does not know most likely means: a newer build wrote it.
func explainUnknownCode(err error) error {
	return fmt.Errorf("%w: the entry was written by a build with request codes this one does not know "+
		"(this build supports cluster feature levels up to %d; every member must run a build that "+
		"supports the cluster's level)", err, request.SupportedFeatureLevel)
}
