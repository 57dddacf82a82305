package node

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redcell/redcell/forward"
	"github.com/redcell/redcell/mux"
	"github.com/redcell/redcell/request"
)

// A join's failures as forward.Client returns them: the dial's cause
// wrapped under ErrNotSent, or the member's answer.
func dialErr(kind error) error {
	return fmt.Errorf("%w: %w", forward.ErrNotSent, fmt.Errorf("mux: peer 127.0.0.1:1: %w: why", kind))
}

// TestJoinCause: every failure a join sees is named by what to fix.
func TestJoinCause(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want JoinCause
	}{
		{dialErr(mux.ErrSecretMismatch), JoinSecretMismatch},
		{dialErr(mux.ErrTLSMismatch), JoinTLSMismatch},
		{dialErr(mux.ErrUnreachable), JoinUnreachable},
		{request.NotLeaderAt(""), JoinNoLeader},
		{request.ErrNoLeader, JoinNoLeader},
		{request.Refused("node n2 is already a member"), JoinRefused},
		{fmt.Errorf("%w: no answer within 15s", forward.ErrLost), JoinFailed},
	} {
		if got := joinCause(tc.err); got != tc.want {
			t.Errorf("%v: %v, want %v", tc.err, got, tc.want)
		}
	}
}

// TestJoinAttemptsGiveUp: a definitive cause ends the join on its second
// answer in a row (not its first: a member may be restarting with new
// material), a cause that can pass only at the deadline; the error names
// the cause and keeps the last error underneath.
func TestJoinAttemptsGiveUp(t *testing.T) {
	tries := newJoinAttempts("127.0.0.1:1", time.Hour)
	if e := tries.failed(dialErr(mux.ErrSecretMismatch)); e != nil {
		t.Fatalf("gave up on the first secret mismatch: %v", e)
	}
	if e := tries.failed(dialErr(mux.ErrUnreachable)); e != nil {
		t.Fatalf("gave up on an unreachable member before the deadline: %v", e)
	}
	if e := tries.failed(dialErr(mux.ErrTLSMismatch)); e != nil {
		t.Fatalf("a TLS mismatch after other causes counted as a repeat: %v", e)
	}
	e := tries.failed(dialErr(mux.ErrTLSMismatch))
	if e == nil || e.Cause != JoinTLSMismatch || e.Attempts != 4 || !errors.Is(e, mux.ErrTLSMismatch) {
		t.Fatalf("the second TLS mismatch in a row: %#v", e)
	}
	if !strings.Contains(e.Error(), "cannot join the cluster via 127.0.0.1:1: TLS mismatch") || !strings.Contains(e.Error(), "--tls-cluster") {
		t.Errorf("the error says %q", e.Error())
	}

	expired := newJoinAttempts("127.0.0.1:1", time.Hour)
	expired.deadline = time.Now().Add(-time.Second) // the join timeout is spent
	if e := expired.failed(dialErr(mux.ErrUnreachable)); e == nil || e.Cause != JoinUnreachable || !strings.Contains(e.Error(), "unreachable") {
		t.Fatalf("an unreachable member past the deadline: %v", e)
	}
	if p := expired.pause(); p != 0 {
		t.Errorf("pause past the deadline: %v", p)
	}
}
