package request

import (
	"testing"

	"github.com/redcell/redcell/slots"
)

func TestRequestSlot(t *testing.T) {
	k := func(ks ...string) [][]byte {
		out := make([][]byte, len(ks))
		for i, s := range ks {
			out[i] = []byte(s)
		}
		return out
	}
	for _, c := range []struct {
		name         string
		r            Request
		slot         slots.Slot
		keyed, cross bool
	}{
		{"one key", Request{Code: Throttle, Key: []byte("a")}, 15495, true, false},
		{"tagged keys share a slot", Request{Code: Del, Keys: k("{u1}:a", "{u1}:b")}, slots.KeySlotString("u1"), true, false},
		{"two slots", Request{Code: Del, Keys: k("a", "b")}, 15495, true, true},
		{"MSET's values are not keys", Request{Code: MSet, Keys: k("{t}x", "a", "{t}y", "b")}, slots.KeySlotString("t"), true, false},
		{"a script's declared KEYS", Request{Code: Eval, Keys: k("return 1", "{t}x", "{t}y", "argv-not-a-key"), Args: [MaxArgs]int64{2}, NArgs: 1}, slots.KeySlotString("t"), true, false},
		{"no key", Request{Code: DBSize}, 0, false, false},
		{"a pattern is not a key", Request{Code: Keys, Key: []byte("*")}, 0, false, false},
		{"SCRIPT LOAD's body is not a key", Request{Code: ScriptLoad, Keys: k("return 1")}, 0, false, false},
	} {
		s, keyed, cross := c.r.Slot()
		if keyed != c.keyed || cross != c.cross || (keyed && s != c.slot) {
			t.Errorf("%s: Slot() = %d, %v, %v; want %d, %v, %v", c.name, s, keyed, cross, c.slot, c.keyed, c.cross)
		}
	}
}

// The descriptors say how each multi-key and keyspace-wide code splits.
func TestSplitDescriptors(t *testing.T) {
	for code, want := range map[Code]Split{
		Del: SplitCount, Exists: SplitCount, Touch: SplitCount, MGet: SplitInOrder,
		DBSize: SplitEveryGroup, Keys: SplitEveryGroup, Scan: SplitEveryGroup, FlushAll: SplitEveryGroup,
		ScriptLoad: SplitEveryGroup, ScriptFlush: SplitEveryGroup, ScriptExists: SplitEveryGroup,
		MSet: SplitNone, Rename: SplitNone, Eval: SplitNone, EvalSha: SplitNone, Throttle: SplitNone,
	} {
		if got := code.SplitOf(); got != want {
			t.Errorf("%s splits as %d, want %d", Describe(code).Name, got, want)
		}
	}
	for code, want := range map[Code]Merge{DBSize: MergeSum, Keys: MergeConcat, Scan: MergeCursor, FlushAll: MergeSame, ScriptExists: MergeAllOf} {
		if got := code.MergeOf(); got != want {
			t.Errorf("%s merges as %d, want %d", Describe(code).Name, got, want)
		}
	}
}

// A cursor carries its group above the group's own cursor bits; a group's
// end is the next group's start, and the last group's end ends the scan.
func TestScanCursorCarriesTheGroup(t *testing.T) {
	if g, in := ScanCursor(12345, 1); g != 0 || in != 12345 {
		t.Fatalf("one group: %d, %d", g, in)
	}
	if c := JoinScanCursor(0, 0, 1); c != 0 {
		t.Fatalf("one group's end: %d", c)
	}
	const groups = 3
	inner := uint64(7)<<32 | 99 // stripe 7, threshold 99
	c := JoinScanCursor(1, inner, groups)
	if g, in := ScanCursor(c, groups); g != 1 || in != inner {
		t.Fatalf("round trip: group %d inner %d", g, in)
	}
	next := JoinScanCursor(1, 0, groups)
	if g, in := ScanCursor(next, groups); g != 2 || in != 0 || next == 0 {
		t.Fatalf("group 1's end moves to group 2's start: cursor %d = group %d inner %d", next, g, in)
	}
	if end := JoinScanCursor(groups-1, 0, groups); end != 0 {
		t.Fatalf("the last group's end: %d, want 0", end)
	}
	if g, _ := ScanCursor(0, groups); g != 0 {
		t.Fatalf("cursor 0 starts at group %d", g)
	}
}
