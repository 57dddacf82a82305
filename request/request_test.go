package request

import (
	"errors"
	"testing"
)

// TestTypeName: TYPE's answers for every key type, "none" for anything else.
func TestTypeName(t *testing.T) {
	for v, want := range map[int64]string{
		int64(KeyNone): "none", int64(KeyGCRA): "string", int64(KeyTokenGreedy): "tokenbucket",
		int64(KeyTokenInterval): "tokenbucket", int64(KeySlidingLog): "slidinglog", int64(KeyString): "string", int64(KeyHash): "hash", 127: "none", -1: "none", 1000: "none",
	} {
		if got := TypeName(v); got != want {
			t.Errorf("TypeName(%d) = %q, want %q", v, got, want)
		}
	}
}

// TestBatchErrorsAreDistinct: the server tells the failures apart with
// errors.Is, so none may match another.
func TestBatchErrorsAreDistinct(t *testing.T) {
	all := []error{ErrNoLeader, ErrNotReady, ErrOutcomeUnknown, ErrShutdown, ErrStateMachine}
	for i, a := range all {
		for j, b := range all {
			if errors.Is(a, b) != (i == j) {
				t.Errorf("errors.Is(%v, %v) = %v", a, b, i != j)
			}
		}
	}
}

// TestSetArgsDoesNotAllocate: parsers and decoders call SetArgs per request.
func TestSetArgsDoesNotAllocate(t *testing.T) {
	var r Request
	if n := testing.AllocsPerRun(100, func() { r.SetArgs(1, 2, 3) }); n != 0 {
		t.Errorf("SetArgs allocates %v times", n)
	}
	if r.NArgs != 3 || r.Args != [MaxArgs]int64{1, 2, 3} {
		t.Errorf("SetArgs(1, 2, 3) left %d %v", r.NArgs, r.Args)
	}
}

// LooksUpKey is true exactly for the known codes whose Key names one key
// (not a list, not a pattern, not absent).
func TestLooksUpKey(t *testing.T) {
	noKey := map[Code]bool{Del: true, Exists: true, Touch: true, Rename: true, RenameNX: true, FlushAll: true, DBSize: true, Scan: true, Keys: true, MSet: true, MSetNX: true, MGet: true, WatchGuard: true, WatchMark: true,
		Eval: true, EvalSha: true, ScriptLoad: true, ScriptFlush: true, EvalRO: true, EvalShaRO: true, ScriptExists: true, ScriptEffects: true, SetFeatureLevel: true}
	for c := Code(0); c < 255; c++ {
		want := c.Known() && !noKey[c]
		if got := c.LooksUpKey(); got != want {
			t.Errorf("Code %d: LooksUpKey %v, want %v", c, got, want)
		}
	}
}
