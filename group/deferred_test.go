package group

import (
	"testing"

	"github.com/redcell/redcell/request"
)

// TestFailedDeferredScript: a deferred script whose effects could not be
// committed is answered as a client's failed call would be, in a result:
// "may or may not have been applied" when leadership changed after they
// were proposed, a plain retry when nothing happened.
func TestFailedDeferredScript(t *testing.T) {
	for _, c := range []struct {
		err  error
		want request.ErrCode
	}{
		{request.ErrOutcomeUnknown, request.ErrScriptOutcomeUnknown},
		{&request.Failure{Code: request.FailNotLeader}, request.ErrScriptDeferred},
		{&request.Failure{Code: request.FailNoLeader}, request.ErrScriptDeferred},
		{&request.Failure{Code: request.FailShutdown}, request.ErrScriptDeferred},
	} {
		if got := failedDeferred(c.err); got != c.want {
			t.Errorf("%v: %d, want %d", c.err, got, c.want)
		}
	}
	if got, want := request.ErrScriptOutcomeUnknown.Text(), "TRYAGAIN Leadership changed before the write was confirmed: it may or may not have been applied"; got != want {
		t.Errorf("ErrScriptOutcomeUnknown's text %q, want the failed call's %q", got, want)
	}
}

// TestMarkUndeferrable: every script of a call but the last must run in
// the log with its whole budget; other requests are untouched.
func TestMarkUndeferrable(t *testing.T) {
	reqs := []request.Request{
		{Code: request.EvalSha, NArgs: 1}, {Code: request.Set}, {Code: request.Eval, NArgs: 1}, {Code: request.EvalSha, NArgs: 1},
	}
	markUndeferrable(reqs)
	for i, want := range []bool{true, false, true, false} {
		if got := reqs[i].Marked(request.MarkWholeBudget); got != want {
			t.Errorf("request %d (code %d): marked %v, want %v", i, reqs[i].Code, got, want)
		}
	}
	if reqs[1].NArgs != 0 {
		t.Errorf("a SET was given arguments")
	}
}
