package raftstore

import (
	"encoding/binary"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// countingFSM applies entries carrying 1, 2, 3, ... and insists on that
// order. Its snapshot carries the count and sum plus padding, so that raft
// writes a snapshot of more than one chunk.
type countingFSM struct {
	mu       sync.Mutex
	count    uint64
	sum      uint64
	last     uint64
	restored bool
	err      error // first out-of-order entry
}

const fsmSnapshotPadding = snapshotChunkSize + 12345

func (f *countingFSM) Apply(l *raft.Log) any {
	f.mu.Lock()
	defer f.mu.Unlock()
	if l.Type != raft.LogCommand {
		return nil
	}
	v := binary.BigEndian.Uint64(l.Data)
	if v != f.last+1 && f.err == nil {
		f.err = fmt.Errorf("applied %d after %d (index %d)", v, f.last, l.Index)
	}
	f.last = v
	f.count++
	f.sum += v
	return v
}

func (f *countingFSM) Snapshot() (raft.FSMSnapshot, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return countingSnapshot{count: f.count, sum: f.sum, last: f.last}, nil
}

func (f *countingFSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	var hdr [24]byte
	if _, err := io.ReadFull(rc, hdr[:]); err != nil {
		return err
	}
	pad, err := io.ReadAll(rc)
	if err != nil {
		return err
	}
	if len(pad) != fsmSnapshotPadding {
		return fmt.Errorf("snapshot padding is %d bytes, want %d", len(pad), fsmSnapshotPadding)
	}
	for i, b := range pad {
		if b != byte(i) {
			return fmt.Errorf("snapshot padding byte %d is %d", i, b)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.count = binary.BigEndian.Uint64(hdr[0:])
	f.sum = binary.BigEndian.Uint64(hdr[8:])
	f.last = binary.BigEndian.Uint64(hdr[16:])
	f.restored = true
	return nil
}

type countingSnapshot struct{ count, sum, last uint64 }

func (s countingSnapshot) Persist(sink raft.SnapshotSink) error {
	var hdr [24]byte
	binary.BigEndian.PutUint64(hdr[0:], s.count)
	binary.BigEndian.PutUint64(hdr[8:], s.sum)
	binary.BigEndian.PutUint64(hdr[16:], s.last)
	pad := make([]byte, fsmSnapshotPadding)
	for i := range pad {
		pad[i] = byte(i)
	}
	if _, err := sink.Write(hdr[:]); err != nil {
		return err
	}
	if _, err := sink.Write(pad); err != nil {
		return err
	}
	return sink.Close()
}

func (countingSnapshot) Release() {}

func (f *countingFSM) applied() (count uint64, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.count, f.err
}

// startRaft runs a single-node raft on a store in dir, bootstrapping it if
// asked, and waits until it leads.
func startRaft(t *testing.T, dir string, bootstrap bool) (*raft.Raft, *Store, *countingFSM) {
	t.Helper()
	store := openStore(t, dir, Options{})
	snaps := store.SnapshotStore(2)
	conf := raft.DefaultConfig()
	conf.LocalID = "n1"
	conf.HeartbeatTimeout = 50 * time.Millisecond
	conf.ElectionTimeout = 50 * time.Millisecond
	conf.LeaderLeaseTimeout = 50 * time.Millisecond
	conf.CommitTimeout = 5 * time.Millisecond
	conf.SnapshotThreshold = 1 << 30 // snapshots only when the test asks
	conf.TrailingLogs = 10
	conf.Logger = hclog.New(&hclog.LoggerOptions{Output: io.Discard})
	addr, trans := raft.NewInmemTransport("n1")
	if bootstrap {
		cfg := raft.Configuration{Servers: []raft.Server{{Suffrage: raft.Voter, ID: conf.LocalID, Address: addr}}}
		if err := raft.BootstrapCluster(conf, store, store, snaps, trans, cfg); err != nil {
			t.Fatalf("bootstrap: %v", err)
		}
	}
	fsm := &countingFSM{}
	r, err := raft.NewRaft(conf, fsm, store, store, snaps, trans)
	if err != nil {
		t.Fatalf("NewRaft: %v", err)
	}
	select {
	case <-r.LeaderCh():
	case <-time.After(10 * time.Second):
		t.Fatal("no leadership within 10s")
	}
	return r, store, fsm
}

func applyRange(t *testing.T, r *raft.Raft, from, to uint64) {
	t.Helper()
	var last raft.ApplyFuture
	for v := from; v <= to; v++ {
		var b [8]byte
		binary.BigEndian.PutUint64(b[:], v)
		last = r.Apply(b[:], 5*time.Second)
	}
	if err := last.Error(); err != nil {
		t.Fatalf("apply %d..%d: %v", from, to, err)
	}
}

func stopRaft(t *testing.T, r *raft.Raft, store *Store) {
	t.Helper()
	if err := r.Shutdown().Error(); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if err := store.Close(); err != nil {
		t.Fatalf("close store: %v", err)
	}
}

// A real raft on these stores: apply, snapshot (which compacts the log
// through DeleteRange), apply more, stop, start again from the directory and
// check that the FSM is rebuilt from the snapshot plus the log, exactly once
// and in order, and that term and log survived.
func TestRaft_SingleNodeRestartsFromItsOwnStores(t *testing.T) {
	dir := t.TempDir()
	r, store, fsm := startRaft(t, dir, true)
	applyRange(t, r, 1, 60)
	if err := r.Snapshot().Error(); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	applyRange(t, r, 61, 100)
	if count, err := fsm.applied(); count != 100 || err != nil {
		t.Fatalf("first run applied %d entries, err %v", count, err)
	}
	termBefore := r.CurrentTerm()
	lastBefore := r.LastIndex()
	stopRaft(t, r, store)

	// What raft left on disk, seen through a fresh Store.
	check := openStore(t, dir, Options{})
	first, _ := check.FirstIndex()
	last, _ := check.LastIndex()
	if last != lastBefore || first <= 1 || first > 60 {
		t.Fatalf("log on disk is [%d, %d]; want compacted from > 1 up to raft's last index %d", first, last, lastBefore)
	}
	if term, err := check.GetUint64([]byte("CurrentTerm")); err != nil || term != termBefore {
		t.Fatalf("CurrentTerm on disk = %d, %v; want %d", term, err, termBefore)
	}
	metas, err := check.SnapshotStore(2).List()
	if err != nil || len(metas) != 1 || metas[0].Size != 24+fsmSnapshotPadding {
		t.Fatalf("snapshots on disk = %+v, %v; want one of %d bytes", metas, err, 24+fsmSnapshotPadding)
	}
	if err := check.Close(); err != nil {
		t.Fatal(err)
	}

	r, store, fsm = startRaft(t, dir, false)
	if err := r.Barrier(5 * time.Second).Error(); err != nil {
		t.Fatalf("barrier: %v", err)
	}
	fsm.mu.Lock()
	count, sum, restored, ferr := fsm.count, fsm.sum, fsm.restored, fsm.err
	fsm.mu.Unlock()
	if !restored || count != 100 || sum != 5050 || ferr != nil {
		t.Fatalf("after restart: restored=%v count=%d sum=%d err=%v; want snapshot restored, 100 entries summing to 5050",
			restored, count, sum, ferr)
	}
	if r.CurrentTerm() < termBefore {
		t.Fatalf("term went back from %d to %d", termBefore, r.CurrentTerm())
	}
	applyRange(t, r, 101, 110)
	if count, err := fsm.applied(); count != 110 || err != nil {
		t.Fatalf("after restart, new applies reached %d entries, err %v", count, err)
	}
	stopRaft(t, r, store)
}
