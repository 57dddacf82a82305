package raftstore

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/hashicorp/raft"
)

// quietLogger discards the store's and Pebble's messages in tests.
var quietLogger = slog.New(slog.DiscardHandler)

// openStore opens a store in dir and closes it when the test ends (Close is
// idempotent, so tests may also close it themselves to reopen).
func openStore(t testing.TB, dir string, opts Options) *Store {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = quietLogger
	}
	s, err := Open(dir, opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// reopen closes s and opens the same directory again.
func reopen(t testing.TB, s *Store, dir string, opts Options) *Store {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	return openStore(t, dir, opts)
}

// testEntry is a deterministic entry for index i: its payload, term and type
// all derive from i so that a reader can check an entry without having kept
// what was written.
func testEntry(i uint64) *raft.Log {
	return &raft.Log{
		Index:      i,
		Term:       1 + i/100,
		Type:       raft.LogType(i % 6),
		Data:       testPayload(i),
		Extensions: []byte(fmt.Sprintf("ext-%d", i)),
		AppendedAt: time.Unix(1_700_000_000+int64(i), int64(i%1_000_000_000)),
	}
}

// testPayload is 16..215 bytes, different for every index.
func testPayload(i uint64) []byte {
	n := 16 + int(i%200)
	p := make([]byte, n)
	binary.BigEndian.PutUint64(p, i)
	for j := 8; j < n; j++ {
		p[j] = byte(i*31 + uint64(j))
	}
	return p
}

func testEntries(from, to uint64) []*raft.Log {
	var logs []*raft.Log
	for i := from; i <= to; i++ {
		logs = append(logs, testEntry(i))
	}
	return logs
}

// sameLog reports whether two entries are equal field by field, comparing
// AppendedAt as an instant (the decoded time is in the local zone and has
// no monotonic reading).
func sameLog(a, b *raft.Log) bool {
	return a.Index == b.Index && a.Term == b.Term && a.Type == b.Type &&
		bytes.Equal(a.Data, b.Data) && bytes.Equal(a.Extensions, b.Extensions) &&
		a.AppendedAt.Equal(b.AppendedAt)
}

// checkEntry fails the test unless index holds exactly testEntry(index).
func checkEntry(t testing.TB, s *Store, index uint64) {
	t.Helper()
	var got raft.Log
	if err := s.GetLog(index, &got); err != nil {
		t.Fatalf("GetLog(%d): %v", index, err)
	}
	if want := testEntry(index); !sameLog(&got, want) {
		t.Fatalf("GetLog(%d) = %+v, want %+v", index, got, want)
	}
}

func checkBounds(t testing.TB, s *Store, wantFirst, wantLast uint64) {
	t.Helper()
	first, err := s.FirstIndex()
	if err != nil {
		t.Fatalf("FirstIndex: %v", err)
	}
	last, err := s.LastIndex()
	if err != nil {
		t.Fatalf("LastIndex: %v", err)
	}
	if first != wantFirst || last != wantLast {
		t.Fatalf("bounds = [%d, %d], want [%d, %d]", first, last, wantFirst, wantLast)
	}
}

// countKeys counts the keys in [lower, upper) straight from Pebble.
func countKeys(t testing.TB, s *Store, lower, upper []byte) int {
	t.Helper()
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		n++
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	return n
}
