package commands

import (
	"testing"

	"github.com/redcell/redcell/request"
)

// TestEvalOfANoWritesScriptIsARead: EVAL of a script whose shebang says
// flags=no-writes parses to a read (no log entry); anything else, a
// malformed shebang included (the engine answers its error), stays EVAL.
func TestEvalOfANoWritesScriptIsARead(t *testing.T) {
	for body, want := range map[string]request.Code{
		"#!lua flags=no-writes\nreturn 1":               request.EvalRO,
		"#!lua flags=allow-oom,no-writes\nreturn 1":     request.EvalRO,
		"#!lua  flags=no-writes \nreturn 1":             request.EvalRO,
		"#!lua\nreturn 1":                               request.Eval,
		"#!lua flags=no-writes,bogus\nreturn 1":         request.Eval,
		"#!lua flags=no-writes":                         request.Eval,
		"#!python flags=no-writes\nreturn 1":            request.Eval,
		"#!luajit flags=no-writes\nreturn 1":            request.Eval,
		"return 1 -- #!lua flags=no-writes":             request.Eval,
		"#!lua flags=no-writes extra=1\nreturn 1":       request.Eval,
		"#!lua flags=allow-stale\nreturn redis.call(1)": request.Eval,
	} {
		r, e := parseEval(request.Eval, [][]byte{[]byte("EVAL"), []byte(body), []byte("0")})
		if e != "" || r.Code != want {
			t.Errorf("EVAL %q: code %d (%q), want %d", body, r.Code, e, want)
		}
	}
	// EVALSHA cannot know: the body is the replicated cache's.
	r, _ := parseEval(request.EvalSha, [][]byte{[]byte("EVALSHA"), make([]byte, 40), []byte("0")})
	if r.Code != request.EvalSha {
		t.Errorf("EVALSHA parsed to code %d", r.Code)
	}
}
