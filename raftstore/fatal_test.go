package raftstore

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/hashicorp/raft"
)

// A failed fsync of the WAL stops the store for good: Pebble cannot go on,
// and after a failed fsync nothing the page cache holds can be trusted. The
// append is never acknowledged, and the owner is told (OnFatal), once, with
// what failed, so that it stops the process instead of hanging.
func TestFailedWALSyncIsFatalAndReported(t *testing.T) {
	var failSyncs atomic.Bool
	fs := errorfs.Wrap(vfs.NewMem(), errorfs.InjectorFunc(func(op errorfs.Op) error {
		if failSyncs.Load() && (op.Kind == errorfs.OpFileSync || op.Kind == errorfs.OpFileSyncData || op.Kind == errorfs.OpFileSyncTo) &&
			strings.HasSuffix(op.Path, ".log") {
			return errorfs.ErrInjected
		}
		return nil
	}))
	fatal := make(chan error, 2)
	s, err := Open("/db", Options{Logger: quietLogger, fs: fs, OnFatal: func(err error) { fatal <- err }})
	if err != nil {
		t.Fatal(err)
	}
	// No Close: the goroutine Pebble reported from never returns, as in
	// production, where the process stops.
	if err := s.StoreLogs([]*raft.Log{{Index: 1, Term: 1, Type: raft.LogCommand, Data: []byte("ok")}}); err != nil {
		t.Fatal(err)
	}
	failSyncs.Store(true)
	acked := make(chan error, 1)
	go func() {
		acked <- s.StoreLogs([]*raft.Log{{Index: 2, Term: 1, Type: raft.LogCommand, Data: []byte("lost")}})
	}()
	select {
	case err := <-fatal:
		if !strings.Contains(err.Error(), "injected error") {
			t.Errorf("OnFatal got %v; want the failed sync named", err)
		}
	case err := <-acked:
		t.Fatalf("an append whose fsync failed returned %v instead of stopping the store", err)
	case <-time.After(10 * time.Second):
		t.Fatal("a failed WAL sync was neither reported nor returned")
	}
	select {
	case err := <-acked:
		t.Fatalf("the append whose fsync failed was answered (%v)", err)
	case extra := <-fatal:
		t.Fatalf("OnFatal called twice: %v", extra)
	default:
	}
}
