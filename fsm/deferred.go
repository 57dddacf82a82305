package fsm

import (
	"encoding/binary"
	"runtime"
	"sync"

	"github.com/redcell/redcell/request"
	"github.com/redcell/redcell/scripting"
	"github.com/redcell/redcell/shard"
)

// Deferred scripts: a long script does not hold the log.
//
// The apply goroutine runs scripts, so a script that runs for its whole
// instruction budget (10^7 by default, about 0.3 s of gopher-lua) would
// hold every decision behind it as long. Instead a script from the log runs
// at most applySlice instructions there. One that runs past it is undone
// (undoLog: every record it wrote is put back as it was, change marker
// included) and answered request.ErrScriptDeferred: the same on every
// replica, since instructions are counted deterministically. The node that
// proposed it then runs it again beside the state machine (RunBeside), on
// copies of the keys it touches, with its whole budget, and proposes what
// it did as a request.ScriptEffects: its reply, the change marker of every
// key it read or wrote as it found it, and the records it left. Applying
// that (applyEffects) checks the markers: if none changed, no request
// touched those keys since the script read them, so installing its records
// now is the same as having run it now; the reply is answered. Otherwise it
// answers request.ErrScriptConflict and the node runs it again. A runaway
// script then costs the log applySlice instructions, and the node that
// runs it beside spends its budget on a goroutine of its own while every
// other decision goes on.
//
// What cannot run beside: a script inside MULTI (its transaction must apply
// as one entry) and one that calls a command that is not about named keys
// (FLUSHALL, DBSIZE, KEYS, SCAN, RANDOMKEY): those, and a script whose
// effects keep conflicting, are proposed again with
// request.MarkWholeBudget and run in the log with the whole budget, as
// before.

// applySlice is the instructions a script may run in the log before it is
// deferred: about 3 ms of gopher-lua on a small VM, and a hundred times what
// a rate-limit script needs. Part of the log's meaning (every replica must
// defer the same scripts): change it as a format change.
const applySlice = 100_000

// undoLog holds the records a script run in the log found before it wrote
// them, so that a deferred script leaves nothing. Owned by the apply
// goroutine.
type undoLog struct {
	keys  [][]byte
	prior []shard.State
	had   []bool
	arena []byte // the saved keys' and values' bytes (a slice taken before
	// the arena grew still holds its bytes: nothing is written over)
	buf []byte // Record's scratch
}

func (u *undoLog) reset() {
	clear(u.keys)
	clear(u.prior)
	u.keys, u.prior, u.had, u.arena = u.keys[:0], u.prior[:0], u.had[:0], u.arena[:0]
}

// save records key's record before the first write of the call to it.
func (u *undoLog) save(store *shard.Store, key []byte) {
	for _, k := range u.keys {
		if string(k) == string(key) {
			return
		}
	}
	rec, had := store.Record(key, u.buf)
	if rec.Val != nil {
		u.buf = rec.Val[:0]
	}
	start := len(u.arena)
	u.arena = append(u.arena, key...)
	u.arena = append(u.arena, rec.Val...)
	if had && rec.Val != nil {
		rec.Val = u.arena[start+len(key) : len(u.arena) : len(u.arena)]
	}
	u.keys = append(u.keys, u.arena[start:start+len(key):start+len(key)])
	u.prior = append(u.prior, rec)
	u.had = append(u.had, had)
}

// restore puts every saved record back: a key that had none is removed
// without a tombstone, so the script leaves no trace, not even for WATCH.
func (u *undoLog) restore(store *shard.Store) {
	for i := len(u.keys) - 1; i >= 0; i-- {
		if u.had[i] {
			store.Load(u.keys[i], u.prior[i])
		} else {
			store.Remove(u.keys[i])
		}
	}
}

// effectsRun is the state of one script run beside the state machine:
// the scratch state machine holding copies of the keys it touched, the
// markers those keys had, and which it wrote.
type effectsRun struct {
	main    *FSM
	guards  [][]byte // AppendEffectGuard pairs
	copied  map[string]bool
	written []string
	whole   bool // it called a command that cannot run beside
}

// touch copies the keys req names into the scratch state machine the first
// time the script names them, with their markers as guards.
func (e *effectsRun) touch(scratch *FSM, req *request.Request) {
	switch request.Describe(req.Code).Keys {
	case request.NoKey, request.KeyPattern:
		e.whole = true
		return
	}
	req.ForEachKey(func(k []byte) {
		if e.copied[string(k)] {
			return
		}
		e.copied[string(k)] = true
		rec, had := e.main.store.Record(k, nil)
		key := append([]byte(nil), k...)
		var mark uint64
		if had {
			mark = rec.Mark
			scratch.store.Load(key, rec)
		}
		e.guards = request.AppendEffectGuard(e.guards, key, mark)
	})
}

// wrote notes the keys a write the script made names.
func (e *effectsRun) wrote(req *request.Request) {
	req.ForEachKey(func(k []byte) { e.written = append(e.written, string(k)) })
}

// RunBeside runs again, beside the state machine and with its whole budget,
// the script of r: an Eval or EvalSha that was answered ErrScriptDeferred.
// It returns the ScriptEffects request to propose in its place, or whole:
// the script must run in the log with its whole budget instead (r with
// request.MarkWholeBudget), because it called a command that is not about
// named keys, or its script is no longer cached. now is the instant it runs
// at (TIME inside it). Any goroutine but the apply goroutine; it holds no
// lock while the script runs.
func (f *FSM) RunBeside(r *request.Request, now int64) (effects request.Request, whole bool) {
	if !r.Code.IsScript() || request.Describe(r.Code).Keys != request.KeyScript || validRequest(r) != "" {
		return request.Request{}, true
	}
	write := r.Code.IsWrite()
	body, sha := r.Keys[0], ""
	if r.Code == request.EvalSha || r.Code == request.EvalShaRO {
		f.applyMu.RLock()
		body = f.scripts[string(r.Keys[0])]
		f.applyMu.RUnlock()
		if body == nil {
			return request.Request{}, true
		}
		sha = string(r.Keys[0])
	} else {
		sha = scripting.SHA1Hex(body)
		if f.engine.Compile(body, sha) != "" {
			return request.Request{}, true // answered in the log (or by Read)
		}
	}
	scratch := New(Config{Stripes: 1, Logger: f.log, Scripts: f.cfg.Scripts})
	scratch.engine = f.engine
	scratch.level.Store(f.level.Load()) // the cluster's level gates its calls (featurelevel.go)
	run := &effectsRun{main: f, copied: map[string]bool{}}
	x := &scriptExecutor{f: scratch, now: now, write: write, beside: run}
	if r.Marked(request.MarkAboveMaxmemory) {
		flags, _ := f.engine.ScriptFlags(body, sha)
		if flags.Shebang && !flags.AllowOOM && !flags.NoWrites {
			return request.Request{}, true // refused in the log, as a short one is
		}
		x.oom = !flags.AllowOOM
	}
	besideProcs.enter()
	defer besideProcs.leave()
	call := scripting.Call{Body: body, SHA: sha, Keys: r.ScriptKeys(), Args: r.ScriptArgs(), ReadOnly: !write,
		Now: now, Seed: f.applied.Load() << 16}
	reply := f.engine.Run(nil, &call, x)
	if run.whole {
		return request.Request{}, true
	}
	keys := append(make([][]byte, 0, 1+len(run.guards)+2*len(run.written)), reply)
	keys = append(keys, run.guards...)
	seen := map[string]bool{}
	writes := 0
	for _, k := range run.written {
		if seen[k] {
			continue
		}
		seen[k] = true
		writes++
		var rec []byte
		if st, ok := scratch.store.GetValue([]byte(k), now, nil); ok {
			rec = appendEffectRecord(nil, st)
		}
		keys = append(keys, []byte(k), rec)
	}
	effects = request.Request{Code: request.ScriptEffects, Keys: keys}
	effects.SetArgs(int64(len(run.guards)/2), int64(writes))
	return effects, false
}

// appendEffectRecord encodes a record for a ScriptEffects request: kind,
// expiry, A, B, then the value; never empty (empty means deleted).
func appendEffectRecord(b []byte, st shard.State) []byte {
	b = append(b, byte(st.Kind))
	b = binary.LittleEndian.AppendUint64(b, uint64(st.Expire))
	b = binary.LittleEndian.AppendUint64(b, uint64(st.A))
	b = binary.LittleEndian.AppendUint64(b, uint64(st.B))
	return append(b, st.Val...)
}

const effectRecordFixed = 1 + 3*8

// readEffectRecord decodes appendEffectRecord's encoding; Val aliases b.
func readEffectRecord(b []byte) (shard.State, bool) {
	if len(b) < effectRecordFixed {
		return shard.State{}, false
	}
	st := shard.State{
		Kind:   shard.Kind(b[0]),
		Expire: int64(binary.LittleEndian.Uint64(b[1:])),
		A:      int64(binary.LittleEndian.Uint64(b[9:])),
		B:      int64(binary.LittleEndian.Uint64(b[17:])),
	}
	if len(b) > effectRecordFixed {
		st.Val = b[effectRecordFixed:]
	}
	return st, kindFamily(st.Kind) != nil
}

var effectOps = []op{
	{code: request.ScriptEffects, valid: validEffects, run: (*FSM).applyEffects},
}

func validEffects(r *request.Request) string {
	if !r.ValidEffects() {
		return "a script's effects whose counts do not fit their list"
	}
	why := ""
	r.EffectWrites(func(key, rec []byte) {
		if _, ok := readEffectRecord(rec); why == "" && len(rec) > 0 && !ok {
			why = "a script's effects with a record of an unknown kind"
		}
		if why == "" && len(key) > maxSnapshotKey {
			why = "key longer than a snapshot can hold"
		}
	})
	return why
}

// applyEffects installs a deferred script's records and answers its reply,
// if no key it read or wrote changed since it ran; else ErrScriptConflict,
// and nothing changes.
func (f *FSM) applyEffects(r *request.Request, now int64, res *request.Result) {
	if !f.guardsMatch(r, now) {
		res.SetErr(request.ErrScriptConflict)
		return
	}
	r.EffectWrites(func(key, rec []byte) {
		if len(rec) == 0 {
			f.store.Delete(key, now)
			return
		}
		st, _ := readEffectRecord(rec)
		f.store.Put(key, st)
	})
	data := f.replies.took(append(f.replies.next(), r.Keys[0]...))
	*res = request.Result{Kind: request.KindReply, Data: data}
}

// readSlice marks, in Read's copy of an EVAL_RO or EVALSHA_RO request, that
// the script runs at most applySlice instructions under applyMu: held for
// reading, a long script would keep the apply goroutine from taking it. A
// read never enters the log with it (a read that rides in an entry runs
// there with its whole budget).
const readSlice = 1 << 62

// readScript answers a read-only script: under applyMu for at most
// applySlice instructions, and past that beside the state machine without
// the lock, its answer standing if the keys it read have not changed when
// it ends (their markers, checked under applyMu); after maxBesideReads
// tries, under applyMu with its whole budget.
func (f *FSM) readScript(r *request.Request, now int64, res *request.Result) {
	sliced := *r
	sliced.NArgs, sliced.Args[1] = 2, readSlice
	f.applyMu.RLock()
	f.run(&sliced, now, res)
	f.applyMu.RUnlock()
	if res.Kind != request.KindError || res.Err != request.ErrScriptDeferred {
		return
	}
	for range maxBesideReads {
		effects, whole := f.RunBeside(r, now)
		if whole {
			break
		}
		if f.guardsHold(&effects, now) {
			*res = request.Result{Kind: request.KindReply, Data: effects.Keys[0]}
			return
		}
	}
	*res = request.Result{}
	f.applyMu.RLock()
	defer f.applyMu.RUnlock()
	f.run(r, max(now, f.clock.Load()), res)
}

// maxBesideReads bounds the runs of a read-only script beside the state
// machine whose keys keep changing under it.
const maxBesideReads = 3

// guardsHold reports whether every key the effects guard still has the
// marker it had.
func (f *FSM) guardsHold(effects *request.Request, now int64) bool {
	f.applyMu.RLock()
	defer f.applyMu.RUnlock()
	return f.guardsMatch(effects, now)
}

// guardsMatch is guardsHold for a caller that holds applyMu.
func (f *FSM) guardsMatch(effects *request.Request, now int64) bool {
	match := true
	effects.EffectGuards(func(key []byte, mark uint64) {
		if _, m := f.store.Watch(key, now); m != mark {
			match = false
		}
	})
	return match
}

// besideProcs gives the process one more P (GOMAXPROCS) while scripts run
// beside the state machine. A node runs on one P by default (cmd/redcell:
// a decision is a chain of goroutine hand-offs, cheapest on one thread); a
// script that runs for its whole budget there would hold it for the
// scheduler's 10 ms slices, and a goroutine it yields to with Gosched does
// not let the network poller run (the scheduler takes the yielder back
// from its queue first; only sysmon polls, every 10 ms), so every decision
// would wait about that long. With a P of its own the script leaves the
// node's P to everything else, whose network poller runs whenever it is
// idle. Deferred scripts are rare (past 100,000 instructions), so the two
// stops of the world that a change of GOMAXPROCS costs are too.
var besideProcs procsLoan

// procsLoan lends one P while any borrower holds it.
type procsLoan struct {
	mu      sync.Mutex
	holders int
	base    int
}

func (l *procsLoan) enter() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.holders == 0 {
		l.base = runtime.GOMAXPROCS(0)
		runtime.GOMAXPROCS(l.base + 1)
	}
	l.holders++
}

func (l *procsLoan) leave() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.holders--
	if l.holders == 0 {
		runtime.GOMAXPROCS(l.base)
	}
}
