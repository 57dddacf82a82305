package node

import (
	"errors"
	"fmt"
	"time"

	"github.com/redcell/redcell/mux"
	"github.com/redcell/redcell/request"
)

// DefaultJoinTimeout bounds how long a joining node keeps trying a member
// that is unreachable or has no leader before it gives up and stops
// (Config.JoinTimeout, --join-timeout): long enough for a cluster's
// election or a member's restart, short enough that a mistyped address
// ends in an error a person sees, not in a node retrying forever.
const DefaultJoinTimeout = 60 * time.Second

// definitiveRepeats is how many identical definitive answers (a secret or
// TLS mismatch) end a join before its deadline. One could be a member
// restarting with new material; two in a row are the configuration.
const definitiveRepeats = 2

// JoinCause is why a join failed, in the terms an operator fixes it by.
type JoinCause int

const (
	// JoinFailed: anything else; the error underneath says what.
	JoinFailed JoinCause = iota
	// JoinUnreachable: nothing answered at the address (connection
	// refused, timed out), or the member accepted and never answered.
	JoinUnreachable
	// JoinSecretMismatch: the member refused this node's cluster secret,
	// or has none.
	JoinSecretMismatch
	// JoinTLSMismatch: one side has --tls-cluster yes and the other not,
	// or a certificate is not signed by the CA the other side trusts.
	JoinTLSMismatch
	// JoinNoLeader: the members answered, but none knew a leader that
	// could add this node.
	JoinNoLeader
	// JoinRefused: the leader refused to add this node (the text says
	// why); retrying cannot change that.
	JoinRefused
)

func (c JoinCause) String() string {
	switch c {
	case JoinUnreachable:
		return "unreachable"
	case JoinSecretMismatch:
		return "cluster secret mismatch"
	case JoinTLSMismatch:
		return "TLS mismatch"
	case JoinNoLeader:
		return "no leader"
	case JoinRefused:
		return "refused"
	}
	return "failed"
}

// advice is what to check, for the log line that ends the node.
func (c JoinCause) advice() string {
	switch c {
	case JoinUnreachable:
		return "is a member running at that address, and does this host reach it?"
	case JoinSecretMismatch:
		return "every node needs the same --cluster-secret-file"
	case JoinTLSMismatch:
		return "every node needs the same --tls-cluster, and certificates signed by the CA of --tls-ca-cert-file"
	case JoinNoLeader:
		return "a majority of the cluster's voters must be up to add a member"
	}
	return ""
}

// definitive says whether retrying cannot help until someone changes a
// node's configuration.
func (c JoinCause) definitive() bool {
	return c == JoinSecretMismatch || c == JoinTLSMismatch || c == JoinRefused
}

// JoinError ends a join that cannot succeed: the node stops with it
// (Node.Fatal) and the binary exits non-zero.
type JoinError struct {
	Via      string    // the address given to --join
	Cause    JoinCause // what to fix
	Attempts int
	Waited   time.Duration
	Err      error // the last attempt's error
}

func (e *JoinError) Error() string {
	msg := fmt.Sprintf("cannot join the cluster via %s: %s", e.Via, e.Cause)
	if a := e.Cause.advice(); a != "" {
		msg += " (" + a + ")"
	}
	return fmt.Sprintf("%s; %d attempt(s) in %v, the last: %v", msg, e.Attempts, e.Waited.Round(time.Millisecond), e.Err)
}

func (e *JoinError) Unwrap() error { return e.Err }

// joinCause classifies one failed join call. A member that does not lead
// and names no leader (or redirects that went round without reaching one)
// is "no leader"; a refusal by the leader (CodeFailed) is definitive.
func joinCause(err error) JoinCause {
	var f *request.Failure
	switch {
	case errors.Is(err, mux.ErrSecretMismatch):
		return JoinSecretMismatch
	case errors.Is(err, mux.ErrTLSMismatch):
		return JoinTLSMismatch
	case errors.Is(err, mux.ErrUnreachable):
		return JoinUnreachable
	case errors.As(err, &f) && f.Code == request.FailRefused:
		return JoinRefused
	case errors.As(err, &f) && (f.Code == request.FailNotLeader || f.Code == request.FailNoLeader || f.Code == request.FailNotReady):
		return JoinNoLeader
	}
	return JoinFailed
}

// joinAttempts tracks a join's failures: it decides when to give up and
// makes the error that says why.
type joinAttempts struct {
	via      string
	start    time.Time
	deadline time.Time
	n        int
	last     JoinCause
	repeats  int // consecutive failures with cause last
}

func newJoinAttempts(via string, timeout time.Duration) *joinAttempts {
	if timeout <= 0 {
		timeout = DefaultJoinTimeout
	}
	now := time.Now()
	return &joinAttempts{via: via, start: now, deadline: now.Add(timeout)}
}

// failed records one failed attempt and returns the error that ends the
// join, or nil to try again: a definitive cause ends it on its
// definitiveRepeats-th consecutive answer, anything else at the deadline.
func (j *joinAttempts) failed(err error) *JoinError {
	j.n++
	cause := joinCause(err)
	if cause == j.last {
		j.repeats++
	} else {
		j.last, j.repeats = cause, 1
	}
	if (cause.definitive() && j.repeats >= definitiveRepeats) || !time.Now().Before(j.deadline) {
		return &JoinError{Via: j.via, Cause: cause, Attempts: j.n, Waited: time.Since(j.start), Err: err}
	}
	return nil
}

// joinRetryMax caps the pause between attempts, which doubles from
// joinRetry: a member restarting is found within a couple of seconds, and
// a join waiting out its deadline logs a few dozen lines, not hundreds.
const joinRetryMax = 2 * time.Second

// pause is how long to wait before the next attempt: doubling from
// joinRetry up to joinRetryMax, and never past the deadline, so that the
// last attempt is made at it.
func (j *joinAttempts) pause() time.Duration {
	d := min(joinRetry<<min(j.n-1, 4), joinRetryMax)
	return max(min(d, time.Until(j.deadline)), 0)
}

// callTimeout bounds the next call: the administration timeout, cut to
// what is left of the join's deadline (at least a second, so that a call
// made just before the deadline can still be answered).
func (j *joinAttempts) callTimeout() time.Duration {
	return min(adminTimeout, max(time.Until(j.deadline), time.Second))
}
