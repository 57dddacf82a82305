package request

// The set family (data-types.md "Sets", Redis 7.0's t_set.c): a key holds
// a set of distinct byte strings. Codes take writes 42..43 and reads
// 115..119; its key kind is 8, its SCAN TYPE value 7.
const (
	// SAdd is SADD of the members Keys: how many were not members yet.
	SAdd Code = 42
	// SRem is SREM of the members Keys: how many were members. The key is
	// deleted when its last member goes.
	SRem Code = 43

	// SIsMember is SISMEMBER of the member Keys[0]: 1 or 0.
	SIsMember Code = 115
	// SMIsMember is SMISMEMBER: per member of Keys, in order, 1 or 0
	// (KindInts).
	SMIsMember Code = 116
	// SCard is SCARD: how many members, 0 when missing.
	SCard Code = 117
	// SMembers is SMEMBERS: every member (KindSet: a RESP3 set).
	SMembers Code = 118
)

// KeySet is the key kind of a set.
const KeySet KeyKind = 8

// ScanTypeSet is SCAN … TYPE set.
const ScanTypeSet int64 = 7

// ErrCorruptSet: a stored set value apply could never have written (a bug:
// snapshot restore refuses such a record). Nothing changed.
const ErrCorruptSet ErrCode = 50

// ErrSetTooLarge: SADD would make the set's value larger than a snapshot
// record holds (512 MiB). Nothing changed.
const ErrSetTooLarge ErrCode = 51

// Sets is the set family.
var Sets = describeFamily(&Family{
	Name:     "set",
	TypeName: "set",
	ScanType: ScanTypeSet,
	Kinds:    []KeyKind{KeySet},
	Ops: []Op{
		{Code: SAdd, Name: "SADD", Keys: KeyValue, Creates: true, Grows: true, Reply: KindInt},
		{Code: SRem, Name: "SREM", Keys: KeyValue, Reply: KindInt},
		{Code: SIsMember, Name: "SISMEMBER", Keys: KeyValue, Reply: KindInt},
		{Code: SMIsMember, Name: "SMISMEMBER", Keys: KeyValue, Reply: KindInts},
		{Code: SCard, Name: "SCARD", Keys: OneKey, Reply: KindInt},
		{Code: SMembers, Name: "SMEMBERS", Keys: OneKey, Reply: KindSet},
	},
	Errors: []ErrText{
		{ErrCorruptSet, "ERR internal error: corrupt set state"},
		{ErrSetTooLarge, "ERR set exceeds the largest value a snapshot holds (512 MiB)"},
	},
})
