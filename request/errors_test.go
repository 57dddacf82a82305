package request

import (
	"errors"
	"fmt"
	"testing"
)

// TestFailureIs: errors.Is matches a failure by its code whatever its
// detail, through wrapping; FailNotLeader also counts as ErrNoLeader, and
// nothing else matches across codes.
func TestFailureIs(t *testing.T) {
	for _, tc := range []struct {
		err    error
		target error
		want   bool
	}{
		{DiskFull("/d has 1 MiB free"), ErrDiskFull, true},
		{fmt.Errorf("wrapped: %w", Removed("n3")), ErrRemoved, true},
		{NotLeaderAt("127.0.0.1:7001"), ErrNoLeader, true},
		{NotLeaderAt(""), ErrNotLeader, true},
		{ErrNoLeader, ErrNotLeader, false},
		{ErrNotReady, ErrNoLeader, false},
		{ErrOutcomeUnknown, ErrShutdown, false},
		{ErrShutdown, DiskFull("x"), false}, // a target with a detail is not a sentinel
	} {
		if got := errors.Is(tc.err, tc.target); got != tc.want {
			t.Errorf("errors.Is(%v, %v) = %v, want %v", tc.err, tc.target, got, tc.want)
		}
	}
	if f := AsFailure(errors.New("raft said no")); f.Code != FailOutcomeUnknown || f.Detail != "raft said no" {
		t.Errorf("AsFailure of a foreign error = %+v, want an unknown outcome", f)
	}
	if f := AsFailure(fmt.Errorf("x: %w", DiskFull("d"))); f.Code != FailDiskFull || f.Detail != "d" {
		t.Errorf("AsFailure found %+v", f)
	}
}
