// Package scripting is the Lua engine that runs Redis scripts (EVAL,
// EVALSHA and their _RO forms) inside Redcell's state machine: Redis 7.0's
// environment and conversions on gopher-lua (Lua 5.1 in Go), made
// deterministic (TIME and math.random come from the log entry) and bounded
// (an instruction and a memory budget per call instead of Redis's
// wall-clock BUSY). See DESIGN.md.
package scripting

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"sync"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/parse"

	"github.com/redcell/redcell/request"
)

// Defaults of Config's budgets.
const (
	// DefaultMaxInstructions is 10^7 VM instructions: the spec's floor,
	// five orders of magnitude above a rate-limit script (redis_rate's
	// GCRA script runs about 70), and about 0.4 s of gopher-lua on one
	// core: the longest a script that loops forever holds the state
	// machine.
	DefaultMaxInstructions = 10_000_000
	// DefaultMaxMemory is 64 MiB allocated over a call, by the accounting
	// of budget.go (cumulative, not live: a call that builds and drops
	// strings pays for each).
	DefaultMaxMemory = 64 << 20
)

// Config: per-node settings every member must share.
type Config struct {
	MaxInstructions int64        // VM instructions per call; 0 = DefaultMaxInstructions
	MaxMemory       int64        // bytes a call may allocate by the deterministic accounting (budget.go); 0 = DefaultMaxMemory
	Logger          *slog.Logger // redis.log goes here (nil: slog.Default())
}

// Call is one script run.
type Call struct {
	Body     []byte   // the script's source
	SHA      string   // SHA1Hex(Body): the compile cache's key and the name in error texts
	Keys     [][]byte // KEYS
	Args     [][]byte // ARGV
	ReadOnly bool     // EVAL_RO / EVALSHA_RO: a write command answers Redis's error
	Now      int64    // the log entry's instant, Unix nanoseconds: what TIME answers inside the script
	Seed     uint64   // the log entry's identity: math.random's seed for this call
	// Slice, when above 0 and below the instruction budget, stops the call
	// after that many instructions with Sliced set instead of the budget's
	// error: the state machine then undoes what it did and runs it again
	// beside the log (fsm's deferred scripts). Deterministic, as the budget.
	// The Executor may set it to 0 during the call (after a write it cannot
	// undo): the call then has its whole budget.
	Slice  int64
	Sliced bool // set by Run: the call ran past Slice, and its reply means nothing
}

// Executor runs one command that a script calls, as the state machine applies it.
type Executor interface {
	// Execute runs req (parsed from redis.call's arguments by package commands) and fills res.
	Execute(req *request.Request, res *request.Result)
}

// Engine compiles and runs scripts. Its methods are safe for concurrent
// use: the state machine runs scripts from its apply goroutine, and may
// run a read-only script from a read at the same time; each Run takes an
// interpreter state of its own from the pool.
type Engine struct {
	cfg Config
	log *slog.Logger

	mu     sync.Mutex
	protos map[string]*script // compiled scripts by sha, at most maxCachedScripts
	order  []string           // shas in the order they were cached, for eviction
	free   []*vm              // idle interpreter states, at most maxIdleStates
}

// script is one compiled script.
type script struct {
	proto *lua.FunctionProto
	// setsGlobals: some function of the script assigns a global
	// (OP_SETGLOBAL). A script that does not runs with the real globals
	// as its environment (vm.run): its reads then cost one lookup, not a
	// miss on the read-only proxy, its metatable and the real table.
	setsGlobals bool
	Flags
}

// Flags are what a script's shebang line declares.
type Flags struct {
	Shebang  bool // the script starts with "#!lua": Redis 7's flags apply to it
	NoWrites bool // flags=no-writes: run as read-only
	AllowOOM bool // flags=allow-oom: may write above maxmemory
}

const (
	// maxCachedScripts bounds the compile cache; past it the oldest
	// compiled script is dropped (and compiled again when called: the
	// script cache that EVALSHA looks up is the state machine's, this is
	// only its compiled form).
	maxCachedScripts = 4096
	// maxIdleStates bounds the idle interpreter states kept for reuse.
	maxIdleStates = 16
)

// NewEngine returns an engine with cfg's budgets (0: the defaults).
func NewEngine(cfg Config) *Engine {
	if cfg.MaxInstructions <= 0 {
		cfg.MaxInstructions = DefaultMaxInstructions
	}
	if cfg.MaxMemory <= 0 {
		cfg.MaxMemory = DefaultMaxMemory
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Engine{cfg: cfg, log: log, protos: make(map[string]*script)}
}

// SHA1Hex is the lowercase hex SHA-1 of body (SCRIPT LOAD's answer, redis.sha1hex).
func SHA1Hex(body []byte) string {
	sum := sha1.Sum(body)
	return hex.EncodeToString(sum[:])
}

// Compile compiles body into the per-node cache and returns "" or the error reply text SCRIPT LOAD answers.
func (e *Engine) Compile(body []byte, sha string) string {
	_, errText := e.compiled(body, sha)
	return errText
}

// ScriptFlags returns what the shebang of the script sha (whose source is
// body) declares, or the compiler's error.
func (e *Engine) ScriptFlags(body []byte, sha string) (Flags, string) {
	s, errText := e.compiled(body, sha)
	if s == nil {
		return Flags{}, errText
	}
	return s.Flags, ""
}

// compiled returns the compiled script of sha, compiling body when it is
// not cached.
func (e *Engine) compiled(body []byte, sha string) (*script, string) {
	e.mu.Lock()
	s := e.protos[sha]
	e.mu.Unlock()
	if s != nil {
		return s, ""
	}
	s, errText := compile(body)
	if errText != "" {
		return nil, errText
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if old := e.protos[sha]; old != nil {
		return old, ""
	}
	if len(e.order) >= maxCachedScripts {
		delete(e.protos, e.order[0])
		e.order = append(e.order[:0], e.order[1:]...)
	}
	e.protos[sha] = s
	e.order = append(e.order, sha)
	return s, ""
}

// compile parses a script as Redis's luaCreateFunction does: an optional
// shebang line ("#!lua flags=...") is read and blanked, keeping its line
// feed so that line numbers stay the user's, and the chunk is named
// "@user_script". A syntax error's text is gopher-lua's parser's, which
// words some errors differently from C Lua's (the prefix and the position
// are Redis's).
func compile(body []byte) (s *script, errText string) {
	defer func() {
		if r := recover(); r != nil {
			s, errText = nil, fmt.Sprintf("ERR Error compiling script (new function): %v", r)
		}
	}()
	src := string(body)
	s = &script{}
	if strings.HasPrefix(src, "#!") {
		flags, n, e := shebang(src)
		if e != "" {
			return nil, "ERR " + e
		}
		s.Flags = flags
		src = src[n:]
	}
	chunk, err := parse.Parse(strings.NewReader(src), "user_script")
	if err != nil {
		return nil, "ERR Error compiling script (new function): " + syntaxError(err, src)
	}
	proto, err := lua.Compile(chunk, "user_script")
	if err != nil {
		return nil, "ERR Error compiling script (new function): " + oneLine(err.Error())
	}
	// gopher-lua gives a vararg function an "arg" table on every call
	// (Lua 5.0's compatibility), and the main chunk is vararg; but the main
	// chunk has no local named arg, so the table can never be read: it is
	// not built (a map allocated per call otherwise).
	proto.IsVarArg &^= lua.VarArgNeedsArg
	s.proto = proto
	s.setsGlobals = setsGlobals(proto)
	return s, ""
}

// setsGlobals reports whether proto or any function nested in it assigns a
// global: the one instruction that writes to a function's environment (its
// closures inherit that environment; a chunk that loadstring compiles
// gets the read-only proxy, whatever the script's).
func setsGlobals(proto *lua.FunctionProto) bool {
	for _, inst := range proto.Code {
		if int(inst>>26) == lua.OP_SETGLOBAL { // gopher-lua's opGetOpCode
			return true
		}
	}
	for _, p := range proto.FunctionPrototypes {
		if setsGlobals(p) {
			return true
		}
	}
	return false
}

// syntaxError words a parse error as C Lua does: "user_script:LINE: msg".
func syntaxError(err error, src string) string {
	if pe, ok := err.(*parse.Error); ok {
		line := pe.Pos.Line
		if line < 1 { // at the end of the source
			line = strings.Count(src, "\n") + 1
		}
		return fmt.Sprintf("user_script:%d: %s near '%s'", line, pe.Message, pe.Token)
	}
	return oneLine(err.Error())
}

func oneLine(s string) string {
	return strings.NewReplacer("\r", " ", "\n", " ").Replace(s)
}

// shebang reads a "#!lua [flags=f1,f2]" first line as Redis 7.0's
// evalExtractShebangFlags does and returns its flags and the length of the
// line (without its line feed), or Redis's error.
func shebang(src string) (fl Flags, n int, errText string) {
	end := strings.IndexByte(src, '\n')
	if end < 0 {
		return Flags{}, 0, "Invalid script shebang"
	}
	parts := strings.Fields(src[:end])
	if len(parts) == 0 {
		return Flags{}, 0, "Invalid engine in script shebang"
	}
	if parts[0] != "#!lua" {
		return Flags{}, 0, "Unexpected engine in script shebang: " + parts[0]
	}
	fl.Shebang = true
	for _, p := range parts[1:] {
		flags, ok := strings.CutPrefix(p, "flags=")
		if !ok {
			return Flags{}, 0, "Unknown lua shebang option: " + p
		}
		for _, f := range strings.Split(flags, ",") {
			switch f {
			case "no-writes":
				fl.NoWrites = true
			case "allow-oom":
				fl.AllowOOM = true
			case "allow-stale", "no-cluster", "allow-cross-slot-keys":
			default:
				return Flags{}, 0, "Unexpected flag in script shebang: " + f
			}
		}
	}
	return fl, end, ""
}

// Run runs c and appends its reply, as RESP3 bytes (request.KindReply's
// Data), to dst. Script errors, budget overruns and errors raised by
// redis.call are error replies in those bytes, never a Go error. Safe for
// concurrent use; x is called on the calling goroutine only, during Run.
func (e *Engine) Run(dst []byte, c *Call, x Executor) (out []byte) {
	if c.SHA == "" {
		// The cache is keyed by sha: a call without one must not run
		// another script cached under "".
		c.SHA = SHA1Hex(c.Body)
	}
	s, errText := e.compiled(c.Body, c.SHA)
	if errText != "" {
		return appendError(dst, errText)
	}
	v := e.getVM()
	defer func() {
		r := recover()
		if r == nil {
			e.putVM(v)
			return
		}
		// The state is dropped, never reused: its stacks are where the
		// panic left them.
		switch ae, ok := r.(*lua.ApiError); {
		case v.b.over == instructionsSpent && v.b.maxInstr < e.cfg.MaxInstructions:
			c.Sliced, out = true, dst
		case v.b.over != withinBudget:
			out = appendError(dst, v.b.text())
		case ok:
			// gopher-lua's PCall panics instead of returning when the
			// value stack is full as the error is raised (it pushes the
			// message handler without room for it): the error is the
			// script's, and answered as such.
			out = appendScriptError(dst, &lua.ApiError{Object: ae.Object}, c.SHA)
		default:
			e.log.Error("scripting: panic running a script", "sha", c.SHA, "panic", r, "stack", string(debug.Stack()))
			out = appendError(dst, "ERR internal error running the script: "+oneLine(fmt.Sprint(r)))
		}
	}()
	return v.run(dst, s, c, x)
}

func (e *Engine) getVM() *vm {
	e.mu.Lock()
	if n := len(e.free); n > 0 {
		v := e.free[n-1]
		e.free = e.free[:n-1]
		e.mu.Unlock()
		return v
	}
	e.mu.Unlock()
	return newVM(e)
}

func (e *Engine) putVM(v *vm) {
	e.mu.Lock()
	if len(e.free) < maxIdleStates {
		e.free = append(e.free, v)
	}
	e.mu.Unlock()
}
