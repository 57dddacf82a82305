package request

import (
	"fmt"

	"github.com/redcell/redcell/internal/arg"
)

// Descriptors: the one place where what a code, a key kind or an error code
// means to every layer is written down. Each code is described once, in
// codes.go, by the keyspace's list or by its family's descriptor; every
// layer asks here instead of keeping its own switch over codes (a code
// missing from one such switch compiled and failed quietly: a fatal decode
// on every replica, maxmemory letting keys in, prefetching stopped). The
// layers above register their own part per code and per family (fsm its
// handlers, commands its parsers) and test that nothing described lacks
// one.
//
// The tables are filled while the package initialises and only read
// afterwards, from any goroutine; a lookup is an array index.

// KeyShape says what a request's Key or Keys hold.
type KeyShape uint8

const (
	// NoKey: neither (FLUSHALL, DBSIZE). Encoded as a key count of 0.
	NoKey KeyShape = iota + 1
	// OneKey: Key names one key, which the request looks up.
	OneKey
	// KeyList: Keys, a list of keys (DEL, EXISTS).
	KeyList
	// KeyPattern: Key is a glob pattern, not a key (SCAN's MATCH, KEYS). It
	// is encoded as one key but names none.
	KeyPattern
	// KeyValue: Key names one key, which the request looks up, as OneKey;
	// Keys holds the values it writes there (SET's value), not keys.
	// Encoded as a list: the key, then the values.
	KeyValue
	// KeyPairs: Keys alternates keys and the values written to them
	// (MSET). Encoded as a list.
	KeyPairs
	// KeyScript: Keys holds a script or its SHA-1, then Args[0] keys (the
	// script's KEYS), then the script's arguments (request/scripts.go).
	// Encoded as a list.
	KeyScript
	// KeyEffects: Keys holds a script's reply, then Args[0] pairs of a
	// key it read and that key's change marker, then Args[1] pairs of a
	// key it wrote and the record to install there (request/effects.go).
	// Encoded as a list.
	KeyEffects
)

// Op describes one request code. Whether it writes is its number (IsWrite):
// that split is part of the log format.
type Op struct {
	Code Code
	// Name is the command it stands for, for messages ("CL.THROTTLE").
	Name string
	Keys KeyShape
	// Creates: a request creates its Key when it is missing (a limiter's
	// first call), or for KeyPairs its keys (MSET). Above maxmemory the
	// leader refuses it (ErrOOM) unless every key it names is live.
	Creates bool
	// Grows: a request may make an existing key's value larger by as much
	// as the client chooses (APPEND, SET over a string, HSET, LPUSH, SADD,
	// ZADD): above maxmemory the leader refuses it even on a live key, as
	// Redis refuses its denyoom commands. A request whose growth is bounded
	// by its kind (INCR's digits, a limiter's fixed state) is not marked,
	// so existing counters and limiters keep deciding.
	Grows bool
	// Reply is the Kind of its result when it does not fail.
	Reply Kind
	// Nullable: the result may also be KindNil (GET of a missing key, SET
	// NX on a present one) or KindNilArray (LPOP key count of a missing
	// key).
	Nullable bool
	// AlsoReply is a second Kind some of its requests answer (SET … GET
	// answers the old value, KindBulk, where SET answers KindOK); 0: none.
	AlsoReply Kind
	// Family is the family whose keys it works on; nil for the keyspace's
	// own codes, which work on any key.
	Family *Family
	// Split is how a request of the code is carried across groups when
	// its keys lie in several slots or it names none (routing.go); Merge
	// is how a SplitEveryGroup code's answers combine.
	Split Split
	Merge Merge
	// Level is the cluster feature level that introduced the code
	// (featurelevel.go): a request of it is refused while the cluster's
	// active level is lower. Left 0 in a descriptor, it is
	// BaseFeatureLevel.
	Level FeatureLevel
}

// KeyKind is what a key holds: which family's state, in which of its modes.
// Its value is the key's kind in the keyspace (shard.Kind), in snapshot
// records, and in a KindType result. Below 128 (the snapshot record and
// the keyspace's arena use the top bit of its byte).
type KeyKind uint8

// Family describes one limiter family (later: one data type): the codes
// that work on its keys, the kinds its keys have, and what the keyspace's
// commands answer about them.
type Family struct {
	// Name is its command prefix, for messages ("CL", "TB").
	Name string
	// TypeName is what TYPE answers for its keys, and the SCAN TYPE name
	// that selects them (ASCII case folded).
	TypeName string
	// ScanType is the value of the SCAN TYPE filter (Scan's Args[2]) that
	// selects its keys.
	ScanType int64
	// Kinds are the kinds its keys have: more than one when its modes are
	// separate for WRONGTYPE (TB greedy and INTERVAL).
	Kinds []KeyKind
	// Ops are its codes.
	Ops []Op
	// Errors are the error codes its requests can answer besides the
	// keyspace's (WRONGTYPE, invalid, OOM), with their reply texts.
	Errors []ErrText
}

// ErrText is an error code with the reply text clients read for it.
type ErrText struct {
	Code ErrCode
	Text string
}

var (
	ops      [256]Op
	byKind   [128]*Family
	errTexts [256]string
	families []*Family
)

// Describe returns code c's descriptor; for a code this build does not know
// it is the zero Op (Name "").
func Describe(c Code) *Op { return &ops[c] }

// Known reports whether this build knows the code.
func (c Code) Known() bool { return ops[c].Keys != 0 }

// IsWrite reports whether requests with this code change replicated state
// (and so go through the log).
func (c Code) IsWrite() bool { return c < firstRead }

// firstRead splits the code space.
const firstRead Code = 64

// MultiKey reports whether the code takes Keys (a list) rather than Key.
func (c Code) MultiKey() bool { return ops[c].Keys == KeyList }

// LooksUpKey reports whether a request with this code looks its Key up in
// the keyspace (Scan and Keys take a pattern there instead).
func (c Code) LooksUpKey() bool { return ops[c].Keys == OneKey || ops[c].Keys == KeyValue }

// ForEachKey calls fn with each key r names (a KeyValue request's values
// and a KeyPairs request's values are not keys; a pattern is not one).
func (r *Request) ForEachKey(fn func(key []byte)) {
	switch ops[r.Code].Keys {
	case KeyPattern, NoKey:
	case KeyPairs:
		for i := 0; i < len(r.Keys); i += 2 {
			fn(r.Keys[i])
		}
	case KeyScript:
		for _, k := range r.ScriptKeys() {
			fn(k)
		}
	case KeyEffects:
		r.forEachEffectKey(fn)
	case KeyList:
		for _, k := range r.Keys {
			fn(k)
		}
	default:
		if r.Key != nil {
			fn(r.Key)
		}
	}
}

// CreatesKey reports whether a request with this code creates its Key when
// it is missing (a limiter's first call): what maxmemory refuses.
func (c Code) CreatesKey() bool { return ops[c].Creates }

// Grows reports whether a request with this code may grow an existing
// key's value by an amount the client chooses: what maxmemory refuses even
// on a live key (Op.Grows).
func (c Code) Grows() bool { return ops[c].Grows }

// Families returns every family this build knows, in the order they were
// described. The slice is shared: do not modify it.
func Families() []*Family { return families }

// KindFamily is the family whose keys have kind k, nil if none.
func KindFamily(k KeyKind) *Family {
	if int(k) >= len(byKind) {
		return nil
	}
	return byKind[k]
}

// TypeName is what TYPE answers for a key kind carried in a KindType
// result's Ints[0]: its family's type name, "none" for KeyNone or anything
// this build does not know.
func TypeName(t int64) string {
	if t < 0 || t >= int64(len(byKind)) || byKind[t] == nil {
		return "none"
	}
	return byKind[t].TypeName
}

// ScanTypeByName is the SCAN TYPE filter for a type name (ASCII case
// folded): the family's ScanType, or ScanTypeNone for a name no key has
// (list, hash, or anything else), which matches nothing as in Redis 7.0.
func ScanTypeByName(name []byte) int64 {
	for _, fam := range families {
		if arg.EqualFold(name, fam.TypeName) {
			return fam.ScanType
		}
	}
	return ScanTypeNone
}

// ValidScanType reports whether v is a SCAN TYPE filter this build can
// have written: ScanTypeAny, ScanTypeNone or a family's.
func ValidScanType(v int64) bool {
	if v == ScanTypeAny || v == ScanTypeNone {
		return true
	}
	for _, fam := range families {
		if fam.ScanType == v {
			return true
		}
	}
	return false
}

// ScanMatches reports whether a key of kind k passes the SCAN TYPE filter.
func ScanMatches(filter int64, k KeyKind) bool {
	if filter == ScanTypeAny {
		return true
	}
	fam := KindFamily(k)
	return fam != nil && fam.ScanType == filter
}

// Text is the reply text of a deterministic error code, "" for ErrNone or
// a code no descriptor names.
func (e ErrCode) Text() string { return errTexts[e] }

// Answers reports whether a request of this code may answer the error code
// e: one of the keyspace's (WRONGTYPE, invalid, OOM) or one its family
// describes. The state machine answers no other (the fsm tests check every
// result they see against it).
func (o *Op) Answers(e ErrCode) bool {
	for _, k := range keyspaceErrors {
		if k.Code == e {
			return true
		}
	}
	if o.Family != nil {
		for _, k := range o.Family.Errors {
			if k.Code == e {
				return true
			}
		}
	}
	return false
}

// describeKeyspace registers the keyspace's own codes and error texts.
func describeKeyspace(list []Op, errs []ErrText) {
	for i := range list {
		describeOp(list[i])
	}
	describeErrors(errs)
}

// describeFamily registers a family: its codes, kinds and error texts. It
// panics on anything that would make two descriptors disagree (a code, a
// kind or a SCAN TYPE value claimed twice, one error code with two texts):
// a programming error caught when the process starts.
func describeFamily(fam *Family) *Family {
	if fam.Name == "" || fam.TypeName == "" || len(fam.Kinds) == 0 || len(fam.Ops) == 0 {
		panic(fmt.Sprintf("request: family %q is incompletely described", fam.Name))
	}
	if fam.ScanType == ScanTypeAny || fam.ScanType == ScanTypeNone {
		panic(fmt.Sprintf("request: family %s has SCAN TYPE value %d, which is reserved", fam.Name, fam.ScanType))
	}
	for _, other := range families {
		if other.ScanType == fam.ScanType && other.TypeName != fam.TypeName {
			panic(fmt.Sprintf("request: families %s and %s share SCAN TYPE value %d", other.Name, fam.Name, fam.ScanType))
		}
	}
	for _, k := range fam.Kinds {
		if k == KeyNone || int(k) >= len(byKind) || byKind[k] != nil {
			panic(fmt.Sprintf("request: family %s claims key kind %d, which is reserved or taken", fam.Name, k))
		}
		byKind[k] = fam
	}
	for i := range fam.Ops {
		fam.Ops[i].Family = fam
		describeOp(fam.Ops[i])
	}
	describeErrors(fam.Errors)
	families = append(families, fam)
	return fam
}

func describeOp(op Op) {
	switch {
	case ops[op.Code].Keys != 0:
		panic(fmt.Sprintf("request: code %d described twice", op.Code))
	case op.Code == 0 || op.Name == "" || op.Keys < NoKey || op.Keys > KeyEffects:
		panic(fmt.Sprintf("request: code %d (%q) is incompletely described", op.Code, op.Name))
	case op.Reply < KindThrottle || op.Reply > kindLast || op.Reply == KindError || op.Reply == KindNil:
		panic(fmt.Sprintf("request: code %d has reply kind %d", op.Code, op.Reply))
	case op.Grows && !op.Code.IsWrite():
		panic(fmt.Sprintf("request: code %d grows a value but is not a write", op.Code))
	case op.Creates && (op.Keys != OneKey && op.Keys != KeyValue && op.Keys != KeyPairs || !op.Code.IsWrite()):
		panic(fmt.Sprintf("request: code %d creates a key but is not a single-key write", op.Code))
	case (op.Split == SplitEveryGroup) != (op.Merge != MergeNone),
		op.Split == SplitCount && (op.Keys != KeyList || op.Reply != KindInt),
		op.Split == SplitInOrder && op.Keys != KeyList:
		panic(fmt.Sprintf("request: code %d splits as %d with merge %d, which its keys (%d) or reply (%d) cannot", op.Code, op.Split, op.Merge, op.Keys, op.Reply))
	case op.Level > SupportedFeatureLevel:
		panic(fmt.Sprintf("request: code %d needs feature level %d, above this build's %d", op.Code, op.Level, SupportedFeatureLevel))
	}
	if op.Level == 0 {
		op.Level = BaseFeatureLevel
	}
	ops[op.Code] = op
}

func describeErrors(errs []ErrText) {
	for _, e := range errs {
		if e.Code == ErrNone || e.Text == "" || errTexts[e.Code] != "" && errTexts[e.Code] != e.Text {
			panic(fmt.Sprintf("request: error code %d described as %q and %q", e.Code, errTexts[e.Code], e.Text))
		}
		errTexts[e.Code] = e.Text
	}
}
