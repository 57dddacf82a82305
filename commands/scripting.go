package commands

import (
	"bytes"

	"github.com/redcell/redcell/internal/arg"
	"github.com/redcell/redcell/request"
)

// Lua scripts (spec/scripting.md): EVAL, EVALSHA, their read-only forms and
// SCRIPT. A script request carries the script (or its SHA-1), the script's
// KEYS and its ARGV in Keys (request.KeyScript); package scripting runs it
// in the state machine.

// Script errors, as Redis 7.0 words them.
const (
	ErrNumKeysNegative = "ERR Number of keys can't be negative"
	ErrNumKeysTooMany  = "ERR Number of keys can't be greater than number of args"
	ErrScriptFlushOpt  = "ERR SCRIPT FLUSH only support SYNC|ASYNC option"
	ErrNotBusy         = "NOTBUSY No scripts in execution right now."
)

// scriptFlags are what Redis 7.0's COMMAND lists for EVAL and EVALSHA: the
// script decides whether it writes, so neither "write" nor "denyoom".
var scriptFlags = []string{"noscript", "stale", "skip_monitor", "no_mandatory_keys", "movablekeys"}

func evalSpec(name string, code request.Code, since, summary string) *Spec {
	flags := scriptFlags
	if !code.IsWrite() {
		flags = append([]string{"readonly"}, scriptFlags...)
	}
	first := Arg{Name: "script", Type: "string"}
	if code == request.EvalSha || code == request.EvalShaRO {
		first = Arg{Name: "sha1", Type: "string"}
	}
	return &Spec{Name: name, Arity: -3, Flags: flags, OwnFlags: true, Code: code,
		Group: "scripting", Since: since, Complexity: "Depends on the script that is executed.",
		ACL: []string{"@slow", "@scripting"}, Summary: summary,
		Args: []Arg{first, {Name: "numkeys", Type: "integer"}, {Name: "key", Type: "key", Optional: true, Multiple: true},
			{Name: "arg", Type: "string", Optional: true, Multiple: true}},
		Parse: func(args [][]byte) (request.Request, string) { return parseEval(code, args) }}
}

var scriptSpecs = []*Spec{
	evalSpec("eval", request.Eval, "2.6.0", "Executes a server-side Lua script, replicated: every node runs it from the log."),
	evalSpec("evalsha", request.EvalSha, "2.6.0", "Executes a cached server-side Lua script by its SHA-1 digest."),
	evalSpec("eval_ro", request.EvalRO, "7.0.0", "Executes a read-only server-side Lua script."),
	evalSpec("evalsha_ro", request.EvalShaRO, "7.0.0", "Executes a cached read-only server-side Lua script by its SHA-1 digest."),
	{Name: "script", Arity: -2, Flags: []string{}, Group: "scripting", Since: "2.6.0", Complexity: "Depends on subcommand.",
		ACL: []string{"@slow"}, Summary: "A container for Lua scripts management commands.", Subs: []*Spec{
			{Name: "script|load", Arity: 3, Flags: []string{"noscript", "stale"}, OwnFlags: true, Code: request.ScriptLoad,
				Group: "scripting", Since: "2.6.0", Complexity: "O(N) with N being the length in bytes of the script body.",
				ACL: []string{"@slow", "@scripting"}, Summary: "Loads a server-side Lua script into the replicated script cache.",
				Args: []Arg{{Name: "script", Type: "string"}}, Parse: parseScriptLoad},
			{Name: "script|exists", Arity: -3, Flags: []string{"noscript"}, OwnFlags: true, Code: request.ScriptExists,
				Group: "scripting", Since: "2.6.0", Complexity: "O(N) with N being the number of scripts to check.",
				ACL: []string{"@slow", "@scripting"}, Summary: "Determines whether server-side Lua scripts exist in the script cache.",
				Args: []Arg{{Name: "sha1", Type: "string", Multiple: true}}, Parse: parseScriptExists},
			{Name: "script|flush", Arity: -2, Flags: []string{"noscript"}, OwnFlags: true, Code: request.ScriptFlush,
				Group: "scripting", Since: "2.6.0", Complexity: "O(N) with N being the number of scripts in cache",
				ACL: []string{"@slow", "@scripting"}, Summary: "Removes all server-side Lua scripts from the replicated script cache.",
				Args:  []Arg{{Name: "flush-type", Type: "oneof", Optional: true, Args: []Arg{{Name: "async", Type: "pure-token", Token: "ASYNC"}, {Name: "sync", Type: "pure-token", Token: "SYNC"}}}},
				Parse: parseScriptFlush},
			{Name: "script|kill", Arity: 2, Flags: []string{"noscript", "allow_busy"}, Group: "scripting", Since: "2.6.0", Complexity: "O(1)",
				ACL: []string{"@slow", "@scripting"}, Summary: "Answers NOTBUSY: a script cannot run past its instruction budget, so none is ever killed."},
			{Name: "script|help", Arity: 2, Flags: []string{"loading", "stale"}, Group: "scripting", Since: "5.0.0", Complexity: "O(1)",
				ACL: []string{"@slow", "@scripting"}, Summary: "Shows helpful text about the different subcommands."},
		}},
}

// parseEval: EVAL script numkeys [key ...] [arg ...], and EVALSHA, EVAL_RO,
// EVALSHA_RO. Keys becomes the script (or its SHA-1, lower-cased as Redis
// compares them), then the keys, then the arguments.
func parseEval(code request.Code, args [][]byte) (request.Request, string) {
	n, ok := arg.Int(args[2])
	switch {
	case !ok:
		return request.Request{}, ErrNotInteger
	case n < 0:
		return request.Request{}, ErrNumKeysNegative
	case n > int64(len(args)-3):
		return request.Request{}, ErrNumKeysTooMany
	}
	first := args[1]
	if code == request.EvalSha || code == request.EvalShaRO {
		if len(first) != 40 {
			return request.Request{}, request.NoScriptText
		}
		first = lowerSHA(first)
	}
	if code == request.Eval && NoWritesShebang(first) {
		code = request.EvalRO // a read, without a log entry (spec/scripting.md)
	}
	// The script (or SHA-1) takes numkeys' place, already read, so that
	// Keys aliases args as every parser's does instead of a slice made for
	// each call.
	args[2] = first
	r := request.Request{Code: code, Keys: args[2:]}
	r.SetArgs(n)
	return r, ""
}

// NoWritesShebang reports whether a script declares itself read-only with
// Redis 7's shebang, "#!lua flags=no-writes" (beside other known flags) on
// its first line: EVAL of such a script parses to EvalRO, a read code, so
// the server answers it as a read (the only command whose parse may give a
// code of the other class). A shebang that is not well formed is left to
// the engine, which answers Redis's error for it from the log entry.
func NoWritesShebang(body []byte) bool {
	if !bytes.HasPrefix(body, []byte("#!lua")) {
		return false
	}
	end := bytes.IndexByte(body, '\n')
	if end < 0 {
		return false
	}
	parts := bytes.Fields(body[:end])
	if len(parts) == 0 || string(parts[0]) != "#!lua" {
		return false
	}
	noWrites := false
	for _, p := range parts[1:] {
		flags, ok := bytes.CutPrefix(p, []byte("flags="))
		if !ok {
			return false
		}
		for _, f := range bytes.Split(flags, []byte(",")) {
			switch string(f) {
			case "no-writes":
				noWrites = true
			case "allow-oom", "allow-stale", "no-cluster", "allow-cross-slot-keys":
			default:
				return false
			}
		}
	}
	return noWrites
}

// lowerSHA is sha in lower case (a copy when it has upper case letters).
func lowerSHA(sha []byte) []byte {
	for _, c := range sha {
		if c >= 'A' && c <= 'Z' {
			return Lower(nil, sha)
		}
	}
	return sha
}

func parseScriptLoad(args [][]byte) (request.Request, string) {
	return request.Request{Code: request.ScriptLoad, Keys: args[2:3]}, ""
}

func parseScriptExists(args [][]byte) (request.Request, string) {
	r := request.Request{Code: request.ScriptExists, Keys: make([][]byte, len(args)-2)}
	for i, sha := range args[2:] {
		r.Keys[i] = lowerSHA(sha)
	}
	return r, ""
}

func parseScriptFlush(args [][]byte) (request.Request, string) {
	switch {
	case len(args) == 2:
	case len(args) == 3 && (EqualFold(args[2], "async") || EqualFold(args[2], "sync")):
	default:
		return request.Request{}, ErrScriptFlushOpt
	}
	return request.Request{Code: request.ScriptFlush}, ""
}
