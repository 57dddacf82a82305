package request

import (
	"slices"
	"testing"
)

// TestDescriptorsKeepTheFormat pins what the log, snapshot and forwarding
// formats depend on: each code's number and key shape (the encoding), and
// the key kinds and SCAN TYPE values of each family (snapshot records,
// TYPE results and SCAN requests carry them). Appending is fine; changing a
// row is a format change.
func TestDescriptorsKeepTheFormat(t *testing.T) {
	for _, tt := range []struct {
		code    Code
		name    string
		keys    KeyShape
		creates bool
		reply   Kind
		family  *Family
	}{
		{1, "CL.THROTTLE", OneKey, true, KindThrottle, GCRA},
		{2, "DEL", KeyList, false, KindInt, nil},
		{3, "FLUSHALL", NoKey, false, KindOK, nil},
		{4, "TB.TAKE", OneKey, true, KindThrottle, TokenBucket},
		{5, "SL.HIT", OneKey, true, KindThrottle, SlidingLog},
		{64, "CL.PEEK", OneKey, false, KindThrottle, GCRA},
		{65, "EXISTS", KeyList, false, KindInt, nil},
		{66, "PTTL", OneKey, false, KindInt, nil},
		{67, "TTL", OneKey, false, KindInt, nil},
		{68, "TYPE", OneKey, false, KindType, nil},
		{69, "DBSIZE", NoKey, false, KindInt, nil},
		{70, "TB.PEEK", OneKey, false, KindThrottle, TokenBucket},
		{71, "SL.PEEK", OneKey, false, KindThrottle, SlidingLog},
		{72, "SCAN", KeyPattern, false, KindScan, nil},
		{73, "KEYS", KeyPattern, false, KindKeys, nil},
		{6, "SET", KeyValue, true, KindOK, Strings},
		{7, "GETSET", KeyValue, true, KindBulk, Strings},
		{8, "SETNX", KeyValue, true, KindInt, Strings},
		{9, "GETDEL", OneKey, false, KindBulk, Strings},
		{10, "APPEND", KeyValue, true, KindInt, Strings},
		{11, "INCRBY", OneKey, true, KindInt, Strings},
		{12, "MSET", KeyPairs, true, KindOK, Strings},
		{13, "MSETNX", KeyPairs, true, KindInt, Strings},
		{14, "GETEX", OneKey, false, KindBulk, Strings},
		{15, "INCRBYFLOAT", KeyValue, true, KindBulk, Strings},
		{74, "GET", OneKey, false, KindBulk, Strings},
		{75, "STRLEN", OneKey, false, KindInt, Strings},
		{76, "MGET", KeyList, false, KindBulks, Strings},
		{30, "HSET", KeyValue, true, KindInt, Hashes},
		{31, "HSETNX", KeyValue, true, KindInt, Hashes},
		{32, "HDEL", KeyValue, false, KindInt, Hashes},
		{33, "HINCRBY", KeyValue, true, KindInt, Hashes},
		{34, "HINCRBYFLOAT", KeyValue, true, KindBulk, Hashes},
		{100, "HGET", KeyValue, false, KindBulk, Hashes},
		{101, "HMGET", KeyValue, false, KindBulks, Hashes},
		{102, "HGETALL", OneKey, false, KindMap, Hashes},
		{103, "HEXISTS", KeyValue, false, KindInt, Hashes},
		{104, "HLEN", OneKey, false, KindInt, Hashes},
		{105, "HKEYS", OneKey, false, KindArray, Hashes},
		{106, "HVALS", OneKey, false, KindArray, Hashes},
		{35, "LPUSH", KeyValue, true, KindInt, Lists},
		{36, "LPOP", OneKey, false, KindBulk, Lists},
		{37, "LTRIM", OneKey, false, KindOK, Lists},
		{38, "LREM", KeyValue, false, KindInt, Lists},
		{39, "LSET", KeyValue, false, KindOK, Lists},
		{110, "LLEN", OneKey, false, KindInt, Lists},
		{111, "LINDEX", OneKey, false, KindBulk, Lists},
		{112, "LRANGE", OneKey, false, KindArray, Lists},
		{16, "INCREX", KeyValue, true, KindInts, Strings},
		{42, "SADD", KeyValue, true, KindInt, Sets},
		{43, "SREM", KeyValue, false, KindInt, Sets},
		{115, "SISMEMBER", KeyValue, false, KindInt, Sets},
		{116, "SMISMEMBER", KeyValue, false, KindInts, Sets},
		{117, "SCARD", OneKey, false, KindInt, Sets},
		{118, "SMEMBERS", OneKey, false, KindSet, Sets},
		{27, "WATCHGUARD", KeyPairs, false, KindInt, nil},
		{93, "WATCHMARK", KeyList, false, KindBulk, nil},
		{94, "MEMORYUSAGE", OneKey, false, KindInt, nil},
		{44, "ZADD", KeyValue, true, KindInt, Zsets},
		{45, "ZREM", KeyValue, false, KindInt, Zsets},
		{46, "ZREMRANGEBYSCORE", OneKey, false, KindInt, Zsets},
		{47, "ZREMRANGEBYRANK", OneKey, false, KindInt, Zsets},
		{120, "ZCARD", OneKey, false, KindInt, Zsets},
		{121, "ZCOUNT", OneKey, false, KindInt, Zsets},
		{122, "ZSCORE", KeyValue, false, KindDouble, Zsets},
		{123, "ZRANGE", KeyValue, false, KindArray, Zsets},
		{124, "ZRANK", KeyValue, false, KindInt, Zsets},
	} {
		d := Describe(tt.code)
		if !tt.code.Known() || d.Code != tt.code || d.Name != tt.name || d.Keys != tt.keys || d.Creates != tt.creates || d.Reply != tt.reply || d.Family != tt.family {
			t.Errorf("code %d: described as %+v", tt.code, *d)
		}
		if tt.code.IsWrite() != (tt.code < 64) {
			t.Errorf("code %d: IsWrite %v", tt.code, tt.code.IsWrite())
		}
	}
	for _, tt := range []struct {
		fam      *Family
		typeName string
		scanType int64
		kinds    []KeyKind
	}{
		{GCRA, "string", 1, []KeyKind{1}},
		{TokenBucket, "tokenbucket", 2, []KeyKind{2, 3}},
		{SlidingLog, "slidinglog", 3, []KeyKind{4}},
		{Strings, "string", 1, []KeyKind{5}},
		{Hashes, "hash", 5, []KeyKind{6}},
		{Lists, "list", 6, []KeyKind{7}},
		{Sets, "set", 7, []KeyKind{8}},
		{Zsets, "zset", 8, []KeyKind{9}},
	} {
		if tt.fam.TypeName != tt.typeName || tt.fam.ScanType != tt.scanType || !slices.Equal(tt.fam.Kinds, tt.kinds) {
			t.Errorf("family %s: TYPE %q, SCAN TYPE %d, kinds %v", tt.fam.Name, tt.fam.TypeName, tt.fam.ScanType, tt.fam.Kinds)
		}
	}
	// Result kinds travel in forwarding frames.
	if KindScan != 7 || KindBulk != 8 || KindNil != 9 || KindBulks != 10 {
		t.Errorf("result kinds renumbered: scan %d, bulk %d, nil %d, bulks %d", KindScan, KindBulk, KindNil, KindBulks)
	}
	collections := []Kind{KindArray, KindMap, KindSet, KindDouble, KindScored, KindInts, KindNilArray, KindDoubles, KindReply}
	for i, k := range collections {
		if k != Kind(11+i) {
			t.Errorf("result kind %d renumbered to %d", 11+i, k)
		}
	}
	if ScanTypeAny != 0 || ScanTypeNone != 4 {
		t.Errorf("SCAN TYPE any %d, none %d", ScanTypeAny, ScanTypeNone)
	}
	for v := int64(-1); v < 9; v++ {
		if got := ValidScanType(v); got != (v >= 0 && v <= 8) {
			t.Errorf("ValidScanType(%d) = %v", v, got)
		}
	}
}

// TestScanTypeByName: SCAN TYPE names fold ASCII case; a name no family
// has selects nothing.
func TestScanTypeByName(t *testing.T) {
	for name, want := range map[string]int64{
		"string": ScanTypeString, "STRING": ScanTypeString, "tokenBucket": ScanTypeTokenBucket,
		"slidinglog": ScanTypeSlidingLog, "list": ScanTypeList, "LIST": ScanTypeList, "lists": ScanTypeNone, "hash": ScanTypeHash, "HASH": ScanTypeHash, "": ScanTypeNone, "none": ScanTypeNone,
		"set": ScanTypeSet, "SET": ScanTypeSet, "zset": ScanTypeZset, "ZSet": ScanTypeZset,
	} {
		if got := ScanTypeByName([]byte(name)); got != want {
			t.Errorf("ScanTypeByName(%q) = %d, want %d", name, got, want)
		}
	}
}

// TestLookupsDoNotAllocate: the hot path (decode, prefetch, maxmemory,
// SCAN) asks these per request or per key.
func TestLookupsDoNotAllocate(t *testing.T) {
	n := testing.AllocsPerRun(100, func() {
		for c := Code(0); c < 255; c++ {
			_ = c.Known() && c.LooksUpKey() && c.CreatesKey() && c.MultiKey()
			_ = ScanMatches(ScanTypeString, KeyKind(c&127))
			_ = TypeName(int64(c))
		}
	})
	if n != 0 {
		t.Errorf("descriptor lookups allocate %v times", n)
	}
}
