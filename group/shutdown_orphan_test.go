package group

import (
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// neverAnswered is an apply future raft never answers: one still in its
// buffered apply queue when raft stopped itself (ShutdownOnRemove).
type neverAnswered struct {
	raft.ApplyFuture
	block chan struct{}
}

func (f neverAnswered) Error() error { <-f.block; return raft.ErrRaftShutdown }

// TestShutdownAfterRaftStoppedItselfWithQueuedEntries: when raft stops
// itself (this node removed) while an entry is still in its apply queue,
// raft never answers that entry's future; Shutdown must still return (it
// hung in the node tests' cleanup when a removal raced with a proposal).
func TestShutdownAfterRaftStoppedItselfWithQueuedEntries(t *testing.T) {
	n := openSingle(t, nil)
	g := n.g
	block := make(chan struct{})
	defer close(block) // lets the stranded completer end with the test
	g.proposeMu.Lock()
	g.inflight <- &inflightEntry{future: neverAnswered{block: block}, batches: []*Batch{NewBatch()}}
	g.proposeMu.Unlock()
	if err := g.raft.Shutdown().Error(); err != nil { // as ShutdownOnRemove does
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- g.Shutdown() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Shutdown still waits for an entry raft will never answer")
	}
}
