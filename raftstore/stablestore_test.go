package raftstore

import (
	"bytes"
	"testing"

	"github.com/hashicorp/raft"
)

// raft tells a missing term or vote from a failure by err.Error() ==
// "not found"; anything else stops NewRaft or a vote.
func TestStableStore_MissingKeyIsNotFound(t *testing.T) {
	s := openStore(t, t.TempDir(), Options{})
	val, err := s.Get([]byte("CurrentTerm"))
	if err != ErrKeyNotFound || err.Error() != "not found" || val != nil {
		t.Fatalf("Get(missing) = %v, %v; want nil, error \"not found\"", val, err)
	}
	n, err := s.GetUint64([]byte("LastVoteTerm"))
	if err != ErrKeyNotFound || err.Error() != "not found" || n != 0 {
		t.Fatalf("GetUint64(missing) = %d, %v; want 0, error \"not found\"", n, err)
	}
}

// raft.HasExistingState is how cmd decides whether to bootstrap; it reads
// the term through GetUint64 and must see a fresh store as empty.
func TestStableStore_RaftSeesFreshStoreAsEmpty(t *testing.T) {
	s := openStore(t, t.TempDir(), Options{})
	snaps := s.SnapshotStore(2)
	has, err := raft.HasExistingState(s, s, snaps)
	if err != nil || has {
		t.Fatalf("HasExistingState(fresh) = %v, %v; want false, nil", has, err)
	}
	if err := s.SetUint64([]byte("CurrentTerm"), 3); err != nil {
		t.Fatal(err)
	}
	has, err = raft.HasExistingState(s, s, snaps)
	if err != nil || !has {
		t.Fatalf("HasExistingState(term 3) = %v, %v; want true, nil", has, err)
	}
}

func TestStableStore_SetGet(t *testing.T) {
	cases := []struct {
		name string
		key  []byte
		val  []byte
	}{
		{"vote candidate", []byte("LastVoteCand"), []byte("node-2")},
		{"empty value", []byte("empty"), []byte{}},
		{"binary key and value", []byte{0, 0xff, 1}, []byte{0xff, 0, 0xfe}},
		{"empty key", []byte{}, []byte("value of the empty key")},
		{"large value", []byte("big"), bytes.Repeat([]byte("x"), 100_000)},
	}
	dir := t.TempDir()
	s := openStore(t, dir, Options{})
	for _, c := range cases {
		if err := s.Set(c.key, c.val); err != nil {
			t.Fatalf("%s: Set: %v", c.name, err)
		}
	}
	for round := 0; round < 2; round++ {
		for _, c := range cases {
			got, err := s.Get(c.key)
			if err != nil {
				t.Fatalf("%s: Get: %v", c.name, err)
			}
			if !bytes.Equal(got, c.val) || got == nil {
				t.Fatalf("%s: Get = %q, want %q (non-nil)", c.name, got, c.val)
			}
		}
		s = reopen(t, s, dir, Options{})
	}
}

func TestStableStore_GetReturnsACopy(t *testing.T) {
	s := openStore(t, t.TempDir(), Options{})
	if err := s.Set([]byte("k"), []byte("abc")); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get([]byte("k"))
	if err != nil {
		t.Fatal(err)
	}
	got[0] = 'X'
	again, err := s.Get([]byte("k"))
	if err != nil || string(again) != "abc" {
		t.Fatalf("after modifying a returned value, Get = %q, %v", again, err)
	}
}

func TestStableStore_OverwriteKeepsLatest(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, Options{})
	for term := uint64(1); term <= 5; term++ {
		if err := s.SetUint64([]byte("CurrentTerm"), term); err != nil {
			t.Fatal(err)
		}
	}
	s = reopen(t, s, dir, Options{})
	if n, err := s.GetUint64([]byte("CurrentTerm")); err != nil || n != 5 {
		t.Fatalf("GetUint64 after overwrites = %d, %v; want 5", n, err)
	}
}

func TestStableStore_Uint64(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, Options{})
	values := map[string]uint64{"zero": 0, "one": 1, "max": ^uint64(0), "big": 1 << 63}
	for k, v := range values {
		if err := s.SetUint64([]byte(k), v); err != nil {
			t.Fatal(err)
		}
	}
	s = reopen(t, s, dir, Options{})
	for k, v := range values {
		got, err := s.GetUint64([]byte(k))
		if err != nil || got != v {
			t.Fatalf("GetUint64(%s) = %d, %v; want %d", k, got, err, v)
		}
	}
	// Set and SetUint64 share one key space, as in raft-boltdb.
	raw, err := s.Get([]byte("one"))
	if err != nil || !bytes.Equal(raw, []byte{0, 0, 0, 0, 0, 0, 0, 1}) {
		t.Fatalf("Get of a uint64 key = %x, %v; want 8 big-endian bytes", raw, err)
	}
	if err := s.Set([]byte("short"), []byte{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetUint64([]byte("short")); err == nil || err == ErrKeyNotFound {
		t.Fatalf("GetUint64 of a 3-byte value: err = %v, want a malformed-value error", err)
	}
}

// Stable keys and log entries live in one key space; neither may see the
// other whatever bytes raft uses as a key.
func TestStableStore_KeysDoNotCollideWithLog(t *testing.T) {
	s := openStore(t, t.TempDir(), Options{})
	lk := s.logKey(1)
	if err := s.Set(lk[:], []byte("not a log entry")); err != nil {
		t.Fatal(err)
	}
	checkBounds(t, s, 0, 0)
	if err := s.StoreLogs(testEntries(1, 3)); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteRange(0, ^uint64(0)); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(lk[:])
	if err != nil || string(got) != "not a log entry" {
		t.Fatalf("stable key shaped like a log key = %q, %v after deleting the log", got, err)
	}
}
