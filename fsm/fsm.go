// Package fsm is Redcell's replicated state machine: it applies committed Raft
// log entries to the keyspace (package shard) with the limiter algorithms
// (package gcra), answers reads on the leader, and snapshots/restores the whole
// state. See DESIGN.md.
package fsm

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/redcell/redcell/scripting"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/redcell/redcell/request"
	"github.com/redcell/redcell/shard"
	"github.com/redcell/redcell/slots"
)

// Results is the response of one applied entry: one Result per request, in
// entry order. On the leader it reaches the proposer through raft's ApplyFuture;
// the proposer hands it back with Release once it has copied the results out.
type Results struct {
	R []request.Result
}

// Config configures an FSM.
type Config struct {
	// Stripes is the number of lock stripes of the keyspace. It never changes
	// results, only contention.
	Stripes int
	// OnFatal is called (once, from raft's FSM goroutine) when the log holds an
	// entry this node cannot decode: a newer format or corruption. The node
	// must stop; the FSM refuses every later entry so its state goes no
	// further. A request that decodes but cannot be applied is not fatal:
	// it answers request.ErrInvalidOp on every replica alike.
	OnFatal func(error)
	Logger  *slog.Logger
	// Scripts are the script engine's budgets, which every member must
	// share: a script stopped by them stops at the same instruction on
	// every replica (package scripting). Its Logger defaults to Logger.
	Scripts scripting.Config
	// ObserveApply, if set, is told how long each ApplyBatch took (after
	// the startup gate: the apply itself). Called from raft's FSM
	// goroutine once per batch of entries; it must be quick.
	ObserveApply func(took time.Duration)
	// Owns says whether this state machine's group owns a hash slot, the
	// same on every replica at every index: a request naming a key of a
	// slot it does not own is refused with request.ErrNotOwned at apply
	// (package node's slot map, fixed when the cluster is bootstrapped).
	// nil: every slot (one group), and no key is hashed.
	Owns func(slots.Slot) bool
}

// FSM implements raft.BatchingFSM.
//
// Goroutines: raft calls ApplyBatch, Apply, Snapshot and Restore from its one
// FSM goroutine, never concurrently. Read, Clock, AppliedIndex and Stats may be
// called from any goroutine at any time. FSMSnapshot.Persist runs on raft's
// snapshot goroutine concurrently with ApplyBatch.
type FSM struct {
	cfg Config
	log *slog.Logger

	// applyMu is held for writing while one entry is applied and read-held by
	// Read, so a read never observes half of an entry (multi-key DEL, later
	// MULTI/EXEC). Single-key atomicity alone would come from shard's stripes.
	applyMu sync.RWMutex
	store   *shard.Store

	clock   atomic.Int64  // replicated clock: now of the last applied command entry
	applied atomic.Uint64 // index of the last entry ApplyBatch has seen
	term    atomic.Uint64 // term of that entry (WatchMark)
	level   atomic.Uint32 // the active feature level (featurelevel.go)
	failed  atomic.Bool

	// Owned by the FSM goroutine.
	dec   Decoder
	req   request.Request
	ahead lookahead // prefetches the keys of requests ahead of req (prefetch.go)
	pool  sync.Pool // *Results
	// entryIndex and entryTerm are the raft index and term of the entry
	// being applied (the keyspace stamps its writes with the index; the
	// WatchGuard compares both, watchguard.go).
	entryIndex, entryTerm uint64
	// entryPos is the place of the request being applied in its entry (a
	// script's random seed, scripts.go).
	entryPos int
	// scripts is the replicated script cache; engine runs scripts and
	// keeps their compiled forms (scripts.go).
	scripts   scriptCache
	engine    *scripting.Engine
	scriptRun *scriptRun // a write's call (scripts.go)
	replies   replySlab  // writes' script replies (scripts.go)
	lastSHA   string     // the SHA-1 of the last EVALSHA applied (scripts.go)
	undo      undoLog    // what a script in the log overwrote (deferred.go)
	// origin marks this node's own proposals (SetOrigin); unread is the
	// buffer that the entries of other origins are applied into.
	origin []byte
	unread Results
	logBuf []byte // the new sliding log of the call being applied (sl.go)
	// renameBuf holds the value a RENAME moves (rename.go).
	renameBuf []byte
	strBuf    []byte      // the new string of the call being applied (strings.go)
	hash      hashScratch // the hash a write changes (hashes.go)
	listBuf   []byte      // the new list value of the call being applied (lists.go)
	zsetBuf   []byte      // the new sorted set of the call being applied (zset.go)

	entries    atomic.Uint64
	ops        atomic.Uint64
	applyNanos atomic.Int64 // time spent in ApplyBatch (Stats)

	// gate holds raft's calls while the startup snapshot is restored in the
	// background (startup.go); appliedNotify is NotifyApplied's channel.
	gate          startupGate
	appliedNotify atomic.Pointer[chan<- struct{}]
	restores      atomic.Uint64

	// watcher learns the keys each entry wrote (watch.go); watchKeys and
	// watchFlushed collect one entry's, on the FSM goroutine.
	watcher      atomic.Pointer[WriteWatcher]
	watchKeys    [][]byte
	watchFlushed bool
}

// New returns an empty state machine.
func New(cfg Config) *FSM {
	if cfg.Stripes <= 0 {
		cfg.Stripes = 64
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.OnFatal == nil {
		cfg.OnFatal = func(error) {}
	}
	f := &FSM{cfg: cfg, log: cfg.Logger, store: shard.New(cfg.Stripes),
		scripts: scriptCache{}, engine: newEngine(cfg), scriptRun: new(scriptRun)}
	f.level.Store(uint32(request.BaseFeatureLevel))
	return f
}

// newEngine is the script engine of a state machine with cfg.
func newEngine(cfg Config) *scripting.Engine {
	sc := cfg.Scripts
	if sc.Logger == nil {
		sc.Logger = cfg.Logger
	}
	return scripting.NewEngine(sc)
}

// Clock is the replicated clock: the now of the last applied command entry
// (0 before the first). It never goes backwards.
func (f *FSM) Clock() int64 { return f.clock.Load() }

// AppliedIndex is the Raft index of the last entry handed to ApplyBatch.
func (f *FSM) AppliedIndex() uint64 { return f.applied.Load() }

// SetOrigin marks this node's own proposals: the proposer puts tag in the
// Extensions of every entry it hands raft, and only those entries' results
// are read (through raft's futures, on the leader that proposed them). Any
// other entry — a follower's whole log, a replay after a restart — is
// applied into a reused buffer and answers nil instead of a Results nobody
// reads (on a follower of a busy cluster those were half of everything it
// allocated). The state and the results do not depend on it, only where the
// results are written. Without a tag every entry answers a Results (tests,
// tools). Call it before the FSM is handed to raft.
func (f *FSM) SetOrigin(tag []byte) { f.origin = bytes.Clone(tag) }

// Release returns a Results buffer obtained from an ApplyFuture.
func (f *FSM) Release(r *Results) {
	if r != nil {
		f.pool.Put(r)
	}
}

func (f *FSM) results(n int) *Results {
	r, _ := f.pool.Get().(*Results)
	if r == nil {
		r = &Results{}
	}
	if cap(r.R) < n {
		r.R = make([]request.Result, n)
	}
	r.R = r.R[:n]
	clear(r.R)
	return r
}

// Apply implements raft.FSM for a single entry.
func (f *FSM) Apply(l *raft.Log) interface{} {
	return f.ApplyBatch([]*raft.Log{l})[0]
}

// ApplyBatch implements raft.BatchingFSM. Each LogCommand entry yields a
// *Results (or an error when the node has stopped applying); other entry
// types yield nil.
func (f *FSM) ApplyBatch(logs []*raft.Log) []interface{} {
	f.waitStartup()
	began := time.Now()
	out := make([]interface{}, len(logs))
	f.applyMu.Lock()
	for i, l := range logs {
		if l.Type == raft.LogCommand {
			f.entryIndex, f.entryTerm = l.Index, l.Term
			f.store.SetStamp(l.Index) // every write of the entry marks its key with it
			out[i] = f.applyEntry(l)
		}
		f.applied.Store(l.Index)
		f.term.Store(l.Term)
	}
	f.applyMu.Unlock()
	f.notifyApplied()
	took := time.Since(began)
	f.applyNanos.Add(int64(took))
	if f.cfg.ObserveApply != nil {
		f.cfg.ObserveApply(took)
	}
	return out
}

// errStopped answers entries after a fatal apply error.
var errStopped = fmt.Errorf("fsm: stopped after a fatal apply error")

func (f *FSM) applyEntry(l *raft.Log) interface{} {
	if f.failed.Load() {
		return errStopped
	}
	if err := f.dec.Reset(l.Data); err != nil {
		return f.fatal(l, err)
	}
	now := max(f.dec.Stamp, f.clock.Load())
	f.clock.Store(now)
	read := f.origin == nil || bytes.Equal(l.Extensions, f.origin)
	var res *Results
	if read {
		res = f.results(f.dec.Count)
	} else {
		res = f.unreadResults(f.dec.Count)
	}
	watcher := f.watching()
	invalid, firstWhy := 0, ""
	var skip int64 // requests of a transaction whose WatchGuard aborted it
	f.ahead.start(f.store, l.Data, f.dec.Version)
	for i := 0; ; i++ {
		f.ahead.next()
		ok, err := f.dec.Next(&f.req)
		if err != nil {
			f.ahead.stop()
			if read {
				f.Release(res)
			}
			if errors.Is(err, request.ErrUnknownCode) {
				err = explainUnknownCode(err) // featurelevel.go
			}
			return f.fatal(l, err)
		}
		if !ok {
			break
		}
		if skip > 0 {
			// Not run: the server answers EXEC with a nil array.
			skip--
			res.R[i].SetErr(request.ErrWatchAborted)
			continue
		}
		if active := f.FeatureLevel(); f.req.Code.AboveLevel(active) {
			// The leader refuses such a request before proposing it; one
			// that got here anyway is refused alike by every replica,
			// which all have the same active level at this entry.
			res.R[i].SetFeatureLevelErr(f.req.Code, active)
			continue
		}
		if why := validRequest(&f.req); why != "" {
			// Every replica decodes the same request and refuses it the
			// same way, so answering an error keeps them identical;
			// stopping would leave the node unable to restart past this
			// entry.
			res.R[i].SetErr(request.ErrInvalidOp)
			if invalid++; invalid == 1 {
				firstWhy = fmt.Sprintf("request %d (code %d): %s", i, f.req.Code, why)
			}
			continue
		}
		if f.cfg.Owns != nil && !f.req.OwnsKeys(f.cfg.Owns) {
			// A stale route: refused alike everywhere, retried by the
			// node with its slot map.
			res.R[i].SetErr(request.ErrNotOwned)
			continue
		}
		if err := unsupportedLevel(&f.req); err != nil {
			f.ahead.stop()
			if read {
				f.Release(res)
			}
			return f.fatal(l, err) // featurelevel.go
		}
		// A read inside an entry (MULTI/EXEC) answers at the entry's now,
		// which every replica shares: deterministic like a write.
		f.entryPos = i
		f.run(&f.req, now, &res.R[i])
		skip = guardSkips(&f.req, &res.R[i])
		if watcher != nil && f.req.Code.IsWrite() && f.req.Code != request.WatchGuard {
			f.written(&f.req)
		}
	}
	if watcher != nil {
		f.reportWritten(watcher)
	}
	f.req = request.Request{} // hold no reference into the entry after apply
	f.ahead.stop()
	if invalid > 0 {
		f.log.Warn("refused invalid requests of a log entry", "index", l.Index, "term", l.Term, "refused", invalid, "first", firstWhy)
	}
	f.entries.Add(1)
	f.ops.Add(uint64(f.dec.Count))
	// Idle keys go away lazily: examining 4 records per decision makes a
	// full pass over N records every N/4 decisions, so even when every
	// decision creates a key, expired-but-unswept records stay under a
	// third of the live ones; a sequential scan costs a few ns a record.
	f.store.Sweep(now, 4*f.dec.Count+64)
	if !read {
		return nil
	}
	return res
}

// unreadResults is f.unread made ready for n results: an entry whose
// results nobody reads is still applied the same way, into this buffer.
func (f *FSM) unreadResults(n int) *Results {
	if cap(f.unread.R) < n {
		f.unread.R = make([]request.Result, n)
	}
	f.unread.R = f.unread.R[:n]
	clear(f.unread.R)
	return &f.unread
}

func (f *FSM) fatal(l *raft.Log, err error) interface{} {
	err = fmt.Errorf("fsm: cannot apply log entry %d (term %d): %w", l.Index, l.Term, err)
	if f.failed.CompareAndSwap(false, true) {
		f.log.Error("state machine stopped", "err", err)
		f.cfg.OnFatal(err)
	}
	return err
}

// validRequest says why apply or Read cannot honour r, or "" when it can. It
// refuses only what the parser never produces, so a request accepted by
// commands is never refused here; a refused request changes nothing and
// answers request.ErrInvalidOp. The checks are part of the log's meaning:
// every replica must run the same ones, so a change here needs the care of a
// format change (see DESIGN.md).
func validRequest(r *request.Request) string {
	h := &handlers[r.Code]
	if h.run == nil {
		// Unreachable for a decoded request: every code request describes
		// has a handler (TestDescriptorsHaveNoGaps).
		return "no handler for this code"
	}
	if h.valid == nil {
		// The code takes no arguments: a newer leader that gave one
		// meaning would be misread if it were ignored.
		if r.NArgs != 0 {
			return fmt.Sprintf("%d arguments to a request that takes none", r.NArgs)
		}
		return ""
	}
	if why := h.valid(r); why != "" {
		return why
	}
	// A written key is stored, so it must fit a snapshot record, or the
	// next snapshot could never be restored.
	if r.Code.IsWrite() && r.Code.LooksUpKey() && len(r.Key) > maxSnapshotKey {
		return "key longer than a snapshot can hold"
	}
	return ""
}

// run applies one valid write, or answers one valid read, at now: the
// code's handler. Caller holds applyMu (for writing for a write; either way
// for a read: Read for reading, apply for writing).
func (f *FSM) run(r *request.Request, now int64, res *request.Result) {
	handlers[r.Code].run(f, r, now, res)
}

// Read answers a read request (a code that is not a write) against the
// local state at max(now, replicated clock), filling res. The caller has made
// the read linearizable (leadership confirmed) before calling. A write code,
// or arguments the parser never produces, answer request.ErrInvalidOp and
// change nothing: writes go through the log. Safe from any goroutine.
func (f *FSM) Read(r *request.Request, now int64, res *request.Result) {
	*res = request.Result{}
	if r.Code.IsWrite() || validRequest(r) != "" {
		res.SetErr(request.ErrInvalidOp)
		return
	}
	if active := f.FeatureLevel(); r.Code.AboveLevel(active) {
		res.SetFeatureLevelErr(r.Code, active)
		return
	}
	now = max(now, f.clock.Load())
	if r.Code == request.EvalRO || r.Code == request.EvalShaRO {
		f.readScript(r, now, res) // deferred.go
		return
	}
	f.applyMu.RLock()
	defer f.applyMu.RUnlock()
	f.run(r, now, res)
}

// Stats is what INFO shows about the state machine.
type Stats struct {
	Clock        int64
	AppliedIndex uint64
	Entries      uint64 // command entries applied
	Ops          uint64 // requests applied
	// ApplyNanos is the time spent in ApplyBatch since the state machine
	// was made: one goroutine applies every entry, so its share of the
	// wall clock is how busy that goroutine is.
	ApplyNanos int64
	// Keys counts the keyspace's table entries, expired-but-not-yet-swept
	// ones included (a metric of the table, O(stripes)); INFO keyspace and
	// DBSIZE count live keys exactly (Keyspace, a read).
	Keys  int
	Store shard.Stats
	// FeatureLevel is the cluster's active feature level.
	FeatureLevel request.FeatureLevel
}

// Stats reads counters. It costs O(stripes), not O(keys), and never holds
// up apply: INFO is sent on every connect by some clients.
func (f *FSM) Stats() Stats {
	f.applyMu.RLock()
	store := f.store // Restore swaps it
	f.applyMu.RUnlock()
	st := store.Stats()
	return Stats{
		Clock:        f.clock.Load(),
		AppliedIndex: f.applied.Load(),
		Entries:      f.entries.Load(),
		Ops:          f.ops.Load(),
		ApplyNanos:   f.applyNanos.Load(),
		Keys:         st.Entries,
		Store:        st,
		FeatureLevel: f.FeatureLevel(),
	}
}

var _ raft.BatchingFSM = (*FSM)(nil)
