package fsm_test

import (
	"bytes"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/redcell/redcell/fsm"
	"github.com/redcell/redcell/request"
	"github.com/redcell/redcell/shard"
)

// replica applies command lines as raft would hand them over: each call one
// entry, with the next index and the replica's current term.
type replica struct {
	f     *fsm.FSM
	index uint64
	term  uint64
	enc   fsm.Encoder
}

func newReplica(stripes int) *replica {
	return &replica{f: fsm.New(fsm.Config{Stripes: stripes, OnFatal: func(err error) { panic(err) }}), term: 1}
}

// apply applies reqs as one entry stamped now and returns their results.
func (r *replica) apply(t testing.TB, now int64, reqs ...request.Request) []request.Result {
	t.Helper()
	r.enc.Reset(now)
	for i := range reqs {
		r.enc.Add(&reqs[i])
	}
	r.index++
	out := r.f.ApplyBatch([]*raft.Log{{Type: raft.LogCommand, Index: r.index, Term: r.term, Data: slices.Clone(r.enc.Finish())}})
	rs, ok := out[0].(*fsm.Results)
	if !ok {
		t.Fatalf("apply returned %T", out[0])
	}
	cp := slices.Clone(rs.R)
	r.f.Release(rs)
	return cp
}

// lines applies each command line as its own entry.
func (r *replica) lines(t testing.TB, now int64, lines ...string) {
	t.Helper()
	for _, l := range lines {
		r.apply(t, now, parsed(t, l))
	}
}

// watched is what WATCH read on one node.
type watched struct {
	keys []request.WatchedKey
	term uint64
}

// watch reads WatchMark for keys at now, as the server's WATCH does.
func (r *replica) watch(t testing.TB, now int64, keys ...string) watched {
	t.Helper()
	req := request.Request{Code: request.WatchMark}
	for _, k := range keys {
		req.Keys = append(req.Keys, []byte(k))
	}
	var res request.Result
	r.f.Read(&req, now, &res)
	if res.Kind != request.KindBulk || len(res.Data) != len(keys) {
		t.Fatalf("WatchMark answered %+v", res)
	}
	wd := watched{term: uint64(res.Ints[1])}
	for i, b := range res.Data {
		wd.keys = append(wd.keys, request.WatchedKey{Key: req.Keys[i], Live: b == 1, W: uint64(res.Ints[0]), TW: res.Ints[2]})
	}
	return wd
}

// exec applies the guard and the transaction's lines in one entry and
// reports whether the guard aborted it, with the transaction's results.
func (r *replica) exec(t testing.TB, now int64, wd watched, lines ...string) (aborted bool, res []request.Result) {
	t.Helper()
	reqs := []request.Request{request.NewWatchGuard(wd.keys, wd.term, len(lines))}
	for _, l := range lines {
		reqs = append(reqs, parsed(t, l))
	}
	out := r.apply(t, now, reqs...)
	if out[0].Kind != request.KindInt || out[0].Ints[0] > 1 {
		t.Fatalf("the guard answered %+v", out[0])
	}
	aborted = out[0].Ints[0] == 1
	for i, res := range out[1:] {
		if skipped := res.Kind == request.KindError && res.Err == request.ErrWatchAborted; skipped != aborted {
			t.Fatalf("guard aborted=%v, request %d answered %+v", aborted, i, res)
		}
	}
	return aborted, out[1:]
}

const sec = int64(1e9)

// TestWatchGuardDecides: every rule of the guard (fsm/watchguard.go) on a
// single replica, and that an aborted transaction changes nothing.
func TestWatchGuardDecides(t *testing.T) {
	tests := []struct {
		name    string
		setup   []string // before WATCH
		keys    []string // watched
		between []string // after WATCH, before EXEC (at the same instant unless later)
		later   int64    // EXEC this long after WATCH
		want    bool     // aborted
	}{
		{"nothing happens", []string{"SET k v"}, []string{"k"}, nil, 0, false},
		{"nothing happens to a missing key", nil, []string{"k"}, nil, 0, false},
		{"another key is written", []string{"SET k v"}, []string{"k"}, []string{"SET j v", "DEL x"}, 0, false},
		{"SET of the same value", []string{"SET k v"}, []string{"k"}, []string{"SET k v"}, 0, true},
		{"INCR", []string{"SET k 1"}, []string{"k"}, []string{"INCR k"}, 0, true},
		{"DEL", []string{"SET k v"}, []string{"k"}, []string{"DEL k"}, 0, true},
		{"GETDEL", []string{"SET k v"}, []string{"k"}, []string{"GETDEL k"}, 0, true},
		{"RENAME's source", []string{"SET k v"}, []string{"k"}, []string{"RENAME k j"}, 0, true},
		{"RENAME's destination", []string{"SET k v", "SET j w"}, []string{"j"}, []string{"RENAME k j"}, 0, true},
		{"EXPIRE", []string{"SET k v"}, []string{"k"}, []string{"EXPIRE k 100"}, 0, true},
		{"EXPIRE in the past", []string{"SET k v"}, []string{"k"}, []string{"EXPIRE k -1"}, 0, true},
		{"PERSIST of a key with a TTL", []string{"SET k v EX 100"}, []string{"k"}, []string{"PERSIST k"}, 0, true},
		{"CL.THROTTLE", nil, []string{"k"}, []string{"CL.THROTTLE k 5 1 60"}, 0, true},
		// FLUSHALL changes the keys that existed, as in Redis 7.0.
		{"FLUSHALL of a live key", []string{"SET k v"}, []string{"k"}, []string{"FLUSHALL"}, 0, true},
		{"FLUSHALL of a key created after WATCH", nil, []string{"k"}, []string{"SET k v", "FLUSHALL"}, 0, true},
		{"FLUSHALL of a missing key", []string{"SET j v"}, []string{"k"}, []string{"FLUSHALL"}, 0, false},
		// (a): liveness differs without a write after WATCH.
		{"expiry between WATCH and EXEC", []string{"SET k v PX 500"}, []string{"k"}, nil, sec, true},
		// (b) through a tombstone: missing at both ends, written between.
		{"created and deleted", nil, []string{"k"}, []string{"SET k v", "DEL k"}, 0, true},
		{"SET with a time in the past", nil, []string{"k"}, []string{"SET k v PXAT 1"}, 0, true},
		// Writes that change nothing (Redis's signalModifiedKey is not called).
		{"DEL of a missing key", nil, []string{"k"}, []string{"DEL k", "UNLINK k"}, 0, false},
		{"EXPIRE NX refused", []string{"SET k v EX 100"}, []string{"k"}, []string{"EXPIRE k 5 NX"}, 0, false},
		{"PERSIST of a key without TTL", []string{"SET k v"}, []string{"k"}, []string{"PERSIST k"}, 0, false},
		{"SET NX refused", []string{"SET k v"}, []string{"k"}, []string{"SET k w NX"}, 0, false},
		{"SET XX refused", nil, []string{"k"}, []string{"SET k w XX"}, 0, false},
		{"GETDEL of a missing key", nil, []string{"k"}, []string{"GETDEL k"}, 0, false},
		{"INCR of a non-integer", []string{"SET k v"}, []string{"k"}, []string{"INCR k"}, 0, false},
		{"EXPIRE of a missing key", nil, []string{"k"}, []string{"EXPIRE k 5"}, 0, false},
		{"RENAMENX onto a live key", []string{"SET k v", "SET j w"}, []string{"k", "j"}, []string{"RENAMENX k j"}, 0, false},
		{"a key expired before WATCH", []string{"SET k v PX 1"}, []string{"k"}, nil, 0, false},
		// (c): a key missing at WATCH, Linger later: a record written and
		// gone since may have been dropped, so the guard aborts.
		// (WATCH reads 1 ms after the last entry, whose stamp is tw.)
		{"missing key, just before Linger", nil, []string{"k"}, nil, shard.Linger - 1e6 - 1, false},
		{"missing key, Linger later", nil, []string{"k"}, nil, shard.Linger - 1e6, true},
		{"live key, Linger later", []string{"SET k v"}, []string{"k"}, nil, 2 * shard.Linger, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newReplica(4)
			now := t0
			r.lines(t, now, "SET unrelated v") // a node has applied an entry of its term
			r.lines(t, now, tt.setup...)
			now += 1e6
			wd := r.watch(t, now, tt.keys...)
			r.lines(t, now, tt.between...)
			aborted, res := r.exec(t, now+tt.later, wd, "SET tx done", "GET tx")
			if aborted != tt.want {
				t.Fatalf("aborted %v, want %v", aborted, tt.want)
			}
			if aborted {
				var ex request.Result
				r.f.Read(&request.Request{Code: request.Exists, Keys: [][]byte{[]byte("tx")}}, now+tt.later, &ex)
				if ex.Ints[0] != 0 {
					t.Errorf("an aborted transaction wrote its key")
				}
				return
			}
			if res[0].Kind != request.KindOK || string(res[1].Data) != "done" {
				t.Errorf("the transaction answered %+v", res)
			}
		})
	}
}

// TestWatchGuardLeaderChange: (e) an entry of another term than the one
// WATCH saw last aborts, even with nothing written; the next WATCH, which
// sees the new term, succeeds.
func TestWatchGuardLeaderChange(t *testing.T) {
	r := newReplica(2)
	r.lines(t, t0, "SET k v")
	wd := r.watch(t, t0, "k")
	r.term++
	if aborted, _ := r.exec(t, t0, wd, "SET tx 1"); !aborted {
		t.Fatal("a leader change between WATCH and EXEC did not abort")
	}
	wd = r.watch(t, t0, "k")
	if wd.term != r.term {
		t.Fatalf("WatchMark's term %d, want %d", wd.term, r.term)
	}
	if aborted, _ := r.exec(t, t0, wd, "SET tx 1"); aborted {
		t.Fatal("aborted with no change")
	}
}

// TestWatchGuardSeesItsEntry: a write in the same entry before the guard
// (another client's batch merged into it) is a change; writes of the
// transaction itself after the guard are not.
func TestWatchGuardSeesItsEntry(t *testing.T) {
	r := newReplica(2)
	r.lines(t, t0, "SET k v")
	wd := r.watch(t, t0, "k")
	out := r.apply(t, t0, parsed(t, "SET k w"), request.NewWatchGuard(wd.keys, wd.term, 1), parsed(t, "SET k x"))
	if out[1].Ints[0] != 1 || out[2].Err != request.ErrWatchAborted {
		t.Fatalf("a write earlier in the entry: guard %+v, transaction %+v", out[1], out[2])
	}
	wd = r.watch(t, t0, "k")
	out = r.apply(t, t0, request.NewWatchGuard(wd.keys, wd.term, 1), parsed(t, "SET k x"), parsed(t, "GET k"))
	if out[0].Ints[0] != 0 || out[1].Kind != request.KindOK || string(out[2].Data) != "x" {
		t.Fatalf("the transaction's own write: %+v", out)
	}
}

// TestWatchGuardReplicasAgree: replicas that reach the guard differently
// decide the same: one applied the whole log, one was restored from a
// snapshot taken mid-window (tombstones and markers in it), one swept every
// gone record it could; at several instants around Linger.
func TestWatchGuardReplicasAgree(t *testing.T) {
	for _, later := range []int64{0, sec, shard.Linger - 2*sec, shard.Linger, 3 * shard.Linger} {
		a := newReplica(8)
		now := t0
		// Before WATCH: a key that expired, one deleted, one live.
		a.lines(t, now, "SET gone v PX 1", "SET del v", "DEL del", "SET live v", "SET old v")
		now += 2 * sec
		wd := a.watch(t, now, "gone", "del", "live", "fresh", "tomb", "old")
		// After WATCH: a key created and deleted (a tombstone), one
		// created and left.
		now += sec
		a.lines(t, now, "SET tomb v", "DEL tomb", "SET other v")
		snap := snapshotOf(t, a.f)
		if !strings.Contains(snap, "tomb") {
			t.Fatal("the snapshot holds no tombstone")
		}
		b := newReplica(1)
		if err := b.f.Restore(io.NopCloser(strings.NewReader(snap))); err != nil {
			t.Fatal(err)
		}
		b.index = a.index
		c := newReplica(3)
		c.index = a.index
		if err := c.f.Restore(io.NopCloser(strings.NewReader(snap))); err != nil {
			t.Fatal(err)
		}
		at := now + later
		// c sweeps everything it may at the guard's instant before it.
		c.f.SweepAll(at)
		for _, keys := range [][]string{{"gone"}, {"del"}, {"live"}, {"fresh"}, {"tomb"}, {"old"}, {"gone", "live"}} {
			sub := wd
			sub.keys = nil
			for _, k := range wd.keys {
				if slices.Contains(keys, string(k.Key)) {
					sub.keys = append(sub.keys, k)
				}
			}
			var got []bool
			for _, r := range []*replica{a, b, c} {
				aborted, _ := r.exec(t, at, sub, "GET live")
				got = append(got, aborted)
			}
			if got[0] != got[1] || got[0] != got[2] {
				t.Errorf("later %d, keys %v: applied log %v, restored %v, swept %v", later, keys, got[0], got[1], got[2])
			}
			// tw is the replicated clock at WATCH: the last entry's t0.
			lapsed := at-t0 >= shard.Linger
			want := slices.Contains(keys, "tomb") || lapsed && (slices.Contains(keys, "gone") || slices.Contains(keys, "del") || slices.Contains(keys, "fresh"))
			if got[0] != want {
				t.Errorf("later %d, keys %v: aborted %v, want %v", later, keys, got[0], want)
			}
		}
		if !bytes.Equal(fsm.RestoredFromOld([]byte(snapshotOf(t, a.f))), fsm.RestoredFromOld([]byte(snapshotOf(t, b.f)))) {
			t.Errorf("later %d: the replicas' keys differ", later)
		}
	}
}

// TestWatchMarkSnapshot: the term travels in a snapshot, and so do the
// tombstones FLUSHALL leaves: a replica restored after a FLUSHALL aborts a
// transaction watching a key created after WATCH and flushed, and answers
// WATCH with the term.
func TestWatchMarkSnapshot(t *testing.T) {
	a := newReplica(2)
	a.lines(t, t0, "SET k v")
	wd := a.watch(t, t0, "x", "y")
	a.term = 7
	a.lines(t, t0, "SET x 1", "FLUSHALL")
	b := newReplica(2)
	if err := b.f.Restore(io.NopCloser(strings.NewReader(snapshotOf(t, a.f)))); err != nil {
		t.Fatal(err)
	}
	b.index, b.term = a.index, a.term
	if got := b.watch(t, t0, "x").term; got != 7 {
		t.Errorf("restored term %d, want 7", got)
	}
	wd.term = 7 // only the keys may decide
	if aborted, _ := b.exec(t, t0, wd, "GET k"); !aborted {
		t.Error("a key created and flushed before the snapshot did not abort on the restored replica")
	}
	wd.keys = wd.keys[1:] // y alone: never existed
	if aborted, _ := b.exec(t, t0, wd, "GET k"); aborted {
		t.Error("FLUSHALL aborted a transaction watching a key that never existed")
	}
}
