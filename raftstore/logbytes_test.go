package raftstore

import (
	"testing"
)

// entryBytes is what BytesAppended counts for the entries from..to.
func entryBytes(from, to uint64) uint64 {
	var n uint64
	for i := from; i <= to; i++ {
		n += uint64(logKeyLen + encodedLogLen(testEntry(i)))
	}
	return n
}

// The log a restart would replay: counted by appends, set back by each
// completed snapshot to what was appended after its sink was created, not
// moved by a cancelled one, and recomputed from the database on Open.
func TestStats_LogBytesSinceSnapshot(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, Options{})
	if st := s.Stats(); st.LogBytesSinceSnapshot != 0 || st.LastSnapshotBytes != 0 {
		t.Fatalf("empty store: %+v", st)
	}
	if err := s.StoreLogs(testEntries(1, 100)); err != nil {
		t.Fatal(err)
	}
	if got, want := s.Stats().LogBytesSinceSnapshot, entryBytes(1, 100); got != want {
		t.Fatalf("after 100 entries: %d bytes since snapshot, want %d", got, want)
	}

	// A snapshot at 100, with entries 101..150 appended while it is written.
	ss := s.SnapshotStore(2)
	sink, err := ss.Create(1, 100, 1, testConfiguration, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.StoreLogs(testEntries(101, 150)); err != nil {
		t.Fatal(err)
	}
	data := snapshotData(3000, 1)
	writeInPieces(t, sink, data)
	if got, want := s.Stats().LogBytesSinceSnapshot, entryBytes(1, 150); got != want {
		t.Fatalf("snapshot still writing: %d, want %d (nothing completed yet)", got, want)
	}
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
	st := s.Stats()
	if want := entryBytes(101, 150); st.LogBytesSinceSnapshot != want || st.LastSnapshotBytes != 3000 || st.SnapshotsCompleted != 1 {
		t.Fatalf("after the snapshot: %+v, want %d bytes since it, 3000 bytes of snapshot, 1 completed", st, want)
	}
	// Its creation time is the one in its ID (LASTSAVE).
	id, err := parseSnapshotID(sink.ID())
	if err != nil || st.LastSnapshotUnixMS != id.MS || id.MS == 0 {
		t.Fatalf("LastSnapshotUnixMS %d, snapshot %s (%v)", st.LastSnapshotUnixMS, sink.ID(), err)
	}
	created := st.LastSnapshotUnixMS

	// A cancelled snapshot changes nothing.
	sink, err = ss.Create(1, 150, 1, testConfiguration, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	writeInPieces(t, sink, snapshotData(10, 2))
	if err := sink.Cancel(); err != nil {
		t.Fatal(err)
	}
	if err := s.StoreLogs(testEntries(151, 160)); err != nil {
		t.Fatal(err)
	}
	st = s.Stats()
	if want := entryBytes(101, 160); st.LogBytesSinceSnapshot != want || st.LastSnapshotBytes != 3000 || st.SnapshotsCompleted != 1 {
		t.Fatalf("after a cancelled snapshot: %+v, want %d bytes since the last one", st, want)
	}

	// Compaction behind the snapshot does not change what a restart
	// replays; reopening measures the entries after index 100 again.
	if err := s.DeleteRange(1, 90); err != nil {
		t.Fatal(err)
	}
	s = reopen(t, s, dir, Options{})
	st = s.Stats()
	if want := entryBytes(101, 160); st.LogBytesSinceSnapshot != want || st.LastSnapshotBytes != 3000 || st.BytesAppended != 0 || st.LastSnapshotUnixMS != created {
		t.Fatalf("after reopening: %+v, want %d bytes after the snapshot at 100, created at %d", st, want, created)
	}
	if err := s.StoreLogs(testEntries(161, 170)); err != nil {
		t.Fatal(err)
	}
	if got, want := s.Stats().LogBytesSinceSnapshot, entryBytes(101, 170); got != want {
		t.Fatalf("appending after reopening: %d, want %d", got, want)
	}
}

// Every committed append wakes the receiver without blocking on it.
func TestNotifyAppends(t *testing.T) {
	s := openStore(t, t.TempDir(), Options{})
	ch := make(chan struct{}, 1)
	s.NotifyAppends(ch)
	for i := uint64(1); i <= 3; i++ { // never blocks on the full channel
		if err := s.StoreLogs(testEntries(i, i)); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-ch:
	default:
		t.Fatal("no notification after an append")
	}
	s.NotifyAppends(nil)
	if err := s.StoreLogs(testEntries(4, 4)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ch:
		t.Fatal("notified after NotifyAppends(nil)")
	default:
	}
}
