package request

import "github.com/redcell/redcell/internal/arg"

// The list family (Redis 7.0's t_list.c): a key holds a sequence of byte
// strings, pushed and popped at either end. Codes take writes 35..41 and
// reads 110..114, key kind 7, SCAN TYPE 6, error codes 45..49.
const (
	// ListPush is LPUSH, RPUSH, LPUSHX and RPUSHX on Key of the elements
	// Keys, in argument order. Args: the ListRight|ListExisting flags. The
	// result is the list's new length (0 for the X forms on a missing key).
	ListPush Code = 35
	// ListPop is LPOP and RPOP. Args: the ListRight flag, then the count
	// (ListNoCount without one, else 0 or more: the parser refused a
	// negative one). Without a count the result is the element (nil for a
	// missing key), with one an array (a nil array for a missing key).
	ListPop Code = 36
	// ListTrim is LTRIM. Args: start, stop.
	ListTrim Code = 37
	// ListRem is LREM of the element Keys[0]. Args: count.
	ListRem Code = 38
	// ListSet is LSET of the element Keys[0]. Args: the index, and the
	// ErrCode to answer instead when the list exists (an index that is not
	// an integer, which Redis parses after the lookup), or 0.
	ListSet Code = 39

	// ListLen is LLEN: the length, 0 when missing.
	ListLen Code = 110
	// ListIndex is LINDEX. Args: ListSet's (index, ErrCode or 0). The
	// element, nil when missing or out of range.
	ListIndex Code = 111
	// ListRange is LRANGE. Args: start, stop. An array, empty when missing.
	ListRange Code = 112
)

// The flags of ListPush and ListPop (their Args[0]).
const (
	ListRight    int64 = 1 << iota // RPUSH, RPUSHX, RPOP: the tail
	ListExisting                   // LPUSHX, RPUSHX: only onto an existing list
)

// ListNoCount is ListPop's count when the command has none.
const ListNoCount int64 = -1

// KeyListKind is a list key's kind (KeyList is a KeyShape).
const KeyListKind KeyKind = 7

// ScanTypeList is SCAN TYPE list.
const ScanTypeList int64 = 6

// The list family's errors.
const (
	// ErrIndexOutOfRange: LSET of an index the list does not have.
	ErrIndexOutOfRange ErrCode = 45
	// ErrListTooLong: a push or LSET would make the list's value larger
	// than a snapshot record holds (512 MiB). Redcell's own; nothing
	// changed.
	ErrListTooLong ErrCode = 46
)

// Lists is the list family.
var Lists = describeFamily(&Family{
	Name:     "list",
	TypeName: "list",
	ScanType: ScanTypeList,
	Kinds:    []KeyKind{KeyListKind},
	Ops: []Op{
		{Code: ListPush, Name: "LPUSH", Keys: KeyValue, Creates: true, Grows: true, Reply: KindInt},
		{Code: ListPop, Name: "LPOP", Keys: OneKey, Reply: KindBulk, Nullable: true, AlsoReply: KindArray},
		{Code: ListTrim, Name: "LTRIM", Keys: OneKey, Reply: KindOK},
		{Code: ListRem, Name: "LREM", Keys: KeyValue, Reply: KindInt},
		{Code: ListSet, Name: "LSET", Keys: KeyValue, Grows: true, Reply: KindOK},
		{Code: ListLen, Name: "LLEN", Keys: OneKey, Reply: KindInt},
		{Code: ListIndex, Name: "LINDEX", Keys: OneKey, Reply: KindBulk, Nullable: true},
		{Code: ListRange, Name: "LRANGE", Keys: OneKey, Reply: KindArray},
	},
	Errors: []ErrText{
		{ErrNotInteger, string(arg.ErrNotInteger)},
		{ErrIndexOutOfRange, "ERR index out of range"},
		{ErrListTooLong, "ERR list value would exceed 512 MiB, the largest a snapshot holds"},
	},
})
