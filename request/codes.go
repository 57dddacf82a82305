package request

import "github.com/redcell/redcell/internal/arg"

// Every code, key kind and SCAN TYPE value this build knows, each described
// once: the keyspace's own codes first, then one descriptor per limiter
// family. The numbers are part of the log format, the snapshot format and
// the forwarding protocol: never renumber, only append (a write code below
// 64, a read code from 64, a key kind below 16: the keyspace keeps it in 4
// bits of a record, shard.MaxKind, which fsm checks at init).
//
// Every code here is at BaseFeatureLevel (featurelevel.go): a code added
// later says in its descriptor's Level the feature level that introduces
// it, and DESIGN.md's table of levels gains its row. Code 53 is
// SetFeatureLevel (featurelevel.go); code 63 is reserved for the test
// build's DebugNextLevel (nextlevel.go, tag redcell_nextlevel).

// The keyspace's codes: they work on any key, whatever its family.
const (
	// Del removes Keys (DEL, UNLINK); the result counts keys that were live.
	Del Code = 2
	// FlushAll removes every key (FLUSHALL, FLUSHDB).
	FlushAll Code = 3

	// Exists counts the live keys among Keys.
	Exists Code = 65
	// PTTL, TTL and Type describe Key.
	PTTL Code = 66
	TTL  Code = 67
	Type Code = 68
	// DBSize counts live keys.
	DBSize Code = 69
	// Scan is SCAN: Key is the MATCH pattern (empty: none, with Args[3] 0).
	// Args: cursor (a uint64's bits), COUNT, the TYPE filter (ScanType*),
	// MATCH given (1) or not (0). The result is KindScan.
	Scan Code = 72
	// Keys is KEYS: Key is the pattern. The result is KindKeys.
	Keys Code = 73
)

// The keyspace's expiry codes (expire.go says how their Args are laid out).
// Writes take 20..29 and reads 90..99, so that other families can append
// below and above without colliding.
const (
	// Expire, PExpire, ExpireAt and PExpireAt give Key an expiry. Args:
	// the time in ms (relative for Expire and PExpire, already converted
	// from seconds by the parser; absolute Unix ms for the AT forms), the
	// ExpireNX|XX|GT|LT flags. The result is 1 when the expiry was set (or
	// the key deleted for a time at or before now), 0 when not.
	Expire    Code = 20
	PExpire   Code = 21
	ExpireAt  Code = 22
	PExpireAt Code = 23
	// Persist removes Key's expiry: 1 when it had one.
	Persist Code = 24
	// Rename moves Keys[0]'s value and expiry to Keys[1], replacing
	// whatever Keys[1] held (RENAME: +OK); RenameNX only when Keys[1] does
	// not exist (RENAMENX: 1, or 0 and nothing changes). A missing
	// Keys[0] answers ErrNoSuchKey.
	Rename   Code = 25
	RenameNX Code = 26

	// ExpireTime and PExpireTime are Key's absolute expiry (s, ms); -1
	// without one, -2 when missing.
	ExpireTime  Code = 90
	PExpireTime Code = 91
	// Touch counts the live keys among Keys, as Exists does (Redcell keeps
	// no access times).
	Touch Code = 92
)

// The keyspace's WATCH codes (server/multi.go, fsm/watchguard.go).
const (
	// WatchGuard is the first request of a watched transaction's batch
	// (EXEC after WATCH). Keys alternates the watched keys and an item
	// each (AppendWatchedItem: whether the key was live at WATCH, and the
	// applied index w and the replicated clock tw WATCH read for it).
	// Args: the term of the last applied entry WATCH read, and N, how many
	// requests of the entry after it are the transaction. The result is 0
	// when no watched key changed since its w (the N requests then run), 1
	// when one may have (the N requests are skipped, each answering
	// ErrWatchAborted).
	WatchGuard Code = 27

	// WatchMark is WATCH's read, answered from the local state machine
	// of the node the client is connected to: Ints[0] the applied index,
	// Ints[1] the term of the last applied entry, Ints[2] the replicated
	// clock, and in Data one byte per key of Keys, 1 when it is live.
	WatchMark Code = 93
)

// MemoryUsage is MEMORY USAGE's read (server/memory.go): the bytes Key
// takes in the keyspace (its record and index slot), KindNil when it is
// missing. The server builds it and only ever hands it to ReadLocal, so
// it is answered by the node the client is connected to and never enters
// the Raft log or a forwarded batch: a node that does not know it never
// meets it.
const MemoryUsage Code = 94

// The option flags of the expiry codes (their Args[1]).
const (
	ExpireNX int64 = 1 << iota
	ExpireXX
	ExpireGT
	ExpireLT
)

// The limiter families' codes.
const (
	// Throttle is CL.THROTTLE on Key. Args: GCRA emission interval (ns),
	// limit (max_burst+1), quantity.
	Throttle Code = 1
	// Peek is CL.PEEK on Key, with Throttle's Args.
	Peek Code = 64

	// TBTake is TB.TAKE on Key. Args: capacity, refill_tokens,
	// refill_period_ms, COST, INTERVAL (1) or greedy (0).
	TBTake Code = 4
	// TBPeek is TB.PEEK on Key, with TBTake's Args.
	TBPeek Code = 70

	// SLHit is SL.HIT on Key. Args: limit, window_ms, COST, MINGAP,
	// DENIED COUNT (1) or FREE (0).
	SLHit Code = 5
	// SLPeek is SL.PEEK on Key, with SLHit's Args (the last one 0).
	SLPeek Code = 71
)

// Key kinds: what a key holds. The value is the key's kind in the keyspace
// (shard.Kind), in snapshot records, and in a KindType result (Ints[0]).
const (
	KeyNone          KeyKind = 0 // no such key
	KeyGCRA          KeyKind = 1 // CL.* (redis-cell)
	KeyTokenGreedy   KeyKind = 2 // TB.* greedy
	KeyTokenInterval KeyKind = 3 // TB.* INTERVAL
	KeySlidingLog    KeyKind = 4 // SL.*
	KeyString        KeyKind = 5 // a string (SET, INCR, …)
)

// The TYPE filter of a Scan request (Args[2]): ScanTypeAny, ScanTypeNone or
// a family's ScanType.
const (
	ScanTypeAny         int64 = 0 // no TYPE option
	ScanTypeString      int64 = 1 // CL keys and strings
	ScanTypeTokenBucket int64 = 2 // TB keys, greedy and INTERVAL
	ScanTypeSlidingLog  int64 = 3 // SL keys
	ScanTypeNone        int64 = 4 // a type no key has (list, hash, … or unknown): matches nothing
)

// keyspaceErrors are the error codes any request may answer, whatever its
// family.
var keyspaceErrors = []ErrText{
	{ErrWrongType, "WRONGTYPE Operation against a key holding the wrong kind of value"},
	// Redcell's own: the parser never proposes such a request, so only a
	// faulty or foreign leader can; every replica refuses it alike.
	{ErrInvalidOp, "ERR the state machine refused this request as invalid; nothing was changed"},
	// Redis 7's text: above maxmemory new keys are refused, existing
	// limiters keep deciding, nothing is ever evicted.
	{ErrOOM, "OOM command not allowed when used memory > 'maxmemory'."},
	// Redis 7's texts for a relative expiry that passes int64 ms when
	// added to the entry's now (the only check that needs the clock).
	{ErrExpireTime, "ERR invalid expire time in 'expire' command"},
	{ErrPExpireTime, "ERR invalid expire time in 'pexpire' command"},
	// Redis 7's text for RENAME and RENAMENX of a missing key.
	{ErrNoSuchKey, "ERR no such key"},
	// What a transaction's request answers when its WatchGuard found a
	// watched key changed and it did not run. The server answers EXEC
	// with a nil array instead, so no client sees this text.
	{ErrWatchAborted, "EXECABORT Transaction discarded because a watched key changed"},
}

// keyspaceOps are the codes that work on any key.
var keyspaceOps = []Op{
	{Code: Del, Name: "DEL", Keys: KeyList, Reply: KindInt, Split: SplitCount},
	{Code: FlushAll, Name: "FLUSHALL", Keys: NoKey, Reply: KindOK, Split: SplitEveryGroup, Merge: MergeSame},
	{Code: Exists, Name: "EXISTS", Keys: KeyList, Reply: KindInt, Split: SplitCount},
	{Code: PTTL, Name: "PTTL", Keys: OneKey, Reply: KindInt},
	{Code: TTL, Name: "TTL", Keys: OneKey, Reply: KindInt},
	{Code: Type, Name: "TYPE", Keys: OneKey, Reply: KindType},
	{Code: DBSize, Name: "DBSIZE", Keys: NoKey, Reply: KindInt, Split: SplitEveryGroup, Merge: MergeSum},
	{Code: Scan, Name: "SCAN", Keys: KeyPattern, Reply: KindScan, Split: SplitEveryGroup, Merge: MergeCursor},
	{Code: Keys, Name: "KEYS", Keys: KeyPattern, Reply: KindKeys, Split: SplitEveryGroup, Merge: MergeConcat},
	{Code: Expire, Name: "EXPIRE", Keys: OneKey, Reply: KindInt},
	{Code: PExpire, Name: "PEXPIRE", Keys: OneKey, Reply: KindInt},
	{Code: ExpireAt, Name: "EXPIREAT", Keys: OneKey, Reply: KindInt},
	{Code: PExpireAt, Name: "PEXPIREAT", Keys: OneKey, Reply: KindInt},
	{Code: Persist, Name: "PERSIST", Keys: OneKey, Reply: KindInt},
	{Code: ExpireTime, Name: "EXPIRETIME", Keys: OneKey, Reply: KindInt},
	{Code: PExpireTime, Name: "PEXPIRETIME", Keys: OneKey, Reply: KindInt},
	{Code: Touch, Name: "TOUCH", Keys: KeyList, Reply: KindInt, Split: SplitCount},
	{Code: Rename, Name: "RENAME", Keys: KeyList, Reply: KindOK},
	{Code: RenameNX, Name: "RENAMENX", Keys: KeyList, Reply: KindInt},
	{Code: WatchGuard, Name: "WATCHGUARD", Keys: KeyPairs, Reply: KindInt},
	{Code: WatchMark, Name: "WATCHMARK", Keys: KeyList, Reply: KindBulk},
	{Code: MemoryUsage, Name: "MEMORYUSAGE", Keys: OneKey, Reply: KindInt, Nullable: true},
}

func init() { describeKeyspace(keyspaceOps, keyspaceErrors) }

// GCRA is redis-cell's family: CL.THROTTLE and CL.PEEK.
var GCRA = describeFamily(&Family{
	Name:     "CL",
	TypeName: "string", // as redis-cell's keys are
	ScanType: ScanTypeString,
	Kinds:    []KeyKind{KeyGCRA},
	Ops: []Op{
		{Code: Throttle, Name: "CL.THROTTLE", Keys: OneKey, Creates: true, Reply: KindThrottle},
		{Code: Peek, Name: "CL.PEEK", Keys: OneKey, Reply: KindThrottle},
	},
	Errors: []ErrText{{ErrExpire, "Cell error: Store error: Error while setting key expire"}},
})

// TokenBucket is the token-bucket family: TB.TAKE and TB.PEEK. Its greedy
// and INTERVAL keys are two kinds, so that one mode's call on the other's
// key is WRONGTYPE.
var TokenBucket = describeFamily(&Family{
	Name:     "TB",
	TypeName: "tokenbucket",
	ScanType: ScanTypeTokenBucket,
	Kinds:    []KeyKind{KeyTokenGreedy, KeyTokenInterval},
	Ops: []Op{
		{Code: TBTake, Name: "TB.TAKE", Keys: OneKey, Creates: true, Reply: KindThrottle},
		{Code: TBPeek, Name: "TB.PEEK", Keys: OneKey, Reply: KindThrottle},
	},
	Errors: []ErrText{
		// The overflow checks that need the entry's now (limiters.md
		// rules 10-12) answer the parser's integer error.
		{ErrNotInteger, string(arg.ErrNotInteger)},
		{ErrCorruptBucket, "ERR internal error: corrupt token bucket state"},
	},
})

// SlidingLog is the sliding-log family: SL.HIT and SL.PEEK.
var SlidingLog = describeFamily(&Family{
	Name:     "SL",
	TypeName: "slidinglog",
	ScanType: ScanTypeSlidingLog,
	Kinds:    []KeyKind{KeySlidingLog},
	Ops: []Op{
		{Code: SLHit, Name: "SL.HIT", Keys: OneKey, Creates: true, Reply: KindThrottle},
		{Code: SLPeek, Name: "SL.PEEK", Keys: OneKey, Reply: KindThrottle},
	},
	Errors: []ErrText{
		{ErrNotInteger, string(arg.ErrNotInteger)},
		{ErrCorruptLog, "ERR internal error: corrupt sliding log state"},
	},
})
