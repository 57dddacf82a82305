package request

import "github.com/redcell/redcell/slots"

// Routing: how a request meets a keyspace split into hash slots.
//
// With more than one Raft group, each group owns some of Redis Cluster's
// 16,384 hash slots (package slots), and a request goes to the group that
// owns its keys' slot. What may be carried apart and what must stay one
// unit is written here, per code, beside ForEachKey, so that the server and
// the node's router ask the descriptors instead of keeping lists of their
// own:
//
//   - An atomic unit is decided in one log entry of one group, so every key
//     it names must hash to one slot, or it is refused with CROSSSLOT as Redis
//     Cluster refuses it: a request of a code that is not split (SplitNone:
//     a script's declared KEYS, MSET, RENAME, every limiter), and a
//     transaction (MULTI/EXEC, with its WATCHed keys), whose server checks
//     its requests together.
//   - A multi-key read-mostly command that Redis Cluster refuses across
//     slots is split by the node the client talks to and merged (SplitCount,
//     SplitInOrder), as a cluster proxy such as Envoy's Redis proxy splits
//     it: each part is atomic within its group, the whole is not, which is
//     what DEL, EXISTS, TOUCH and MGET promise on Redis Cluster too (one
//     slot at a time).
//   - A command that names no key but covers the keyspace (SplitEveryGroup)
//     runs on every group and is merged by its code's rule: DBSIZE sums,
//     KEYS concatenates, FLUSHALL answers OK once every group has, SCAN
//     walks the groups in turn with the group in its cursor, and the script
//     cache's commands reach every group's cache.
//   - Every other keyless request goes to any one group.
//
// With one group none of this changes anything: every slot is group 0's and
// every request goes there as before.

// Split says how a request whose keys lie in several slots, or that names
// none, is carried to the groups.
type Split uint8

const (
	// SplitNone: the request is one atomic unit; its keys must share a slot.
	SplitNone Split = iota
	// SplitCount: split by slot; each part answers an integer, and the
	// answer is their sum (DEL, UNLINK, EXISTS, TOUCH: keys counted).
	SplitCount
	// SplitInOrder: split by slot; each part answers one item per key, and
	// the answer is the items put back in the request's key order (MGET).
	SplitInOrder
	// SplitEveryGroup: names no key (or only arguments in Keys, as SCRIPT
	// LOAD's body) and runs on every group; Merge says how the answers
	// combine.
	SplitEveryGroup
)

// Merge is how the answers of a SplitEveryGroup request's groups combine.
type Merge uint8

const (
	// MergeNone: not a SplitEveryGroup code.
	MergeNone Merge = iota
	// MergeSum adds the integers (DBSIZE).
	MergeSum
	// MergeConcat concatenates the lists (KEYS).
	MergeConcat
	// MergeSame answers what every group answered alike: OK (FLUSHALL,
	// SCRIPT FLUSH), the same SHA-1 (SCRIPT LOAD). A group that answered
	// an error makes the answer that error.
	MergeSame
	// MergeAllOf answers, per item, 1 only when every group answered 1
	// (SCRIPT EXISTS: a script is cached when every group caches it, so a
	// client that sees 0 loads it again, everywhere).
	MergeAllOf
	// MergeCursor walks the groups one after another (SCAN): the cursor
	// carries the group it is in (ScanCursor), and a group's last page
	// moves the cursor to the next group's start.
	MergeCursor
)

// SplitOf is how requests of code c are carried across groups.
func (c Code) SplitOf() Split { return ops[c].Split }

// MergeOf is how a SplitEveryGroup code's answers combine.
func (c Code) MergeOf() Merge { return ops[c].Merge }

// Slot is the hash slot of the keys r names: keyed is false when r names
// none (its slot is then 0 and means nothing), and cross is true when they
// lie in more than one slot (CROSSSLOT for an atomic unit). It allocates
// nothing.
func (r *Request) Slot() (s slots.Slot, keyed, cross bool) {
	if ops[r.Code].Split == SplitEveryGroup {
		return 0, false, false // its Keys are arguments (a script, SHA-1s), not keys of a slot
	}
	r.ForEachKey(func(k []byte) {
		ks := slots.KeySlot(k)
		switch {
		case !keyed:
			s, keyed = ks, true
		case ks != s:
			cross = true
		}
	})
	return s, keyed, cross
}

// ScanCursor splits a SCAN cursor the client holds into the group it walks
// and the group's own cursor, for a keyspace of groups groups: the group is
// in the top bits, above the bits a group's cursor uses (ScanGroupShift).
// With one group the cursor is the group's own, as before groups.
func ScanCursor(cursor uint64, groups int) (group int, inner uint64) {
	if groups <= 1 {
		return 0, cursor
	}
	return int(cursor >> ScanGroupShift), cursor & (1<<ScanGroupShift - 1)
}

// ScanGroupShift is where a SCAN cursor's group starts: a group's own cursor
// must stay below 1<<ScanGroupShift (package shard's cursors use the low 48
// bits), which leaves room for 65,536 groups.
const ScanGroupShift = 48

// JoinScanCursor is ScanCursor's inverse: the cursor to hand the client
// for group's inner cursor. A group's end (inner 0) moves to the next
// group's start, and the last group's end is 0, the end of the whole scan.
func JoinScanCursor(group int, inner uint64, groups int) uint64 {
	if groups <= 1 {
		return inner
	}
	if inner == 0 {
		group++
		if group >= groups {
			return 0
		}
	}
	return uint64(group)<<ScanGroupShift | inner
}

// ErrNotOwned: the request names a key of a hash slot its group does not
// own at this log index, so the state machine refuses it, the same way on
// every replica (a routing mistake costs a retry, never a decision on the
// wrong group). Nothing changed. TRYAGAIN, as Redis Cluster answers while
// a slot is on its way: the node routes again with its current slot map.
const ErrNotOwned ErrCode = 65

// notOwnedText is ErrNotOwned's reply.
const notOwnedText = "TRYAGAIN The key's hash slot is not served by the group this request reached"

func init() {
	errs := []ErrText{{ErrNotOwned, notOwnedText}}
	describeErrors(errs)
	keyspaceErrors = append(keyspaceErrors, errs...)
}

// OwnsKeys reports whether every key r names hashes to a slot owns says
// the group owns (the state machine's check at apply). A request copied to
// every group (SplitEveryGroup) names no slot and always passes.
func (r *Request) OwnsKeys(owns func(slots.Slot) bool) bool {
	if ops[r.Code].Split == SplitEveryGroup {
		return true
	}
	ok := true
	r.ForEachKey(func(k []byte) {
		if ok && !owns(slots.KeySlot(k)) {
			ok = false
		}
	})
	return ok
}
