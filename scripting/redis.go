package scripting

import (
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"

	"github.com/redcell/redcell/commands"
	"github.com/redcell/redcell/request"
)

// Redis 7.0's log levels (server.h LL_*) and propagation flags (PROPAGATE_*).
const (
	logDebug, logVerbose, logNotice, logWarning = 0, 1, 2, 3
	replNone, replAOF, replReplica, replAll     = 0, 1, 2, 3
)

// redisTable builds the redis global of Redis 7.0.
func (v *vm) redisTable() *lua.LTable {
	L := v.L
	t := L.NewTable()
	fns := map[string]lua.LGFunction{
		"call":               func(L *lua.LState) int { return v.redisCall(L, true) },
		"pcall":              func(L *lua.LState) int { return v.redisCall(L, false) },
		"log":                v.redisLog,
		"setresp":            v.redisSetResp,
		"sha1hex":            redisSHA1Hex,
		"error_reply":        redisErrorReply,
		"status_reply":       redisStatusReply,
		"set_repl":           redisSetRepl,
		"replicate_commands": func(L *lua.LState) int { L.Push(lua.LTrue); return 1 },
		// The debugger's functions do what they do outside a debugging
		// session: breakpoint answers false, debug logs nothing.
		"breakpoint":    func(L *lua.LState) int { L.Push(lua.LFalse); return 1 },
		"debug":         func(L *lua.LState) int { return 0 },
		"acl_check_cmd": v.redisACLCheckCmd,
	}
	for name, fn := range fns {
		t.RawSetString(name, L.NewFunction(fn))
	}
	for name, n := range map[string]int{
		"LOG_DEBUG": logDebug, "LOG_VERBOSE": logVerbose, "LOG_NOTICE": logNotice, "LOG_WARNING": logWarning,
		"REPL_NONE": replNone, "REPL_AOF": replAOF, "REPL_SLAVE": replReplica, "REPL_REPLICA": replReplica, "REPL_ALL": replAll,
		"REDIS_VERSION_NUM": redisVersionNum,
	} {
		t.RawSetString(name, lua.LNumber(n))
	}
	t.RawSetString("REDIS_VERSION", lua.LString(redisVersion))
	return t
}

// raiseErr raises Redis's error table {err = text} (luaPushError then
// lua_error): text without a "-CODE " prefix gets "ERR ".
func raiseErr(L *lua.LState, text string) {
	L.Error(errTable(L, text), 0)
}

// errTable is luaPushErrorBuff: "-CODE msg" becomes "CODE msg", a text
// without the dash gets the code ERR, and trailing CR/LF are trimmed.
func errTable(L *lua.LState, text string) *lua.LTable {
	code, msg := "ERR", text
	if len(text) > 0 && text[0] == '-' {
		msg = text[1:]
		if i := strings.IndexByte(msg, ' '); i >= 0 {
			code, msg = msg[:i], msg[i+1:]
		}
	}
	msg = strings.Trim(msg, "\r\n")
	t := L.CreateTable(0, 1)
	t.RawSetString("err", lua.LString(code+" "+msg))
	return t
}

// commandError is the error of a command refused before it ran, as
// redis.call raises it and redis.pcall returns it.
func (v *vm) commandError(L *lua.LState, raise bool, text string) int {
	t := errTable(L, text)
	t.RawSetString("ignore_error_stats_update", lua.LTrue)
	if raise {
		L.Error(t, 0)
	}
	L.Push(t)
	return 1
}

// redisCall is redis.call (raise true) and redis.pcall: it converts the
// arguments as luaArgsToRedisArgv does, checks the command as scriptCall
// does, runs it through the Executor and converts its reply to Lua as
// redisProtocolToLuaType does. A command's error reply is raised by call
// and returned by pcall as {err = text}.
func (v *vm) redisCall(L *lua.LState, raise bool) int {
	n := L.GetTop()
	if n == 0 {
		return v.commandError(L, raise, "Please specify at least one argument for this redis lib call")
	}
	args, ok := v.convertArgs(L, n)
	L.SetTop(0)
	if !ok {
		return v.commandError(L, raise, "Lua redis lib command arguments must be strings or integers")
	}
	reply, errText := v.execute(args)
	if errText != "" {
		return v.commandError(L, raise, errText)
	}
	val := v.fromRESP(L, reply)
	if t, ok := val.(*lua.LTable); ok && raise && len(reply) > 0 && reply[0] == '-' {
		L.Error(t, 0)
	}
	L.Push(val)
	return 1
}

// convertArgs reads redis.call's n arguments into v.args: strings as they
// are, numbers as "%.17g" (Redis 7.0 does not use Lua's own conversion,
// which loses precision). It reports false at the first other value.
func (v *vm) convertArgs(L *lua.LState, n int) ([][]byte, bool) {
	// Every argument is copied into one arena, reused from call to call:
	// a command may keep or change its arguments' bytes, which must then
	// not be a Lua string's.
	v.arena = v.arena[:0]
	args := v.args[:0]
	for i := 1; i <= n; i++ {
		start := len(v.arena)
		switch a := L.Get(i).(type) {
		case lua.LString:
			v.arena = append(v.arena, a...)
		case lua.LNumber:
			v.arena = appendNumber(v.arena, float64(a), 17)
		default:
			v.args = args
			return nil, false
		}
		args = append(args, v.arena[start:len(v.arena):len(v.arena)])
	}
	v.args = args
	return args, true
}

// execute runs one command for a script and returns its reply in the
// script's protocol, or the text of the error that refused it before it
// ran (Redis's scriptCall errors, "ERR" added by errTable).
func (v *vm) execute(args [][]byte) (reply []byte, errText string) {
	spec := commands.Lookup(args[0], &v.lower)
	if spec == nil {
		if scriptCommand(string(v.lower)) {
			// The script commands may be missing from the table (they are
			// the server's); Redis flags them noscript.
			return nil, "This Redis command is not allowed from script"
		}
		return nil, "Unknown Redis command called from script"
	}
	if !spec.OwnArity && !spec.CheckArity(len(args)) {
		return nil, "Wrong number of args calling Redis command from script"
	}
	v.w.B, v.w.Proto = v.w.B[:0], v.resp
	if spec.Class == commands.Connection || spec.HasFlag("noscript") || scriptCommand(spec.Name) {
		if !v.connection(spec.Name, args) {
			return nil, "This Redis command is not allowed from script"
		}
		return v.w.B, ""
	}
	if spec.Class == commands.Write && v.readOnly {
		return nil, "Write commands are not allowed from read-only scripts."
	}
	var parseErr string
	if spec.Class == commands.Write {
		parseErr = commands.ParseWrite(spec, args, &v.req)
	} else {
		parseErr = commands.ParseRead(spec, args, &v.req)
	}
	if parseErr != "" {
		// A syntax error is the command's own reply, as in Redis: it
		// reaches the script as an error reply, not a scriptCall error.
		v.w.Err(parseErr)
		return v.w.B, ""
	}
	v.res = request.Result{}
	v.x.Execute(&v.req, &v.res)
	if v.call.Slice == 0 && v.b.maxInstr < v.e.cfg.MaxInstructions {
		// The executor made the call unsliceable (a write it cannot undo):
		// the call has its whole budget from here on.
		v.b.maxInstr = v.e.cfg.MaxInstructions
	}
	if v.res.Kind == request.KindError {
		v.w.Err(commands.ResultError(&v.res))
	} else if !v.w.Result(&v.res) {
		v.w.Err(commands.ErrInternal)
	}
	return v.w.B, ""
}

// scriptCommand reports the commands that run scripts: a script cannot
// call them (Redis flags them noscript).
func scriptCommand(name string) bool {
	switch name {
	case "eval", "evalsha", "eval_ro", "evalsha_ro", "script", "function", "fcall", "fcall_ro":
		return true
	}
	return false
}

// connection answers the connection-class commands that mean something
// inside a script: PING, ECHO and TIME (the entry's instant, so that every
// replica reads the same). It reports false for the others, which are
// refused as Redis refuses its noscript commands (Redis would answer a few
// of them, such as SELECT or INFO; here they have no meaning inside the
// state machine).
func (v *vm) connection(name string, args [][]byte) bool {
	switch name {
	case "ping":
		switch len(args) {
		case 1:
			v.w.Simple("PONG")
		case 2:
			v.w.Bulk(args[1])
		default:
			v.w.Err(commands.WrongArgs("ping"))
		}
	case "echo":
		v.w.Bulk(args[1])
	case "time":
		now := v.call.Now
		v.w.Array(2)
		v.w.BulkInt(floorDiv(now, 1e9))
		v.w.BulkInt(floorDiv(now, 1e3) - floorDiv(now, 1e9)*1e6)
	default:
		return false
	}
	return true
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// redisLog is redis.log(level, ...): the arguments joined by spaces, into
// the node's log at the matching slog level.
func (v *vm) redisLog(L *lua.LState) int {
	n := L.GetTop()
	if n < 2 {
		raiseErr(L, "redis.log() requires two arguments or more.")
	}
	lv, ok := L.Get(1).(lua.LNumber)
	if !ok {
		if s, isStr := L.Get(1).(lua.LString); isStr {
			f, err := strconv.ParseFloat(string(s), 64)
			lv, ok = lua.LNumber(f), err == nil
		}
	}
	if !ok {
		raiseErr(L, "First argument must be a number (log level).")
	}
	level := int(lv)
	if level < logDebug || level > logWarning {
		raiseErr(L, "Invalid debug level.")
	}
	var msg []byte
	for i := 2; i <= n; i++ {
		if s, ok := L.Get(i).(lua.LString); ok {
			if len(msg) > 0 || i > 2 {
				msg = append(msg, ' ')
			}
			msg = append(msg, s...)
		} else if num, ok := L.Get(i).(lua.LNumber); ok {
			if i > 2 {
				msg = append(msg, ' ')
			}
			msg = append(msg, numberToString(float64(num))...)
		}
	}
	log := v.e.log
	attrs := []any{"sha", v.call.SHA}
	switch level {
	case logDebug, logVerbose:
		log.Debug(string(msg), attrs...)
	case logNotice:
		log.Info(string(msg), attrs...)
	default:
		log.Warn(string(msg), attrs...)
	}
	return 0
}

func (v *vm) redisSetResp(L *lua.LState) int {
	if L.GetTop() != 1 {
		raiseErr(L, "redis.setresp() requires one argument.")
	}
	n, _ := L.Get(1).(lua.LNumber)
	if r := int(n); r != 2 && r != 3 {
		raiseErr(L, "RESP version must be 2 or 3.")
	} else {
		v.resp = r
	}
	return 0
}

func redisSetRepl(L *lua.LState) int {
	if L.GetTop() != 1 {
		raiseErr(L, "redis.set_repl() requires two arguments.")
	}
	n, _ := L.Get(1).(lua.LNumber)
	if int(n)&^(replAOF|replReplica) != 0 {
		raiseErr(L, "Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.")
	}
	// Accepted with no effect: a script is replicated whole, as its log
	// entry, whatever it asks.
	return 0
}

func redisSHA1Hex(L *lua.LState) int {
	if L.GetTop() != 1 {
		raiseErr(L, "wrong number of arguments")
	}
	L.Push(lua.LString(SHA1Hex([]byte(luaString(L.Get(1))))))
	return 1
}

// redisErrorReply is redis.error_reply: {err = msg}, "-" added when
// missing, then luaPushErrorBuff's split. A wrong argument answers the
// error table itself, not a raised error (Redis returns it).
func redisErrorReply(L *lua.LState) int {
	s, ok := L.Get(1).(lua.LString)
	if L.GetTop() != 1 || !ok {
		L.Push(errTable(L, "wrong number or type of arguments"))
		return 1
	}
	text := string(s)
	if len(text) == 0 || text[0] != '-' {
		text = "-" + text
	}
	L.Push(errTable(L, text))
	return 1
}

func redisStatusReply(L *lua.LState) int {
	s, ok := L.Get(1).(lua.LString)
	if L.GetTop() != 1 || !ok {
		L.Push(errTable(L, "wrong number or type of arguments"))
		return 1
	}
	t := L.CreateTable(0, 1)
	t.RawSetString("ok", s)
	L.Push(t)
	return 1
}

// redisACLCheckCmd is redis.acl_check_cmd: Redcell has one user that may
// run every command, so a known command answers true.
func (v *vm) redisACLCheckCmd(L *lua.LState) int {
	n := L.GetTop()
	if n == 0 {
		raiseErr(L, "Please specify at least one argument for this redis lib call")
	}
	args, ok := v.convertArgs(L, n)
	if !ok {
		raiseErr(L, "Lua redis lib command arguments must be strings or integers")
	}
	if commands.Lookup(args[0], &v.lower) == nil {
		raiseErr(L, "Invalid command passed to redis.acl_check_cmd()")
	}
	L.Push(lua.LTrue)
	return 1
}
