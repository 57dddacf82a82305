package server

import (
	"testing"

	"github.com/redcell/redcell/request"
)

// TestStateMachineErrorTexts: every error the state machine answers for one
// op has its own text; an op it refused as invalid is not reported as a
// stopped state machine (that text tells operators to read the log for a
// node that is going down, while a refused op leaves the node running).
func TestStateMachineErrorTexts(t *testing.T) {
	for code, want := range map[request.ErrCode]string{
		request.ErrWrongType: "WRONGTYPE Operation against a key holding the wrong kind of value",
		request.ErrExpire:    "Cell error: Store error: Error while setting key expire",
		request.ErrInvalidOp: "ERR the state machine refused this request as invalid; nothing was changed",
	} {
		c := &conn{s: &Server{}}
		c.writeResult(&request.Result{Kind: request.KindError, Err: code})
		if got := string(c.w.b); got != "-"+want+"\r\n" {
			t.Errorf("ErrCode %d written as %q, want %q", code, got, "-"+want+"\r\n")
		}
		if c.s.stats.errors.Load() != 1 {
			t.Errorf("ErrCode %d: error counter %d, want 1", code, c.s.stats.errors.Load())
		}
	}
}
