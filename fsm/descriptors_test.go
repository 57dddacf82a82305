package fsm_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/redcell/redcell/commands"
	"github.com/redcell/redcell/fsm"
	"github.com/redcell/redcell/request"
)

// The gap test of the descriptors: package request describes every code,
// key kind, family and error text once, and each layer registers its part
// (fsm a handler per code and a registration per family, commands a parser
// per command). A part missing in one layer compiles; these tests make it
// fail here instead of quietly in production (a code Known does not accept
// is a fatal decode on every replica, one CreatesKey misses lets maxmemory
// through, one LooksUpKey misses stops prefetching).

// sampleLines holds, for every command that reaches the keyspace, a line it
// answers without an error on an empty keyspace, after the commands before
// it when the line is several separated by "; ": TestDescriptorsHaveNoGaps
// runs each to check the last reply's kind against its code's descriptor. A
// new command needs a line here.
var sampleLines = map[string]string{
	"cl.throttle": "CL.THROTTLE k 5 1 60",
	// Scripts (no blanks: a line's words are split on them).
	"eval":          "EVAL return(redis.call('incr',KEYS[1])) 1 k",
	"eval_ro":       "EVAL_RO return(redis.call('get',KEYS[1])) 1 k",
	"evalsha":       "SCRIPT LOAD return(1); EVALSHA 930269f31393d0be681588b6ab08dccee7d6bb67 0",
	"evalsha_ro":    "SCRIPT LOAD return(1); EVALSHA_RO 930269f31393d0be681588b6ab08dccee7d6bb67 0",
	"script|load":   "SCRIPT LOAD return(1)",
	"script|exists": "SCRIPT EXISTS 930269f31393d0be681588b6ab08dccee7d6bb67",
	"script|flush":  "SCRIPT FLUSH",
	"cl.peek":       "CL.PEEK k 5 1 60",
	"tb.take":       "TB.TAKE k 5 1 60000",
	"tb.peek":       "TB.PEEK k 5 1 60000",
	"sl.hit":        "SL.HIT k 5 60000",
	"sl.peek":       "SL.PEEK k 5 60000",
	"del":           "DEL k",
	"unlink":        "UNLINK k",
	"exists":        "EXISTS k",
	"pttl":          "PTTL k",
	"ttl":           "TTL k",
	"type":          "TYPE k",
	"dbsize":        "DBSIZE",
	"flushall":      "FLUSHALL",
	"flushdb":       "FLUSHDB",
	"scan":          "SCAN 0",
	"keys":          "KEYS *",
	"expire":        "EXPIRE k 10",
	"pexpire":       "PEXPIRE k 10 NX",
	"expireat":      "EXPIREAT k 1 XX",
	"pexpireat":     "PEXPIREAT k 1 GT",
	"persist":       "PERSIST k",
	"expiretime":    "EXPIRETIME k",
	"pexpiretime":   "PEXPIRETIME k",
	"touch":         "TOUCH k j",
	"rename":        "CL.THROTTLE k 5 1 60; RENAME k j",
	"renamenx":      "CL.THROTTLE k 5 1 60; RENAMENX k j",
	"get":           "GET k",
	"set":           "SET k v EX 10",
	"setnx":         "SETNX k v",
	"setex":         "SETEX k 10 v",
	"psetex":        "PSETEX k 10 v",
	"getset":        "GETSET k v",
	"getdel":        "GETDEL k",
	"getex":         "GETEX k EX 10",
	"strlen":        "STRLEN k",
	"append":        "APPEND k v",
	"incr":          "INCR k",
	"decr":          "DECR k",
	"incrby":        "INCRBY k 5",
	"decrby":        "DECRBY k 5",
	"mget":          "MGET k j",
	"mset":          "MSET k v j w",
	"msetnx":        "MSETNX k v j w",
	"incrbyfloat":   "INCRBYFLOAT k 1.5",

	// Hashes.
	"hset":         "HSET k f v g w",
	"hmset":        "HMSET k f v",
	"hsetnx":       "HSETNX k f v",
	"hget":         "HSET k f v; HGET k f",
	"hmget":        "HMGET k f g",
	"hgetall":      "HSET k f v; HGETALL k",
	"hdel":         "HSET k f v; HDEL k f g",
	"hexists":      "HEXISTS k f",
	"hlen":         "HLEN k",
	"hkeys":        "HKEYS k",
	"hvals":        "HVALS k",
	"hincrby":      "HINCRBY k f 5",
	"hincrbyfloat": "HINCRBYFLOAT k f 1.5",
	"lpush":        "LPUSH k a b",
	"rpush":        "RPUSH k a b",
	"lpushx":       "LPUSHX k a",
	"rpushx":       "RPUSHX k a",
	"lpop":         "RPUSH k a b c; LPOP k 2",
	"rpop":         "RPUSH k a; RPOP k",
	"llen":         "LLEN k",
	"lindex":       "RPUSH k a; LINDEX k 0",
	"lrange":       "LRANGE k 0 -1",
	"ltrim":        "RPUSH k a b; LTRIM k 0 0",
	"lrem":         "RPUSH k a b a; LREM k -1 a",
	"lset":         "RPUSH k a; LSET k -1 b",
	"increx":       "INCREX k BYINT 1 UBOUND 100 EX 60 ENX",
	"sadd":         "SADD k a b",
	"srem":         "SADD k a b; SREM k a",
	"sismember":    "SADD k a; SISMEMBER k a",
	"smismember":   "SADD k a; SMISMEMBER k a b",
	"scard":        "SADD k a; SCARD k",
	"smembers":     "SADD k a b; SMEMBERS k",

	// Sorted sets.
	"zadd":             "ZADD k 1 a 2 b",
	"zincrby":          "ZINCRBY k 1.5 a",
	"zrem":             "ZADD k 1 a; ZREM k a b",
	"zcard":            "ZCARD k",
	"zcount":           "ZADD k 1 a; ZCOUNT k (0 +inf",
	"zscore":           "ZADD k 1 a; ZSCORE k a",
	"zrank":            "ZADD k 1 a; ZRANK k a",
	"zrange":           "ZADD k 1 a 2 b; ZRANGE k 0 -1 WITHSCORES",
	"zrangebyscore":    "ZADD k 1 a 2 b; ZRANGEBYSCORE k 1 2 LIMIT 0 1",
	"zrevrangebyscore": "ZADD k 1 a 2 b; ZREVRANGEBYSCORE k 2 1",
	"zremrangebyscore": "ZADD k 1 a 2 b; ZREMRANGEBYSCORE k -inf 1",
	"zremrangebyrank":  "ZADD k 1 a 2 b; ZREMRANGEBYRANK k 0 0",
}

// serverBuilt are the codes no command parses: the server builds them for
// WATCH (WatchMark) and for EXEC after WATCH (WatchGuard), in
// server/multi.go; server/watch_test.go covers them. ScriptEffects the
// node builds for a deferred script (fsm/deferred.go), SetFeatureLevel the
// leader for a rise of the cluster's feature level (node/featurelevel.go).
// MemoryUsage the server builds for MEMORY USAGE (server/memory.go,
// fsm/memory.go).
var serverBuilt = map[request.Code]bool{request.WatchGuard: true, request.WatchMark: true, request.ScriptEffects: true,
	request.SetFeatureLevel: true, request.MemoryUsage: true}

// TestDescriptorsHaveNoGaps walks every code 0..255, every family and every
// command, and fails on any part a layer is missing.
func TestDescriptorsHaveNoGaps(t *testing.T) {
	producers := map[request.Code][]string{}
	for _, s := range allSpecs() {
		if s.Code == 0 && s.Parse == nil {
			continue
		}
		producers[s.Code] = append(producers[s.Code], s.Name)
	}
	registered := map[*request.Family]bool{}
	for _, fam := range fsm.RegisteredFamilies() {
		registered[fam] = true
	}

	for i := 0; i < 256; i++ {
		c := request.Code(i)
		d := request.Describe(c)
		var dec request.Decoder
		var r request.Request
		_, decErr := dec.Decode([]byte{byte(c), 0, 0}, &r)
		if !c.Known() {
			switch {
			case d.Name != "" || d.Family != nil:
				t.Errorf("code %d: partly described (%+v) but not Known", c, d)
			case fsm.Handled(c):
				t.Errorf("code %d: the state machine has a handler for a code request does not describe", c)
			case len(producers[c]) > 0:
				t.Errorf("code %d: produced by %v but not described", c, producers[c])
			case !errors.Is(decErr, request.ErrUnknownCode):
				t.Errorf("code %d: not described, yet the decoder does not refuse it (%v)", c, decErr)
			}
			continue
		}
		name := d.Name
		if d.Code != c {
			t.Errorf("code %d (%s): its descriptor says code %d", c, name, d.Code)
		}
		if errors.Is(decErr, request.ErrUnknownCode) {
			t.Errorf("code %d (%s): described but the decoder refuses it", c, name)
		}
		if !fsm.Handled(c) {
			t.Errorf("code %d (%s): no state machine handler (fsm: a family's ops or keyspaceOps)", c, name)
		}
		if len(producers[c]) == 0 && !serverBuilt[c] {
			t.Errorf("code %d (%s): no command produces it (commands: a Spec with this Code)", c, name)
		}
		if d.Family != nil && !registered[d.Family] {
			t.Errorf("code %d (%s): its family %s is not registered in the state machine", c, name, d.Family.Name)
		}
		if d.Family != nil && !slicesContainsOp(d.Family.Ops, c) {
			t.Errorf("code %d (%s): its family %s does not list it", c, name, d.Family.Name)
		}
		if c.LooksUpKey() != (d.Keys == request.OneKey || d.Keys == request.KeyValue) || c.MultiKey() != (d.Keys == request.KeyList) || c.CreatesKey() != d.Creates {
			t.Errorf("code %d (%s): its lookups disagree with its descriptor", c, name)
		}
		if d.Creates && d.Family == nil {
			t.Errorf("code %d (%s): creates a key of no family", c, name)
		}
	}

	for _, fam := range request.Families() {
		if !registered[fam] {
			t.Errorf("family %s: not registered in the state machine (fsm: families)", fam.Name)
		}
		if _, ok := familyCommands[fam.Name]; !ok {
			t.Errorf("family %s: not in the WRONGTYPE matrix (familyCommands, limiters_test.go)", fam.Name)
		}
		if fam.TypeName == "" || fam.TypeName == "none" {
			t.Errorf("family %s: TYPE name %q", fam.Name, fam.TypeName)
		}
		if got := request.ScanTypeByName([]byte(strings.ToUpper(fam.TypeName))); got != fam.ScanType || !request.ValidScanType(got) {
			t.Errorf("family %s: SCAN TYPE %s selects %d, its ScanType is %d", fam.Name, fam.TypeName, got, fam.ScanType)
		}
		if len(fam.Kinds) == 0 {
			t.Errorf("family %s: stores no key kind", fam.Name)
		}
		for _, k := range fam.Kinds {
			if request.KindFamily(k) != fam || fsm.KindRegistered(k) != fam {
				t.Errorf("family %s: key kind %d maps to %v in request and %v in the state machine", fam.Name, k, request.KindFamily(k), fsm.KindRegistered(k))
			}
			if got := request.TypeName(int64(k)); got != fam.TypeName {
				t.Errorf("family %s: TYPE of kind %d is %q", fam.Name, k, got)
			}
			if !request.ScanMatches(fam.ScanType, k) || !request.ScanMatches(request.ScanTypeAny, k) || request.ScanMatches(request.ScanTypeNone, k) {
				t.Errorf("family %s: SCAN TYPE filters misjudge kind %d", fam.Name, k)
			}
		}
		creates := false
		for _, op := range fam.Ops {
			creates = creates || op.Creates
			if request.Describe(op.Code).Family != fam {
				t.Errorf("family %s: lists code %d, which is described as another's", fam.Name, op.Code)
			}
		}
		if !creates {
			t.Errorf("family %s: no code creates its keys", fam.Name)
		}
		for _, e := range fam.Errors {
			if e.Text == "" || e.Code.Text() != e.Text || commands.ResultErrText(e.Code) != e.Text {
				t.Errorf("family %s: error code %d has text %q, answered as %q", fam.Name, e.Code, e.Text, commands.ResultErrText(e.Code))
			}
		}
	}
	for _, fam := range fsm.RegisteredFamilies() {
		if request.Describe(fam.Ops[0].Code).Family != fam {
			t.Errorf("the state machine registers family %s, which request does not describe", fam.Name)
		}
	}

	// Every error code the state machine answers has its own text.
	seen := map[string]request.ErrCode{}
	for e := request.ErrWrongType; e <= request.ErrOOM; e++ {
		text := e.Text()
		if text == "" || commands.ResultErrText(e) != text {
			t.Errorf("error code %d: text %q, answered as %q", e, text, commands.ResultErrText(e))
		}
		if prev, dup := seen[text]; dup {
			t.Errorf("error codes %d and %d share %q", prev, e, text)
		}
		seen[text] = e
	}
	if request.ErrNone.Text() != "" {
		t.Errorf("ErrNone has a text")
	}

	// Every command that reaches the keyspace answers its sample with the
	// reply kind its code describes (exec checks it and the code).
	for _, s := range allSpecs() {
		if s.Code == 0 && s.Parse == nil {
			continue
		}
		line, ok := sampleLines[s.Name]
		if !ok {
			t.Errorf("%s: no sample line in sampleLines", s.Name)
			continue
		}
		e := newEngine(2)
		lines := strings.Split(line, "; ")
		for _, before := range lines[:len(lines)-1] {
			e.exec(t, t0, strings.Fields(before))
		}
		r, res, text := e.exec(t, t0, strings.Fields(lines[len(lines)-1]))
		switch {
		case text != "":
			t.Errorf("%s: %s", line, text)
		case res.Kind == request.KindError:
			t.Errorf("%s: %s", line, commands.ResultErrText(res.Err))
		case r.Code.IsWrite() != (s.Class == commands.Write):
			t.Errorf("%s: code %d in class %d", line, r.Code, s.Class)
		}
	}
}

// checkDescribed fails t when a result disagrees with its code's
// descriptor: a reply of another kind, or an error code its descriptor does
// not list (which would be answered without its own text).
func checkDescribed(t testing.TB, r *request.Request, res *request.Result) {
	t.Helper()
	d := request.Describe(r.Code)
	if res.Kind == request.KindError {
		if !d.Answers(res.Err) {
			t.Errorf("%s answered error code %d, which its descriptor does not list", d.Name, res.Err)
		}
		return
	}
	if res.Kind != d.Reply && !(d.Nullable && (res.Kind == request.KindNil || res.Kind == request.KindNilArray)) && !(d.AlsoReply != 0 && res.Kind == d.AlsoReply) {
		t.Errorf("%s answered a reply of kind %d, its descriptor says %d", d.Name, res.Kind, d.Reply)
	}
}

func allSpecs() []*commands.Spec {
	var out []*commands.Spec
	for _, s := range commands.All() {
		out = append(out, s)
		out = append(out, s.Subs...)
	}
	return out
}

func slicesContainsOp(ops []request.Op, c request.Code) bool {
	for _, op := range ops {
		if op.Code == c {
			return true
		}
	}
	return false
}
