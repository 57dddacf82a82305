package fsm

import (
	"fmt"

	"github.com/redcell/redcell/request"
	"github.com/redcell/redcell/shard"
)

// The state machine's registry: a handler per request code and a family per
// key kind, filled once at init from the registrations below and read by
// apply, Read, PTTL, SCAN and snapshot restore. What a code or a kind is
// (key shape, read or write, type names, error texts) is its descriptor in
// package request; this file only adds how the state machine runs it.
// TestDescriptorsHaveNoGaps fails when a described code has no handler or
// a described family no registration here.

// op is the state machine's handler of one request code.
type op struct {
	code request.Code
	// valid says why a request of this code cannot be honoured ("" when
	// it can): only what the parser never produces (validRequest). nil:
	// the code takes no arguments.
	valid func(r *request.Request) string
	// run applies a write, or answers a read, at now. The caller holds
	// applyMu: for writing when the code is a write, either way for a read.
	run func(f *FSM, r *request.Request, now int64, res *request.Result)
}

// A family is one limiter family's part of the state machine: the handlers
// of its codes and what the keyspace needs to know about its keys. Each
// family is one file (cl.go, tb.go, sl.go) with one family value; adding a
// family is that file plus its line in families. Everything generic (the
// keyspace's codes in keyspace.go, snapshots, digests, sweeping) works on
// any family's keys through package shard without knowing it.
type family struct {
	desc *request.Family
	// ops are the handlers of its codes, one for each of desc.Ops.
	ops []op
	// hasValue: its keys carry a variable-length value (shard.State.Val);
	// other families' keys never do.
	hasValue bool
	// emptyValue: its value may be empty (an empty string); otherwise a
	// key of a hasValue family always carries one.
	emptyValue bool
	// check refuses a snapshot record of its kinds that apply could never
	// have written, beyond the rules every record follows (a known kind, a
	// value exactly when the family has one); nil: nothing more to check.
	check func(rr *recordReader, st shard.State, version byte) error
	// pttl is PTTL in ms of a live key of its kinds; nil: the common rule,
	// expiry.MsUp(Expire - now).
	pttl func(st shard.State, now int64) int64
	// expiry is how EXPIRE, PERSIST and EXPIRETIME read and move its keys'
	// expiry (expire.go); the zero value: Expire is only the key's lifetime.
	expiry expiryRule
}

// families lists every limiter family the state machine applies.
var families = []*family{&clFamily, &tbFamily, &slFamily, &stringFamily, &hashFamily,
	&listFamily,
	&setFamily,
	&zsetFamily,
}

var (
	handlers [256]op
	byKind   [128]*family
)

func init() {
	register(keyspaceOps, nil)
	register(expireOps, nil)
	register(watchOps, nil)
	register(memoryOps, nil)
	register(scriptOps, nil)
	register(effectOps, nil)
	for _, fam := range families {
		register(fam.ops, fam.desc)
		for _, k := range fam.desc.Kinds {
			if shard.Kind(k) > shard.MaxKind {
				panic(fmt.Sprintf("fsm: key kind %d past the %d a keyspace record holds", k, shard.MaxKind))
			}
			if byKind[k] != nil {
				panic(fmt.Sprintf("fsm: two families claim key kind %d", k))
			}
			byKind[k] = fam
		}
	}
}

// register installs the handlers of one family's codes (desc nil: the
// keyspace's). A handler for a code that is not described, or not as this
// family's, is a programming error.
func register(list []op, desc *request.Family) {
	for _, h := range list {
		d := request.Describe(h.code)
		switch {
		case !h.code.Known() || d.Family != desc:
			panic(fmt.Sprintf("fsm: handler for code %d, which request does not describe as this family's", h.code))
		case handlers[h.code].run != nil:
			panic(fmt.Sprintf("fsm: two handlers for code %d", h.code))
		case h.run == nil:
			panic(fmt.Sprintf("fsm: handler for code %d runs nothing", h.code))
		}
		handlers[h.code] = h
	}
}

// kindFamily is the family that stores keys of kind k, nil if none.
func kindFamily(k shard.Kind) *family {
	if int(k) >= len(byKind) {
		return nil
	}
	return byKind[k]
}
