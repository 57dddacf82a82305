package request

import "encoding/binary"

// A script deferred from the log (spec/scripting.md, budgets; fsm's
// DESIGN.md): a script that runs past the apply slice in the state machine
// is undone there and answered ErrScriptDeferred; the node that proposed it
// runs it again beside the state machine, on copies of the keys it
// touches, and proposes what it did as a ScriptEffects request: the reply,
// the change marker of every key it read or wrote as it found it (the
// guards), and the record to install for every key it wrote. Applying it
// installs the records and answers the reply if no guarded key changed
// since, and answers ErrScriptConflict otherwise (the node runs it again).
// Replicas install the records; none runs the script.
const (
	// ScriptEffects is that request (KeyEffects): Keys[0] is the reply
	// (RESP3 bytes, as KindReply's Data), then Args[0] pairs of a key and
	// its change marker (8 bytes, little-endian; 0: the key had no
	// record), then Args[1] pairs of a key and its record
	// (the state machine's encoding of a shard record; empty: the key is
	// to be deleted).
	ScriptEffects Code = 52
)

const (
	// ErrScriptDeferred: the script ran past the apply slice and was
	// undone; the node that proposed it runs it beside the state machine.
	// A client never sees it unless that node cannot (its text says to
	// retry).
	ErrScriptDeferred ErrCode = 61
	// ErrScriptConflict: a ScriptEffects request whose guarded key changed
	// after the script read it; nothing was installed.
	ErrScriptConflict ErrCode = 62
	// ErrScriptOutcomeUnknown: leadership changed while a deferred
	// script's effects were being committed: they may or may not have been
	// applied (the text is the one a failed call gets for that).
	ErrScriptOutcomeUnknown ErrCode = 63
)

var effectOps = []Op{
	{Code: ScriptEffects, Name: "script effects", Keys: KeyEffects, Reply: KindReply},
}

func init() {
	errs := []ErrText{
		{ErrScriptDeferred, "TRYAGAIN the script ran too long to run in the log and could not run beside it; retry"},
		{ErrScriptConflict, "TRYAGAIN the keys of a long script changed while it ran; retry"},
		{ErrScriptOutcomeUnknown, "TRYAGAIN Leadership changed before the write was confirmed: it may or may not have been applied"},
	}
	describeKeyspace(effectOps, errs)
	keyspaceErrors = append(keyspaceErrors, errs...)
}

// EffectGuards calls fn with each guarded key and its change marker.
func (r *Request) EffectGuards(fn func(key []byte, mark uint64)) {
	g, _, ok := r.effectCounts()
	if !ok {
		return
	}
	for i := 0; i < g; i++ {
		m := r.Keys[2+2*i]
		if len(m) == 8 {
			fn(r.Keys[1+2*i], binary.LittleEndian.Uint64(m))
		}
	}
}

// EffectWrites calls fn with each written key and its record (empty: the
// key is deleted).
func (r *Request) EffectWrites(fn func(key, record []byte)) {
	g, w, ok := r.effectCounts()
	if !ok {
		return
	}
	base := 1 + 2*g
	for i := 0; i < w; i++ {
		fn(r.Keys[base+2*i], r.Keys[base+2*i+1])
	}
}

// ValidEffects reports whether r's counts fit its Keys and every marker is
// 8 bytes (the state machine refuses anything else).
func (r *Request) ValidEffects() bool {
	g, _, ok := r.effectCounts()
	if !ok {
		return false
	}
	for i := 0; i < g; i++ {
		if len(r.Keys[2+2*i]) != 8 {
			return false
		}
	}
	return true
}

func (r *Request) effectCounts() (guards, writes int, ok bool) {
	g, w := r.Args[0], r.Args[1]
	if r.NArgs != 2 || g < 0 || w < 0 || len(r.Keys) < 1 || int64(len(r.Keys)) != 1+2*g+2*w {
		return 0, 0, false
	}
	return int(g), int(w), true
}

// forEachEffectKey names the keys an effects request writes (what CLIENT
// TRACKING and WATCH must hear of), not those it only guards.
func (r *Request) forEachEffectKey(fn func(key []byte)) {
	r.EffectWrites(func(key, _ []byte) { fn(key) })
}

// AppendEffectGuard appends a guard (key, marker) to an effects request
// being built; Args are set by SetEffectCounts.
func AppendEffectGuard(keys [][]byte, key []byte, mark uint64) [][]byte {
	return append(keys, key, binary.LittleEndian.AppendUint64(nil, mark))
}
