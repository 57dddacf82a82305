package raftstore

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/cockroachdb/pebble/v2"
)

// legacyDir is a data dir in the first key layout (format 1: no group
// prefix, no format marker) holding log entries 1..20, two stable values and
// one snapshot of three chunks. It is made with today's store and then
// rewritten with Pebble alone, key by key, as the code before groups wrote
// it; the test checks literal format 1 keys so that the rewrite cannot
// drift with keys.go.
func legacyDir(t *testing.T) (dir string, snapData []byte) {
	t.Helper()
	dir = t.TempDir()
	s := openStore(t, dir, Options{})
	if err := s.StoreLogs(testEntries(1, 20)); err != nil {
		t.Fatal(err)
	}
	if err := s.SetUint64([]byte("CurrentTerm"), 7); err != nil {
		t.Fatal(err)
	}
	if err := s.Set([]byte("LastVoteCand"), []byte("n2")); err != nil {
		t.Fatal(err)
	}
	snapData = bytes.Repeat([]byte("snapshot data "), (2*snapshotChunkSize+1000)/14)
	writeSnapshot(t, s.SnapshotStore(2), 1, 15, snapData)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	db := openRawPebble(t, dir)
	b := db.NewBatch()
	g0 := newKeyspace(0)
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: g0.groupLower, UpperBound: g0.groupUpper})
	if err != nil {
		t.Fatal(err)
	}
	for ok := it.First(); ok; ok = it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Set(it.Key()[groupPrefixLen:], v, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		t.Fatal(err)
	}
	must(t, b.DeleteRange(g0.groupLower, g0.groupUpper, nil))
	must(t, b.Delete(formatKey, nil))
	must(t, b.Commit(pebble.Sync))
	// The format 1 keys, as literal bytes.
	for _, k := range [][]byte{
		{0x01, 0, 0, 0, 0, 0, 0, 0, 5},
		append([]byte{0x02}, "CurrentTerm"...),
		{0x04, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 15}, // a prefix of the metadata key: term 1, index 15
	} {
		it, err := db.NewIter(&pebble.IterOptions{LowerBound: k})
		if err != nil {
			t.Fatal(err)
		}
		if !it.First() || !bytes.HasPrefix(it.Key(), k) {
			t.Fatalf("no format 1 key %x in the rewritten dir", k)
		}
		must(t, it.Close())
	}
	must(t, db.Close())
	return dir, snapData
}

// openRawPebble opens dir with Pebble alone, with the store's options.
func openRawPebble(t *testing.T, dir string) *pebble.DB {
	t.Helper()
	db, err := pebble.Open(dir, pebbleOptions(Options{}, quietLogger, newWALSync()))
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// checkLegacyContent checks that s holds what legacyDir wrote.
func checkLegacyContent(t *testing.T, s *Store, snapData []byte) {
	t.Helper()
	checkBounds(t, s, 1, 20)
	for i := uint64(1); i <= 20; i++ {
		checkEntry(t, s, i)
	}
	if term, err := s.GetUint64([]byte("CurrentTerm")); err != nil || term != 7 {
		t.Fatalf("CurrentTerm = %d, %v; want 7", term, err)
	}
	if v, err := s.Get([]byte("LastVoteCand")); err != nil || string(v) != "n2" {
		t.Fatalf("LastVoteCand = %q, %v; want n2", v, err)
	}
	ss := s.SnapshotStore(2)
	metas, err := ss.List()
	if err != nil || len(metas) != 1 || metas[0].Index != 15 || metas[0].Size != int64(len(snapData)) {
		t.Fatalf("List = %v, %v; want the snapshot at index 15 of %d bytes", metas, err, len(snapData))
	}
	_, rc, err := ss.Open(metas[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(rc)
	must(t, rc.Close())
	if err != nil || !bytes.Equal(got, snapData) {
		t.Fatalf("snapshot data: %d bytes, %v; want the %d written", len(got), err, len(snapData))
	}
	if st := s.Stats(); st.LastSnapshotBytes != uint64(len(snapData)) {
		t.Fatalf("LastSnapshotBytes = %d, want %d", st.LastSnapshotBytes, len(snapData))
	}
}

// A data dir written before keys carried a group ID opens as group 0 with
// its log, stable values and snapshots; the format 1 keys are gone and the
// marker says format 2, so the next open does not migrate again.
func TestMigrate_Format1DirBecomesGroup0(t *testing.T) {
	dir, snapData := legacyDir(t)
	s := openStore(t, dir, Options{})
	checkLegacyContent(t, s, snapData)
	if n := countKeys(t, s, legacySpanLower, legacySpanUpper); n != 0 {
		t.Fatalf("%d format 1 keys left after the migration", n)
	}
	// Still all there after another open, and writable.
	s = reopen(t, s, dir, Options{})
	checkLegacyContent(t, s, snapData)
	if err := s.StoreLogs(testEntries(21, 22)); err != nil {
		t.Fatal(err)
	}
	checkBounds(t, s, 1, 22)
}

// A migration that a crash interrupted left copies in group 0's span and no
// marker: the next open throws them away and migrates again.
func TestMigrate_InterruptedMigrationIsRedone(t *testing.T) {
	dir, snapData := legacyDir(t)
	db := openRawPebble(t, dir)
	g0 := newKeyspace(0)
	stray := g0.logKey(99)
	must(t, db.Set(stray[:], encodeTestLog(t, 99), pebble.Sync))
	lk := g0.logKey(3)
	must(t, db.Set(lk[:], encodeTestLog(t, 3), pebble.Sync))
	must(t, db.Close())

	s := openStore(t, dir, Options{})
	checkLegacyContent(t, s, snapData) // bounds 1..20: entry 99 is gone
}

// A database whose marker names a format this version does not know is
// refused, not read as empty.
func TestMigrate_UnknownFormatIsRefused(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, Options{})
	must(t, s.Close())
	db := openRawPebble(t, dir)
	must(t, db.Set(formatKey, []byte{9}, pebble.Sync))
	must(t, db.Close())
	if s, err := Open(dir, Options{Logger: quietLogger}); err == nil {
		s.Close()
		t.Fatal("a database of key format 9 opened")
	}
}

func encodeTestLog(t *testing.T, i uint64) []byte {
	t.Helper()
	l := testEntry(i)
	v := make([]byte, encodedLogLen(l))
	encodeLog(v, l)
	return v
}

// Two groups in one database keep apart: each has its own log, stable
// values and snapshots, compaction in one leaves the other alone, and both
// are there after a reopen. Node records belong to neither.
func TestDB_GroupsKeepApart(t *testing.T) {
	dir := t.TempDir()
	open := func() (*DB, *Store, *Store) {
		d, err := OpenDB(dir, Options{Logger: quietLogger})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = d.Close() })
		a, err := d.Group(1)
		if err != nil {
			t.Fatal(err)
		}
		b, err := d.Group(2)
		if err != nil {
			t.Fatal(err)
		}
		if again, _ := d.Group(1); again != a {
			t.Fatal("Group(1) twice returned two stores")
		}
		return d, a, b
	}
	d, a, b := open()
	must(t, a.StoreLogs(testEntries(1, 10)))
	must(t, b.StoreLogs(testEntries(5, 30)))
	must(t, a.SetUint64([]byte("CurrentTerm"), 3))
	must(t, b.SetUint64([]byte("CurrentTerm"), 4))
	must(t, d.SetNodeRecord("node-id", []byte("n1")))
	data := []byte("group one's state")
	writeSnapshot(t, a.SnapshotStore(1), 1, 8, data)
	must(t, a.DeleteRange(1, 8))

	check := func(a, b *Store) {
		t.Helper()
		checkBounds(t, a, 9, 10)
		checkBounds(t, b, 5, 30)
		for i := uint64(5); i <= 30; i++ {
			checkEntry(t, b, i)
		}
		if v, _ := a.GetUint64([]byte("CurrentTerm")); v != 3 {
			t.Fatalf("group 1's term = %d, want 3", v)
		}
		if v, _ := b.GetUint64([]byte("CurrentTerm")); v != 4 {
			t.Fatalf("group 2's term = %d, want 4", v)
		}
		if metas, err := a.SnapshotStore(1).List(); err != nil || len(metas) != 1 {
			t.Fatalf("group 1's snapshots: %v, %v", metas, err)
		}
		if metas, err := b.SnapshotStore(1).List(); err != nil || len(metas) != 0 {
			t.Fatalf("group 2's snapshots: %v, %v; want none", metas, err)
		}
		if _, err := a.Get([]byte("node-id")); !errors.Is(err, ErrKeyNotFound) {
			t.Fatalf("the node record is visible as a stable key of group 1 (%v)", err)
		}
	}
	check(a, b)
	must(t, d.Close())
	d, a, b = open()
	check(a, b)
	if v, err := d.NodeRecord("node-id"); err != nil || string(v) != "n1" {
		t.Fatalf("node record = %q, %v; want n1", v, err)
	}
	if _, err := d.NodeRecord("other"); !errors.Is(err, ErrKeyNotFound) {
		t.Fatalf("a record never set: %v, want ErrKeyNotFound", err)
	}
	// A group's store does not close the database it did not open.
	must(t, a.Close())
	checkBounds(t, b, 5, 30)
}
