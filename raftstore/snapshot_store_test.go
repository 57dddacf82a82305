package raftstore

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/hashicorp/raft"
)

var testConfiguration = raft.Configuration{Servers: []raft.Server{
	{Suffrage: raft.Voter, ID: "n1", Address: "10.0.0.1:7000"},
	{Suffrage: raft.Nonvoter, ID: "n2", Address: "10.0.0.2:7000"},
	{Suffrage: raft.Staging, ID: "n3", Address: ""},
}}

// snapshotData is n deterministic pseudo-random bytes.
func snapshotData(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// writeSnapshot creates a snapshot holding data, written in pieces of odd
// sizes so that writes straddle chunk boundaries, and closes it.
func writeSnapshot(t testing.TB, ss raft.SnapshotStore, term, index uint64, data []byte) string {
	t.Helper()
	sink, err := ss.Create(1, index, term, testConfiguration, index-1, nil)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	writeInPieces(t, sink, data)
	if err := sink.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	return sink.ID()
}

func writeInPieces(t testing.TB, w io.Writer, data []byte) {
	t.Helper()
	for piece := 100_003; len(data) > 0; piece = piece*3/2 + 1 {
		n := min(piece, len(data))
		if m, err := w.Write(data[:n]); err != nil || m != n {
			t.Fatalf("Write(%d bytes) = %d, %v", n, m, err)
		}
		data = data[n:]
	}
}

func readSnapshot(t testing.TB, ss raft.SnapshotStore, id string) (*raft.SnapshotMeta, []byte, error) {
	t.Helper()
	meta, rc, err := ss.Open(id)
	if err != nil {
		t.Fatalf("Open(%s): %v", id, err)
	}
	defer rc.Close()
	// A small, odd buffer size so that reads end inside chunks.
	var data []byte
	buf := make([]byte, 7777)
	for {
		n, err := rc.Read(buf)
		data = append(data, buf[:n]...)
		if err == io.EOF {
			return meta, data, nil
		}
		if err != nil {
			return meta, data, err
		}
	}
}

func listIDs(t testing.TB, ss raft.SnapshotStore) []string {
	t.Helper()
	metas, err := ss.List()
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	var ids []string
	for _, m := range metas {
		ids = append(ids, m.ID)
	}
	return ids
}

func TestSnapshotStore_RoundTrip(t *testing.T) {
	sizes := []struct {
		name string
		n    int
	}{
		{"empty", 0},
		{"one byte", 1},
		{"one chunk minus one", snapshotChunkSize - 1},
		{"exactly one chunk", snapshotChunkSize},
		{"one chunk plus one", snapshotChunkSize + 1},
		{"two and a half chunks", snapshotChunkSize*5/2 + 17},
	}
	for i, c := range sizes {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			s := openStore(t, dir, Options{})
			data := snapshotData(c.n, uint64(i))
			id := writeSnapshot(t, s.SnapshotStore(3), 4, 1000, data)
			if !strings.HasPrefix(id, "4-1000-") {
				t.Fatalf("ID = %q, want term-index-ms", id)
			}
			wantChunks := (c.n + snapshotChunkSize - 1) / snapshotChunkSize
			if got := countKeys(t, s, s.snapChunkLower, s.snapChunkUpper); got != wantChunks {
				t.Fatalf("%d chunks stored, want %d", got, wantChunks)
			}
			// Also after reopening, so nothing lives only in memory.
			s = reopen(t, s, dir, Options{})
			ss := s.SnapshotStore(3)
			metas, err := ss.List()
			if err != nil || len(metas) != 1 {
				t.Fatalf("List = %v, %v; want one snapshot", metas, err)
			}
			m := metas[0]
			if m.ID != id || m.Version != 1 || m.Index != 1000 || m.Term != 4 ||
				m.ConfigurationIndex != 999 || m.Size != int64(c.n) ||
				!configurationsEqual(m.Configuration, testConfiguration) {
				t.Fatalf("List()[0] = %+v", m)
			}
			meta, got, err := readSnapshot(t, ss, id)
			if err != nil {
				t.Fatalf("read: %v", err)
			}
			if meta.ID != m.ID || meta.Size != m.Size || meta.Index != m.Index || meta.Term != m.Term ||
				!configurationsEqual(meta.Configuration, m.Configuration) {
				t.Fatalf("Open meta %+v differs from List meta %+v", meta, m)
			}
			if !bytes.Equal(got, data) {
				t.Fatalf("read %d bytes, want the %d written", len(got), len(data))
			}
		})
	}
}

func configurationsEqual(a, b raft.Configuration) bool {
	if len(a.Servers) != len(b.Servers) {
		return false
	}
	for i := range a.Servers {
		if a.Servers[i] != b.Servers[i] {
			return false
		}
	}
	return true
}

func TestSnapshotStore_CancelLeavesNothing(t *testing.T) {
	s := openStore(t, t.TempDir(), Options{})
	ss := s.SnapshotStore(2)
	sink, err := ss.Create(1, 10, 2, testConfiguration, 9, nil)
	if err != nil {
		t.Fatal(err)
	}
	writeInPieces(t, sink, snapshotData(snapshotChunkSize*3/2, 1))
	if countKeys(t, s, s.snapChunkLower, s.snapChunkUpper) == 0 {
		t.Fatal("no chunk was committed while writing: the sink holds everything in memory")
	}
	if err := sink.Cancel(); err != nil {
		t.Fatalf("Cancel: %v", err)
	}
	if ids := listIDs(t, ss); len(ids) != 0 {
		t.Fatalf("List after Cancel = %v", ids)
	}
	if n := countKeys(t, s, s.snapChunkLower, s.snapMetaUpper); n != 0 {
		t.Fatalf("%d snapshot keys left after Cancel", n)
	}
	if _, _, err := ss.Open(sink.ID()); err == nil {
		t.Fatal("Open of a cancelled snapshot succeeded")
	}
	if _, err := sink.Write([]byte("x")); err == nil {
		t.Fatal("Write after Cancel succeeded")
	}
	if err := sink.Close(); err != nil {
		t.Fatalf("Close after Cancel = %v, want nil", err)
	}
}

func TestSnapshotStore_CloseIsIdempotent(t *testing.T) {
	s := openStore(t, t.TempDir(), Options{})
	ss := s.SnapshotStore(2)
	sink, err := ss.Create(1, 10, 2, testConfiguration, 9, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sink.Write([]byte("state")); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if err := sink.Close(); err != nil {
			t.Fatalf("Close #%d: %v", i+1, err)
		}
	}
	if err := sink.Cancel(); err != nil {
		t.Fatalf("Cancel after Close = %v, want nil", err)
	}
	if _, err := sink.Write([]byte("more")); err == nil {
		t.Fatal("Write after Close succeeded")
	}
	if _, data, err := readSnapshot(t, ss, sink.ID()); err != nil || string(data) != "state" {
		t.Fatalf("snapshot after Close/Cancel = %q, %v", data, err)
	}
}

func TestSnapshotStore_ListIsNewestFirstAndRetentionReaps(t *testing.T) {
	s := openStore(t, t.TempDir(), Options{})
	keep5 := s.SnapshotStore(5)
	// Written out of order: term outranks index, as in the file store.
	a := writeSnapshot(t, keep5, 2, 50, []byte("a"))
	b := writeSnapshot(t, keep5, 1, 900, []byte("b"))
	c := writeSnapshot(t, keep5, 2, 30, []byte("c"))
	if got, want := listIDs(t, keep5), []string{a, c, b}; !slicesEqual(got, want) {
		t.Fatalf("List = %v, want %v", got, want)
	}

	keep2 := s.SnapshotStore(2)
	if got, want := listIDs(t, keep2), []string{a, c}; !slicesEqual(got, want) {
		t.Fatalf("List with retain 2 = %v, want %v", got, want)
	}
	// Closing a new snapshot reaps everything beyond the two newest, with
	// their chunks.
	big := snapshotData(snapshotChunkSize+10, 3)
	d := writeSnapshot(t, keep2, 3, 10, big)
	if got, want := listIDs(t, keep5), []string{d, a}; !slicesEqual(got, want) {
		t.Fatalf("List after reap = %v, want %v", got, want)
	}
	if n := countKeys(t, s, s.snapMetaLower, s.snapMetaUpper); n != 2 {
		t.Fatalf("%d metadata keys after reap, want 2", n)
	}
	if n := countKeys(t, s, s.snapChunkLower, s.snapChunkUpper); n != 3 {
		t.Fatalf("%d chunk keys after reap, want 3 (2 of d, 1 of a)", n)
	}
	for _, gone := range []string{b, c} {
		if _, _, err := keep5.Open(gone); err == nil {
			t.Fatalf("Open(%s) of a reaped snapshot succeeded", gone)
		}
	}
}

func slicesEqual(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestSnapshotStore_RetainBelowOneKeepsOne(t *testing.T) {
	s := openStore(t, t.TempDir(), Options{})
	ss := s.SnapshotStore(0)
	writeSnapshot(t, ss, 1, 1, []byte("old"))
	newest := writeSnapshot(t, ss, 1, 2, []byte("new"))
	if got := listIDs(t, ss); !slicesEqual(got, []string{newest}) {
		t.Fatalf("List = %v, want only %s", got, newest)
	}
}

func TestSnapshotStore_CorruptChunkIsDetectedOnRead(t *testing.T) {
	s := openStore(t, t.TempDir(), Options{})
	ss := s.SnapshotStore(2)
	data := snapshotData(snapshotChunkSize*5/2, 9)
	id := writeSnapshot(t, ss, 1, 20, data)
	sid, err := parseSnapshotID(id)
	if err != nil {
		t.Fatal(err)
	}

	// Flip one bit in the middle of chunk 1 with a raw Pebble write.
	key := s.snapChunkKey(sid, 1)
	val, closer, err := s.db.Get(key)
	if err != nil {
		t.Fatal(err)
	}
	corrupt := bytes.Clone(val)
	closer.Close()
	corrupt[len(corrupt)/2] ^= 0x10
	if err := s.db.Set(key, corrupt, pebble.Sync); err != nil {
		t.Fatal(err)
	}

	_, got, err := readSnapshot(t, ss, id)
	if err == nil || !strings.Contains(err.Error(), "checksum") {
		t.Fatalf("read of a corrupt snapshot: err = %v, want a checksum error", err)
	}
	// Only the intact first chunk may have been handed out.
	if !bytes.Equal(got, data[:snapshotChunkSize]) {
		t.Fatalf("read returned %d bytes before the error, want exactly the first chunk", len(got))
	}
}

func TestSnapshotStore_MissingOrMovedChunkIsDetected(t *testing.T) {
	cases := []struct {
		name    string
		damage  func(t *testing.T, s *Store, id snapshotID)
		wantErr string
	}{
		{"missing last chunk", func(t *testing.T, s *Store, id snapshotID) {
			if err := s.db.Delete(s.snapChunkKey(id, 2), pebble.Sync); err != nil {
				t.Fatal(err)
			}
		}, "missing"},
		{"chunk 0 copied over chunk 1", func(t *testing.T, s *Store, id snapshotID) {
			val, closer, err := s.db.Get(s.snapChunkKey(id, 0))
			if err != nil {
				t.Fatal(err)
			}
			defer closer.Close()
			if err := s.db.Set(s.snapChunkKey(id, 1), val, pebble.Sync); err != nil {
				t.Fatal(err)
			}
		}, "checksum"},
		{"extra chunk beyond the metadata", func(t *testing.T, s *Store, id snapshotID) {
			// The reader stops at the metadata's chunk count; an extra
			// chunk is ignored, but a truncated last chunk is caught by
			// the size check.
			val, closer, err := s.db.Get(s.snapChunkKey(id, 2))
			if err != nil {
				t.Fatal(err)
			}
			short := bytes.Clone(val[:len(val)-1])
			closer.Close()
			key := s.snapChunkKey(id, 2)
			v := make([]byte, len(short))
			encodeChunk(v, keyInGroup(key), short[snapChunkHeaderLen:])
			if err := s.db.Set(key, v, pebble.Sync); err != nil {
				t.Fatal(err)
			}
		}, "metadata says"},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := openStore(t, t.TempDir(), Options{})
			ss := s.SnapshotStore(2)
			id := writeSnapshot(t, ss, 1, 20, snapshotData(snapshotChunkSize*5/2, uint64(i)))
			sid, _ := parseSnapshotID(id)
			c.damage(t, s, sid)
			if _, _, err := readSnapshot(t, ss, id); err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("err = %v, want it to mention %q", err, c.wantErr)
			}
		})
	}
}

// A metadata record that fails its checksum stops List rather than silently
// falling back to an older snapshot.
func TestSnapshotStore_CorruptMetadataFailsList(t *testing.T) {
	s := openStore(t, t.TempDir(), Options{})
	ss := s.SnapshotStore(2)
	id := writeSnapshot(t, ss, 1, 20, []byte("state"))
	sid, _ := parseSnapshotID(id)
	val, closer, err := s.db.Get(s.snapMetaKey(sid))
	if err != nil {
		t.Fatal(err)
	}
	corrupt := bytes.Clone(val)
	closer.Close()
	corrupt[3] ^= 1
	if err := s.db.Set(s.snapMetaKey(sid), corrupt, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if _, err := ss.List(); err == nil || !strings.Contains(err.Error(), "checksum") {
		t.Fatalf("List with corrupt metadata: err = %v, want a checksum error", err)
	}
	if _, _, err := ss.Open(id); err == nil {
		t.Fatal("Open with corrupt metadata succeeded")
	}
}

// The process dies after some chunks were committed and before the metadata:
// the snapshot must not be listed, and its chunks are swept at the next Open.
func TestSnapshotStore_CrashBeforeMetadataLeavesNoSnapshot(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, Options{})
	ss := s.SnapshotStore(2)
	kept := writeSnapshot(t, ss, 1, 5, []byte("complete"))
	sink, err := ss.Create(1, 10, 2, testConfiguration, 9, nil)
	if err != nil {
		t.Fatal(err)
	}
	writeInPieces(t, sink, snapshotData(snapshotChunkSize*5/2, 4))
	if n := countKeys(t, s, s.snapChunkLower, s.snapChunkUpper); n != 3 {
		t.Fatalf("%d chunks committed before the crash, want 3 (1 complete + 2 full)", n)
	}
	if got := listIDs(t, ss); !slicesEqual(got, []string{kept}) {
		t.Fatalf("List while writing = %v, want only the complete %s", got, kept)
	}
	// Abandon the sink: no Close, no Cancel. Closing the store stands in for
	// the crash (nothing more is written); the crash tests do it for real.
	s = reopen(t, s, dir, Options{})
	ss = s.SnapshotStore(2)
	if got := listIDs(t, ss); !slicesEqual(got, []string{kept}) {
		t.Fatalf("List after the crash = %v, want only %s", got, kept)
	}
	if n := countKeys(t, s, s.snapChunkLower, s.snapChunkUpper); n != 1 {
		t.Fatalf("%d chunks after reopen, want 1 (orphans swept)", n)
	}
	// The abandoned sink belongs to the closed store: it must fail cleanly.
	if _, err := sink.Write(make([]byte, snapshotChunkSize)); !errors.Is(err, ErrClosed) {
		t.Fatalf("Write of a full chunk to a sink of a closed store: %v, want ErrClosed", err)
	}
	if err := sink.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Close of a sink of a closed store: %v, want ErrClosed", err)
	}
}

// Raft may install a snapshot from the leader while its snapshot goroutine
// writes one: the reap after one sink's Close must not take the other's
// chunks for orphans.
func TestSnapshotStore_ReapSparesRunningSink(t *testing.T) {
	s := openStore(t, t.TempDir(), Options{})
	ss := s.SnapshotStore(1)
	running, err := ss.Create(1, 30, 1, testConfiguration, 29, nil)
	if err != nil {
		t.Fatal(err)
	}
	data := snapshotData(snapshotChunkSize*3/2, 5)
	writeInPieces(t, running, data[:snapshotChunkSize+1])
	writeSnapshot(t, ss, 1, 20, []byte("older, closed meanwhile"))
	writeInPieces(t, running, data[snapshotChunkSize+1:])
	if err := running.Close(); err != nil {
		t.Fatal(err)
	}
	if got := listIDs(t, ss); !slicesEqual(got, []string{running.ID()}) {
		t.Fatalf("List = %v, want %s", got, running.ID())
	}
	if _, got, err := readSnapshot(t, ss, running.ID()); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read of the snapshot written during a reap: %d bytes, %v", len(got), err)
	}
}

// A follower may be sent a snapshot that is reaped meanwhile: the reader
// sees the data as of Open.
func TestSnapshotStore_OpenReaderSurvivesReap(t *testing.T) {
	s := openStore(t, t.TempDir(), Options{})
	ss := s.SnapshotStore(1)
	data := snapshotData(snapshotChunkSize*2+5, 6)
	old := writeSnapshot(t, ss, 1, 10, data)
	_, rc, err := ss.Open(old)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	writeSnapshot(t, ss, 1, 20, []byte("newer"))
	if ids := listIDs(t, ss); len(ids) != 1 || ids[0] == old {
		t.Fatalf("List = %v, want only the newer snapshot", ids)
	}
	got, err := io.ReadAll(rc)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read of a reaped but open snapshot: %d bytes, %v", len(got), err)
	}
}

func TestSnapshotStore_CloseStoreWithOpenReader(t *testing.T) {
	s := openStore(t, t.TempDir(), Options{})
	ss := s.SnapshotStore(1)
	id := writeSnapshot(t, ss, 1, 10, snapshotData(snapshotChunkSize+1, 7))
	_, rc, err := ss.Open(id)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rc.Read(make([]byte, 10)); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close with an open reader: %v", err)
	}
	buf := make([]byte, 2*snapshotChunkSize)
	var rerr error
	for rerr == nil {
		_, rerr = rc.Read(buf)
	}
	if !errors.Is(rerr, ErrClosed) {
		t.Fatalf("Read after Store.Close: %v, want ErrClosed", rerr)
	}
	if err := rc.Close(); err != nil {
		t.Fatalf("reader Close after Store.Close: %v", err)
	}
}

func TestSnapshotStore_BadRequests(t *testing.T) {
	s := openStore(t, t.TempDir(), Options{})
	ss := s.SnapshotStore(1)
	for _, v := range []raft.SnapshotVersion{0, 2} {
		if _, err := ss.Create(v, 1, 1, testConfiguration, 1, nil); err == nil {
			t.Errorf("Create(version %d) succeeded", v)
		}
	}
	for _, id := range []string{"", "nonsense", "1-2", "1-2-3"} {
		if _, _, err := ss.Open(id); err == nil {
			t.Errorf("Open(%q) succeeded", id)
		}
	}
}

func TestSnapshotStore_IDsAreUniqueWithinAMillisecond(t *testing.T) {
	s := openStore(t, t.TempDir(), Options{})
	ss := s.SnapshotStore(10)
	seen := map[string]bool{}
	for i := 0; i < 5; i++ {
		id := writeSnapshot(t, ss, 3, 7, []byte{byte(i)})
		if seen[id] {
			t.Fatalf("ID %s handed out twice", id)
		}
		seen[id] = true
	}
	if n := len(listIDs(t, ss)); n != 5 {
		t.Fatalf("List has %d snapshots, want 5", n)
	}
}

func TestSnapshotMetaCodec(t *testing.T) {
	id := snapshotID{Term: 3, Index: 99, MS: 1234}
	m := &storedSnapshotMeta{SnapshotMeta: raft.SnapshotMeta{
		Version: 1, ID: id.String(), Index: 99, Term: 3, Peers: []byte("legacy"),
		Configuration: testConfiguration, ConfigurationIndex: 98, Size: 5 << 30,
	}, Chunks: 5 << 10}
	enc := encodeSnapshotMeta(m)
	got, err := decodeSnapshotMeta(id, enc)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != m.ID || got.Index != m.Index || got.Term != m.Term || got.Size != m.Size ||
		got.Chunks != m.Chunks || got.ConfigurationIndex != m.ConfigurationIndex ||
		string(got.Peers) != "legacy" || !configurationsEqual(got.Configuration, m.Configuration) {
		t.Fatalf("decoded %+v, want %+v", got, m)
	}
	bad := map[string][]byte{
		"unknown version": append([]byte{2}, enc[1:]...),
		"flipped bit":     append(append([]byte{}, enc[:5]...), append([]byte{enc[5] ^ 4}, enc[6:]...)...),
		"truncated":       enc[:len(enc)-1],
		"empty":           nil,
	}
	for name, in := range bad {
		if _, err := decodeSnapshotMeta(id, in); err == nil {
			t.Errorf("%s: decoded without error", name)
		}
	}
	if _, err := decodeSnapshotMeta(snapshotID{Term: 3, Index: 100, MS: 1234}, enc); err == nil {
		t.Error("metadata under another snapshot's key decoded without error")
	}
}
