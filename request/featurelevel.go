package request

import (
	"fmt"
	"strconv"
)

// Cluster feature levels: what a rolling upgrade needs from the log format.
//
// A build that adds a write code (a new command, or a new way an existing
// one is logged) cannot let it into the log while any member still runs a
// build that does not know it: that member's state machine would meet an
// unknown code and stop, and a node-by-node upgrade would halt the
// cluster. So every code has the feature level that introduced it (its
// descriptor's Level), each build knows the highest level it can apply
// (SupportedFeatureLevel), and the cluster has one active level, replicated
// state raised by a SetFeatureLevel entry that the leader proposes only once
// every member reports supporting it (package node). A request whose code
// needs a level above the active one is refused before it is proposed, and
// again, deterministically, at apply (ErrFeatureLevel). The active level
// never goes down. See DESIGN.md, "Feature levels", for each level's codes.
//
// This is CockroachDB's cluster version and etcd's cluster version, small:
// one integer, raised by the log itself.

// FeatureLevel is a cluster feature level.
type FeatureLevel uint32

// BaseFeatureLevel is the level of every code that existed when feature
// levels were introduced, SetFeatureLevel itself included: a data dir or a
// snapshot that says nothing of levels is at it, and so is a cluster that
// never raised its level.
const BaseFeatureLevel FeatureLevel = 1

// SetFeatureLevel raises the cluster's active feature level to Args[0]
// (a NoKey write; never below the active level: a lower or equal one
// changes nothing). No command parses it: the leader proposes it
// (node/featurelevel.go). It is at the base level, so every build that
// knows feature levels decodes it; a build whose SupportedFeatureLevel is
// below Args[0] stops at it with an error that says so (fsm), since it
// could not apply what follows.
const SetFeatureLevel Code = 53

// ErrFeatureLevel: the request's code needs a feature level above the
// cluster's active one. Nothing changed. The result's Ints hold the code,
// the level it needs and the active level (SetFeatureLevelErr), which the
// forwarding encoding carries, so the reply names them (FeatureLevelText).
const ErrFeatureLevel ErrCode = 64

// featureLevelErrText is ErrFeatureLevel's text when the result does not
// say which code and levels (never the case for a result this package
// filled in).
const featureLevelErrText = "ERR this command needs a higher cluster feature level (every member must run a build that supports it)"

var featureLevelOps = []Op{
	{Code: SetFeatureLevel, Name: "SETFEATURELEVEL", Keys: NoKey, Reply: KindOK},
}

func init() {
	errs := []ErrText{{ErrFeatureLevel, featureLevelErrText}}
	describeKeyspace(featureLevelOps, errs)
	keyspaceErrors = append(keyspaceErrors, errs...)
}

// Level is the feature level a request of code c needs: the level that
// introduced it (BaseFeatureLevel for every code of the base level). An
// unknown code answers 0.
func (c Code) Level() FeatureLevel { return ops[c].Level }

// AboveLevel reports whether a request of code c needs a feature level
// above active (false for a code this build does not know: the decoder
// refuses those).
func (c Code) AboveLevel(active FeatureLevel) bool { return ops[c].Level > active }

// NewSetFeatureLevel is the request that raises the active level to level.
func NewSetFeatureLevel(level FeatureLevel) Request {
	r := Request{Code: SetFeatureLevel}
	r.SetArgs(int64(level))
	return r
}

// SetFeatureLevelErr makes res ErrFeatureLevel for a request of code c
// refused at the active level.
func (r *Result) SetFeatureLevelErr(c Code, active FeatureLevel) {
	*r = Result{}
	r.SetErr(ErrFeatureLevel)
	r.Ints[0], r.Ints[1], r.Ints[2] = int64(c), int64(c.Level()), int64(active)
}

// FeatureLevelText is the reply to a request refused with ErrFeatureLevel:
//
//	ERR 'DEBUG NEXTLEVEL' needs cluster feature level 2 (every member must run a build that supports it); the cluster is at level 1
func FeatureLevelText(r *Result) string {
	c := Code(r.Ints[0])
	if r.Ints[0] < 0 || r.Ints[0] > 255 || !c.Known() || r.Ints[1] <= 0 {
		return featureLevelErrText
	}
	return fmt.Sprintf("ERR '%s' needs cluster feature level %d (every member must run a build that supports it); the cluster is at level %s",
		ops[c].Name, r.Ints[1], strconv.FormatInt(r.Ints[2], 10))
}

// UnsupportedLevelError is why a node cannot go on with a cluster whose
// active feature level is above what its build supports: its state machine
// stops at the entry (or refuses the snapshot) that raised it.
func UnsupportedLevelError(level FeatureLevel) error {
	return fmt.Errorf("the cluster is at feature level %d, and this build supports feature levels up to %d: "+
		"run a build that supports level %d on this node (a cluster's feature level never goes down)",
		level, SupportedFeatureLevel, level)
}
