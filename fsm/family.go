package fsm

import (
	"github.com/redcell/redcell/request"
	"github.com/redcell/redcell/shard"
)

// A family is one limiter family's part of the state machine: its two
// request codes (the limiter call, a write; its PEEK, a read), the key kinds
// it stores, and the functions that check, apply and answer them. Each
// family is one file (cl.go, tb.go, sl.go) with one family value; adding a
// family is that file plus its line in families. Everything generic (DEL,
// EXISTS, TYPE, PTTL, snapshots, digests, sweeping) works on any family's
// keys through package shard without knowing it.
type family struct {
	write, read request.Code
	// kinds are the shard kinds its keys have (more than one when its
	// modes are separate families for WRONGTYPE, as TB greedy/INTERVAL).
	kinds []shard.Kind
	// valid says why a request of its codes cannot be honoured ("" when
	// it can): only what the parser never produces (validRequest).
	valid func(r *request.Request) string
	// apply runs its write at now; the caller holds applyMu for writing.
	apply func(f *FSM, r *request.Request, now int64, res *request.Result)
	// peek answers its read at now; the caller holds applyMu (either way).
	peek func(f *FSM, r *request.Request, now int64, res *request.Result)
	// pttl is PTTL in ms of a live key of its kinds; nil: the common rule,
	// expiry.MsUp(Expire - now).
	pttl func(st shard.State, now int64) int64
}

// families lists every limiter family the state machine applies.
var families = []*family{&clFamily, &tbFamily, &slFamily}

var (
	byCode [256]*family
	byKind [128]*family
)

func init() {
	for _, fam := range families {
		for _, c := range []request.Code{fam.write, fam.read} {
			if byCode[c] != nil || c.IsWrite() != (c == fam.write) {
				panic("fsm: family codes overlap or are misclassified")
			}
			byCode[c] = fam
		}
		for _, k := range fam.kinds {
			if byKind[k] != nil {
				panic("fsm: two families claim one key kind")
			}
			byKind[k] = fam
		}
	}
}

// familyOf is the family of a request code, nil for a keyspace code.
func familyOf(c request.Code) *family { return byCode[c] }

// kindFamily is the family that stores keys of kind k, nil if none.
func kindFamily(k shard.Kind) *family {
	if int(k) >= len(byKind) {
		return nil
	}
	return byKind[k]
}
