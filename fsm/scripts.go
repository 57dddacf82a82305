package fsm

import (
	"sort"

	"github.com/redcell/redcell/request"
	"github.com/redcell/redcell/scripting"
)

// Lua scripts in the state machine (spec/scripting.md). A script runs here,
// from the log entry, on every replica: its redis.call requests are
// applied as a client's would be, at the entry's instant, and its
// math.random is seeded from the entry's identity, so every replica makes
// the same writes and answers the same reply. The script cache (SHA-1 to
// body) is replicated state: EVAL and SCRIPT LOAD fill it, SCRIPT FLUSH
// empties it, and snapshots carry it (snapshot.go), so EVALSHA works on
// every node after a failover and after a restart.
//
// The compiled form of each script is the engine's cache, per node and not
// replicated: compiling is a pure function of the body.

// scriptCache is the replicated script cache: lowercase hex SHA-1 to body.
// It is changed only while an entry is applied (applyMu held for writing)
// and read under applyMu. Bodies are copied in and never changed, so a
// snapshot may share them.
type scriptCache map[string][]byte

var scriptOps = []op{
	{code: request.Eval, valid: validScript, run: (*FSM).eval},
	{code: request.EvalSha, valid: validScript, run: (*FSM).evalSha},
	{code: request.ScriptLoad, valid: validScriptLoad, run: (*FSM).scriptLoad},
	{code: request.ScriptFlush, run: (*FSM).scriptFlush},
	{code: request.EvalRO, valid: validScript, run: (*FSM).eval},
	{code: request.EvalShaRO, valid: validScript, run: (*FSM).evalSha},
	{code: request.ScriptExists, valid: validScriptExists, run: (*FSM).scriptExists},
}

// validScript: the KEYS count, which Keys can hold after the script, and
// for a write the maxmemory mark (request.MarkAboveMaxmemory) or nothing.
func validScript(r *request.Request) string {
	switch {
	case r.NArgs < 1 || r.NArgs > 2 || r.Args[0] < 0 || r.Args[0] > int64(len(r.Keys))-1:
		return "a script request whose KEYS count does not fit its list"
	case r.NArgs == 2 && (r.Args[1]&^request.ScriptMarks != 0 || !r.Code.IsWrite()):
		return "a script request with a second argument that is not its marks"
	}
	return ""
}

func validScriptLoad(r *request.Request) string {
	if r.NArgs != 0 || len(r.Keys) != 1 {
		return "SCRIPT LOAD takes one script and no arguments"
	}
	return ""
}

func validScriptExists(r *request.Request) string {
	if r.NArgs != 0 || len(r.Keys) == 0 {
		return "SCRIPT EXISTS takes at least one SHA-1 and no arguments"
	}
	return ""
}

// eval runs EVAL (which caches the script first, as Redis does, when it
// compiles) and EVAL_RO (a read: it caches nothing).
func (f *FSM) eval(r *request.Request, now int64, res *request.Result) {
	body := r.Keys[0]
	sha := scripting.SHA1Hex(body)
	if msg := f.engine.Compile(body, sha); msg != "" {
		setReplyError(res, msg)
		return
	}
	if r.Code == request.Eval {
		f.cacheScript(sha, body)
	}
	f.runScript(body, sha, r, now, res)
}

// evalSha runs EVALSHA and EVALSHA_RO: the cached script, or NOSCRIPT.
func (f *FSM) evalSha(r *request.Request, now int64, res *request.Result) {
	body, ok := f.scripts[string(r.Keys[0])]
	if !ok {
		res.SetErr(request.ErrNoScript)
		return
	}
	sha := f.lastSHA
	if !r.Code.IsWrite() || string(r.Keys[0]) != sha {
		sha = string(r.Keys[0])
	}
	if r.Code.IsWrite() {
		f.lastSHA = sha // a string per call was a tenth of what a call allocated
	}
	f.runScript(body, sha, r, now, res)
}

// runScript runs a compiled script with r's KEYS and ARGV into res.
func (f *FSM) runScript(body []byte, sha string, r *request.Request, now int64, res *request.Result) {
	write := r.Code.IsWrite()
	run, dst := f.scriptRun, f.replies.next()
	if !write {
		// A read holds applyMu for reading only, beside other reads:
		// the FSM's call and reply buffer are the writes'.
		run, dst = new(scriptRun), nil
	}
	run.call = scripting.Call{
		Body: body, SHA: sha, Keys: r.ScriptKeys(), Args: r.ScriptArgs(),
		ReadOnly: !write, Now: now, Seed: f.scriptSeed(write),
	}
	run.x = scriptExecutor{f: f, now: now, write: write}
	if r.Marked(request.MarkAboveMaxmemory) {
		flags, _ := f.engine.ScriptFlags(body, sha) // compiled: eval and evalSha ran it or found it
		if flags.Shebang && !flags.AllowOOM && !flags.NoWrites {
			// Redis refuses such a script before it runs.
			*run = scriptRun{}
			res.SetErr(request.ErrOOM)
			return
		}
		run.x.oom = !flags.AllowOOM
	}
	switch {
	case write && !r.Marked(request.MarkWholeBudget):
		f.undo.reset()
		run.call.Slice, run.x.undo, run.x.call = applySlice, &f.undo, &run.call
	case !write && r.NArgs == 2 && r.Args[1] == readSlice:
		run.call.Slice = applySlice // Read's: nothing to undo (deferred.go)
	}
	data := f.engine.Run(dst, &run.call, &run.x)
	sliced := run.call.Sliced
	*run = scriptRun{} // nothing of the entry stays reachable
	if sliced {
		if write {
			f.undo.restore(f.store) // deferred.go
		}
		res.SetErr(request.ErrScriptDeferred)
		return
	}
	if write {
		data = f.replies.took(data)
	}
	*res = request.Result{Kind: request.KindReply, Data: data}
}

// scriptRun is what runScript hands the engine. The FSM keeps one for
// writes, which are applied one at a time: a call then allocates neither.
type scriptRun struct {
	call scripting.Call
	x    scriptExecutor
}

// replySlab is where scripts' replies are written, one after another, so
// that a reply is not a buffer grown from nothing for each call. A reply
// is handed out with its capacity clipped to its length; a slab is never
// written again once full (a new one replaces it, and the old one is
// garbage once the results that point into it are released).
type replySlab struct {
	buf []byte
}

const (
	replySlabSize = 32 << 10
	// replySlabMin is the room below which a slab is replaced: a rate-
	// limit script's reply is tens of bytes.
	replySlabMin = 512
)

// next is the slab's free room, empty, for the next reply.
func (s *replySlab) next() []byte {
	if cap(s.buf)-len(s.buf) < replySlabMin {
		s.buf = make([]byte, 0, replySlabSize)
	}
	return s.buf[len(s.buf):len(s.buf)]
}

// took records that reply, appended to next's slice, was handed out, and
// returns it clipped: a reply that outgrew the room lives elsewhere.
func (s *replySlab) took(reply []byte) []byte {
	room := s.buf[len(s.buf):cap(s.buf)]
	if len(reply) > 0 && len(reply) <= len(room) && &reply[0] == &room[0] {
		s.buf = s.buf[:len(s.buf)+len(reply)]
	}
	return reply[:len(reply):len(reply)]
}

// scriptSeed is math.random's seed for the script being run: the entry's
// index and the request's place in it, which every replica shares. A
// read-only script (no entry) is seeded from the applied index: its draws
// reach one client and change nothing.
func (f *FSM) scriptSeed(write bool) uint64 {
	if !write {
		return f.applied.Load() << 16
	}
	return f.entryIndex<<16 | uint64(f.entryPos&0xffff)
}

// scriptLoad caches a script that compiles and answers its SHA-1, or the
// compiler's error.
func (f *FSM) scriptLoad(r *request.Request, now int64, res *request.Result) {
	body := r.Keys[0]
	sha := scripting.SHA1Hex(body)
	if msg := f.engine.Compile(body, sha); msg != "" {
		setReplyError(res, msg)
		return
	}
	f.cacheScript(sha, body)
	data := make([]byte, 0, len(sha)+7)
	data = append(append(append(data, "$40\r\n"...), sha...), '\r', '\n')
	*res = request.Result{Kind: request.KindReply, Data: data}
}

func (f *FSM) scriptFlush(r *request.Request, now int64, res *request.Result) {
	clear(f.scripts)
	*res = request.Result{Kind: request.KindOK}
}

func (f *FSM) scriptExists(r *request.Request, now int64, res *request.Result) {
	var data []byte
	for _, sha := range r.Keys {
		_, ok := f.scripts[string(sha)]
		data = request.AppendIntItem(data, scriptExists01(ok))
	}
	*res = request.Result{Kind: request.KindInts, Data: data}
}

func scriptExists01(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// cacheScript adds a script to the replicated cache (a copy: body aliases
// the entry).
func (f *FSM) cacheScript(sha string, body []byte) {
	if _, ok := f.scripts[sha]; !ok {
		f.scripts[sha] = append([]byte(nil), body...)
	}
}

// setReplyError answers an error whose text is not one of the state
// machine's codes (a compiler's message) as a reply.
func setReplyError(res *request.Result, msg string) {
	data := make([]byte, 0, len(msg)+3)
	data = append(append(append(data, '-'), msg...), '\r', '\n')
	*res = request.Result{Kind: request.KindReply, Data: data}
}

// nonLocalKeyText is Redis Cluster's error to a script's call on a key of a
// slot another node serves; here, of a slot another group owns.
const nonLocalKeyText = "ERR Script attempted to access a non local key in a cluster node"

// scriptExecutor applies the requests a script's redis.call makes, as the
// state machine applies a client's: same handlers, same instant, and for a
// write the same bookkeeping (CLIENT TRACKING's written keys). It runs on
// the goroutine that runs the script, under applyMu.
type scriptExecutor struct {
	f     *FSM
	now   int64
	write bool // the script runs from a log entry and may write
	// oom: the leader proposed the script above maxmemory, so a write that
	// would grow the keyspace is refused with OOM, as the leader refuses a
	// client's (group/memoryguard.go), until the script has written
	// (dirty): Redis lets a script that has begun to write finish.
	oom, dirty bool
	// undo saves what the script's writes overwrite while the call may
	// still be deferred (call.Slice above 0); beside is set when the
	// script runs beside the state machine, f being the scratch one
	// (deferred.go).
	undo   *undoLog
	call   *scripting.Call
	beside *effectsRun
}

// Execute implements scripting.Executor.
func (x *scriptExecutor) Execute(req *request.Request, res *request.Result) {
	*res = request.Result{}
	switch {
	case validRequest(req) != "", req.Code.IsScript(),
		req.Code.IsWrite() && !x.write:
		// What package scripting never hands over (it refuses scripts
		// calling scripts, and writes from a read-only script, with
		// Redis's texts); refused the same way on every replica.
		res.SetErr(request.ErrInvalidOp)
		return
	}
	if active := x.f.FeatureLevel(); req.Code.AboveLevel(active) {
		// A code of a level the cluster has not reached: refused on every
		// replica alike (featurelevel.go).
		res.SetFeatureLevelErr(req.Code, active)
		return
	}
	if x.f.cfg.Owns != nil && !req.OwnsKeys(x.f.cfg.Owns) {
		// A key of another group's slot: Redis Cluster's refusal of a
		// non-local key, the same on every replica.
		setReplyError(res, nonLocalKeyText)
		return
	}
	if x.beside != nil {
		if x.beside.touch(x.f, req); x.beside.whole {
			res.SetErr(request.ErrInvalidOp) // the run is dropped: RunBeside answers whole
			return
		}
	}
	if x.oom && !x.dirty && req.Code.IsWrite() && x.growsKeyspace(req) {
		res.SetErr(request.ErrOOM)
		return
	}
	if x.undo != nil && req.Code.IsWrite() && x.call.Slice > 0 {
		switch request.Describe(req.Code).Keys {
		case request.NoKey, request.KeyPattern:
			// FLUSHALL: not undoable, so the call cannot be deferred any
			// more and has its whole budget from here on.
			x.call.Slice = 0
		default:
			req.ForEachKey(func(k []byte) { x.undo.save(x.f.store, k) })
		}
	}
	x.f.run(req, x.now, res)
	// A write that failed changed nothing (the handlers refuse before they
	// touch a record): it is not a write the script made, for maxmemory,
	// for a run beside the state machine (whose written keys are installed
	// again, which would move their WATCH markers) or for tracking.
	if req.Code.IsWrite() && res.Kind != request.KindError {
		x.dirty = true
		if x.beside != nil {
			x.beside.wrote(req)
		}
		if x.write && x.f.watching() != nil {
			x.f.written(req)
		}
	}
}

// growsKeyspace reports what the leader's memory guard refuses above
// maxmemory: a request that may grow a value by what the caller chooses, or
// one that would create a key that is not live.
func (x *scriptExecutor) growsKeyspace(req *request.Request) bool {
	if req.Code.Grows() {
		return true
	}
	grows := false
	if req.Code.CreatesKey() {
		req.ForEachKey(func(k []byte) {
			if !grows {
				if _, live := x.f.store.Get(k, x.now); !live {
					grows = true
				}
			}
		})
	}
	return grows
}

// sorted lists the cache's SHA-1s in order: a snapshot writes the
// cache in that order, so replicas' snapshots stay byte-identical.
func (c scriptCache) sorted() []string {
	shas := make([]string, 0, len(c))
	for sha := range c {
		shas = append(shas, sha)
	}
	sort.Strings(shas)
	return shas
}
