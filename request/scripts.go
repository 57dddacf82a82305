package request

// Lua scripts (package scripting runs them; spec/scripting.md). A script
// is not a family: it works on keys of any kind, through the requests its
// redis.call makes, which the state machine applies as if a client had sent
// them. Every script request carries the script (or its SHA-1) and the
// script's KEYS and ARGV in Keys (KeyScript); Args[0] is the number of
// KEYS, and Args[1], when present, is 1 if the leader proposed it above
// maxmemory (MarkAboveMaxmemory).
const (
	// Eval runs the script in Keys[0] (EVAL) and caches it, as Redis does:
	// the script cache is replicated state.
	Eval Code = 48
	// EvalSha runs the cached script whose lowercase hex SHA-1 is Keys[0]
	// (EVALSHA), or answers NOSCRIPT when no replica has it cached: the
	// check is made at apply, against the replicated cache.
	EvalSha Code = 49
	// ScriptLoad caches the script in Keys[0] and answers its SHA-1 (or the
	// compiler's error: a KindReply either way).
	ScriptLoad Code = 50
	// ScriptFlush empties the script cache.
	ScriptFlush Code = 51

	// EvalRO and EvalShaRO are EVAL_RO and EVALSHA_RO: answered like any
	// other read, without a log entry; a write the script calls answers
	// Redis's error. EvalRO does not cache its script (a read changes no
	// replicated state).
	EvalRO    Code = 77
	EvalShaRO Code = 78
	// ScriptExists answers, for each SHA-1 in Keys, 1 when it is cached.
	ScriptExists Code = 79
)

// ErrNoScript: EVALSHA of a SHA-1 no script in the cache has.
const ErrNoScript ErrCode = 60

// NoScriptText is the reply to EVALSHA of an unknown SHA-1, exactly as
// Redis answers it: client libraries fall back to EVAL or SCRIPT LOAD on
// that prefix.
const NoScriptText = "NOSCRIPT No matching script. Please use EVAL."

var scriptOps = []Op{
	{Code: Eval, Name: "EVAL", Keys: KeyScript, Reply: KindReply},
	{Code: EvalSha, Name: "EVALSHA", Keys: KeyScript, Reply: KindReply},
	{Code: ScriptLoad, Name: "SCRIPT LOAD", Keys: KeyList, Reply: KindReply, Split: SplitEveryGroup, Merge: MergeSame},
	{Code: ScriptFlush, Name: "SCRIPT FLUSH", Keys: NoKey, Reply: KindOK, Split: SplitEveryGroup, Merge: MergeSame},
	{Code: EvalRO, Name: "EVAL_RO", Keys: KeyScript, Reply: KindReply},
	{Code: EvalShaRO, Name: "EVALSHA_RO", Keys: KeyScript, Reply: KindReply},
	{Code: ScriptExists, Name: "SCRIPT EXISTS", Keys: KeyList, Reply: KindInts, Split: SplitEveryGroup, Merge: MergeAllOf},
}

func init() {
	describeKeyspace(scriptOps, []ErrText{{ErrNoScript, NoScriptText}})
	keyspaceErrors = append(keyspaceErrors, ErrText{ErrNoScript, NoScriptText})
}

// IsScript reports whether c is one of the script codes above (a script
// cannot call them: the state machine refuses them from redis.call).
func (c Code) IsScript() bool {
	for i := range scriptOps {
		if scriptOps[i].Code == c {
			return true
		}
	}
	return false
}

// ScriptKeys returns the KEYS of a KeyScript request: Keys[1:1+Args[0]],
// or nil when Args[0] does not fit Keys (a request the state machine
// refuses).
func (r *Request) ScriptKeys() [][]byte {
	n := r.Args[0]
	if r.NArgs < 1 || n < 0 || n > int64(len(r.Keys))-1 {
		return nil
	}
	return r.Keys[1 : 1+n]
}

// ScriptArgs returns the ARGV of a KeyScript request: what follows its
// KEYS in Keys.
func (r *Request) ScriptArgs() [][]byte {
	n := r.Args[0]
	if r.NArgs < 1 || n < 0 || n > int64(len(r.Keys))-1 {
		return nil
	}
	return r.Keys[1+n:]
}

// The marks a script request's Args[1] may carry: bits the leader or the
// connection sets before proposing, in the entry so that every replica
// acts on the same ones.
const (
	// MarkAboveMaxmemory: the leader proposes the script above maxmemory.
	// The script still runs, as in Redis, but the state machine refuses
	// its writes that would grow the keyspace (until it has written, which
	// Redis lets a script finish) and a script with a shebang that does not
	// declare allow-oom.
	MarkAboveMaxmemory int64 = 1 << iota
	// MarkWholeBudget: the script runs in the log with its whole budget,
	// never deferred (effects.go): inside MULTI, whose requests must apply
	// together, and as the last resort of a deferred script.
	MarkWholeBudget

	ScriptMarks = MarkAboveMaxmemory | MarkWholeBudget
)

// Mark sets mark (one of the Mark constants) in an Eval or EvalSha request.
func (r *Request) Mark(mark int64) {
	r.NArgs = 2
	r.Args[1] |= mark
}

// Marked reports whether r carries mark.
func (r *Request) Marked(mark int64) bool { return r.NArgs >= 2 && r.Args[1]&mark != 0 }
