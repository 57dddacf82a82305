package group

import (
	"errors"
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
// hung in the node tests' cleanup when a removal raced with a proposal),
// and answer that entry's batches and those queued behind it as of unknown
// outcome, once each (a forwarded call waits for its answer: the node's
// forwarding server hung in Close when they were left unanswered).
func TestShutdownAfterRaftStoppedItselfWithQueuedEntries(t *testing.T) {
	n := openSingle(t, nil)
	g := n.g
	block := make(chan struct{})
	defer close(block) // lets the stranded completer end with the test
	stranded, behind := NewBatch(), NewBatch()
	g.proposeMu.Lock()
	g.inflight <- &inflightEntry{future: neverAnswered{block: block}, batches: []*Batch{stranded}}
	g.inflight <- &inflightEntry{future: neverAnswered{block: block}, batches: []*Batch{behind}}
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
	for name, b := range map[string]*Batch{"the entry raft holds": stranded, "the entry behind it": behind} {
		select {
		case <-b.done:
			if !errors.Is(b.err, ErrOutcomeUnknown) {
				t.Errorf("%s: answered %v, want ErrOutcomeUnknown", name, b.err)
			}
		default:
			t.Errorf("%s: never answered", name)
		}
	}
}
