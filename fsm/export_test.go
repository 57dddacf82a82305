package fsm

import (
	"github.com/redcell/redcell/request"
	"github.com/redcell/redcell/shard"
)

// Handled reports whether the state machine has a handler for code c.
func Handled(c request.Code) bool { return handlers[c].run != nil }

// KindRegistered is the family the state machine registered for keys of
// kind k (its request descriptor), nil if none.
func KindRegistered(k request.KeyKind) *request.Family {
	if fam := kindFamily(shard.Kind(k)); fam != nil {
		return fam.desc
	}
	return nil
}

// RegisteredFamilies are the request descriptors of the families the state
// machine registered, in order.
func RegisteredFamilies() []*request.Family {
	out := make([]*request.Family, len(families))
	for i, fam := range families {
		out[i] = fam.desc
	}
	return out
}
