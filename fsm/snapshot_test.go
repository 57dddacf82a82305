package fsm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"strconv"
	"testing"

	"github.com/hashicorp/raft"
)

// stateWith applies n random entries (seeded) to a fresh FSM.
func stateWith(t *testing.T, seed uint64, n int) *FSM {
	f := quietFSM(4)
	for _, e := range randomLog(seed, n) {
		out := f.ApplyBatch([]*raft.Log{e.log})
		if e.ops > 0 {
			takeResults(t, f, out[0])
		}
	}
	return f
}

func TestSnapshotRoundTrip(t *testing.T) {
	a := stateWith(t, 11, 300)
	data := persist(t, a)
	if !bytes.Equal(data, snapshotBytes(t, a)) {
		t.Fatalf("Persist and WriteSnapshot write different bytes")
	}
	if a.Stats().Keys == 0 {
		t.Fatalf("the state is empty; the test would prove nothing")
	}
	b := stateWith(t, 12, 100) // Restore replaces whatever was there
	if err := b.Restore(io.NopCloser(bytes.NewReader(data))); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	if !bytes.Equal(snapshotBytes(t, b), data) || b.Clock() != a.Clock() || b.Stats().Keys != a.Stats().Keys {
		t.Fatalf("restored state differs: clock %d/%d, keys %d/%d", b.Clock(), a.Clock(), b.Stats().Keys, a.Stats().Keys)
	}
	// And the restored replica keeps deciding like the original.
	more := randomLog(13, 200)
	for i, e := range more {
		e.log.Index = uint64(1000 + i)
		ra := a.ApplyBatch([]*raft.Log{e.log})
		rb := b.ApplyBatch([]*raft.Log{e.log})
		if e.ops > 0 && !equalResults(takeResults(t, a, ra[0]), takeResults(t, b, rb[0])) {
			t.Fatalf("entry %d: the restored replica answers differently", i)
		}
	}
}

func TestSnapshotOfEmptyState(t *testing.T) {
	a := quietFSM(1)
	data := persist(t, a)
	b := stateWith(t, 5, 50)
	if err := b.Restore(io.NopCloser(bytes.NewReader(data))); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	if b.Stats().Keys != 0 || b.Clock() != 0 {
		t.Fatalf("after restoring an empty snapshot: %d keys, clock %d", b.Stats().Keys, b.Clock())
	}
}

// closeTracker records whether Restore closed its reader (raft's contract:
// the FSM closes it).
type closeTracker struct {
	io.Reader
	closed bool
}

func (c *closeTracker) Close() error { c.closed = true; return nil }

// TestRestoreCorruptLeavesStateUntouched flips every byte of a snapshot (two
// ways) and truncates it at every length: Restore must fail every time and
// leave the previous state, clock included, as it was.
func TestRestoreCorruptLeavesStateUntouched(t *testing.T) {
	data := persist(t, stateWith(t, 21, 60))
	if len(data) > 20000 {
		t.Fatalf("snapshot of %d bytes: make the state smaller, this test tries every byte", len(data))
	}
	d := stateWith(t, 22, 40)
	before, clock := snapshotBytes(t, d), d.Clock()
	try := func(what string, bad []byte) {
		t.Helper()
		rc := &closeTracker{Reader: bytes.NewReader(bad)}
		if err := d.Restore(rc); err == nil {
			t.Fatalf("%s: Restore accepted a corrupt snapshot", what)
		}
		if !rc.closed {
			t.Fatalf("%s: Restore did not close its reader", what)
		}
		if !bytes.Equal(snapshotBytes(t, d), before) || d.Clock() != clock {
			t.Fatalf("%s: a failed Restore changed the state", what)
		}
	}
	for i := range data {
		for _, mask := range []byte{0x01, 0xff} {
			bad := bytes.Clone(data)
			bad[i] ^= mask
			try("flip byte "+strconv.Itoa(i), bad)
		}
	}
	for n := 0; n < len(data); n++ {
		try("truncated to "+strconv.Itoa(n), data[:n])
	}
	try("trailing garbage in place of the checksum", append(bytes.Clone(data[:len(data)-4]), 0, 0, 0, 0))
}

// TestRestoreNeverAllocatesFromADeclaredLength: a corrupt record declaring a
// 64 MB key, followed by a few bytes, must fail without allocating 64 MB.
// (snapshot.go bounds a key at 512 MB, which still lets a corrupt stream
// make every Restore attempt allocate up to 512 MB before the read fails.)
func TestRestoreNeverAllocatesFromADeclaredLength(t *testing.T) {
	var b []byte
	b = append(b, snapshotMagic...)
	b = append(b, snapshotVersion)
	b = binary.LittleEndian.AppendUint64(b, 1)
	b = binary.LittleEndian.AppendUint64(b, 1) // one record
	b = append(b, 1)                           // kind
	b = binary.AppendUvarint(b, 64<<20)        // key length
	b = append(b, "only a few bytes"...)
	f := quietFSM(1)
	var err error
	n := allocatedBytes(func() { err = f.Restore(io.NopCloser(bytes.NewReader(b))) })
	if err == nil {
		t.Fatalf("Restore accepted a truncated record")
	}
	if n > 8<<20 {
		t.Errorf("Restore allocated %d MB for a %d-byte stream that declares a 64 MB key; read keys in bounded chunks as their bytes arrive", n>>20, len(b))
	}
}

// TestRestoreRejectsOtherFormats: wrong magic or version fails cleanly.
func TestRestoreRejectsOtherFormats(t *testing.T) {
	data := persist(t, stateWith(t, 31, 20))
	for name, mutate := range map[string]func([]byte){
		"magic":   func(b []byte) { b[0] = 'X' },
		"version": func(b []byte) { b[4] = snapshotVersion + 1 },
	} {
		bad := bytes.Clone(data)
		mutate(bad)
		if err := quietFSM(1).Restore(io.NopCloser(bytes.NewReader(bad))); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// errSink fails writes after a few bytes; Persist must cancel it.
type errSink struct {
	memSink
	left int
}

func (s *errSink) Write(p []byte) (int, error) {
	if len(p) > s.left {
		return 0, errors.New("disk full")
	}
	s.left -= len(p)
	return s.memSink.Write(p)
}

func TestPersistCancelsOnWriteError(t *testing.T) {
	snap, err := stateWith(t, 41, 50).Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	sink := &errSink{left: 10}
	if err := snap.Persist(sink); err == nil {
		t.Fatalf("Persist succeeded on a failing sink")
	}
	if !sink.cancelled || sink.closed {
		t.Errorf("sink cancelled=%v closed=%v, want cancelled and not closed", sink.cancelled, sink.closed)
	}
}

// TestSnapshotIsAConsistentCut: entries applied after Snapshot returns do
// not change what Persist writes (raft persists concurrently with apply).
func TestSnapshotIsAConsistentCut(t *testing.T) {
	f := stateWith(t, 51, 100)
	want := snapshotBytes(t, f)
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range randomLog(52, 100) {
		e.log.Index = uint64(500 + i)
		out := f.ApplyBatch([]*raft.Log{e.log})
		if e.ops > 0 {
			takeResults(t, f, out[0])
		}
	}
	var sink memSink
	if err := snap.Persist(&sink); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(sink.Bytes(), want) {
		t.Errorf("the snapshot changed with entries applied after it was taken")
	}
}

// Stats counts the time ApplyBatch spent beside the requests it applied
// (INFO fsm_apply_usec_total and fsm_ops_applied), from nothing on a fresh
// state machine.
func TestStatsCountApplyTime(t *testing.T) {
	if st := quietFSM(4).Stats(); st.ApplyNanos != 0 || st.Ops != 0 {
		t.Fatalf("fresh state machine: %d ns applying, %d requests", st.ApplyNanos, st.Ops)
	}
	st := stateWith(t, 11, 300).Stats()
	if st.Ops == 0 || st.ApplyNanos <= 0 {
		t.Fatalf("after 300 entries: %d ns applying, %d requests", st.ApplyNanos, st.Ops)
	}
}
