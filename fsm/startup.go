package fsm

import (
	"fmt"
	"io"
	"sync/atomic"
)

// Restoring the startup snapshot in the background.
//
// hashicorp/raft restores the newest snapshot inside raft.NewRaft, so a node
// with a million keys spent over a second in NewRaft before it could answer
// anyone. Package group instead starts raft with NoSnapshotRestoreOnStart
// (raft then takes the newest snapshot's index, term and configuration as
// restored without reading it) and restores that same snapshot here, on a
// goroutine of its own, while the node already answers clients (LOADING).
// Until that restore has finished, everything raft asks of the state machine
// waits: ApplyBatch (the entries after the snapshot must apply on top of it),
// Snapshot (it would capture a state that is not yet there) and Restore (a
// leader's snapshot must replace the restored state, not be replaced by it).
// Read, Digest and Stats do not wait: they see the empty state, and the
// server answers LOADING before anything reads it.

// startupGate holds raft's calls while the startup snapshot is restored.
type startupGate struct {
	holding atomic.Bool
	done    chan struct{} // closed when the restore has finished or failed
}

// wait blocks while the startup restore runs.
func (f *FSM) waitStartup() {
	if f.gate.holding.Load() {
		<-f.gate.done
	}
}

// HoldForStartupRestore makes ApplyBatch, Snapshot and Restore wait until
// RestoreStartup or AbortStartup is called. Call it before raft starts (before
// raft.NewRaft), once.
func (f *FSM) HoldForStartupRestore() {
	f.gate.done = make(chan struct{})
	f.gate.holding.Store(true)
}

// RestoreStartup restores the snapshot raft took as restored at start, whose
// Raft index is index, and then lets raft's calls through. On failure it
// returns the error and keeps holding them: the caller then calls
// AbortStartup.
func (f *FSM) RestoreStartup(rc io.ReadCloser, index uint64) error {
	if err := f.restore(rc); err != nil {
		return fmt.Errorf("fsm: restoring the snapshot at index %d at startup: %w", index, err)
	}
	f.applied.Store(index)
	f.releaseStartup()
	return nil
}

// AbortStartup gives up the startup restore: raft's calls are let through
// and refused, because the state machine is stopped. With an error (the
// snapshot could not be read or restored) that is fatal, as for an entry
// the node cannot decode (OnFatal): raft has already taken this snapshot's
// index as applied, so no other state may take its place, and falling back
// to an older snapshot could replay a log compacted behind the newer one.
// With nil (the node is stopping) nothing is reported.
func (f *FSM) AbortStartup(err error) {
	if f.failed.CompareAndSwap(false, true) && err != nil {
		f.log.Error("state machine stopped", "err", err)
		f.cfg.OnFatal(err)
	}
	f.releaseStartup()
}

func (f *FSM) releaseStartup() {
	if f.gate.holding.CompareAndSwap(true, false) {
		close(f.gate.done)
		f.notifyApplied()
	}
}

// NotifyApplied makes the state machine send on ch, without blocking, after
// every batch it applies and every snapshot it restores (a full channel
// means a wake-up is already pending). Give a channel with a buffer of one;
// nil stops the notifications. One receiver at a time.
func (f *FSM) NotifyApplied(ch chan<- struct{}) {
	if ch == nil {
		f.appliedNotify.Store(nil)
		return
	}
	f.appliedNotify.Store(&ch)
}

func (f *FSM) notifyApplied() {
	if p := f.appliedNotify.Load(); p != nil {
		select {
		case *p <- struct{}{}:
		default:
		}
	}
}

// Restores counts the snapshots raft had the state machine restore through
// Restore (from a leader, or raft's own restore at start when the group does
// not restore it itself); RestoreStartup is not counted.
func (f *FSM) Restores() uint64 { return f.restores.Load() }

// Started returns a channel that is closed once the startup restore is over
// (at once when there is none). raft answers a barrier without calling the
// state machine when the entries before it are no commands, so a new
// leader must also wait for this before it serves reads.
func (f *FSM) Started() <-chan struct{} {
	if f.gate.holding.Load() {
		return f.gate.done
	}
	return closedCh
}

var closedCh = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// StartupPending reports whether the startup snapshot is still being
// restored (HoldForStartupRestore was called and neither RestoreStartup
// succeeded nor AbortStartup was called).
func (f *FSM) StartupPending() bool { return f.gate.holding.Load() }
